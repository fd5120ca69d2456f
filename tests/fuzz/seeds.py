#!/usr/bin/env python3
"""tests/fuzz/seeds.py [CORPUS_DIR] — writes the hand-made seeds (seed-*) of the fuzz targets fuzz_http,
fuzz_api, fuzz_parsers, fuzz_manifest and fuzz_llamaserver into CORPUS_DIR/<target>/ (default: the corpus
folder beside this script). The inputs libFuzzer found (fuzz-*, crash-*, slow-*) are kept as files, not here.
"""
import json
import os
import sys

top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    d = os.path.join(top, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def req(method, path, headers=(), body=b""):
    head = "%s %s\n" % (method, path) + "".join("%s: %s\n" % h for h in headers) + "\n"
    return head.encode() + (body.encode() if isinstance(body, str) else body)


# ---- fuzz_http: the transport's decisions ------------------------------------------------------------------
H = ("Host", "localhost:11434")
http = {
    "tags": req("GET", "/api/tags", [H]),
    "head-root": req("HEAD", "/", [("Host", "127.0.0.1:11434")]),
    "foreign-origin": req("POST", "/api/chat", [H, ("Origin", "http://evil.example")], "{}"),
    "allowed-origin": req("POST", "/api/chat", [H, ("Origin", "http://localhost:3000")], "{}"),
    "same-origin": req("POST", "/api/generate", [("Host", "myhost:11434"), ("Origin", "http://myhost:11434")], "{}"),
    "preflight": req("OPTIONS", "/api/chat", [H, ("Origin", "app://obsidian.md"),
                                               ("Access-Control-Request-Method", "POST")]),
    "options-host": req("OPTIONS", "/api/tags", [("Host", "box.local")]),
    "trailing-slash-get": req("GET", "/api/tags/", [H]),
    "trailing-slash-post": req("POST", "/api/chat/", [H], "{}"),
    "blob-upload": req("POST", "/api/blobs/sha256:" + "ab" * 32, [H], "GGUF\x03\x00\x00\x00"),
    "blob-upload-refused": req("POST", "/api/blobs/sha256:00", [H], "FAIL and the rest"),
    "blob-head": req("HEAD", "/api/blobs/sha256:" + "00" * 32, [("Host", "[::1]:11434")]),
    "blob-nested": req("POST", "/api/blobs/a/b", [H], "x"),
    "model-param": req("GET", "/v1/models/llama3.2:1b", [("Host", "ollama.internal")]),
    "rebinding": req("GET", "/api/tags", [("Host", "attacker.example:11434")]),
    "rebinding-ip": req("GET", "/api/ps", [("Host", "8.8.8.8")]),
    "private-ip": req("GET", "/api/ps", [("Host", "192.168.1.20:11434")]),
    "v4-mapped": req("GET", "/api/version", [("Host", "[::ffff:127.0.0.1]:80")]),
    "no-host": req("GET", "/api/version"),
    "not-loopback": req("GET", "/api/tags", [("@loopback", "0"), ("Host", "attacker.example")]),
    "wrong-method": req("PUT", "/api/chat", [H], "{}"),
    "unknown-method": req("BREW", "/api/chat", [H]),
    "not-found": req("GET", "/api/nothing", [H]),
    "over-cap": req("POST", "/api/show", [H, ("@cap", "16")], '{"model":"a-long-name-past-the-cap"}'),
    "prompt-cap": req("POST", "/api/chat", [H, ("@cap", "16")], '{"model":"m","messages":[]}'),
    "origins-env": req("POST", "/api/chat", [H, ("@origins", "http://*.example.com, https://x.test"),
                                              ("Origin", "http://a.example.com")], "{}"),
    "origins-bad": req("GET", "/", [H, ("@origins", "ftp://nope,*a*b")]),
    "origins-star": req("GET", "/api/tags", [H, ("@origins", "*"), ("Origin", "null")]),
    "ollama-host": req("GET", "/", [H, ("@host", "https://[::1]:8080/base/path")]),
    "ollama-host-bad": req("GET", "/", [H, ("@host", "0.0.0.0:99999999")]),
    "metrics": req("GET", "/metrics", [("Host", "LOCALHOST")]),
    "delete": req("DELETE", "/api/delete", [H], '{"model":"x"}'),
}
for k, v in http.items():
    write("http", k, v)

# ---- fuzz_api: request bodies through the real handlers ---------------------------------------------------
tools = [{"type": "function", "function": {"name": "get_weather", "description": "w",
                                            "parameters": {"type": "object", "required": ["city"],
                                                           "properties": {"city": {"type": "string"}}}}}]
api = {
    "chat": ("/api/chat", {"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
    "chat-full": ("/api/chat", {"model": "m", "stream": False, "think": "high", "keep_alive": "10m",
                                "options": {"temperature": 0.2, "top_k": 5, "stop": ["x"], "num_ctx": 512,
                                            "num_predict": 8, "seed": 3, "mirostat": 1},
                                "tools": tools, "truncate": False, "shift": False,
                                "messages": [{"role": "system", "content": "s"},
                                             {"role": "user", "content": "weather?"},
                                             {"role": "assistant", "content": "", "thinking": "t",
                                              "tool_calls": [{"function": {"name": "get_weather",
                                                                           "arguments": {"city": "Paris"}}}]},
                                             {"role": "tool", "content": "sunny", "tool_name": "get_weather"}]}),
    "chat-think-bool": ("/api/chat", {"model": "p", "think": True, "messages": [{"role": "user", "content": "x"}]}),
    "chat-format": ("/api/chat", {"model": "m", "format": "json", "messages": [{"role": "user", "content": "x"}]}),
    "chat-images": ("/api/chat", {"model": "m", "messages": [{"role": "user", "content": "x", "images": ["aGk="]}]}),
    "chat-logprobs": ("/api/chat", {"model": "m", "logprobs": True, "top_logprobs": 3,
                                    "messages": [{"role": "user", "content": "x"}]}),
    "chat-unload": ("/api/chat", {"model": "m", "messages": [], "keep_alive": 0}),
    "chat-load": ("/api/chat", {"model": "m"}),
    "chat-bad-type": ("/api/chat", {"model": "m", "messages": "hi"}),
    "chat-bad-think": ("/api/chat", {"model": "m", "think": "very"}),
    "chat-bad-name": ("/api/chat", {"model": "bad name!", "messages": []}),
    "chat-nul-name": ("/api/chat", {"model": "m\u0000x", "messages": []}),
    "chat-no-model": ("/api/chat", {"messages": [{"role": "user", "content": "x"}]}),
    "chat-unknown": ("/api/chat", {"model": "nope:latest", "messages": [{"role": "user", "content": "x"}]}),
    "chat-bad-tools": ("/api/chat", {"model": "m", "tools": [{"type": 1}], "messages": []}),
    "chat-bad-options": ("/api/chat", {"model": "m", "options": {"temperature": "hot", "stop": 5},
                                       "messages": [{"role": "user", "content": "x"}]}),
    "chat-keep-alive-bad": ("/api/chat", {"model": "m", "keep_alive": "5 minutes", "messages": []}),
    "generate": ("/api/generate", {"model": "m", "prompt": "hi", "stream": False}),
    "generate-full": ("/api/generate", {"model": "m", "prompt": "hi", "suffix": "end", "system": "sys",
                                        "template": "{{ .System }} {{ .Prompt }}", "context": [1, 2, 3],
                                        "raw": False, "images": [], "keep_alive": -1,
                                        "options": {"num_keep": 2, "repeat_penalty": 1.1}}),
    "generate-raw": ("/api/generate", {"model": "p", "prompt": "x", "raw": True, "context": [1]}),
    "generate-bad-context": ("/api/generate", {"model": "m", "prompt": "x", "context": [1.5, "a"]}),
    "generate-unload": ("/api/generate", {"model": "p", "keep_alive": "0s"}),
    "generate-empty-model": ("/api/generate", {"model": "", "prompt": "x"}),
    "embed": ("/api/embed", {"model": "e", "input": ["a", "b"], "truncate": False, "dimensions": 8,
                             "keep_alive": "1m", "options": {"num_ctx": 64}}),
    "embed-string": ("/api/embed", {"model": "e", "input": "hello"}),
    "embed-empty": ("/api/embed", {"model": "e", "input": []}),
    "embed-chat-model": ("/api/embed", {"model": "m", "input": "x"}),
    "embed-bad": ("/api/embed", {"model": "e", "input": [1, 2]}),
    "embeddings": ("/api/embeddings", {"model": "e", "prompt": "x"}),
    "oai-chat": ("/v1/chat/completions", {
        "model": "m", "stream": True, "stream_options": {"include_usage": True}, "reasoning_effort": "high",
        "stop": ["x", "y"], "max_tokens": 5, "temperature": 0.5, "top_p": 0.9, "seed": 1,
        "frequency_penalty": 0.1, "presence_penalty": 0.2, "response_format": {"type": "json_object"},
        "tools": tools,
        "messages": [{"role": "system", "content": "s"},
                     {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "!"}]},
                     {"role": "assistant", "content": None, "reasoning": "r",
                      "tool_calls": [{"id": "call_1", "type": "function",
                                      "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
                     {"role": "tool", "tool_call_id": "call_1", "content": "cold"}]}),
    "oai-chat-image": ("/v1/chat/completions", {"model": "m", "messages": [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]}]}),
    "oai-chat-bad-args": ("/v1/chat/completions", {"model": "m", "messages": [
        {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "[1]"}}]}]}),
    "oai-chat-effort": ("/v1/chat/completions", {"model": "m", "reasoning": {"effort": "ultra"},
                                                 "messages": [{"role": "user", "content": "x"}]}),
    "oai-chat-bad-effort": ("/v1/chat/completions", {"model": "m", "reasoning_effort": "lots",
                                                     "messages": [{"role": "user", "content": "x"}]}),
    "oai-chat-empty": ("/v1/chat/completions", {"model": "m", "messages": []}),
    "oai-chat-content-num": ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": 5}]}),
    "oai-completions": ("/v1/completions", {"model": "m", "prompt": "x", "suffix": "y", "stop": "z",
                                            "logprobs": 2, "max_tokens": 3, "temperature": 1.5, "top_p": 0}),
    "oai-completions-bad-stop": ("/v1/completions", {"model": "p", "prompt": "x", "stop": ["a", 1, True]}),
    "oai-embeddings": ("/v1/embeddings", {"model": "e", "input": ["x", "y"], "encoding_format": "base64",
                                          "dimensions": 4}),
    "oai-embeddings-tokens": ("/v1/embeddings", {"model": "e", "input": [[1, 2, 3]]}),
    "show": ("/api/show", {"model": "m", "verbose": True}),
    "show-embed": ("/api/show", {"name": "e"}),
}
for k, (path, body) in api.items():
    write("api", k, req("POST", path, [H], json.dumps(body)))
