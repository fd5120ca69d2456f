"""orun pull / orun push and /api/pull, /api/push against a real registry on loopback: Debian's
docker-registry (skipped when it is not installed: tools/install-deps installs it), reached directly or
through registry_util.FaultProxy (bearer-token challenge, resets, truncated and corrupted bodies, 5xx, a
slow link). A round trip create → push → rm → pull gives back the same manifest and blobs, and the pulled
model chats; a pull killed with the server (kill -9) at random points resumes to the same store."""
import hashlib
import json
import os
import random
import signal
import subprocess
import time

import pytest
import requests

from conftest import model_path
from registry_util import REGISTRY_BIN, FaultProxy, Registry
from test_server_common import Server

pytestmark = pytest.mark.skipif(not os.path.exists(REGISTRY_BIN), reason="docker-registry is not installed "
                                "(tools/install-deps)")

KILLS = int(os.environ.get("ORUN_REGISTRY_KILLS", "20"))  # kill -9 of the server mid-pull, each resumed


def sha256_file(p):
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return "sha256:" + h.hexdigest()


def manifest_path(models, host, ns, model, tag):
    return models / "manifests" / host / ns / model / tag


def store_state(models, mpath):
    """The manifest bytes and, for each layer, whether its blob is there with the right digest."""
    raw = mpath.read_bytes()
    m = json.loads(raw)
    layers = m["layers"] + [m["config"]]
    blobs = {}
    for l in layers:
        p = models / "blobs" / l["digest"].replace(":", "-")
        blobs[l["digest"]] = p.exists() and p.stat().st_size == l["size"] and sha256_file(p) == l["digest"]
    return raw, blobs


def partials(models):
    return sorted(p.name for p in (models / "blobs").iterdir() if "-partial" in p.name)


