#!/usr/bin/env python3
"""run_tests.py BUILD_DIR [--build-failed] [-- MESON_TEST_ARGS...]: run `meson test` and summarise.

Used by scripts/test.sh. Prints `N passed, M failed` as its last line and
exits non-zero if anything failed.

After a failed build (--build-failed) `meson test` would refuse to run at all
("test program ... does not exist"), and a stale executable from an earlier
build would test old code. So the tests whose program is missing or out of
date (`ninja -n` has work to do for it) are counted as failed without being
run, and the rest are run.
"""
import json
import os
import subprocess
import sys
import time


def run(cmd, **kw):
    return subprocess.run(cmd, check=False, **kw)


def main():
    args = sys.argv[1:]
    extra = []  # after "--": passed on to `meson test` (scripts/sanitize.sh: --timeout-multiplier)
    if "--" in args:
        extra = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    build_failed = "--build-failed" in args
    args = [a for a in args if a != "--build-failed"]
    if len(args) != 1:
        print("usage: run_tests.py BUILD_DIR [--build-failed] [-- MESON_TEST_ARGS...]", file=sys.stderr)
        return 2
    build = os.path.realpath(args[0])

    names = None  # None: every test
    unbuilt = []
    if build_failed:
        out = run(["meson", "introspect", "--tests", build], stdout=subprocess.PIPE, text=True)
        tests = json.loads(out.stdout) if out.returncode == 0 else []
        names = []
        for t in tests:
            prog = os.path.realpath(t["cmd"][0])
            if prog.startswith(build + os.sep):
                dry = run(["ninja", "-C", build, "-n", os.path.relpath(prog, build)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                if not os.path.exists(prog) or "no work to do" not in dry.stdout:
                    unbuilt.append(t["name"])
                    continue
            names.append(t["name"])

    log = os.path.join(build, "meson-logs", "testlog.json")
    if os.path.exists(log):
        os.remove(log)
    status = 0
    if names is None or names:
        cmd = ["meson", "test", "-C", build, "--no-rebuild", "--print-errorlogs"] + extra + (names or [])
        print("== " + " ".join(cmd), flush=True)
        t0 = time.monotonic()
        status = run(cmd).returncode
        print("== meson test took %.0fs" % (time.monotonic() - t0))

    passed = failed = skipped = 0
    failed_names = []
    if os.path.exists(log):
        with open(log) as f:
            for line in f:
                if not line.strip():
                    continue
                r = json.loads(line)
                res = r.get("result", "")
                if res in ("OK", "EXPECTEDFAIL"):
                    passed += 1
                elif res == "SKIP":
                    skipped += 1
                else:
                    failed += 1
                    failed_names.append("%s (%s)" % (r.get("name", "?"), res))
    elif status != 0:
        print("run_tests.py: meson test failed without writing a test log")
        failed += 1

    for name in unbuilt:
        failed += 1
        failed_names.append("%s (NOT BUILT)" % name)
    if build_failed:
        print("run_tests.py: the build FAILED (compiler errors above)")
        if not unbuilt:
            failed += 1  # the build failure itself, when no test stands for it
    if skipped:
        print("run_tests.py: %d skipped" % skipped)
    if failed_names:
        print("run_tests.py: failed: " + ", ".join(failed_names))
    print("%d passed, %d failed" % (passed, failed), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