for k, path in {"tags": "/api/tags", "models": "/v1/models", "model": "/v1/models/m", "model-missing":
                "/v1/models/zz", "ps": "/api/ps", "version": "/api/version"}.items():
    write("api", k, req("GET", path, [H]))
for k, body in {"empty-body": "", "null-body": "null", "array-body": "[]", "syntax": '{"model":',
                "deep": "[" * 200 + "]" * 200, "dup-keys": '{"model":"x","MODEL":"m","messages":[]}'}.items():
    write("api", k, req("POST", "/api/chat", [H], body))

# ---- fuzz_parsers: flags, seed, open 0xFF close 0xFF tag 0xFF 4 names 0xFF 3 stops 0xFF output -------------
F_THINK, F_TOOLS, F_STOP, F_PREFILL = 1, 2, 4, 8


def parsers(flags, seed, open_="<think>", close="</think>", tag="<tool_call>", names=("get_weather",),
            stops=("<|im_end|>",), text=""):
    names = list(names) + [""] * (4 - len(names))
    stops = list(stops) + [""] * (3 - len(stops))
    fields = [open_, close, tag] + names + stops
    return bytes([flags, seed]) + b"\xff".join(f.encode() for f in fields) + b"\xff" + text.encode()


par = {
    "think": parsers(F_THINK, 1, text="<think>\n  pondering </think>\n\nThe answer."),
    "think-prefill": parsers(F_THINK | F_PREFILL, 2, text="still thinking</think>done"),
    "think-none": parsers(F_THINK, 3, text="no tags here <think> later"),
    "think-partial": parsers(F_THINK, 4, text="  <thi"),
    "tools": parsers(F_TOOLS, 5, text='Sure.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
                                     '</tool_call>'),
    "tools-two": parsers(F_TOOLS, 6, names=("get_weather", "get_time"),
                         text='<tool_call>{"name":"get_time","arguments":{}}</tool_call><tool_call>'
                              '{"name":"get_weather","parameters":"{\\"city\\":1e3}"}</tool_call>'),
    "tools-brace": parsers(F_TOOLS, 7, tag="{", text='{"name":"get_weather","arguments":{"b":[1,{"z":1,"a":2}]}}'),
    "tools-bracket": parsers(F_TOOLS, 8, tag="[", text='[{"get_weather": {"city": "x"}}] trailing'),
    "tools-text-first": parsers(F_TOOLS, 9, tag="{", text='Hello {"name":"get_weather"}'),
    "tools-mistral": parsers(F_TOOLS, 10, tag="[TOOL_CALLS]", names=("f", "fn", "fnx"),
                             text='[TOOL_CALLS] [{"name": "fnx", "arguments": {"a": "\\u003c"}}]'),
    "stop": parsers(F_STOP, 11, stops=("<|im_end|>", "\n\n", "END"), text="one\ntwo<|im_e" + "nd|>three"),
    "stop-overlap": parsers(F_STOP, 12, stops=("abcd", "bc"), text="xxabcd"),
    "all": parsers(F_THINK | F_TOOLS | F_STOP, 13, stops=("<|im_end|>",),
                   text='<think>t</think>ok <tool_call>{"name":"get_weather","arguments":{"city":"Rome"}}'
                        '</tool_call><|im_end|>ignored'),
    "utf8": parsers(F_THINK | F_STOP, 14, open_="\u300cthink\u300d", close="\u300c/think\u300d",
                    stops=("\u3002",), text="\u3000\u300cthink\u300d\u601d\u300c/think\u300d\u2003\u7b54\u3002x"),
}
for k, v in par.items():
    write("parsers", k, v)

