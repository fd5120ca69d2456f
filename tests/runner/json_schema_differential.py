#!/usr/bin/env python3
"""tests/runner/json_schema_differential.py [SEED] [N] — random JSON schemas (the converter's whole vocabulary,
decimal bounds included) and random instances shaped like them, compact and indented, matched through the
converter's grammar (`test_json_schema --match`) and validated by Python's jsonschema. Fails when the grammar
takes an instance jsonschema finds invalid (the grammar may be stricter than its schema, never looser; oneOf is
validated as anyOf, the one documented loosening, as llama.cpp); prints how many valid instances the grammar
refused. Not part of `make check` (needs jsonschema):
    python3 tests/runner/json_schema_differential.py 1 3000   # from the source tree, after make check
The binary is $ORUN_BUILDDIR/tests/runner/test_json_schema (default build/cpu)."""
import json
import os
import random
import subprocess
import sys

import jsonschema

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
count = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
r = random.Random(seed)
BOUNDS = [-10, -1, 0, 1, 5, 10, 99, 0.5, -2.5, 1.25, 0.1, -0.75, 9.99]
NUMBERS = [0, 1, -1, 5, 9, 10, 11, 98, 99, 100, -10, -11, 0.5, -0.5, 9.5, 10.0, 1e2, -0.0, 99.99, 0.1, 0.09, 0.11,
           1.25, 1.2, 1.3, -2.5, -2.51, -2.49, -0.75, 9.99, 9.991, 1.250]
STRINGS = ["", "a", "ab", "aab", "b\\c", "\"x", "2024-02-03", "2024-02-03T04:05:06Z", "12:34:56Z", "a\n", "9a", "12",
           "123e4567-e89b-12d3-a456-426614174000", "ba", " a", "c", "abab", "é"]
PATTERNS = ["^a+$", "^[ab]{1,3}$", "^(a|b\\\\)c?$", "a", "^\\d{2}$", "^.b$", "^[^a]*$", "^\"x$", "^(?:ab)*$", "^\\s?a$"]


def any_value(d=0):
    k = r.randrange(8 if d < 3 else 5)
    if k == 0:
        return None
    if k == 1:
        return r.choice([True, False])
    if k == 2:
        return r.choice(NUMBERS)
    if k in (3, 4):
        return r.choice(STRINGS)
    if k == 5:
        return [any_value(d + 1) for _ in range(r.randrange(4))]
    return {r.choice(["a", "b", "c", "ab", "x"]): any_value(d + 1) for _ in range(r.randrange(4))}


def schema(d=0):
    k = r.randrange(12 if d < 3 else 6)
    if k == 0:
        s = {"type": "string"}
        c = r.randrange(4)
        if c == 1:
            s["minLength"] = r.randrange(3)
            s["maxLength"] = s["minLength"] + r.randrange(3)
        if c == 2:
            s["pattern"] = r.choice(PATTERNS)
        if c == 3:
            s["format"] = r.choice(["date", "time", "date-time", "uuid", "email"])
        return s
    if k in (1, 2):
        s = {"type": "integer" if k == 1 else "number"}
        for kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if r.randrange(3) == 0:
                s[kw] = r.choice(BOUNDS)
        return s
    if k == 3:
        return {"type": r.choice(["boolean", "null"])}
    if k == 4:
        return {"enum": r.sample(["a", "b", 1, 2.5, None, True, "ab"], r.randrange(1, 4))}
    if k == 5:
        return {"const": any_value(2)}
    if k in (6, 7):
        props = {p: schema(d + 1) for p in r.sample(["a", "b", "c", "ab"], r.randrange(0, 4))}
        s = {"type": "object", "properties": props}
        if props and r.randrange(2):
            s["required"] = r.sample(list(props) + ["x"], r.randrange(1, len(props) + 1))
        a = r.randrange(4)
        if a == 1:
            s["additionalProperties"] = False
        if a == 2:
            s["additionalProperties"] = True
        if a == 3:
            s["additionalProperties"] = schema(d + 1)
        return s
    if k == 8:
        s = {"type": "array", "items": schema(d + 1)}
        if r.randrange(2):
            s["minItems"] = r.randrange(3)
        if r.randrange(2):
            s["maxItems"] = s.get("minItems", 0) + r.randrange(3)
        if r.randrange(4) == 0:
            s["prefixItems"] = [schema(d + 1)]
        return s
    if k == 9:
        return {r.choice(["anyOf", "oneOf"]): [schema(d + 1), schema(d + 1)]}
    if k == 10:
        return {"type": r.sample(["string", "null", "integer", "boolean"], 2)}
    return {"allOf": [schema(d + 1) if r.randrange(2) else
                      {"type": "object", "properties": {"q": schema(d + 1)}, "required": ["q"]},
                      {"type": "object", "properties": {"z": schema(d + 1)}}]}


