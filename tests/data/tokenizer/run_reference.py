#!/usr/bin/env python3
"""tests/data/tokenizer/run_reference.py — golden token ids and pieces from the reference engine (llama.cpp).

Runs an already-built `llama-tokenize` once per corpus string and setting (it builds nothing) and writes, for
one model, three files with one line per corpus.inp line:
  NAME.special.out    token ids with parse_special on  (llama-tokenize's default), space-separated
  NAME.nospecial.out  token ids with parse_special off (--no-parse-special)
  NAME.pieces         llama.cpp's token_to_piece(special=true) of each id of the .special.out line, hex-encoded,
                      space-separated ("-" for an empty piece)
Each string is passed byte-exact through a file (-f with --no-escape); add_special is what llama-tokenize does
by default (the model's add_bos_token). See README.md for the exact commands used for the committed files.

Usage: run_reference.py --bin PATH/llama-tokenize --model FILE --name NAME [--corpus corpus.inp] [--jobs N]
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile


def unescape(line):
    """corpus.inp escape format (see make_corpus.py) -> bytes"""
    out = bytearray()
    b = line
    i = 0
    while i < len(b):
        c = b[i]
        if c != 0x5C:
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(b):
            raise ValueError("dangling backslash")
        e = b[i + 1]
        if e == ord("\\"):
            out.append(0x5C); i += 2
        elif e == ord("n"):
            out.append(0x0A); i += 2
        elif e == ord("r"):
            out.append(0x0D); i += 2
        elif e == ord("t"):
            out.append(0x09); i += 2
        elif e == ord("x"):
            out.append(int(b[i + 2:i + 4].decode(), 16)); i += 4
        else:
            raise ValueError("bad escape \\%c" % e)
    return bytes(out)


def read_corpus(path):
    data = open(path, "rb").read()
    if not data.endswith(b"\n"):
        raise ValueError("corpus must end with a newline")
    return [unescape(l) for l in data[:-1].split(b"\n")]


def run(args, model, path, extra):
    cmd = [args.bin, "-m", model, "-f", path, "--no-escape", "--log-disable"] + extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr.decode(errors="replace")[-500:]))
    return p.stdout


def parse_ids(out):
    s = out.decode().strip()
    if not (s.startswith("[") and s.endswith("]")):
        raise RuntimeError("unexpected --ids output: %r" % s[:200])
    s = s[1:-1].strip()
    return [int(x) for x in s.split(",")] if s else []


def parse_pieces(out, ids):
    """llama-tokenize without --ids prints '%6d -> \\'PIECE\\'\\n' per token; split it using the known ids."""
    pieces = []
    pos = 0
    for k, tid in enumerate(ids):
        head = (b"%6d -> '" % tid)
        if not out.startswith(head, pos):
            raise RuntimeError("piece output out of step at token %d" % k)
        start = pos + len(head)
        if k + 1 < len(ids):
            nxt = b"'\n" + (b"%6d -> '" % ids[k + 1])
            end = out.find(nxt, start)
        else:
            end = len(out) - 2
            if not out.endswith(b"'\n") or end < start:
                raise RuntimeError("piece output does not end with a quote")
        if end < 0:
            raise RuntimeError("cannot find the end of piece %d" % k)
        pieces.append(out[start:end])
        pos = end + 2
    if pos != len(out):
        raise RuntimeError("trailing piece output")
    return pieces


def one(args, model, text):
    with tempfile.NamedTemporaryFile(prefix="orun-tok-", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        sp = parse_ids(run(args, model, path, ["--ids"]))
        nsp = parse_ids(run(args, model, path, ["--ids", "--no-parse-special"]))
        pieces = parse_pieces(run(args, model, path, []), sp)
    finally:
        os.unlink(path)
    return sp, nsp, pieces


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--corpus", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus.inp"))
    ap.add_argument("--outdir", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()

    corpus = read_corpus(args.corpus)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        results = list(ex.map(lambda t: one(args, args.model, t), corpus))

    def ids_line(ids):
        return " ".join(str(i) for i in ids)

    base = os.path.join(args.outdir, args.name)
    with open(base + ".special.out", "w") as f:
        f.writelines(ids_line(r[0]) + "\n" for r in results)
    with open(base + ".nospecial.out", "w") as f:
        f.writelines(ids_line(r[1]) + "\n" for r in results)
    with open(base + ".pieces", "w") as f:
        f.writelines(" ".join(p.hex() if p else "-" for p in r[2]) + "\n" for r in results)
    print("%s: %d strings" % (args.name, len(corpus)), file=sys.stderr)


if __name__ == "__main__":
    main()