# ---- fuzz_manifest: manifest 0xFF config 0xFF params 0xFF messages 0xFF template 0xFF system 0xFF license ---
def layer(mt, key, size=10, **kw):
    d = {"mediaType": "application/vnd.ollama.image." + mt, "digest": key, "size": size}
    d.update(kw)
    return d


def manifest(layers, config=True):
    m = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
         "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "digest": "$C", "size": 10}
         if config else None, "layers": layers}
    return json.dumps(m)


cfg = json.dumps({"model_format": "gguf", "model_family": "llama", "model_families": ["llama"], "model_type": "8B",
                  "file_type": "Q4_K_M", "renderer": "", "parser": "", "capabilities": ["completion"],
                  "architecture": "amd64", "os": "linux", "context_length": 8192})


def manifest_input(man, config=cfg, params='{"stop":["<|eot_id|>"],"temperature":0.7,"num_ctx":4096}',
                   messages='[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]',
                   template="{{ if .System }}{{ .System }}\n{{ end }}{{ .Prompt }}", system="Be brief.",
                   license="MIT License"):
    return "\xff".join([man, config, params, messages, template, system, license]).encode("latin-1")


full = [layer("model", "$M", from_="/x"), layer("template", "$T"), layer("system", "$S"), layer("params", "$P"),
        layer("messages", "$G"), layer("license", "$L")]