def instance(s, d=0):
    """a value shaped like schema s, often off"""
    if r.randrange(5) == 0 or d > 4 or not isinstance(s, dict):
        return any_value(2)
    if "const" in s:
        return s["const"]
    if "enum" in s:
        return r.choice(s["enum"])
    for kw in ("anyOf", "oneOf"):
        if kw in s:
            return instance(r.choice(s[kw]), d + 1)
    if "allOf" in s:
        o = {}
        for m in s["allOf"]:
            v = instance(m, d + 1)
            if isinstance(v, dict):
                o.update(v)
        return o
    t = s.get("type")
    if isinstance(t, list):
        t = r.choice(t)
    if t == "object":
        o = {p: instance(ps, d + 1) for p, ps in s.get("properties", {}).items() if r.randrange(4)}
        if r.randrange(3) == 0:
            o[r.choice(["x", "ab", "q", "a"])] = any_value(2)
        return o
    if t == "array":
        return [instance(s.get("items", {}), d + 1) for _ in range(r.randrange(4))]
    if t == "string":
        return r.choice(STRINGS)
    if t in ("integer", "number"):
        return r.choice(NUMBERS)
    if t == "boolean":
        return r.choice([True, False])
    return None if t == "null" else any_value(2)


def main():
    build = os.environ.get("ORUN_BUILDDIR", os.path.join(os.path.dirname(__file__), "..", "..", "build", "cpu"))
    cases = []
    for _ in range(count):
        s = schema()
        texts = []
        for _ in range(6):
            v = instance(s)
            texts += [json.dumps(v, separators=(",", ":"), ensure_ascii=False), json.dumps(v, indent=2, ensure_ascii=False)]
        cases.append((s, texts))
    feed = "".join(json.dumps({"schema": s, "inst": t}, ensure_ascii=False) + "\n" for s, t in cases)
    out = subprocess.run([os.path.join(build, "tests", "runner", "test_json_schema"), "--match"], input=feed.encode(),
                         capture_output=True, check=True).stdout.decode().splitlines()
    refused = taken = loose = strict = 0
    for (s, texts), line in zip(cases, out):
        if line.startswith("E "):
            refused += 1
            continue
        # oneOf is matched as anyOf (as llama.cpp does: exclusivity is not a grammar): validate it so
        vs = json.loads(json.dumps(s).replace('"oneOf"', '"anyOf"'))
        v = jsonschema.validators.validator_for(vs)(vs)
        for t, bit in zip(texts, line[2:]):
            ok = v.is_valid(json.loads(t))
            if bit == "1":
                taken += 1
                if not ok:
                    loose += 1
                    print("LOOSER than the schema:", json.dumps(s), repr(t))
            elif ok:
                strict += 1
    print(f"seed {seed}: {count} schemas ({refused} refused), {taken} instances taken, {loose} of them invalid; "
          f"{strict} valid instances refused by the stricter grammar")
    sys.exit(1 if loose or len(out) != count else 0)


if __name__ == "__main__":
    main()
