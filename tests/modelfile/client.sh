#!/usr/bin/env bash
# tests/modelfile/client.sh — orun's client commands (create, show, list, cp, rm) against a stand-in Ollama
# server (tests/modelfile/fake_server.py) that records every request: the bytes sent (blob uploads with
# HEAD first, the /api/create body the Go CLI would send), the output printed, Ollama's error texts.
set -u
orun=${ORUN_BIN:?ORUN_BIN must point at the orun executable}
src=${ORUN_SRCDIR:?}
py=${ORUN_PYTHON:-python3}
command -v "$py" >/dev/null 2>&1 || { echo "SKIP: no $py for the stand-in server"; exit 77; }
"$orun" help | grep -q '^  create ' || { echo "SKIP: this orun has no client commands (--disable-server build)"; exit 77; }

fail=0
tmp=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }
expect_rc() { [ "$2" = "$3" ] && ok "$1" || bad "$1: exit $3, expected $2"; }
expect_eq() { # DESCRIPTION EXPECTED-FILE ACTUAL-FILE
	if cmp -s "$2" "$3"; then ok "$1"; else bad "$1"; diff "$2" "$3" | head -20; fi
}
expect_grep() { grep -qF -- "$2" "$3" && ok "$1" || { bad "$1: '$2' not in $3"; cat "$3"; }; }

log=$tmp/requests.log
: >"$log"
export FAKE_SHOW=$tmp/show.json FAKE_TAGS=$tmp/tags.json
"$py" "$src/tests/modelfile/fake_server.py" "$log" >"$tmp/port" 2>"$tmp/server.err" &
server=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port")
[ -n "$port" ] || { echo "FAIL: the stand-in server did not start"; cat "$tmp/server.err"; exit 1; }
export OLLAMA_HOST=127.0.0.1:$port

# the n-th recorded request (0-based) as "METHOD PATH", and its body
req() { "$py" -c 'import json,sys; l=[json.loads(x) for x in open(sys.argv[1])]; print(l[int(sys.argv[2])][sys.argv[3]])' "$log" "$1" "$2"; }
nreq() { wc -l <"$log" | tr -d ' '; }

# ---- create: Modelfile parsed here, blob hashed and uploaded (HEAD then POST), then /api/create
mkdir -p "$tmp/m"
printf 'GGUF\x03\x00\x00\x00fake weights' >"$tmp/m/model.gguf"
digest=sha256:$(sha256sum "$tmp/m/model.gguf" | cut -d' ' -f1)
cat >"$tmp/m/Modelfile" <<'MF'
# a comment
FROM ./model.gguf
PARAMETER temperature 0.7
PARAMETER stop "<|im_end|>"
PARAMETER mirostat 2
SYSTEM """You are "terse"."""
MESSAGE user hi
MF
(cd "$tmp" && "$orun" create Tiny -f m/Modelfile -q q8_0 >"$tmp/out" 2>"$tmp/err"); expect_rc "create" 0 $?
expect_grep "create prints Ollama's deprecation warning on stdout" "warning: parameter mirostat is deprecated" "$tmp/out"
for s in "gathering model components" "copying file $digest 100%" "parsing GGUF" "using existing layer $digest" \
	"quantizing F16 model to Q8_0" "writing manifest" "success"; do
	expect_grep "create shows '$s'" "$s" "$tmp/err"
done
[ "$(req 0 method) $(req 0 path)" = "HEAD /" ] && ok "heartbeat first" || bad "heartbeat first: $(req 0 path)"
[ "$(req 1 method) $(req 1 path)" = "HEAD /api/blobs/$digest" ] && ok "HEAD the blob" || bad "HEAD the blob"
[ "$(req 2 method) $(req 2 path)" = "POST /api/blobs/$digest" ] && ok "POST the blob (404 before)" || bad "POST the blob"
"$py" -c 'import json,sys; b=[json.loads(x) for x in open(sys.argv[1])][2]["body"]; sys.exit(0 if b == open(sys.argv[2],"rb").read().decode("utf-8","replace") else 1)' "$log" "$tmp/m/model.gguf" \
	&& ok "the uploaded bytes are the file's" || bad "uploaded bytes"
[ "$(req 3 path)" = "/api/create" ] && ok "then /api/create" || bad "then /api/create"
printf '%s\n' "{\"model\":\"Tiny\",\"quantize\":\"q8_0\",\"files\":{\"model.gguf\":\"$digest\"},\"system\":\"You are \\\"terse\\\".\",\"parameters\":{\"stop\":[\"\\u003c|im_end|\\u003e\"],\"temperature\":0.7},\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"name\":\"\"}" >"$tmp/want_body"
req 3 body >"$tmp/got_body"
expect_eq "the /api/create body is the Go CLI's json.Marshal(api.CreateRequest)" "$tmp/want_body" "$tmp/got_body"
"$py" -c 'import json,sys; h=[json.loads(x) for x in open(sys.argv[1])][3]["headers"]; sys.exit(0 if h.get("Accept")=="application/x-ndjson" and h.get("Content-Type")=="application/json" else 1)' "$log" \
	&& ok "create streams with Accept: application/x-ndjson" || bad "create headers"

