"""The prefix cache shared by a model's slots and requests (issue 16, item 5), through a live `orun serve`.

SmolLM2-135M (fast) with raw /api/generate prompts at temperature 0. Three servers:
- `shared`: OLLAMA_NUM_PARALLEL=2 and the default budget: hits and misses across slots and requests, two slots
  sharing one prefix in the same steps, a client that leaves in the middle of a prefill, what /metrics and the
  log show;
- `small`: one slot and a budget of 4 blocks (ORUN_PREFIX_CACHE=3MiB): eviction;
- `fresh`: ORUN_PREFIX_CACHE=0, OLLAMA_NUM_PARALLEL=1 and cache_prompt false on every request: every prompt
  evaluated from nothing in 512-token batches, the reference every answer above must equal, token for token.
`shared` and `small` evaluate prompts in batches of 100 tokens (num_batch), so that batch ends fall inside
blocks of 32: a block is published only once full.
"""
import json
import os
import re
import socket
import threading
import time

import pytest
import requests

from conftest import model_path
from test_server_common import Server, free_port
from test_server_hardening_http import asan_build

BLOCK = 32       # RN_KV_BLOCK: tokens per cached block
# tokens of each compared answer: fewer against the sanitizer build (tools/test-all's second pass), where every
# case still runs the same cache paths and the token-for-token comparisons are the plain build's job
PREDICT = 16 if os.access(os.environ.get("ORUN_BIN", ""), os.R_OK) and asan_build(os.environ["ORUN_BIN"]) else 48
NUM_CTX = 2048
OPTS = {"temperature": 0, "seed": 7, "num_ctx": NUM_CTX}
CHUNKED = {"num_batch": 100}  # the cached servers' batches (a load option: every request to them carries it)

SENTENCES = [
    "The library opens at nine and closes at six on weekdays.",
    "A river crosses the valley from the northern hills to the lake.",
    "Every report lists the date, the author and the three main findings.",
    "The recipe needs flour, water, salt and a little patience.",
    "Trains to the coast leave every hour from the second platform.",
    "The committee meets on the first Monday of each month.",
    "Old maps show a bridge where the ferry now crosses.",
    "Each team member writes a short summary at the end of the week.",
]


def text_of(seed, n):
    """A deterministic paragraph of n sentences (about 13 tokens each), different for each seed."""
    return " ".join(f"({seed}.{i}) {SENTENCES[(seed * 3 + i) % len(SENTENCES)]}" for i in range(n))


# about 440 tokens, 13 full blocks; what follows it starts with a space and a word (a token boundary either way),
# and the prompts end where the model goes on writing (a prompt it answers with end-of-text at once tests little)
PREFIX = "Notes for the assistant.\n" + text_of(1, 24)


def make_server(orun_bin, tmp, env, options=None):
    import ollama

    srv = Server(orun_bin, tmp, env_extra=env)
    srv.options = dict(OPTS, **(options or {}))
    try:
        client = ollama.Client(host=srv.base)
        list(client.create(model="smol", files={"model.gguf": client.create_blob(model_path("llama"))}, stream=True))
    except Exception:
        srv.stop()
        raise
    return srv


@pytest.fixture(scope="module")
def fresh(orun_bin, tmp_path_factory):
    srv = make_server(orun_bin, tmp_path_factory.mktemp("pc-fresh"),
                      {"ORUN_PREFIX_CACHE": "0", "OLLAMA_NUM_PARALLEL": "1"})
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def shared(orun_bin, tmp_path_factory):
    srv = make_server(orun_bin, tmp_path_factory.mktemp("pc-shared"), {"OLLAMA_NUM_PARALLEL": "2"}, CHUNKED)
    yield srv
    srv.stop()


def generate(srv, prompt, n=PREDICT, cache=True, **extra):
    body = {"model": "smol", "prompt": prompt, "raw": True, "stream": False,
            "options": dict(srv.options, num_predict=n, **({} if cache else {"cache_prompt": False})), **extra}
    r = requests.post(srv.base + "/api/generate", json=body, timeout=300)
    assert r.status_code == 200, r.text
    return r.json()


_refs = {}


def reference(fresh, prompt, n=PREDICT):
    """The answer with every token of the prompt evaluated afresh (no cache anywhere), memoised."""
    if (prompt, n) not in _refs:
        _refs[(prompt, n)] = generate(fresh, prompt, n, cache=False)["response"]
    return _refs[(prompt, n)]