for d in full:
    if "from_" in d:
        d["from"] = d.pop("from_")
man = {
    "full": manifest_input(manifest(full)),
    "minimal": manifest_input(manifest([layer("model", "$M")])),
    "no-config": manifest_input(manifest([layer("model", "$M")], config=False)),
    "layers-null": manifest_input(manifest(None)),
    "legacy-prompt": manifest_input(manifest([layer("model", "$M"), layer("prompt", "$T")])),
    "adapter-projector": manifest_input(manifest([layer("model", "$M"), layer("adapter", "$P"),
                                                  layer("projector", "$S"), layer("draft", "$L"),
                                                  layer("embed", "$G")])),
    "bad-digest": manifest_input(manifest([layer("model", "sha256:zz")])),
    "missing-blob": manifest_input(manifest([layer("template", "sha256:" + "0" * 64)])),
    "params-list": manifest_input(manifest([layer("model", "$M"), layer("params", "$P")]),
                                  params='{"stop":["a","b"],"num_gpu":1,"use_mmap":false,"top_p":0.5,"x":null}'),
    "params-bad": manifest_input(manifest([layer("params", "$P")]), params="[1,2]"),
    "messages-bad": manifest_input(manifest([layer("messages", "$G")]), messages='{"role":1}'),
    "template-bad": manifest_input(manifest([layer("model", "$M"), layer("template", "$T")]),
                                   template="{{ if .Tools }}{{ range"),
    "template-think": manifest_input(manifest([layer("model", "$M"), layer("template", "$T")]),
                                     template="{{ if .Think }}<think>{{ end }}{{ .Prompt }}{{ .Tools }}"),
    "config-bad": manifest_input(manifest([layer("model", "$M")]), config='{"model_format":1}'),
    "config-case": manifest_input(manifest([layer("model", "$M")]),
                                  config='{"MODEL_FORMAT":"gguf","Model_Families":null,"capabilities":["a"]}'),
    "big-sizes": manifest_input(json.dumps({"schemaVersion": 2, "config": {"digest": "$C", "size": 2**62},
                                            "layers": [layer("model", "$M", size=2**62),
                                                       layer("license", "$L", size=2**62)]})),
    "dup-layers": manifest_input(manifest([layer("model", "$M"), layer("model", "$M"), layer("system", "$S"),
                                           layer("system", "$T")])),
    "not-json": manifest_input("not a manifest"),
}
for k, v in man.items():
    write("manifest", k, v)

