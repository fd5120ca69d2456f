"""Test helpers for the registry tests: Debian's docker-registry (the CNCF distribution registry) started on
loopback with a config of the test's own, and a fault-injecting HTTP proxy in front of it that can also
demand a bearer token (and serve one), reset or truncate blob bodies, corrupt them, throttle them, or answer
5xx. Nothing here is a test; test_registry.py uses it."""
import http.client
import http.server
import json
import os
import shutil
import socket
import struct
import subprocess
import threading
import time

import requests

REGISTRY_BIN = shutil.which("docker-registry") or "/usr/bin/docker-registry"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Registry:
    """`docker-registry serve CONFIG` with filesystem storage under tmp, plain http on 127.0.0.1."""

    def __init__(self, tmp, extra_yaml=""):
        self.port = free_port()
        self.root = tmp / "registry-data"
        self.root.mkdir(parents=True, exist_ok=True)
        cfg = tmp / "registry.yml"
        cfg.write_text(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n"
            f"storage:\n  filesystem:\n    rootdirectory: {self.root}\n  delete:\n    enabled: true\n"
            f"http:\n  addr: 127.0.0.1:{self.port}\n" + extra_yaml)
        self.log = open(tmp / "registry.log", "wb")
        self.proc = subprocess.Popen([REGISTRY_BIN, "serve", str(cfg)], stdout=self.log, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"docker-registry exited: {(tmp / 'registry.log').read_text()}")
            try:
                requests.get(self.base + "/v2/", timeout=0.5)
                return
            except requests.RequestException:
                time.sleep(0.05)
        raise RuntimeError("docker-registry did not answer")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-authorization",
       "proxy-authenticate"}


class FaultProxy:
    """An HTTP/1.1 proxy to upstream (host, port). Settings (change them between requests):
    token: a bearer token to demand (401 + a challenge pointing at this proxy's /token) or None;
    reset_after: a blob GET body is cut by a TCP reset after this many bytes (then the setting counts down
      `faults` times); truncate_after: the same, closed cleanly; corrupt: flip one byte of each blob body;
    rate: blob bytes per second (None = unlimited); fail5xx: answer that many requests with 503 first;
    redirect: blob GETs answer 307 to http://localhost:<port>/storage/... (another host name, as blob storage
    is), served without a token; storage_auth records the Authorization headers that arrived there.
    size_delta: added to the first layer's size in manifests (a manifest that lies about a blob).
    Counters: blob_bytes (blob body bytes sent), token_requests (the /token query strings), requests."""

    def __init__(self, upstream_port):
        self.upstream = ("127.0.0.1", upstream_port)
        self.token = None
        self.reset_after = self.truncate_after = None
        self.faults = 0
        self.corrupt = False
        self.rate = None
        self.fail5xx = 0
        self.redirect = False
        self.size_delta = 0
        self.storage_auth = []
        self.blob_bytes = 0
        self.token_requests = []
        self.requests = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_any(self):
                try:
                    proxy.handle(self)
                except OSError:  # the client went away (a killed pull): nothing to answer
                    self.close_connection = True

            do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = do_any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def _take_fault(self):
        with self.lock:
            if self.faults > 0:
                self.faults -= 1
                return True
            return False

    def handle(self, h):
        body = b""
        n = int(h.headers.get("Content-Length") or 0)
        if n:
            body = h.rfile.read(n)
        with self.lock:
            self.requests.append((h.command, h.path))
        if h.path.startswith("/token"):
            with self.lock:
                self.token_requests.append(h.path)
            out = json.dumps({"token": self.token or "", "expires_in": 300}).encode()
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(out)))
            h.end_headers()
            h.wfile.write(out)
            return
        storage = h.path.startswith("/storage/")
        if storage:
            with self.lock:
                self.storage_auth.append(h.headers.get("Authorization"))
            h.path = h.path[len("/storage"):]
        elif self.redirect and h.command == "GET" and "/blobs/sha256:" in h.path and (
                not self.token or h.headers.get("Authorization") == f"Bearer {self.token}"):
            h.send_response(307)
            h.send_header("Location", f"http://localhost:{self.port}/storage{h.path}")
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        if self.token and not storage and h.headers.get("Authorization") != f"Bearer {self.token}":
            parts = h.path.split("/")
            repo = "/".join(parts[2:4]) if len(parts) > 4 else ""
            action = "pull" if h.command in ("GET", "HEAD") else "pull,push"
            out = b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}'
            h.send_response(401)
            h.send_header("WWW-Authenticate", f'Bearer realm="http://127.0.0.1:{self.port}/token",'
                          f'service="test-registry",scope="repository:{repo}:{action}"')
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(out)))
            h.end_headers()
            h.wfile.write(out)
            return
        with self.lock:
            fail = self.fail5xx > 0
            if fail:
                self.fail5xx -= 1
        if fail:
            h.send_response(503)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        conn = http.client.HTTPConnection(*self.upstream, timeout=60)
        headers = {k: v for k, v in h.headers.items() if k.lower() not in HOP and k.lower() != "authorization"}
        conn.request(h.command, h.path, body=body if (n or h.command in ("PUT", "POST", "PATCH")) else None,
                     headers=headers)
        r = conn.getresponse()
        is_blob = h.command == "GET" and "/blobs/sha256:" in h.path and r.status in (200, 206)
        if self.size_delta and h.command == "GET" and "/manifests/" in h.path and r.status == 200:
            m = json.loads(r.read())
            m["layers"][0]["size"] += self.size_delta
            out = json.dumps(m).encode()
            h.send_response(200)
            h.send_header("Content-Type", r.getheader("Content-Type"))
            h.send_header("Content-Length", str(len(out)))
            h.end_headers()
            h.wfile.write(out)
            conn.close()
            return
        h.send_response(r.status)
        length = r.getheader("Content-Length")
        for k, v in r.getheaders():
            if k.lower() not in HOP:
                h.send_header(k, v)
        if length is None and h.command != "HEAD":
            h.send_header("Connection", "close")
        h.end_headers()
        if h.command == "HEAD":
            conn.close()
            return
        cut = None
        reset = False
        if is_blob and (self.reset_after is not None or self.truncate_after is not None) and self._take_fault():
            cut = self.reset_after if self.reset_after is not None else self.truncate_after
            reset = self.reset_after is not None
        sent = 0
        flipped = False
        t0 = time.time()
        while True:
            chunk = r.read(65536)
            if not chunk:
                break
            if cut is not None and sent + len(chunk) > cut:
                chunk = chunk[:max(0, cut - sent)]
                h.wfile.write(chunk)
                h.wfile.flush()
                with self.lock:
                    self.blob_bytes += len(chunk)
                if reset:
                    h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                h.close_connection = True
                h.connection.close()
                conn.close()
                return
            if is_blob and self.corrupt and not flipped:
                chunk = bytes([chunk[0] ^ 0xFF]) + chunk[1:]
                flipped = True
            try:
                h.wfile.write(chunk)
            except OSError:
                conn.close()
                return
            sent += len(chunk)
            if is_blob:
                with self.lock:
                    self.blob_bytes += len(chunk)
                if self.rate:
                    ahead = sent / self.rate - (time.time() - t0)
                    if ahead > 0:
                        time.sleep(ahead)
        conn.close()
        if length is None:
            h.close_connection = True


