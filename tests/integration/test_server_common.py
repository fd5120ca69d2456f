"""Helpers for the `orun serve` integration tests: start a live server on a free loopback port with a
temporary OLLAMA_MODELS, wait until it answers, stop it, and put the small real model into its store through
the API (blob upload + /api/create) with the library's qwen2.5-coder template.

Kept free of tests: the test_server_*.py files import it.
"""
import os
import pathlib
import re
import signal
import socket
import subprocess
import time

import pytest
import requests

from conftest import model_path, shared_path


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    """A running `orun serve` (or `orun llama-server`) child process."""

    def __init__(self, orun_bin, tmp, env_extra=None, args=("serve",), port=None):
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.models = pathlib.Path(tmp) / "models"
        self.log_path = pathlib.Path(tmp) / f"serve-{self.port}.log"
        env = dict(os.environ)
        env.update(
            OLLAMA_HOST=f"127.0.0.1:{self.port}",
            OLLAMA_MODELS=str(self.models),
            OLLAMA_KEEP_ALIVE="5m",
        )
        env.pop("OLLAMA_ORIGINS", None)
        env.update(env_extra or {})
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([orun_bin, *args], env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"orun {args[0]} exited with {self.proc.returncode}:\n{self.read_log()}")
            try:
                requests.get(self.base + "/", timeout=0.5)
                return
            except requests.RequestException:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"orun {args[0]} did not answer within 30 s:\n{self.read_log()}")

    def read_log(self):
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def qwen_modelfile_parts():
    """TEMPLATE and SYSTEM of the library's qwen2.5-coder Modelfile (../shared/testdata)."""
    text = shared_path("testdata/library-modelfiles/qwen-25-coder.Modelfile").read_text()
    template = re.search(r'TEMPLATE """(.*?)"""', text, re.S).group(1)
    system = re.search(r'SYSTEM """(.*?)"""', text, re.S).group(1)
    return template, system


def create_qwen(client, name="qwen2"):
    """Uploads the qwen2 test model as a blob and creates `name` from it; returns the progress list."""
    path = model_path("qwen2")
    digest = client.create_blob(path)
    template, system = qwen_modelfile_parts()
    progress = list(
        client.create(
            model=name,
            files={"model.gguf": digest},
            template=template,
            system=system,
            parameters={"stop": ["<|im_end|>", "<|endoftext|>"]},
            stream=True,
        )
    )
    return digest, progress


@pytest.fixture(scope="session")
def served(orun_bin, tmp_path_factory):
    """One server for the API tests, with the qwen2 model created as "qwen2" (shared by the session)."""
    import ollama

    srv = Server(orun_bin, tmp_path_factory.mktemp("serve"))
    try:
        client = ollama.Client(host=srv.base)
        digest, progress = create_qwen(client)
        srv.digest = digest
        srv.create_progress = progress
        yield srv
    finally:
        srv.stop()
