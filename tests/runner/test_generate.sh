#!/bin/sh
# tests/runner/test_generate.sh — `orun generate` and `orun bench` end to end on SmolLM2: greedy tokens equal
# llama.cpp's (the first 8 of tests/data/engine/greedy_llama.tsv for "1, 2, 3, 4, 5,"), --json lines, stop
# strings, seeded sampling, a YaRN qwen3 model at 131,072 tokens of context, and the bad-argument errors.
set -u
ORUN=${ORUN_BIN:?ORUN_BIN not set}
models=${ORUN_CACHE:-$HOME/.cache/orun}/models
m="$models/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -f "$m" ]; then
	echo "SKIP: $m is missing (tools/install-deps fetches it)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*"; fail=1; }

"$ORUN" generate -m "$m" -p "1, 2, 3, 4, 5," -n 8 --temperature 0 --threads 2 --json >"$tmp/j" 2>"$tmp/e" || no "generate --json exited $?"
grep -q '"tokens":\[216,38,28,216,39,28,216,40\]' "$tmp/j" || { no "greedy tokens differ from llama.cpp's"; cat "$tmp/j" "$tmp/e"; }
grep -q '"done_reason":"length"' "$tmp/j" || no "no done_reason length"
[ "$(grep -c '"token":' "$tmp/j")" -eq 8 ] || no "expected 8 token lines"
out=$("$ORUN" generate -m "$m" -p "1, 2, 3, 4, 5," -n 8 --temperature 0 --threads 2 2>/dev/null)
[ "$out" = " 6, 7, 8" ] || no "text is '$out', expected ' 6, 7, 8'"
out=$("$ORUN" generate -m "$m" -p "1, 2, 3, 4, 5," -n 20 --temperature 0 --stop " 8" --threads 2 2>"$tmp/e")
[ "$out" = " 6, 7," ] || no "with --stop ' 8': '$out'"
grep -q '^\[stop:' "$tmp/e" || no "stop string did not end with reason stop: $(cat "$tmp/e")"
a=$("$ORUN" generate -m "$m" -p "Once upon a time" -n 12 --temperature 1 --seed 7 --threads 2 2>/dev/null)
b=$("$ORUN" generate -m "$m" -p "Once upon a time" -n 12 --temperature 1 --seed 7 --threads 2 2>/dev/null)
[ "$a" = "$b" ] || no "same seed, different text: '$a' / '$b'"

# YaRN (factor 4, original context 32768) at the full 131,072-token window
"$ORUN" mkmodel -o "$tmp/y.gguf" --tokenizer "$m" --arch qwen3 --ctx 131072 --yarn 4 --threads 2 2>/dev/null || no "mkmodel yarn"
"$ORUN" generate -m "$tmp/y.gguf" -p "Hello" --ctx 131072 -n 4 --temperature 0 --threads 2 --json >"$tmp/j" 2>"$tmp/e" ||
	{ no "generate on the yarn model at 131072"; cat "$tmp/e"; }
grep -q '"eval_count":4' "$tmp/j" || no "yarn model did not generate 4 tokens"

# FP8 and BF16 weights: the kernels agree with the reference path (f32 dot products on dequantized rows)
for t in FP8 BF16; do
	"$ORUN" mkmodel -o "$tmp/$t.gguf" --tokenizer "$m" --arch qwen3 --type "$t" --threads 2 2>/dev/null || no "mkmodel $t"
	a=$("$ORUN" generate -m "$tmp/$t.gguf" -p "Hello there" -n 6 --temperature 0 --threads 2 --json 2>&1 | grep '"tokens"' | sed 's/.*"tokens":\(\[[0-9,]*\]\).*/\1/')
	b=$(ORUN_CPU_REFERENCE=1 "$ORUN" generate -m "$tmp/$t.gguf" -p "Hello there" -n 6 --temperature 0 --threads 2 --json 2>&1 | grep '"tokens"' | sed 's/.*"tokens":\(\[[0-9,]*\]\).*/\1/')
	[ -n "$a" ] && [ "$a" = "$b" ] || no "$t: kernels $a, reference $b"
done

# bench
"$ORUN" bench -m "$m" -p 16 -n 8 -r 1 --threads 2 --no-bandwidth --json >"$tmp/b" 2>"$tmp/e" || { no "bench"; cat "$tmp/e"; }
for k in prefill_tokens_per_second decode_tokens_per_second time_to_first_token_ms peak_rss_mib achieved_gb_per_second; do
	grep -q "\"$k\":[0-9]" "$tmp/b" || no "bench --json lacks $k"
done
# with the roofline: a bandwidth and a ratio per repetition, in run order
"$ORUN" bench -m "$m" -p 8 -n 4 -r 2 --threads 2 --json >"$tmp/b" 2>"$tmp/e" || { no "bench with bandwidth"; cat "$tmp/e"; }
for k in bandwidth_runs roofline_percent_runs; do
	grep -q "\"$k\":\[[0-9.e+-]*,[0-9.e+-]*\]" "$tmp/b" || no "bench --json lacks two $k: $(cat "$tmp/b")"
done

# bad arguments
"$ORUN" generate -m /nonexistent.gguf -p x >/dev/null 2>"$tmp/e" && no "missing model accepted"
grep -q "nonexistent.gguf" "$tmp/e" || no "missing model message: $(cat "$tmp/e")"
"$ORUN" generate -m "$m" >/dev/null 2>&1; [ $? -eq 2 ] || no "missing -p is not a usage error"
"$ORUN" generate -m "$m" -p x --bogus >/dev/null 2>&1; [ $? -eq 2 ] || no "unknown option is not a usage error"
"$ORUN" generate -m "$m" -p x --kv-type q4_0 >/dev/null 2>"$tmp/e"; [ $? -eq 2 ] || no "kv type q4_0 accepted"
grep -q "q4_0" "$tmp/e" || no "kv type message: $(cat "$tmp/e")"
"$ORUN" generate -m "$m" -p x --temperature abc >/dev/null 2>&1; [ $? -eq 2 ] || no "bad number accepted"
"$ORUN" bench -m "$m" -p 0 >/dev/null 2>&1; [ $? -eq 2 ] || no "bench -p 0 accepted"
exit $fail