# a second create: the server has the blob (HEAD 200), nothing is uploaded again
n0=$(nreq)
(cd "$tmp/m" && "$orun" create tiny2 >/dev/null 2>"$tmp/err"); expect_rc "create with ./Modelfile" 0 $?
[ "$(req $((n0 + 1)) method)" = HEAD ] && [ "$(req $((n0 + 2)) path)" = /api/create ] && ok "existing blob not uploaded again" \
	|| bad "existing blob not uploaded again"

# errors
(cd "$tmp" && "$orun" create bad -f m/Modelfile >/dev/null 2>"$tmp/err"); expect_rc "create rejected by the server" 1 $?
expect_grep "server errors before streaming carry the status line" "Error: 400 Bad Request: neither 'from' or 'files' was specified" "$tmp/err"
"$orun" create "bad name" -f "$tmp/m/Modelfile" 2>"$tmp/err"; expect_rc "invalid name" 1 $?
expect_grep "invalid name text" "Error: invalid model name: bad name" "$tmp/err"
printf 'FROM ./model.gguf\nPARAMETER num_ctx lots\n' >"$tmp/m/Bad.Modelfile"
"$orun" create x -f "$tmp/m/Bad.Modelfile" 2>"$tmp/err"; expect_rc "bad parameter" 1 $?
expect_grep "bad parameter text" "Error: invalid int value [lots]" "$tmp/err"
printf 'FROM ./model.gguf\nSYSTEM """open\n' >"$tmp/m/Open.Modelfile"
"$orun" create x -f "$tmp/m/Open.Modelfile" 2>"$tmp/err"; expect_rc "unterminated quote" 1 $?
expect_grep "unterminated quote text" "Error: unexpected EOF" "$tmp/err"
"$orun" create x -f "$tmp/nope" 2>"$tmp/err"; expect_rc "missing -f file" 1 $?
expect_grep "missing -f file text" "Error: specified Modelfile wasn't found" "$tmp/err"
"$orun" create 2>"$tmp/err"; expect_rc "create without a name" 2 $?
expect_grep "arity text" "Error: accepts 1 arg(s), received 0" "$tmp/err"
"$orun" create x --bogus 2>"$tmp/err"; expect_rc "unknown flag" 2 $?
expect_grep "unknown flag text" "Error: unknown flag: --bogus" "$tmp/err"

# ---- show
cat >"$FAKE_SHOW" <<'JSON'
{"license":"MIT License\nCopyright (c) 2024\n\nPermission is hereby granted","modelfile":"# Modelfile generated by \"ollama show\"\nFROM /m/blobs/sha256-x\n","parameters":"stop                           \"<|im_end|>\"\ntemperature                    0.7","template":"{{ .Prompt }}","system":"You are terse.","details":{"parent_model":"","format":"gguf","family":"qwen2","families":["qwen2"],"parameter_size":"494.03M","quantization_level":"Q4_K_M"},"model_info":{"general.architecture":"qwen2","general.parameter_count":494032768,"qwen2.context_length":32768,"qwen2.embedding_length":896,"tokenizer.ggml.tokens":[]},"capabilities":["completion","tools","insert"],"modified_at":"2026-01-01T00:00:00Z"}
JSON
n0=$(nreq)
"$orun" show tiny --modelfile >"$tmp/out" 2>"$tmp/err"; expect_rc "show --modelfile" 0 $?
printf '# Modelfile generated by "ollama show"\nFROM /m/blobs/sha256-x\n\n' >"$tmp/want"
expect_eq "show --modelfile prints the field and a newline" "$tmp/want" "$tmp/out"
printf '{"model":"","system":"","template":"","verbose":false,"options":null,"name":"tiny"}\n' >"$tmp/want"
req $((n0 + 1)) body >"$tmp/got"
expect_eq "the /api/show body is json.Marshal(api.ShowRequest{Name})" "$tmp/want" "$tmp/got"
"$orun" show tiny --template >"$tmp/out"; printf '{{ .Prompt }}' >"$tmp/want"
expect_eq "show --template prints without a newline" "$tmp/want" "$tmp/out"
"$orun" show tiny --system >"$tmp/out"; printf 'You are terse.' >"$tmp/want"; expect_eq "show --system" "$tmp/want" "$tmp/out"
"$orun" show tiny --parameters >"$tmp/out"
printf 'stop                           "<|im_end|>"\ntemperature                    0.7\n' >"$tmp/want"; expect_eq "show --parameters" "$tmp/want" "$tmp/out"
"$orun" show tiny --license >"$tmp/out"
printf 'MIT License\nCopyright (c) 2024\n\nPermission is hereby granted\n' >"$tmp/want"; expect_eq "show --license" "$tmp/want" "$tmp/out"
"$orun" show tiny >"$tmp/out"; expect_rc "show" 0 $?
cat >"$tmp/want" <<'OUT'
  Model
    architecture        qwen2      
    parameters          494.03M    
    context length      32768      
    embedding length    896        
    quantization        Q4_K_M     

  Capabilities
    completion    
    tools         
    insert        

  Parameters
    stop           "<|im_end|>"    
    temperature    0.7             

  System
    You are terse.    

  License
    MIT License           
    Copyright (c) 2024    
    ...                   

