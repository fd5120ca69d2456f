#!/usr/bin/env bash
# tests/cli.sh — the orun executable's dispatch: help, --version, unknown subcommands, the llama-server name.
set -u
orun=${ORUN_BIN:?ORUN_BIN must point at the orun executable}
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
check() { # check DESCRIPTION EXPECTED_RC ACTUAL_RC
	if [ "$2" != "$3" ]; then echo "FAIL: $1: exit $3, expected $2"; fail=1; else echo "ok: $1"; fi
}
grep_check() { # grep_check DESCRIPTION PATTERN FILE
	if grep -q -- "$2" "$3"; then echo "ok: $1"; else echo "FAIL: $1: '$2' not in $3:"; cat "$3"; fail=1; fi
}

"$orun" --version >"$tmp/out" 2>"$tmp/err"; check "--version" 0 $?
grep_check "--version names the version" "^orun version [0-9]" "$tmp/out"
grep_check "--version lists the cpu backend" "^backends: cpu" "$tmp/out"
"$orun" version >"$tmp/out" 2>&1; check "version" 0 $?
"$orun" help >"$tmp/out" 2>&1; check "help" 0 $?
grep_check "help lists commands" "^Commands:" "$tmp/out"
"$orun" --help >"$tmp/out" 2>&1; check "--help" 0 $?
"$orun" no-such-command >"$tmp/out" 2>"$tmp/err"; check "unknown subcommand exits 2" 2 $?
grep_check "unknown subcommand is named on stderr" "unknown command 'no-such-command'" "$tmp/err"
grep_check "usage on stderr" "^Usage: orun" "$tmp/err"
[ -s "$tmp/out" ] && { echo "FAIL: unknown subcommand wrote to stdout"; fail=1; }
"$orun" >"$tmp/out" 2>"$tmp/err"; check "no arguments exits 2" 2 $?
grep_check "no arguments prints usage on stderr" "^Usage: orun" "$tmp/err"
"$orun" help no-such-command >"$tmp/out" 2>"$tmp/err"; check "help for an unknown command exits 2" 2 $?

# Every command the help lists must answer --help with exit 0 (none may be listed before it works).
for c in $("$orun" help | awk '/^Commands:/{on=1; next} /^$/{on=0} on {print $1}'); do
	"$orun" "$c" --help >"$tmp/out" 2>&1; check "orun $c --help" 0 $?
done
exit $fail
