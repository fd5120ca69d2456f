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