def metrics(srv):
    """The orun_prefix_cache_* samples of the model "smol" as a dict short-name -> value (0 when absent)."""
    text = requests.get(srv.base + "/metrics", timeout=30).text
    out = {k: 0 for k in ("hits", "misses", "tokens_reused", "blocks_evicted", "bytes", "budget_bytes")}
    for m in re.finditer(r'^orun_prefix_cache_(\w+?)(?:_total)?\{model="smol(?::latest)?"\} (\d+)$', text, re.M):
        out[m.group(1)] = int(m.group(2))
    for fam in ("hits_total", "misses_total", "tokens_reused_total", "blocks_evicted_total", "bytes", "budget_bytes"):
        assert f"# TYPE orun_prefix_cache_{fam} " in text, f"/metrics lacks orun_prefix_cache_{fam}:\n{text}"
    return out


LOG_LINE = re.compile(r'msg="prompt cache" slot=(\d+) prompt=(\d+) cached=(\d+) evaluated=(\d+) generated=(\d+) '
                      r'cache_held=(?:"([^"]*)"|(\S+)) cache_budget=(?:"([^"]*)"|(\S+))$', re.M)


def cache_lines(srv, since=0):
    """The server's per-request "prompt cache" log lines after the first `since`, as dicts."""
    rows = []
    for m in LOG_LINE.finditer(srv.read_log()):
        slot, prompt, cached, evaluated, generated = map(int, m.groups()[:5])
        rows.append(dict(slot=slot, prompt=prompt, cached=cached, evaluated=evaluated, generated=generated,
                         held=m.group(6) or m.group(7), budget=m.group(8) or m.group(9)))
    return rows[since:]


def wait_lines(srv, count, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        rows = cache_lines(srv)
        if len(rows) >= count:
            return rows
        time.sleep(0.05)
    pytest.fail(f"expected {count} prompt cache lines in the log:\n{srv.read_log()}")


def full_blocks(n):
    return n // BLOCK * BLOCK


def block_bytes(srv):
    """Bytes of one cached block, from the load line (as "720.0 KiB")."""
    m = re.search(r'msg="prefix cache" .* block_size="([0-9.]+) ([KMG])iB"', srv.read_log())
    assert m, srv.read_log()
    return float(m.group(1)) * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]


class Streamer(threading.Thread):
    """A streamed raw generate in the background: `started` is set at its first token."""

    def __init__(self, srv, prompt, n):
        super().__init__(daemon=True)
        self.srv, self.prompt, self.n = srv, prompt, n
        self.started = threading.Event()
        self.text, self.final, self.error = "", None, None

    def run(self):
        try:
            body = {"model": "smol", "prompt": self.prompt, "raw": True, "stream": True,
                    "options": dict(self.srv.options, num_predict=self.n)}
            with requests.post(self.srv.base + "/api/generate", json=body, stream=True, timeout=300) as r:
                for line in r.iter_lines():
                    obj = json.loads(line)
                    self.text += obj.get("response", "")
                    self.started.set()
                    if obj.get("done"):
                        self.final = obj
        except Exception as e:  # surfaced by the test through .error
            self.error = e
        finally:
            self.started.set()


def test_load_line_and_metrics_families(shared):
    generate(shared, "Hello there.", n=2)
    log = shared.read_log()
    m = re.search(r'msg="prefix cache" device=cpu budget="([0-9.]+ [KMGT]?i?B)" block_tokens=32 '
                  r'block_size="([0-9.]+ [KMG]iB)"$', log, re.M)
    assert m, log
    st = metrics(shared)
    assert st["budget_bytes"] > 0 and st["bytes"] > 0
    rows = cache_lines(shared)
    assert rows and rows[-1]["prompt"] > 0 and rows[-1]["generated"] == 2 and rows[-1]["held"].endswith("B")


def test_hits_across_slots(shared, fresh):
    """A prefix evaluated on one slot is taken from the cache by a request on the other slot."""
    before = metrics(shared)
    n0 = len(cache_lines(shared))
    first = generate(shared, PREFIX, n=1)
    n_prefix = first["prompt_eval_count"]
    assert n_prefix > 8 * BLOCK
    row0 = wait_lines(shared, n0 + 1)[n0]
    assert row0["cached"] == 0 and row0["prompt"] == n_prefix  # nothing shared yet: a miss
    slot_a = row0["slot"]

    # keep one slot busy with a long answer on the same prefix, then ask another question: the two requests
    # run on both slots, and the one on the slot that did not evaluate the prefix takes it from the cache
    long_q = PREFIX + " Once upon a time, in the library,"
    other_q = PREFIX + " Question: when does the library open?\nAnswer: The library"
    busy = Streamer(shared, long_q, 120)
    busy.start()
    assert busy.started.wait(120)
    other = generate(shared, other_q)
    busy.join(300)
    assert busy.error is None and busy.final, busy.error
    rows = wait_lines(shared, n0 + 3)[n0 + 1:n0 + 3]
    assert {r["slot"] for r in rows} == {0, 1}, rows
    moved = next(r for r in rows if r["slot"] != slot_a)
    assert moved["cached"] >= full_blocks(n_prefix - 1), rows
    for r in rows:
        assert r["cached"] >= full_blocks(n_prefix - 1) and r["evaluated"] == r["prompt"] - r["cached"] >= 1, rows
    # Ollama's prompt_eval_count counts the whole prompt, cached or not; the log tells them apart
    assert other["prompt_eval_count"] > n_prefix
    assert other["prompt_eval_count"] in [r["prompt"] for r in rows]

    after = metrics(shared)
    assert after["misses"] - before["misses"] >= 1
    assert after["hits"] - before["hits"] >= 2
    assert after["tokens_reused"] - before["tokens_reused"] >= 2 * full_blocks(n_prefix - 1)
    # the cache changes nothing in the answers
    assert other["response"] == reference(fresh, other_q)
    assert busy.text == reference(fresh, long_q, 120)


