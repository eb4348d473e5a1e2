#!/usr/bin/env bash
# run.sh DYNSTAGE_ROOT MESON...: configure, build and run tests/subproject in a
# fresh temporary directory, with DYNSTAGE_ROOT linked in as
# subprojects/dynstage. A plain `meson setup`: no native file, no LLVM_CONFIG.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: run.sh DYNSTAGE_ROOT MESON..." >&2; exit 2; }
root=$(cd "$1" && pwd)
shift
meson=("$@")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dynstage-subproject.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp "$root/tests/subproject/meson.build" "$root/tests/subproject/main.cpp" "$tmp/"
mkdir "$tmp/subprojects"
ln -s "$root" "$tmp/subprojects/dynstage"

unset LLVM_CONFIG
echo "== meson setup (in $tmp)"
"${meson[@]}" setup "$tmp/build" "$tmp"
echo "== meson compile"
"${meson[@]}" compile -C "$tmp/build" -j 2
echo "== run"
"$tmp/build/consumer"
