#!/bin/sh
# tests/runner/test_mkmodel.sh — `orun mkmodel`: every architecture and weight type gives a file that
# `orun gguf` validates (including its model check), the same arguments give the same bytes, another seed
# gives other weights, and bad arguments fail with a message.
set -u
ORUN=${ORUN_BIN:?ORUN_BIN not set}
models=${ORUN_CACHE:-$HOME/.cache/orun}/models
tok="$models/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -f "$tok" ]; then
	echo "SKIP: $tok is missing (tools/install-deps fetches it)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # description, command...
	d=$1
	shift
	if "$@" >"$tmp/out" 2>&1; then :; else
		echo "FAIL: $d"
		cat "$tmp/out"
		fail=1
	fi
}
for arch in llama qwen2 qwen3; do
	for type in F16 BF16 Q8_0 Q4_0 Q4_K Q5_K Q6_K Q4_K_M FP8; do
		f="$tmp/$arch-$type.gguf"
		check "mkmodel $arch $type" "$ORUN" mkmodel -o "$f" --tokenizer "$tok" --arch "$arch" --type "$type" \
			--layers 2 --dim 256 --heads 4 --kv-heads 2 --ff 512 --threads 2
		check "orun gguf validates $arch $type" "$ORUN" gguf "$f"
	done
done
# determinism and seeds
"$ORUN" mkmodel -o "$tmp/a.gguf" --tokenizer "$tok" --arch qwen2 --type Q4_K_M --threads 1 2>/dev/null
"$ORUN" mkmodel -o "$tmp/b.gguf" --tokenizer "$tok" --arch qwen2 --type Q4_K_M --threads 2 2>/dev/null
"$ORUN" mkmodel -o "$tmp/c.gguf" --tokenizer "$tok" --arch qwen2 --type Q4_K_M --seed 2 --threads 2 2>/dev/null
if ! cmp -s "$tmp/a.gguf" "$tmp/b.gguf"; then echo "FAIL: same arguments, different bytes"; fail=1; fi
if cmp -s "$tmp/a.gguf" "$tmp/c.gguf"; then echo "FAIL: another seed, same bytes"; fail=1; fi
# YaRN metadata and tied output
check "mkmodel yarn" "$ORUN" mkmodel -o "$tmp/y.gguf" --tokenizer "$tok" --arch qwen3 --ctx 131072 --yarn 4 --tied
check "orun gguf yarn" "$ORUN" gguf "$tmp/y.gguf"
grep -q "rope.scaling.type" "$tmp/out" || { echo "FAIL: no rope.scaling.type in the yarn model"; fail=1; }
# bad arguments
if "$ORUN" mkmodel -o "$tmp/x.gguf" --tokenizer "$tok" --type Q4_K --dim 96 --heads 4 >"$tmp/out" 2>&1; then
	echo "FAIL: dim 96 accepted for Q4_K"; fail=1
fi
grep -q "multiples of 256" "$tmp/out" || { echo "FAIL: no block-size message"; cat "$tmp/out"; fail=1; }
if "$ORUN" mkmodel -o "$tmp/x.gguf" --tokenizer "$tok" --type Q3_X >"$tmp/out" 2>&1; then
	echo "FAIL: unknown type accepted"; fail=1
fi
if "$ORUN" mkmodel -o "$tmp/x.gguf" --tokenizer /nonexistent.gguf >"$tmp/out" 2>&1; then
	echo "FAIL: missing tokenizer file accepted"; fail=1
fi
exit $fail
