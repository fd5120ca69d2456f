#!/usr/bin/env bash
# tests/install.sh — `make install` and `make install-strip` into a DESTDIR, then the installed files: orun runs
# (--version, --help), $(pkglibdir)/llama-server is a link that runs orun as llama-server, the manual page
# lists every command `orun help` lists and names the installed paths, the systemd unit runs the installed
# binary; `make uninstall` removes them all again.
set -u
: "${ORUN_BUILDDIR:?ORUN_BUILDDIR must name the build directory}"
make=${MAKE:-make}
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

dest=$tmp/dest
# one make at a time: a parallel `make check` must not hand its jobs to this one
if ! env -u MAKEFLAGS -u MFLAGS $make -s -C "$ORUN_BUILDDIR" install DESTDIR="$dest" >"$tmp/log" 2>&1; then
	bad "make install DESTDIR=..."; cat "$tmp/log"; exit 1
fi
ok "make install DESTDIR=..."
# the configured prefix, as the tree under DESTDIR shows it
orun=$(find "$dest" -path '*/bin/orun' -print -quit)
root=${orun%/bin/orun}
prefix=${root#"$dest"}
check "bin/orun installed and executable" '[ -x "$orun" ]'
"$orun" --version >"$tmp/out" 2>&1; check "installed orun --version" '[ $? -eq 0 ] && grep -q "^orun version" "$tmp/out"'
"$orun" --help >"$tmp/help" 2>&1; check "installed orun --help" '[ $? -eq 0 ] && grep -q "^Commands:" "$tmp/help"'

man=$root/share/man/man1/orun.1
check "the manual page is installed" '[ -s "$man" ]'
for c in $(awk '/^Commands:/{on=1; next} /^$/{on=0} on {print $1}' "$tmp/help"); do
	check "orun.1 describes '$c'" 'grep -Eq "^\.(B|BI|BR) (.* )?\"?$c([ \",]|\$)" "$man"'
done
check "orun.1 has the installed paths substituted" \
	'! grep -q "@[a-z]*dir@" "$man" && grep -q "$prefix/lib/orun/llama-server" "$man"'
if command -v man >/dev/null && man --help 2>&1 | grep -q -- --local-file; then
	MANWIDTH=100 man -l "$man" >"$tmp/man.txt" 2>"$tmp/man.err"
	check "man -l renders orun.1 without warnings" '[ -s "$tmp/man.txt" ] && ! grep -q . "$tmp/man.err"'
fi

if grep -q '^  serve ' "$tmp/help"; then # the server part of the build
	link=$root/lib/orun/llama-server
	check "lib/orun/llama-server is a link to orun" '[ -L "$link" ] && [ "$(readlink -f "$link")" = "$(readlink -f "$orun")" ]'
	check "the llama-server link is relative (works under DESTDIR)" '[ "$(readlink "$link")" = ../../bin/orun ]'
	"$link" --help >"$tmp/out" 2>&1
	check "llama-server --help through the link" '[ $? -eq 0 ] && grep -q "^Usage: orun llama-server" "$tmp/out"'
	unit=$root/lib/systemd/system/orun.service
	check "the systemd unit is installed" '[ -s "$unit" ]'
	check "the unit runs the installed orun" 'grep -qx "ExecStart=$prefix/bin/orun serve" "$unit"'
	check "the unit has User=ollama" 'grep -qx "User=ollama" "$unit"'
	if command -v systemd-analyze >/dev/null; then
		# verify wants the ExecStart binary at its real path: point a copy at the DESTDIR one
		sed "s|^ExecStart=.*|ExecStart=$orun serve|" "$unit" >"$tmp/orun.service"
		systemd-analyze verify "$tmp/orun.service" >"$tmp/verify" 2>&1
		check "systemd-analyze verify accepts the unit" '! grep -v -e "network-online" -e "^$" "$tmp/verify" | grep -qi "orun.service"'
	fi
fi

# install-strip: the same files, the executable without its symbol table
dest2=$tmp/dest2
if env -u MAKEFLAGS -u MFLAGS $make -s -C "$ORUN_BUILDDIR" install-strip DESTDIR="$dest2" >"$tmp/log" 2>&1; then
	ok "make install-strip"
	s=$dest2$prefix/bin/orun
	"$s" --version >/dev/null 2>&1; check "stripped orun runs" '[ $? -eq 0 ]'
	check "stripped orun is smaller" '[ "$(stat -c %s "$s")" -lt "$(stat -c %s "$orun")" ]'
else
	bad "make install-strip"; cat "$tmp/log"
fi

# uninstall leaves no files behind (directories may stay, as automake's distcheck allows)
env -u MAKEFLAGS -u MFLAGS $make -s -C "$ORUN_BUILDDIR" uninstall DESTDIR="$dest" >"$tmp/log" 2>&1
check "make uninstall" '[ $? -eq 0 ]'
left=$(find "$dest" \( -type f -o -type l \) -print)
check "nothing left after uninstall" '[ -z "$left" ]' || echo "$left"
exit $fail