OUT
expect_eq "show's tables as ollama draws them" "$tmp/want" "$tmp/out"
"$orun" show tiny --license --system 2>"$tmp/err"; expect_rc "two show flags" 1 $?
expect_grep "two show flags text" "Error: only one of '--license', '--modelfile', '--parameters', '--system', or '--template' can be specified" "$tmp/err"
"$orun" show missing 2>"$tmp/err"; expect_rc "show a missing model" 1 $?
expect_grep "show 404 text (no status prefix for plain requests)" "Error: model 'missing' not found" "$tmp/err"

# ---- list
cat >"$FAKE_TAGS" <<'JSON'
{"models":[{"name":"qwen2.5-coder:0.5b","model":"qwen2.5-coder:0.5b","modified_at":"2200-01-01T00:00:00Z","size":397821319,"digest":"4ff64a7f502aa4d3d98a8f0f0e0e4c6a4b0fe0e1b8f6d7a13b3a1c6d29c7e1b2","details":{}},{"name":"hf.co/bartowski/SmolLM2-GGUF:Q4_1","model":"x","modified_at":"0001-01-01T00:00:00Z","size":98362958,"digest":"237a55059c4d353c72641af17587222367f90416b45b5635fb764241a1e1d5b2","details":{}},{"name":"tiny:latest","model":"tiny:latest","modified_at":"2200-01-01T00:00:00+02:00","size":5,"digest":"0123456789abcdef","details":{}}]}
JSON
"$orun" list >"$tmp/out"; expect_rc "list" 0 $?
cat >"$tmp/want" <<'OUT'
NAME                                 ID              SIZE      MODIFIED 
qwen2.5-coder:0.5b                   4ff64a7f502a    397 MB    Forever     
hf.co/bartowski/SmolLM2-GGUF:Q4_1    237a55059c4d    98 MB     Never       
tiny:latest                          0123456789ab    5 B       Forever     
OUT
expect_eq "list's table" "$tmp/want" "$tmp/out"
"$orun" ls HF.CO >"$tmp/out"; expect_rc "ls PREFIX" 0 $?
[ "$(wc -l <"$tmp/out")" = 2 ] && grep -q '^hf.co/bartowski' "$tmp/out" && ok "ls filters by a case-insensitive prefix" || bad "ls prefix"

# ---- cp, rm
"$orun" cp tiny tiny-copy >"$tmp/out"; expect_rc "cp" 0 $?
printf "copied 'tiny' to 'tiny-copy'\n" >"$tmp/want"; expect_eq "cp output" "$tmp/want" "$tmp/out"
printf '{"source":"tiny","destination":"tiny-copy"}\n' >"$tmp/want"; req $(($(nreq) - 1)) body >"$tmp/got"
expect_eq "the /api/copy body" "$tmp/want" "$tmp/got"
"$orun" cp missing x 2>"$tmp/err"; expect_rc "cp a missing model" 1 $?
expect_grep "cp 404 text" 'Error: model "missing" not found' "$tmp/err"
"$orun" rm tiny tiny-copy >"$tmp/out" 2>"$tmp/err"; expect_rc "rm" 0 $?
printf "deleted 'tiny'\ndeleted 'tiny-copy'\n" >"$tmp/want"; expect_eq "rm output" "$tmp/want" "$tmp/out"
printf '{"model":"","name":"tiny-copy"}\n' >"$tmp/want"; req $(($(nreq) - 1)) body >"$tmp/got"
expect_eq "the /api/delete body" "$tmp/want" "$tmp/got"
[ "$(req $(($(nreq) - 1)) method)" = DELETE ] && ok "rm uses DELETE" || bad "rm uses DELETE"
"$orun" rm missing >"$tmp/out" 2>"$tmp/err"; expect_rc "rm a missing model" 1 $?
grep -q Warning "$tmp/err" && bad "no unload warning for a missing model" || ok "no unload warning for a missing model"
expect_grep "rm 404 text" "Error: model 'missing' not found" "$tmp/err"

# ---- no server
kill "$server"; wait "$server" 2>/dev/null; server=
"$orun" list 2>"$tmp/err"; expect_rc "list without a server" 1 $?
expect_grep "no-server text" "Error: could not connect to ollama server, run 'orun serve' to start it" "$tmp/err"
for c in create show list cp rm; do "$orun" $c --help >/dev/null; expect_rc "$c --help" 0 $?; done
exit $fail