def test_parallel_slots_share_one_prefix(shared, fresh):
    """A cached prefix read by both slots in the same steps: two requests at once after it was evaluated."""
    prefix = "Meeting minutes.\n" + text_of(2, 24)
    first = generate(shared, prefix + " Question 0: who chaired the meeting?\nAnswer:", n=1)
    qs = [prefix + f" Question {k}: what did the committee decide?\nAnswer: The committee" for k in (1, 2)]
    out = [None, None]

    def ask(k):
        out[k] = generate(shared, qs[k])

    n0 = len(cache_lines(shared))
    th = [threading.Thread(target=ask, args=(k,)) for k in (0, 1)]
    for t in th:
        t.start()
    for t in th:
        t.join(300)
    rows = wait_lines(shared, n0 + 2)[n0:n0 + 2]
    assert {r["slot"] for r in rows} == {0, 1}, rows
    # both started from the prefix (one slot had it, the other took its blocks from the cache): only the
    # question's ~15 tokens and the prefix's last partial block were evaluated
    n_prefix = first["prompt_eval_count"] - 16
    for r in rows:
        assert r["cached"] >= full_blocks(n_prefix - 1), rows
    for k in (0, 1):
        assert out[k]["response"] == reference(fresh, qs[k]), k


def test_greedy_identical_with_and_without_cache(shared, fresh):
    """The same request again (now from the cache), and two different requests in the same batch."""
    q = PREFIX + " In summary, the notes say that"
    a = generate(shared, q)["response"]
    b = generate(shared, q)["response"]
    assert a == b == reference(fresh, q)
    short = "The capital of France is"
    res = {}

    def ask(key, prompt):
        res[key] = generate(shared, prompt)["response"]

    th = [threading.Thread(target=ask, args=("long", q)), threading.Thread(target=ask, args=("short", short))]
    for t in th:
        t.start()
    for t in th:
        t.join(300)
    assert res["long"] == a
    assert res["short"] == reference(fresh, short)


@pytest.fixture(scope="module")
def small(orun_bin, tmp_path_factory):
    # one slot and room for 4 unused blocks (a SmolLM2 block is 30 layers x K,V x 32 rows x 192 f16 = 720 KiB)
    srv = make_server(orun_bin, tmp_path_factory.mktemp("pc-small"),
                      {"ORUN_PREFIX_CACHE": "3MiB", "OLLAMA_NUM_PARALLEL": "1"}, CHUNKED)
    yield srv
    srv.stop()