# ---- fuzz_llamaserver: one byte (endpoint % 5, template / 5 % 4, flags) then the body ---------------------
def ls(ep, tpl, body, flags=0):
    return bytes([(ep + 5 * tpl) | flags]) + (json.dumps(body) if not isinstance(body, str) else body).encode()


COMPLETION, CHAT, APPLY, TOKENIZE, DETOKENIZE = range(5)
lsd = {
    "completion": ls(COMPLETION, 0, {"prompt": "Hello", "n_predict": 8, "temperature": 0.2, "stop": ["\n"],
                                     "stream": True, "cache_prompt": False, "seed": 42, "top_k": 10}),
    "completion-ids": ls(COMPLETION, 0, {"prompt": [1, 2, 3], "n_keep": -1}, 0x80),
    "completion-object": ls(COMPLETION, 0, {"prompt": {"prompt_string": "x", "multimodal_data": []}}),
    "completion-mm": ls(COMPLETION, 0, {"prompt": {"prompt_string": "x", "multimodal_data": ["AA=="]}}),
    "completion-grammar": ls(COMPLETION, 0, {"prompt": "x", "grammar": "root ::= \"a\""}),
    "completion-probs": ls(COMPLETION, 0, {"prompt": "x", "n_probs": 2}),
    "completion-preserved": ls(COMPLETION, 0, {"prompt": "x", "n_probs": 99,
                                               "preserved_tokens": ["<|im_start|>", "a b", 7, "", "<|im_end|>"]}),
    "completion-bad-ids": ls(COMPLETION, 0, {"prompt": [1, -1, 2**40]}),
    "completion-empty": ls(COMPLETION, 0, {"prompt": ""}),
    "completion-huge": ls(COMPLETION, 0, {"prompt": "x", "top_k": 1e300, "seed": -1e300, "n_keep": 1e20,
                                          "repeat_last_n": -1e19, "n_predict": 1e30}, 0x40),
    "chat": ls(CHAT, 0, {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}],
                         "max_tokens": 4, "stop": "x"}),
    "chat-parts": ls(CHAT, 1, {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
                                                                          {"type": "text", "text": "b"}]}]}),
    "chat-tools": ls(CHAT, 2, {"messages": [{"role": "user", "content": "w?"},
                                            {"role": "assistant", "content": "", "tool_calls": [
                                                {"function": {"name": "f", "arguments": "{\"a\":1}"}}]},
                                            {"role": "tool", "name": "f", "content": "r"}],
                               "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
                               "chat_template_kwargs": {"enable_thinking": True, "reasoning_effort": "low"}}),
    "chat-no-template": ls(CHAT, 3, {"messages": [{"role": "user", "content": "x"}]}),
    "chat-image-part": ls(CHAT, 0, {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}),
    "apply-template": ls(APPLY, 1, {"messages": [{"role": "user", "content": "hi"}]}),
    "apply-template-bad": ls(APPLY, 0, {"messages": "x"}),
    "tokenize": ls(TOKENIZE, 0, {"content": "Hello world <s>", "add_special": True, "with_pieces": True}),
    "tokenize-ids": ls(TOKENIZE, 0, {"content": [1, 2, "x", 3.5]}),
    "detokenize": ls(DETOKENIZE, 0, {"tokens": [1, 2, 3, 100]}),
    "detokenize-range": ls(DETOKENIZE, 0, {"tokens": [1, 99999999, 4294967297]}),
    "not-object": ls(COMPLETION, 0, "[1]"),
    "syntax": ls(CHAT, 0, "{\"messages\": ["),
}
for k, v in lsd.items():
    write("llamaserver", k, v)
