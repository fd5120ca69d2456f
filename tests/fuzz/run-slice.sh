#!/usr/bin/env bash
# tests/fuzz/run-slice.sh BUILDDIR [SECONDS] — a short, bounded fuzzing run of every libFuzzer target built in
# BUILDDIR (a `configure CC=clang --enable-fuzzing --enable-sanitizers` build): each target mutates a copy of
# its corpus for SECONDS (default 15) under ASan+UBSan with leak detection. Prints one line per target,
# "PASS fuzz-<name> (<runs> runs)" or "FAIL fuzz-<name> ...", and keeps a failing input and its log in
# BUILDDIR/fuzz-artifacts/. Exits 1 when any target failed. The corpus copies are thrown away: new coverage
# is kept by hand (tests/fuzz/README.md), not by CI.
set -uo pipefail

build=$(cd "$1" && pwd)
secs=${2:-15}
src=$(cd "$(dirname "$0")/../.." && pwd)
art=$build/fuzz-artifacts
mkdir -p "$art"
work=$(mktemp -d "${TMPDIR:-/tmp}/orun-fuzz-slice.XXXXXX")
trap 'rm -rf "$work"' EXIT
export ORUN_SRCDIR=$src TMPDIR=$work

# per-target limits: the longest input and the slowest unit allowed (tests/fuzz/README.md)
max_len() { case $1 in template|api|manifest) echo 16384 ;; http|llamaserver|schema) echo 8192 ;; *) echo 4096 ;; esac; }
unit_timeout() { case $1 in template) echo 30 ;; *) echo 10 ;; esac; }

status=0
found=0
for bin in "$build"/tests/fuzz/fuzz_*; do
	[ -x "$bin" ] && [ -f "$bin" ] || continue
	case $bin in *.o) continue ;; esac
	name=${bin##*/fuzz_}
	corpus=$src/tests/fuzz/corpus/$name
	[ -d "$corpus" ] || { echo "FAIL fuzz-$name (no corpus at $corpus)"; status=1; continue; }
	found=$((found + 1))
	mkdir -p "$work/$name"
	cp "$corpus"/* "$work/$name/"
	log=$art/fuzz-$name.log
	"$bin" -max_total_time="$secs" -max_len="$(max_len "$name")" -timeout="$(unit_timeout "$name")" \
		-rss_limit_mb=2048 -detect_leaks=1 -print_final_stats=1 -artifact_prefix="$art/$name-" \
		"$work/$name" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	if [ $rc -eq 0 ]; then
		echo "PASS fuzz-$name (${runs:-?} runs in ${secs} s)"
		rm -f "$log"
	else
		echo "FAIL fuzz-$name (exit $rc after ${runs:-?} runs; log $log)"
		grep -E 'ERROR|SUMMARY|runtime error|fuzz_[a-z]+:' "$log" | head -n 5
		ls "$art/$name-"* 2>/dev/null | head -n 3
		status=1
	fi
done
if [ $found -eq 0 ]; then
	echo "FAIL fuzz (no fuzz target in $build/tests/fuzz)"
	exit 1
fi
exit $status