def b64url(b):
    import base64
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


class TokenServer:
    """A token server for docker-registry's `auth: token` (the distribution token spec): a self-signed RSA
    certificate made with the openssl CLI, JWTs signed RS256 (openssl dgst) carrying it in x5c, granting
    whatever scope is asked. `registry_yaml()` is the registry's auth section; `requests` records the
    query strings."""

    def __init__(self, tmp):
        self.key, self.cert = tmp / "token.key", tmp / "token.crt"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(self.key),
                        "-out", str(self.cert), "-days", "1", "-subj", "/CN=orun-test-token"],
                       check=True, capture_output=True)
        pem = self.cert.read_text().splitlines()
        self.x5c = "".join(l for l in pem if not l.startswith("-----"))
        self.requests = []
        ts = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                from urllib.parse import parse_qs, urlparse
                q = parse_qs(urlparse(self.path).query)
                ts.requests.append(self.path)
                out = json.dumps({"token": ts.token(q.get("service", [""])[0], q.get("scope", []))}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def token(self, service, scopes):
        access = []
        for s in scopes:
            parts = s.split(":")
            if len(parts) >= 3:
                access.append({"type": parts[0], "name": ":".join(parts[1:-1]), "actions": parts[-1].split(",")})
        now = int(time.time())
        head = {"alg": "RS256", "typ": "JWT", "x5c": [self.x5c]}
        claims = {"iss": "orun-test-issuer", "sub": "", "aud": service, "exp": now + 600, "nbf": now - 10,
                  "iat": now, "jti": os.urandom(8).hex(), "access": access}
        signing = b64url(json.dumps(head).encode()) + "." + b64url(json.dumps(claims).encode())
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", str(self.key)], input=signing.encode(),
                             capture_output=True, check=True).stdout
        return signing + "." + b64url(sig)

    def registry_yaml(self):
        return (f"auth:\n  token:\n    realm: http://127.0.0.1:{self.port}/token\n    service: orun-test-registry\n"
                f"    issuer: orun-test-issuer\n    rootcertbundle: {self.cert}\n")

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
