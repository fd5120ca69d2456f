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
        assert r.status_code == 400 and r.json() == {"error": f"invalid model reference: {f}"}, (f, r.status_code, r.text[:300])
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
    r = requests.post(f"{b}/api/create", json={"name": "old", "modelfile": f"FROM @{digest}\nSYSTEM hi\n", "stream": False})
    assert (r.status_code, r.json()) == (200, {"status": "success"})
    r = requests.post(f"{b}/api/create", json={"name": "older", "modelfile": "FROM old\nSYSTEM bye\n", "stream": False})
    assert (r.status_code, r.json()) == (200, {"status": "success"})
    assert names(b) == ["old:latest", "older:latest"]
    assert requests.post(f"{b}/api/show", json={"model": "older"}).json()["system"] == "bye"
