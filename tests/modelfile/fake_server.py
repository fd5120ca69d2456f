#!/usr/bin/env python3
"""tests/modelfile/fake_server.py — a stand-in Ollama server for testing orun's client commands before (and
besides) `orun serve`: it answers the endpoints `create/show/list/cp/rm` use with Ollama's status codes and
bodies, verifies uploaded blobs against their digests like Ollama, and records every request (method, path,
headers, body) as one JSON line per request in the log file given on the command line. It prints the port
it listens on (loopback) and serves until killed."""
import hashlib
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = sys.argv[1]
BLOBS = {}


def log(entry):
    with open(LOG, "a") as f:
        f.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def send(self, status, body=b"", ctype="application/json; charset=utf-8"):
        self.send_response(status)
        if body:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, msg):
        self.send(status, json.dumps({"error": msg}).encode())

    def record(self, body):
        log({"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
             "body": body.decode("utf-8", "replace")})

    def do_HEAD(self):
        self.record(b"")
        if self.path == "/":
            return self.send(200, b"Ollama is running", "text/plain; charset=utf-8")
        if self.path.startswith("/api/blobs/"):
            digest = self.path[len("/api/blobs/"):]
            return self.send(200 if digest in BLOBS else 404)
        self.send(404)

    def do_GET(self):
        self.record(b"")
        if self.path == "/api/tags":
            models = json.load(open(os.environ["FAKE_TAGS"])) if os.environ.get("FAKE_TAGS") else {"models": []}
            return self.send(200, json.dumps(models).encode())
        self.send(404, b"404 page not found", "text/plain")

    def do_DELETE(self):
        body = self.body()
        self.record(body)
        req = json.loads(body or b"{}")
        name = req.get("model") or req.get("name")
        if self.path == "/api/delete":
            if name == "missing":
                return self.error(404, "model '%s' not found" % name)
            return self.send(200)
        self.send(404)

    def do_POST(self):
        body = self.body()
        self.record(body)
        if self.path.startswith("/api/blobs/"):
            digest = self.path[len("/api/blobs/"):]
            got = "sha256:" + hashlib.sha256(body).hexdigest()
            if got != digest:
                return self.error(400, 'digest mismatch, expected "%s", got "%s"' % (digest, got))
            BLOBS[digest] = len(body)
            return self.send(201)
        req = json.loads(body or b"{}")
        if self.path == "/api/create":
            name = req.get("model") or req.get("name")
            if name == "bad":
                return self.error(400, "neither 'from' or 'files' was specified")
            lines = [{"status": "parsing GGUF"}]
            for f, d in sorted((req.get("files") or {}).items()):
                if d not in BLOBS:
                    lines = [{"error": "open /models/blobs/%s: no such file or directory" % d.replace(":", "-")}]
                    break
                lines.append({"status": "using existing layer %s" % d})
            lines += [{"status": "quantizing F16 model to Q8_0", "digest": "0000000000000000000", "total": 100,
                       "completed": 50},
                      {"status": "writing manifest"}, {"status": "success"}]
            if lines[0].get("error"):
                lines = lines[:1]
            out = b"".join(json.dumps(l).encode() + b"\n" for l in lines)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            return self.wfile.write(out)
        if self.path == "/api/show":
            name = req.get("model") or req.get("name")
            if name == "missing":
                return self.error(404, "model '%s' not found" % name)
            resp = json.load(open(os.environ["FAKE_SHOW"]))
            return self.send(200, json.dumps(resp).encode())
        if self.path == "/api/copy":
            if req.get("source") == "missing":
                return self.error(404, 'model "%s" not found' % req["source"])
            return self.send(200)
        if self.path == "/api/generate":
            out = json.dumps({"model": req.get("model"), "created_at": "2026-01-01T00:00:00Z", "response": "",
                              "done": True, "done_reason": "unload"}).encode() + b"\n"
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            return self.wfile.write(out)
        self.send(404, b"404 page not found", "text/plain")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