def test_eviction_small_budget(small, fresh):
    generate(small, "Hello.", n=1)
    st0 = metrics(small)
    bb = block_bytes(small)
    assert round(st0["budget_bytes"] / bb) == 4, (st0, bb)
    prefixes = ["Travel diary.\n" + text_of(3, 24), "Garden log.\n" + text_of(4, 24)]
    qs = [p + " Question: what happened first?\nAnswer: First," for p in prefixes]
    first = [generate(small, q) for q in qs]  # the second one's blocks push the first one's out
    st1 = metrics(small)
    assert st1["blocks_evicted"] > st0["blocks_evicted"], (st0, st1)
    # held: the slot's own blocks (the second prompt and its answer) and at most the budget's
    held_by_slot = -(-(first[1]["prompt_eval_count"] + PREDICT) // BLOCK) * bb
    assert st1["bytes"] <= held_by_slot + st1["budget_bytes"], (st1, held_by_slot)
    # the first prompt again: at most the budget's blocks came back from the cache, and the answer is the same
    n0 = len(cache_lines(small))
    again = generate(small, qs[0])
    row = wait_lines(small, n0 + 1)[n0]
    assert row["cached"] <= 4 * BLOCK, row
    for q, r in zip(qs, first):
        assert r["response"] == reference(fresh, q)
    assert again["response"] == first[0]["response"]


def test_disconnect_mid_prefill(shared, fresh):
    """A client that leaves while its prompt is being evaluated (batches of 100 tokens: the last one it got
    ends inside a block) leaves no half-written block in the cache: the same prompt, asked twice at once (one
    request on the slot that was cut, one on the other that can only take published blocks), gives the answer
    of a fresh evaluation."""
    prompt = "Long archive.\n" + text_of(5, 48) + " To sum up, the archive"
    body = json.dumps({"model": "smol", "prompt": prompt, "raw": True, "stream": True,
                       "options": dict(shared.options, num_predict=PREDICT)}).encode()
    n0 = len(cache_lines(shared))
    s = socket.create_connection(("127.0.0.1", shared.port), timeout=30)
    s.sendall(b"POST /api/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    time.sleep(0.5)
    s.close()
    row = wait_lines(shared, n0 + 1)[n0]
    assert row["generated"] == 0, f"the request was not cut during its prefill (prefill too fast?): {row}"
    out = [None, None]

    def ask(k):
        out[k] = generate(shared, prompt)

    th = [threading.Thread(target=ask, args=(k,)) for k in (0, 1)]
    for t in th:
        t.start()
    for t in th:
        t.join(300)
    rows = wait_lines(shared, n0 + 3)[n0 + 1:n0 + 3]
    assert {r["slot"] for r in rows} == {0, 1}, rows
    ref = reference(fresh, prompt)
    assert out[0]["response"] == out[1]["response"] == ref


@pytest.mark.parametrize("cache_ram", [64, 0])
def test_llama_server_cache_n_and_id_slot(orun_bin, tmp_path, cache_ram):
    """`orun llama-server`: id_slot is honoured and reported; timings.cache_n is the prompt tokens taken from the
    cache and prompt_n the ones evaluated (upstream's meaning), across slots through the shared cache; with
    --cache-ram 0 a prefix no slot holds any more is not kept."""
    port = free_port()
    srv = Server(orun_bin, tmp_path, args=("llama-server", "--model", str(model_path("llama")), "--port", str(port),
                                           "-np", "2", "-c", str(2 * NUM_CTX), "-b", "100", "--cache-ram",
                                           str(cache_ram)), port=port)
    try:
        base = srv.base
        deadline = time.time() + 60
        while requests.get(base + "/health", timeout=5).status_code != 200:
            assert time.time() < deadline, srv.read_log()
            time.sleep(0.1)

        def tokenize(text):
            return requests.post(base + "/tokenize", json={"content": text}, timeout=30).json()["tokens"]

        def complete(prompt, n, slot, **extra):
            r = requests.post(base + "/completion", json={"prompt": prompt, "n_predict": n, "id_slot": slot,
                                                          "temperature": 0, "seed": 7, **extra}, timeout=300)
            assert r.status_code == 200, r.text
            return r.json()

        qa = PREFIX + " Once upon a time, in the library,"
        qb = PREFIX + " Question: when does the library open?\nAnswer: The library"
        ta, tb = tokenize(qa), tokenize(qb)
        shared_len = next(i for i, (x, y) in enumerate(zip(ta, tb)) if x != y)
        a = complete(qa, 8, 0)
        assert a["id_slot"] == 0 and a["timings"]["cache_n"] == 0 and a["timings"]["prompt_n"] == len(ta)
        # slot 0 moves on to something else: the prefix's blocks are no slot's any more
        other = complete("The capital of France is", 4, 0)
        assert other["id_slot"] == 0
        b = complete(qb, 16, 1)
        t = b["timings"]
        assert b["id_slot"] == 1 and t["cache_n"] + t["prompt_n"] == len(tb), t
        assert t["cache_n"] == (full_blocks(shared_len) if cache_ram else 0), (t, shared_len)
        fresh_b = complete(qb, 16, 1, cache_prompt=False)
        assert fresh_b["timings"]["cache_n"] == 0 and fresh_b["content"] == b["content"]
        # the OpenAI face reports the same count as usage.prompt_tokens_details.cached_tokens
        r = requests.post(base + "/v1/chat/completions", json={"messages": [{"role": "user", "content": qb}],
                                                               "max_tokens": 2, "temperature": 0}, timeout=300).json()
        assert r["usage"]["prompt_tokens_details"]["cached_tokens"] == r["timings"]["cache_n"]
        # a slot this server does not have
        bad = requests.post(base + "/completion", json={"prompt": "Hi", "n_predict": 1, "id_slot": 2}, timeout=30)
        assert bad.status_code == 400 and "id_slot" in bad.text
        # streamed chunks carry the slot too
        with requests.post(base + "/completion", json={"prompt": "Hi", "n_predict": 3, "id_slot": 1, "stream": True},
                           stream=True, timeout=60) as resp:
            events = [json.loads(line[6:]) for line in resp.iter_lines() if line.startswith(b"data: ")]
        assert events and all(e["id_slot"] == 1 for e in events), events
    finally:
        srv.stop()
