"""`orun serve`'s transport under hostile input (issue 20), over raw sockets:
- framing Go's net/http refuses (two different Content-Length, Content-Length with Transfer-Encoding, an
  unsupported Transfer-Encoding) is refused, and nothing after the headers is taken for another request.
"""
import socket

import pytest

from test_server_common import Server


def connect(port, source="127.0.0.1"):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s


def read_all(s, wait=2.0):
    """What arrives until the peer closes or `wait` s of silence; returns (bytes, closed)."""
    s.settimeout(wait)
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return out, True
            out += d
    except socket.timeout:
        return out, False
    except ConnectionResetError:
        return out, True


def exchange(port, raw, wait=2.0):
    s = connect(port)
    s.sendall(raw)
    out, closed = read_all(s, wait)
    s.close()
    return out, closed


def status(resp):
    return int(resp.split(b" ", 2)[1]) if resp.startswith(b"HTTP/1.") else 0


@pytest.fixture
def server(orun_bin, tmp_path, request):
    env = getattr(request, "param", {})
    srv = Server(orun_bin, tmp_path, env_extra={"OLLAMA_NOPRUNE": "1", **env})
    yield srv
    srv.stop()


# ------------------------------------------------------------------------------------------------ F1

def test_conflicting_content_length_is_refused(server):
    body = b'{"model":"x"}'
    smuggled = b"GET /api/tags HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    raw = (b"POST /api/show HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\nContent-Length: 2\r\n\r\n"
           % len(body)) + body + smuggled
    out, closed = exchange(server.port, raw)
    assert status(out) == 400, out
    assert out.endswith(b"400 Bad Request")
    assert out.count(b"HTTP/1.1 ") == 1, out  # the bytes after the headers were not read as a request
    assert closed


@pytest.mark.parametrize("headers,code", [
    (b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n", 400),
    (b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 501),
    (b"Transfer-Encoding: gzip\r\n", 501),
])
def test_ambiguous_framing_is_refused(server, headers, code):
    raw = b"POST /api/show HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + b"\r\nd\r\n{\"model\":\"x\"}\r\n0\r\n\r\n"
    out, closed = exchange(server.port, raw)
    assert status(out) == code, out
    assert closed


def test_same_content_length_twice_is_accepted(server):
    """Go accepts a repeated Content-Length with the same value."""
    body = b'{"model":"x"}'
    raw = (b"POST /api/show HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: %d\r\n"
           b"Content-Length: %d\r\n\r\n" % (len(body), len(body))) + body
    out, _ = exchange(server.port, raw)
    assert status(out) == 404 and b"model 'x:latest' not found" in out, out
