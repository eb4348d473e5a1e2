#!/usr/bin/env bash
# Compile checks that a unit test cannot express: code that must NOT compile,
# code that must compile with a restricted include path, and headers that must
# compile on their own. The compiler command and flags come after `--`
# (tests/meson.build passes the project's C++ compiler).
#
#   run.sh fail EXPECTED SOURCE [--not FORBIDDEN] -- CXX FLAGS...
#       SOURCE must fail to compile with EXPECTED in the diagnostics (and,
#       with --not, without FORBIDDEN: no follow-up error on top of the
#       user's), and must compile with -DDYNSTAGE_COMPILE_FAIL_CONTROL (which
#       leaves out the offending line), so the failure is known to come from
#       that line and not from a typo, a missing header or a wrong include path.
#   run.sh pass SOURCE -- CXX FLAGS...
#       SOURCE must compile.
#   run.sh headers INCLUDE_ROOT -- CXX FLAGS...
#       every header under INCLUDE_ROOT/dynstage (except llvm/) must compile
#       on its own, included twice (include guard).
set -u

usage() { echo "usage: run.sh fail EXPECTED SOURCE -- CXX... | pass SOURCE -- CXX... | headers INCLUDE_ROOT -- CXX..." >&2; exit 2; }

[ $# -ge 1 ] || usage
mode=$1; shift
case $mode in
  fail) [ $# -ge 2 ] || usage; expected=$1; src=$2; shift 2
        forbidden=""
        if [ "${1:-}" = --not ]; then [ $# -ge 2 ] || usage; forbidden=$2; shift 2; fi ;;
  pass) [ $# -ge 1 ] || usage; src=$1; shift ;;
  headers) [ $# -ge 1 ] || usage; root=$1; shift ;;
  *) usage ;;
esac
[ "${1:-}" = -- ] || usage
shift
[ $# -ge 1 ] || usage
cxx=("$@")

case $mode in
  fail)
    out=$("${cxx[@]}" "$src" 2>&1); rc=$?
    if [ $rc -eq 0 ]; then
      echo "FAIL: $src compiled, but it must be rejected with '$expected'"
      exit 1
    fi
    if ! grep -qF -- "$expected" <<<"$out"; then
      echo "FAIL: $src was rejected, but the diagnostics do not contain '$expected':"
      echo "$out"
      exit 1
    fi
    if [ -n "$forbidden" ] && grep -qF -- "$forbidden" <<<"$out"; then
      echo "FAIL: $src was rejected with '$expected', but the diagnostics also contain '$forbidden':"
      echo "$out"
      exit 1
    fi
    echo "ok: $src rejected with '$expected':"
    grep -F -- "$expected" <<<"$out" | head -n 3
    out=$("${cxx[@]}" -DDYNSTAGE_COMPILE_FAIL_CONTROL "$src" 2>&1); rc=$?
    if [ $rc -ne 0 ]; then
      echo "FAIL: control build of $src (-DDYNSTAGE_COMPILE_FAIL_CONTROL) must compile but did not:"
      echo "$out"
      exit 1
    fi
    echo "ok: control build of $src (-DDYNSTAGE_COMPILE_FAIL_CONTROL) compiles"
    ;;
  pass)
    out=$("${cxx[@]}" "$src" 2>&1); rc=$?
    if [ $rc -ne 0 ]; then
      echo "FAIL: $src must compile but did not:"
      echo "$out"
      exit 1
    fi
    echo "ok: $src compiles"
    [ -z "$out" ] || echo "$out"
    ;;
  headers)
    failed=0 count=0
    while IFS= read -r header; do
      rel=${header#"$root"/}
      count=$((count + 1))
      out=$(printf '#include <%s>\n#include <%s>\n' "$rel" "$rel" | "${cxx[@]}" -x c++ - 2>&1); rc=$?
      if [ $rc -ne 0 ]; then
        echo "FAIL: <$rel> does not compile on its own:"
        echo "$out"
        failed=$((failed + 1))
      else
        echo "ok: <$rel>"
      fi
    done < <(find "$root/dynstage" -name '*.hpp' -not -path '*/llvm/*' | LC_ALL=C sort)
    if [ $count -eq 0 ]; then
      echo "FAIL: no headers found under $root/dynstage"
      exit 1
    fi
    echo "$((count - failed)) of $count headers compile on their own"
    [ $failed -eq 0 ] || exit 1
    ;;
esac
