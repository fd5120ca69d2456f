"""Embeddings through `orun serve`: /api/embed, /api/embeddings and /v1/embeddings.

The test models are chat models; a model "can embed" for Ollama when its GGUF has <arch>.pooling_type. The
test therefore copies the small real llama model (SmolLM2-135M-Instruct) with one extra key,
llama.pooling_type = 1 (mean), using gguf-py's own copier — the weights and the computation are real; the
vectors are mean-pooled final hidden states, not a trained embedding model's. Checked: shapes, L2
normalization and `dimensions` (/api/embed), raw vectors (/api/embeddings), determinism, that a text is
closer to itself than to an unrelated one, truncation errors, the OpenAI list format, and that a chat model
refuses clearly.
"""
import math

import pytest
import requests

from conftest import model_path
from test_server_common import Server


def make_embedding_gguf(src, dst):
    import gguf
    from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

    reader = gguf.GGUFReader(str(src), "r")
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    writer = gguf.GGUFWriter(str(dst), arch=arch, endianess=reader.endianess)
    copy_with_new_metadata(reader, writer,
                           {f"{arch}.pooling_type": MetadataDetails(gguf.GGUFValueType.UINT32, 1)}, [])


@pytest.fixture(scope="module")
def emb_server(orun_bin, tmp_path_factory):
    import ollama

    tmp = tmp_path_factory.mktemp("embed")
    path = tmp / "smol-embed.gguf"
    make_embedding_gguf(model_path("llama"), path)
    srv = Server(orun_bin, tmp)
    try:
        c = ollama.Client(host=srv.base)
        digest = c.create_blob(path)
        list(c.create(model="smol-embed", files={"model.gguf": digest}, stream=True))
        yield srv
    finally:
        srv.stop()


def norm(v):
    return math.sqrt(sum(x * x for x in v))


def test_api_embed(emb_server):
    b = emb_server.base
    show = requests.post(b + "/api/show", json={"model": "smol-embed"}).json()
    assert show["capabilities"] == ["embedding"]
    r = requests.post(b + "/api/embed", json={"model": "smol-embed", "input": ["The cat sat on the mat.",
                                                                             "The cat sat on the mat.",
                                                                             "Quarterly revenue grew 7%."]})
    assert r.status_code == 200, r.text
    j = r.json()
    e = j["embeddings"]
    assert len(e) == 3 and len(e[0]) == 576
    assert all(abs(norm(v) - 1) < 1e-3 for v in e)
    assert e[0] == e[1]
    dot = lambda a, c: sum(x * y for x, y in zip(a, c))  # noqa: E731
    assert dot(e[0], e[1]) > dot(e[0], e[2])
    assert j["prompt_eval_count"] > 10 and j["total_duration"] > 0
    r = requests.post(b + "/api/embed", json={"model": "smol-embed", "input": "hello", "dimensions": 64})
    v = r.json()["embeddings"][0]
    assert len(v) == 64 and abs(norm(v) - 1) < 1e-3
    r = requests.post(b + "/api/embed", json={"model": "smol-embed", "input": []})
    assert r.json() == {"model": "smol-embed", "embeddings": []}
    r = requests.post(b + "/api/embed", json={"model": "smol-embed", "input": [1, 2]})
    assert r.status_code == 400 and r.json() == {"error": "invalid input type"}
    r = requests.post(b + "/api/embed", json={"model": "smol-embed", "input": "word " * 5000, "truncate": False,
                                              "options": {"num_ctx": 512}})
    assert r.status_code == 400 and r.json() == {"error": "the input length exceeds the context length"}
    r = requests.post(b + "/api/embed", json={"model": "smol-embed", "input": "word " * 5000,
                                              "options": {"num_ctx": 512}})
    assert r.status_code == 200 and r.json()["prompt_eval_count"] == 512


def test_legacy_and_openai(emb_server):
    b = emb_server.base
    r = requests.post(b + "/api/embeddings", json={"model": "smol-embed", "prompt": "hello"})
    raw = r.json()["embedding"]
    assert len(raw) == 576 and abs(norm(raw) - 1) > 1e-3  # not normalized
    assert requests.post(b + "/api/embeddings", json={"model": "smol-embed", "prompt": ""}).json() == {"embedding": []}
    import openai

    c = openai.OpenAI(base_url=b + "/v1", api_key="unused")
    out = c.embeddings.create(model="smol-embed", input=["a", "b"])
    assert [d.index for d in out.data] == [0, 1] and len(out.data[0].embedding) == 576
    assert out.usage.prompt_tokens > 0
    r = requests.post(b + "/v1/embeddings", json={"model": "smol-embed", "input": "x", "encoding_format": "hex"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    r = requests.post(b + "/api/chat", json={"model": "smol-embed", "messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 400 and r.json() == {"error": '"smol-embed" does not support chat'}