@pytest.fixture(scope="module")
def env(orun_bin, tmp_path_factory):
    """A registry with the small llama model pushed to it under test/smol:v1, the reference manifest, and a
    fresh server per test (its own store)."""
    tmp = tmp_path_factory.mktemp("registry")
    reg = Registry(tmp)
    (tmp / "src").mkdir()
    src = Server(orun_bin, tmp / "src")
    cli_env = dict(os.environ, OLLAMA_HOST=f"127.0.0.1:{src.port}")
    mf = tmp / "Modelfile"
    mf.write_text(f"FROM {model_path('llama')}\nPARAMETER temperature 0\n")
    p = subprocess.run([orun_bin, "create", "smol", "-f", str(mf)], env=cli_env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    name = f"127.0.0.1:{reg.port}/test/smol:v1"
    p = subprocess.run([orun_bin, "cp", "smol", name], env=cli_env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([orun_bin, "push", name, "--insecure"], env=cli_env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0 and "success" in p.stderr, p.stdout + p.stderr
    ref_manifest = manifest_path(src.models, "registry.ollama.ai", "library", "smol", "latest")
    ref = store_state(src.models, ref_manifest)
    state = {"tmp": tmp, "reg": reg, "src": src, "ref": ref, "name": name, "push_out": p.stderr, "n": 0}
    yield state
    src.stop()
    reg.stop()


def fresh_server(orun_bin, env, extra=None):
    env["n"] += 1
    tmp = env["tmp"] / f"dst{env['n']}"
    tmp.mkdir()
    return Server(orun_bin, tmp, env_extra=extra)


def pull_cli(orun_bin, srv, name, check=True):
    p = subprocess.run([orun_bin, "pull", name, "--insecure"], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, OLLAMA_HOST=f"127.0.0.1:{srv.port}"))
    if check:
        assert p.returncode == 0, p.stdout + p.stderr
    return p


def test_push_progress_and_registry_content(env):
    out = env["push_out"]
    assert "retrieving manifest" in out and "pushing manifest" in out and "success" in out
    assert "pushing " in out and "100%" in out
    raw, _ = env["ref"]
    reg = env["reg"]
    r = requests.get(f"{reg.base}/v2/test/smol/manifests/v1",
                     headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json"})
    assert r.status_code == 200 and r.content == raw


def test_round_trip_pull_and_chat(orun_bin, env):
    src = env["src"]
    cli_env = dict(os.environ, OLLAMA_HOST=f"127.0.0.1:{src.port}")
    # a second push skips every blob (HEAD) and still succeeds
    p = subprocess.run([orun_bin, "push", env["name"], "--insecure"], env=cli_env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    # rm the pushed name and the original: the blobs go, then pull brings them back
    for n in (env["name"], "smol"):
        p = subprocess.run([orun_bin, "rm", n], env=cli_env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
    assert not any(b.name.startswith("sha256-") for b in (src.models / "blobs").iterdir())
    p = pull_cli(orun_bin, src, env["name"])
    assert "pulling manifest" in p.stderr and "verifying sha256 digest" in p.stderr
    assert "writing manifest" in p.stderr and "success" in p.stderr
    host = f"127.0.0.1:{env['reg'].port}"
    raw, blobs = store_state(src.models, manifest_path(src.models, host, "test", "smol", "v1"))
    assert raw == env["ref"][0] and all(blobs.values()), blobs
    assert partials(src.models) == []
    r = requests.post(f"{src.base}/api/chat", json={
        "model": env["name"], "messages": [{"role": "user", "content": "Say hi"}], "stream": False,
        "options": {"num_predict": 4, "temperature": 0}}, timeout=300)
    assert r.status_code == 200, r.text
    assert r.json()["message"]["role"] == "assistant" and r.json()["done"]


def test_api_pull_statuses_and_stream_false(orun_bin, env):
    srv = fresh_server(orun_bin, env)
    try:
        r = requests.post(f"{srv.base}/api/pull", json={"model": env["name"], "insecure": True}, stream=True,
                          timeout=300)
        assert r.status_code == 200 and r.headers["Content-Type"].startswith("application/x-ndjson")
        lines = [json.loads(l) for l in r.iter_lines() if l]
        statuses = [l["status"] for l in lines]
        assert statuses[0] == "pulling manifest" and statuses[-1] == "success"
        layers = [l for l in lines if l["status"].startswith("pulling ") and "digest" in l]
        assert layers and all(l["status"] == "pulling " + l["digest"][7:19] for l in layers)
        assert any(l.get("completed") == l["total"] for l in layers)
        assert statuses.index("verifying sha256 digest") < statuses.index("writing manifest") < len(statuses) - 1
        # again, stream false: one object at the end; every layer is present already
        r = requests.post(f"{srv.base}/api/pull", json={"model": env["name"], "insecure": True, "stream": False},
                          timeout=300)
        assert r.status_code == 200 and r.json() == {"status": "success"}
        # errors: unknown tag (404 as Ollama's text), http without insecure, invalid name
        r = requests.post(f"{srv.base}/api/pull", json={"model": env["name"].replace(":v1", ":nope"),
                                                        "insecure": True, "stream": False}, timeout=60)
        assert r.status_code == 404 and "file does not exist" in r.json()["error"]
        r = requests.post(f"{srv.base}/api/pull", json={"model": "http://" + env["name"], "stream": False}, timeout=60)
        assert r.status_code == 400 and "insecure protocol http" in r.json()["error"]
        r = requests.post(f"{srv.base}/api/pull", json={"model": "a//b"}, timeout=60)
        assert r.status_code == 400 and r.json()["error"] == "invalid model name"
        # /api/push of a model that is not there
        r = requests.post(f"{srv.base}/api/push", json={"model": "127.0.0.1:1/x/y:z", "insecure": True,
                                                        "stream": False}, timeout=60)
        assert r.status_code == 404 and "not found" in r.json()["error"]
    finally:
        srv.stop()


def with_proxy(env):
    proxy = FaultProxy(env["reg"].port)
    return proxy, env["name"].replace(f":{env['reg'].port}/", f":{proxy.port}/")


def check_pulled(srv, env, proxy):
    host = f"127.0.0.1:{proxy.port}"
    raw, blobs = store_state(srv.models, manifest_path(srv.models, host, "test", "smol", "v1"))
    assert raw == env["ref"][0] and all(blobs.values()), blobs
    assert partials(srv.models) == []


def test_bearer_token_challenge_and_redirect(orun_bin, env):
    proxy, name = with_proxy(env)
    proxy.token = "tok-123"
    proxy.redirect = True
    srv = fresh_server(orun_bin, env)
    try:
        pull_cli(orun_bin, srv, name)
        check_pulled(srv, env, proxy)
        assert proxy.token_requests, "no token was fetched"
        q = proxy.token_requests[0]
        assert "service=test-registry" in q and "scope=repository%3Atest%2Fsmol%3Apull" in q
        # the blobs came from "storage" on another host name, which never saw the registry's token
        assert proxy.storage_auth and all(a is None for a in proxy.storage_auth), proxy.storage_auth
    finally:
        srv.stop()
        proxy.stop()


@pytest.mark.parametrize("fault", ["reset", "truncate", "5xx"])
def test_faults_are_retried(orun_bin, env, fault):
    proxy, name = with_proxy(env)
    if fault == "reset":
        proxy.reset_after, proxy.faults = 3 << 20, 3
    elif fault == "truncate":
        proxy.truncate_after, proxy.faults = 5 << 20, 2
    else:
        proxy.fail5xx = 3
    srv = fresh_server(orun_bin, env)
    try:
        pull_cli(orun_bin, srv, name)
        check_pulled(srv, env, proxy)
        assert proxy.faults == 0 and proxy.fail5xx == 0
    finally:
        srv.stop()
        proxy.stop()


def test_wrong_digest_is_reported_and_leaves_no_manifest(orun_bin, env):
    proxy, name = with_proxy(env)
    proxy.corrupt = True
    srv = fresh_server(orun_bin, env)
    try:
        p = pull_cli(orun_bin, srv, name, check=False)
        assert p.returncode == 1 and "digest mismatch" in p.stderr, p.stderr
        assert not (srv.models / "manifests" / f"127.0.0.1:{proxy.port}").exists()
        assert partials(srv.models) == []
        proxy.corrupt = False  # the next pull fetches it again and succeeds
        pull_cli(orun_bin, srv, name)
        check_pulled(srv, env, proxy)
    finally:
        srv.stop()
        proxy.stop()


def test_disk_full_is_a_clear_error(orun_bin, env, tmp_path):
    """A file-size limit (ulimit -f, SIGXFSZ ignored) stands in for a full disk: the layer cannot be reserved."""
    env["n"] += 1
    tmp = env["tmp"] / f"dst{env['n']}"
    tmp.mkdir()
    wrapper = tmp / "orun-limited"
    wrapper.write_text(f"#!/bin/bash\ntrap '' XFSZ\nulimit -f 20000\nexec {orun_bin} \"$@\"\n")
    wrapper.chmod(0o755)
    srv = Server(str(wrapper), tmp)
    try:
        p = pull_cli(orun_bin, srv, env["name"], check=False)
        assert p.returncode == 1 and "cannot reserve" in p.stderr, p.stderr
        assert not (srv.models / "manifests" / f"127.0.0.1:{env['reg'].port}").exists()
        assert partials(srv.models) == []
    finally:
        srv.stop()


def test_pull_killed_at_random_points_resumes(orun_bin, env):
    proxy, name = with_proxy(env)
    rng = random.Random(18)
    env["n"] += 1
    tmp = env["tmp"] / f"dst{env['n']}"
    tmp.mkdir()
    total = sum(json.loads(env["ref"][0])["config"]["size"] for _ in [0]) + sum(
        l["size"] for l in json.loads(env["ref"][0])["layers"])
    # a slow link, so that the kills land all through the model layer (about 0.5 s of transfer each; the
    # rate is per connection and a layer is fetched over 4)
    proxy.rate = max(1 << 20, int(total / (KILLS * 0.5 * 4)))
    kills = 0
    try:
        for i in range(KILLS):
            srv = Server(orun_bin, tmp)
            cli = subprocess.Popen([orun_bin, "pull", name, "--insecure"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, env=dict(os.environ, OLLAMA_HOST=f"127.0.0.1:{srv.port}"))
            time.sleep(rng.uniform(0.1, 0.8))
            srv.proc.send_signal(signal.SIGKILL)
            srv.proc.wait()
            srv.log.close()
            cli.wait(timeout=30)
            kills += 1
            # the store is valid after every kill: no manifest, or one whose blobs are all there
            mp = manifest_path(srv.models, f"127.0.0.1:{proxy.port}", "test", "smol", "v1")
            if mp.exists():
                assert all(store_state(srv.models, mp)[1].values())
                break
        srv = Server(orun_bin, tmp)
        try:
            pull_cli(orun_bin, srv, name)
            check_pulled(srv, env, proxy)
        finally:
            srv.stop()
        again = proxy.blob_bytes - total
        print(f"kills={kills} blob bytes sent={proxy.blob_bytes} model={total} re-sent={again}")
        # at most one chunk (RG_CHUNK_SIZE, 16 MiB) per kill: a resume starts from what the record says
        assert again <= kills * (16 << 20)
    finally:
        proxy.stop()


def test_pull_stops_when_its_client_leaves_and_resumes(orun_bin, env):
    proxy, name = with_proxy(env)
    proxy.rate = 16 << 20
    srv = fresh_server(orun_bin, env)
    try:
        r = requests.post(f"{srv.base}/api/pull", json={"model": name, "insecure": True}, stream=True, timeout=60)
        for line in r.iter_lines():
            if line and b'"completed"' in line and json.loads(line).get("completed", 0) > (8 << 20):
                break
        r.close()
        deadline = time.time() + 20
        while time.time() < deadline and "cancelled" not in srv.read_log():
            time.sleep(0.1)
        assert "pull " + name + " cancelled" in srv.read_log()
        assert partials(srv.models), "the partial layer was not kept for the next pull"
        sent = proxy.blob_bytes
        time.sleep(1)
        assert proxy.blob_bytes - sent < (4 << 20), "the transfer went on after the client left"
        proxy.rate = None
        pull_cli(orun_bin, srv, name)
        check_pulled(srv, env, proxy)
    finally:
        srv.stop()
        proxy.stop()


def test_token_auth_registry_push_and_pull(orun_bin, env):
    """docker-registry itself configured with `auth: token` and the test's token server: push and pull both
    answer its challenges."""
    from registry_util import TokenServer
    tmp = env["tmp"] / "token"
    tmp.mkdir()
    ts = TokenServer(tmp)
    reg = Registry(tmp, extra_yaml=ts.registry_yaml())
    try:
        assert requests.get(reg.base + "/v2/").status_code == 401
        src = env["src"]
        pull_cli(orun_bin, src, env["name"])  # present whatever ran before (the round trip removes it for a while)
        name = f"127.0.0.1:{reg.port}/auth/smol:v1"
        cli_env = dict(os.environ, OLLAMA_HOST=f"127.0.0.1:{src.port}")
        p = subprocess.run([orun_bin, "cp", env["name"], name], env=cli_env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        p = subprocess.run([orun_bin, "push", name, "--insecure"], env=cli_env, capture_output=True, text=True,
                           timeout=300)
        assert p.returncode == 0 and "success" in p.stderr, p.stderr
        # the uploads asked for a push scope (the registry lists the actions in either order)
        assert any("scope=repository%3Aauth%2Fsmol%3A" in q and "push" in q for q in ts.requests), ts.requests
        srv = fresh_server(orun_bin, env)
        try:
            pull_cli(orun_bin, srv, name)
            raw, blobs = store_state(srv.models, manifest_path(srv.models, f"127.0.0.1:{reg.port}", "auth", "smol", "v1"))
            assert raw == env["ref"][0] and all(blobs.values())
        finally:
            srv.stop()
    finally:
        reg.stop()
        ts.stop()


@pytest.mark.parametrize("delta", [-1, 1])
def test_blob_size_is_checked_against_the_manifest(orun_bin, env, delta):
    proxy, name = with_proxy(env)
    proxy.size_delta = delta
    srv = fresh_server(orun_bin, env)
    try:
        p = pull_cli(orun_bin, srv, name, check=False)
        assert p.returncode == 1 and "where the manifest says" in p.stderr, p.stderr
        assert not (srv.models / "manifests" / f"127.0.0.1:{proxy.port}").exists()
    finally:
        srv.stop()
        proxy.stop()


def test_server_stop_cancels_a_pull_that_resumes_after_restart(orun_bin, env):
    proxy, name = with_proxy(env)
    proxy.rate = 16 << 20
    env["n"] += 1
    tmp = env["tmp"] / f"dst{env['n']}"
    tmp.mkdir()
    srv = Server(orun_bin, tmp)
    try:
        r = requests.post(f"{srv.base}/api/pull", json={"model": name, "insecure": True}, stream=True, timeout=60)
        for line in r.iter_lines():
            if line and json.loads(line).get("completed", 0) > (8 << 20):
                break
        t = time.time()
        srv.stop()  # SIGTERM
        assert time.time() - t < 15 and srv.proc.returncode == 0
        assert "cancelled" in srv.read_log() and partials(srv.models)
    finally:
        r.close()
    proxy.rate = None
    srv = Server(orun_bin, tmp)
    try:
        pull_cli(orun_bin, srv, name)
        check_pulled(srv, env, proxy)
    finally:
        srv.stop()
        proxy.stop()
