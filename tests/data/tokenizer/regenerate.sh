#!/bin/sh
# tests/data/tokenizer/regenerate.sh — rebuild every file in this folder from its sources: the corpus, the
# synthetic GGUF files, and the golden ids/pieces from the reference engine's llama-tokenize (already built;
# this script builds nothing). About 25 minutes of CPU time, most of it loading Qwen's vocabulary 1,173 times
# (1.5 hours wall on a busy shared 2-core machine).
#
#   LLAMA_TOKENIZE=/path/to/llama.cpp/build/bin/llama-tokenize PYTHON=/path/to/venv/bin/python \
#   MODELS=~/.cache/orun/models sh tests/data/tokenizer/regenerate.sh
#
# PYTHON needs the gguf and numpy packages (~/.cache/orun/venv has them).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
: "${LLAMA_TOKENIZE:=/work/ref/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin/llama-tokenize}"
: "${PYTHON:=$HOME/.cache/orun/venv/bin/python}"
: "${MODELS:=$HOME/.cache/orun/models}"
: "${JOBS:=2}"
qwen2="$MODELS/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
smollm="$MODELS/SmolLM2-135M-Instruct.Q4_1.gguf"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cd "$here"
"$PYTHON" make_corpus.py > corpus.inp
"$PYTHON" make_synthetic.py spm spm-tiny.gguf
mkdir -p bad
"$PYTHON" make_synthetic.py bad bad

ref() { "$PYTHON" run_reference.py --bin "$LLAMA_TOKENIZE" --jobs "$JOBS" "$@"; }
ref --model spm-tiny.gguf --name spm
ref --model "$smollm" --name llama
ref --model "$qwen2" --name qwen2
# SmolLM2's vocabulary under other pre-tokenizers: copies whose tokenizer.ggml.pre is changed ("-": removed)
for v in gpt-2:gpt2 llama-bpe:llama3 -:default; do
	pre=${v%%:*}
	name=${v##*:}
	"$PYTHON" make_synthetic.py variant "$smollm" "$pre" "$tmp/smollm-$name.gguf"
	ref --model "$tmp/smollm-$name.gguf" --name "llama-$name"
done
