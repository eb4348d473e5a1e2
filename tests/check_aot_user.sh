#!/bin/sh
# The AOT lesson's test (examples/meson.build): run the C program that links
# objects written by dyn::export_aot, compare its output with jit's results
# (written by the exporter, examples/12_aot.cpp), and check that the program
# has no LLVM and no dynstage in it: no such symbol (nm) and no such shared
# library (ldd).
# Usage: check_aot_user.sh USER_PROGRAM EXPECTED_TXT
set -eu
prog=$1
expected=$2
out=$("$prog")
printf '%s\n' "$out"
if [ "$out" != "$(cat "$expected")" ]; then
  echo "FAIL: the C program's results differ from jit's:" >&2
  diff "$expected" - <<OUT >&2 || true
$out
OUT
  exit 1
fi
if nm "$prog" | grep -i -E 'llvm|dynstage|tbb'; then
  echo "FAIL: the C program has LLVM, dynstage or oneTBB symbols (above)" >&2
  exit 1
fi
if ldd "$prog" | grep -i -E 'llvm|dynstage|tbb'; then
  echo "FAIL: the C program links LLVM, dynstage or oneTBB (above)" >&2
  exit 1
fi
echo "ok: same results as jit; no LLVM or dynstage symbol or library in $(basename "$prog")"
ldd "$prog"
