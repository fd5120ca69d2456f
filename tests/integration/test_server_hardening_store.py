"""Hostile and unlucky requests against the model store of a live `orun serve` (issue 20): names with a NUL
inside, the legacy server-side file fields of /api/create, creates that never end or whose client leaves,
deletes racing creates that share blobs, and the temporary files of interrupted creates.

Each test starts its own server on a temporary OLLAMA_MODELS, with the small SmolLM2 model uploaded as a
blob where a model is needed."""
import fcntl
import hashlib
import json
import os
import signal
import socket
import subprocess
import threading
import time

import pytest
import requests

from conftest import model_path
from test_server_common import Server


def upload(base, path):
    """Uploads a file as a blob; returns its digest."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    digest = "sha256:" + h.hexdigest()
    with open(path, "rb") as f:
        r = requests.post(f"{base}/api/blobs/{digest}", data=f, timeout=120)
    assert r.status_code in (200, 201), r.text
    return digest


def names(base):
    return sorted(m["name"] for m in requests.get(f"{base}/api/tags", timeout=30).json()["models"])


@pytest.fixture
def srv(orun_bin, tmp_path):
    s = Server(orun_bin, tmp_path)
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def smol(srv):
    """The server with SmolLM2 uploaded as a blob and created as "smol"."""
    srv.blob = upload(srv.base, model_path("llama"))
    r = requests.post(f"{srv.base}/api/create", json={"model": "smol", "files": {"m.gguf": srv.blob}, "stream": False},
                      timeout=120)
    assert r.status_code == 200, r.text
    return srv


# ---------------------------------------------------------------------------------------------------------
# F4: a NUL inside a model name is an invalid name everywhere a name enters, as in Ollama (Go strings keep
# the NUL; a C string would end there and name another model)


def test_nul_in_names(smol):
    b = smol.base
    nul = "nulname\u0000evil"
    r = requests.post(f"{b}/api/create", json={"model": nul, "files": {"m.gguf": smol.blob}, "stream": False})
    assert (r.status_code, r.json()) == (400, {"error": "invalid model name"})
    r = requests.post(f"{b}/api/create", json={"model": "x", "from": "smol\u0000evil", "stream": False})
    assert (r.status_code, r.json()) == (400, {"error": "invalid model name"})
    assert names(b) == ["smol:latest"]

    r = requests.delete(f"{b}/api/delete", json={"model": "smol\u0000evil"})
    assert (r.status_code, r.json()) == (400, {"error": 'name "smol\\x00evil" is invalid'})
    r = requests.post(f"{b}/api/copy", json={"source": "smol\u0000", "destination": "other"})
    assert (r.status_code, r.json()) == (400, {"error": 'source "smol\\x00" is invalid'})
    r = requests.post(f"{b}/api/copy", json={"source": "smol", "destination": "a\u0000b"})
    assert (r.status_code, r.json()) == (400, {"error": 'destination "a\\x00b" is invalid'})
    r = requests.post(f"{b}/api/show", json={"model": "smol\u0000evil"})
    assert (r.status_code, r.json()) == (400, {"error": "invalid model name"})
    for verb in ("pull", "push"):
        r = requests.post(f"{b}/api/{verb}", json={"model": "smol\u0000evil"})
        assert (r.status_code, r.json()) == (400, {"error": "invalid model name"}), verb
    assert names(b) == ["smol:latest"]


# ---------------------------------------------------------------------------------------------------------
# F5, F9: the legacy fields of /api/create never read a file of the server. Ollama removed them in v0.5.5
# ("path" and "modelfile" are unknown fields there); orun keeps the "modelfile" text for model names and
# uploaded blobs (FROM @sha256:...), which read nothing, and refuses FROM <path> without looking at it.


def test_legacy_fields_read_no_server_file(srv, tmp_path):
    b = srv.base
    gguf = str(model_path("llama"))
    (tmp_path / "Modelfile").write_text(f"FROM {gguf}\n")
    for f in (gguf, "/etc/passwd", "/no/such/file", "/dev/zero", str(tmp_path)):
        t0 = time.time()
        r = requests.post(f"{b}/api/create", json={"model": "x", "modelfile": f"FROM {f}\n"}, timeout=30)
        assert time.time() - t0 < 10, f
        refused = {"error": f"invalid model reference: {f}"}
        assert r.status_code == 400 and r.json() == refused, (f, r.status_code, r.text[:300])
        r = requests.post(f"{b}/api/create", json={"model": "x", "modelfile": f"FROM smol\nADAPTER {f}\n"}, timeout=30)
        assert (r.status_code, r.json()) == (400, {"error": f"invalid model reference: {f}"}), f
        r = requests.post(f"{b}/api/create", json={"model": "x", "path": f}, timeout=30)
        assert (r.status_code, r.json()) == (400, {"error": "neither 'from' or 'files' was specified"}), f
    r = requests.post(f"{b}/api/create", json={"model": "x", "path": str(tmp_path / "Modelfile")}, timeout=30)
    assert (r.status_code, r.json()) == (400, {"error": "neither 'from' or 'files' was specified"})
    assert names(b) == []
    assert not list((srv.models / "blobs").iterdir()), "a server file was copied into the store"

    # what the legacy form still does: an uploaded blob, a model name
    digest = upload(b, gguf)
    r = requests.post(f"{b}/api/create", json={"name": "old", "modelfile": f"FROM @{digest}\nSYSTEM hi\n",
                                                "stream": False})
    assert (r.status_code, r.json()) == (200, {"status": "success"})
    r = requests.post(f"{b}/api/create", json={"name": "older", "modelfile": "FROM old\nSYSTEM bye\n", "stream": False})
    assert (r.status_code, r.json()) == (200, {"status": "success"})
    assert names(b) == ["old:latest", "older:latest"]
    assert requests.post(f"{b}/api/show", json={"model": "older"}).json()["system"] == "bye"


# ---------------------------------------------------------------------------------------------------------
# F6: a long create (here: quantizing an F16 model of ~0.9 GB, tens of seconds on two cores) stops when its
# client leaves, and SIGTERM stops the server in the middle of one.


@pytest.fixture(scope="module")
def big_f16(orun_bin, tmp_path_factory):
    out = tmp_path_factory.mktemp("big") / "big-f16.gguf"
    subprocess.run([orun_bin, "mkmodel", "-o", str(out), "--tokenizer", str(model_path("llama")), "--arch", "llama",
                    "--layers", "4", "--dim", "2048", "--heads", "16", "--kv-heads", "4", "--ff", "8192",
                    "--type", "F16"], check=True, capture_output=True, timeout=300)
    return out


def cpu_seconds(pid):
    """User + system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_quantize(base, digest):
    """Starts a quantizing create on a raw socket; returns the socket once the first quantize line came."""
    host, port = base.split("//")[1].split(":")
    body = json.dumps({"model": "q", "files": {"m.gguf": digest}, "quantize": "q4_K_M"}).encode()
    s = socket.create_connection((host, int(port)), timeout=120)
    s.sendall(b"POST /api/create HTTP/1.1\r\nHost: " + host.encode() + b"\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    seen = b""
    while b"quantizing" not in seen:
        chunk = s.recv(65536)
        assert chunk, seen.decode(errors="replace")
        seen += chunk
    return s


def orun_temps(models):
    """Files and folders under blobs/ that are not blobs (temporary files of a create or an upload)."""
    return [p.name for p in (models / "blobs").iterdir() if not p.name.startswith("sha256-") or len(p.name) != 71]


def test_create_stops_when_client_leaves(srv, big_f16):
    digest = upload(srv.base, big_f16)
    s = start_quantize(srv.base, digest)
    s.close()
    # the quantizer notices at its next tensor; give it a few seconds, then it must be idle
    deadline = time.time() + 20
    while time.time() < deadline:
        c0 = cpu_seconds(srv.proc.pid)
        time.sleep(1.0)
        if cpu_seconds(srv.proc.pid) - c0 < 0.1:
            break
    c0 = cpu_seconds(srv.proc.pid)
    time.sleep(2.0)
    busy = cpu_seconds(srv.proc.pid) - c0
    assert busy < 0.2, f"the server still works ({busy:.2f} s of CPU in 2 s) after the client left"
    assert orun_temps(srv.models) == []
    assert names(srv.base) == []
    assert "cancelled" in srv.read_log()


def test_sigterm_stops_a_create(srv, big_f16):
    digest = upload(srv.base, big_f16)
    s = start_quantize(srv.base, digest)
    t0 = time.time()
    srv.proc.send_signal(signal.SIGTERM)
    try:
        srv.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("SIGTERM did not stop the server within 20 s while a create ran")
    finally:
        s.close()
    assert time.time() - t0 < 20
    assert orun_temps(srv.models) == []


# ---------------------------------------------------------------------------------------------------------
# F7: a delete racing a create that shares blobs with the deleted model. The create may fail (its base went
# away under it), but a create that answers success must leave a manifest whose blobs all exist.


def manifest_blobs_missing(models, name):
    m = json.loads((models / "manifests" / "registry.ollama.ai" / "library" / name / "latest").read_text())
    return [l["digest"] for l in [m["config"], *m["layers"]]
            if not (models / "blobs" / l["digest"].replace(":", "-")).is_file()]


def test_delete_racing_create(smol):
    b, models = smol.base, smol.models
    gguf = model_path("llama")
    broken, ok, tries = [], 0, 12
    delays = [0.0, 0.0, 0.01, 0.01, 0.02, 0.02, 0.04, 0.04, 0.08, 0.08, 0.16, 0.16]
    for i in range(tries):
        # "smol" holds the GGUF blob and a system layer; "c<i>" reuses both, by digest or by FROM
        if "smol:latest" not in names(b):
            upload(b, gguf)
            r = requests.post(f"{b}/api/create", json={"model": "smol", "files": {"m.gguf": smol.blob},
                                                        "system": "shared", "stream": False})
            assert r.status_code == 200, r.text
        body = {"model": f"c{i}", "system": "shared", "stream": False}
        body.update({"files": {"m.gguf": smol.blob}} if i % 2 else {"from": "smol"})
        res = {}
        go = threading.Barrier(2)

        def create():
            go.wait()
            res["create"] = requests.post(f"{b}/api/create", json=body, timeout=120)

        def delete():
            go.wait()
            time.sleep(delays[i])  # so that either side may win
            res["delete"] = requests.delete(f"{b}/api/delete", json={"model": "smol"}, timeout=120)

        ts = [threading.Thread(target=create), threading.Thread(target=delete)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert res["delete"].status_code == 200, res["delete"].text
        if res["create"].status_code == 200:
            ok += 1
            missing = manifest_blobs_missing(models, f"c{i}")
            if missing:
                broken.append((f"c{i}", missing))
        requests.delete(f"{b}/api/delete", json={"model": f"c{i}"}, timeout=60)
    print(f"delete racing create: {ok} of {tries} creates succeeded, {len(broken)} of them broken")
    assert not broken, f"{len(broken)} of {ok} successful creates (of {tries}) point at removed blobs: {broken}"


def test_store_lock_excludes_other_processes(smol):
    """Another process (here: this test) holding <models>/.orun.lock keeps orun's delete waiting."""
    b = smol.base
    r = requests.post(f"{b}/api/copy", json={"source": "smol", "destination": "other"})
    assert r.status_code == 200, r.text
    with open(smol.models / ".orun.lock", "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        res = {}
        t = threading.Thread(target=lambda: res.update(r=requests.delete(f"{b}/api/delete", json={"model": "other"},
                                                                          timeout=60)))
        t.start()
        t.join(1.5)
        waited = t.is_alive()
        fcntl.flock(f, fcntl.LOCK_UN)
    t.join(30)
    assert waited, "the delete did not wait for the store lock held by another process"
    assert res["r"].status_code == 200
    assert names(b) == ["smol:latest"]


# ---------------------------------------------------------------------------------------------------------
# The temporary files of a create killed half-way are removed at the next start, whatever their age, unless
# another process holds them (it may be creating right now); they never show as models.


def test_temporaries_of_killed_create_removed_at_start(orun_bin, tmp_path, big_f16):
    srv = Server(orun_bin, tmp_path)
    try:
        digest = upload(srv.base, big_f16)
        s = start_quantize(srv.base, digest)
        time.sleep(1.0)
        srv.proc.kill()
        srv.proc.wait()
        s.close()
    finally:
        srv.stop()
    left = orun_temps(srv.models)
    assert left, "the killed create left nothing to clean up (the test did not kill it half-way)"
    # another process writing right now: its temporary file is held (flock), as orun's own writers hold theirs
    busy = srv.models / "blobs" / "orun-tmp-busy01"
    with open(busy, "wb") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(b"being written")
        f.flush()
        srv2 = Server(orun_bin, tmp_path)
        try:
            assert orun_temps(srv2.models) == ["orun-tmp-busy01"], f"left over after a start: {orun_temps(srv2.models)}"
            assert names(srv2.base) == []
            assert "temporary files of interrupted creates" in srv2.read_log()
        finally:
            srv2.stop()
    busy.unlink()


def test_nul_in_inference_names(smol):
    """chat, generate and the embeddings, native and OpenAI: a NUL makes the name invalid (issue 20, F4)."""
    b, nul = smol.base, "smol\u0000evil"
    native = [("/api/chat", {"messages": [{"role": "user", "content": "hi"}]}),
              ("/api/generate", {"prompt": "hi"}), ("/api/embed", {"input": "hi"}),
              ("/api/embeddings", {"prompt": "hi"})]
    for path, body in native:
        r = requests.post(b + path, json={"model": nul, "stream": False, "options": {"num_predict": 1}, **body},
                          timeout=120)
        assert (r.status_code, r.json()) == (400, {"error": "invalid model name"}), (path, r.status_code, r.text[:200])
    openai = [("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
              ("/v1/completions", {"prompt": "hi"}), ("/v1/embeddings", {"input": "hi"})]
    for path, body in openai:
        r = requests.post(b + path, json={"model": nul, "max_tokens": 1, **body}, timeout=120)
        assert r.status_code == 400 and r.json()["error"]["message"] == "invalid model name", (path, r.text[:200])
