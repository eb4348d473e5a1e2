#!/usr/bin/env python3
"""Checks of dynstage's own include graph (the `#include "..."` lines).

    include_graph.py [--max-lines N] INCLUDE_ROOT
                                      check include/dynstage under INCLUDE_ROOT
    include_graph.py --self-test      check that the checks can fail

1. The graph is acyclic. A header that includes one that includes it back only
   works by the accident of #pragma once and include order, and "compiles on
   its own" (tests/compile_fail/run.sh headers) stops meaning anything.
   dim.hpp and the symbolic headers used to form two such circles; they are
   now layers (shape/dim.hpp's comment).
2. The umbrella headers reach every header, so that the implementation TU
   (src/core.cpp, src/dynstage.cpp: DYNSTAGE_IMPLEMENTATION, then the
   umbrella) compiles every definition under that guard: dynstage.hpp reaches
   all headers, core.hpp all but the LLVM backend's (CORE_EXCLUDED).
3. No header is longer than MAX_LINES (--max-lines): a header is one idea
   that a reader can name in a line (issue 15: "no header over ~600 lines";
   the headers are split at ~600, the check leaves some room).

Every `#include "..."` line counts, also one under #ifdef: a cycle through
an #ifdef'd include is still a cycle in the implementation TU. Includes are
resolved as the compiler resolves quoted includes: first beside the including
file, then under INCLUDE_ROOT. <...> includes (system, Boost, LLVM) are not
dynstage's graph and are ignored.
"""

import os
import re
import sys
import tempfile

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')

# Headers core.hpp does not reach, by design: the jit backend (LLVM) and
# the thread pool its kernels run on.
CORE_EXCLUDED_PREFIXES = ("dynstage/jit/", "dynstage/llvm/", "dynstage/runtime/")
CORE_EXCLUDED = {"dynstage/dynstage.hpp"}

MAX_LINES = 650


def read_graph(root):
    """{header: [included header, ...]} with paths relative to root, and errors."""
    graph, errors = {}, []
    base = os.path.join(root, "dynstage")
    for dirpath, _, files in os.walk(base):
        for name in files:
            if not name.endswith(".hpp"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            deps = []
            with open(path, encoding="utf-8") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE_RE.match(line)
                    if not m:
                        continue
                    target = None
                    for cand in (os.path.join(dirpath, m.group(1)), os.path.join(root, m.group(1))):
                        if os.path.isfile(cand):
                            target = os.path.relpath(os.path.normpath(cand), root)
                            break
                    if target is None:
                        errors.append(f'{rel}:{lineno}: #include "{m.group(1)}" names no file')
                    else:
                        deps.append(target)
            graph[rel] = deps
    return graph, errors


def find_cycle(graph):
    """A cycle as a list [h0, h1, ..., h0], or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = {h: WHITE for h in graph}
    for start in sorted(graph):
        if color[start] != WHITE:
            continue
        # Iterative DFS; `path` is the grey chain from start.
        path, stack = [start], [iter(graph[start])]
        color[start] = GREY
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                color[path.pop()] = BLACK
                stack.pop()
            elif color.get(nxt, BLACK) == GREY:
                return path[path.index(nxt):] + [nxt]
            elif color.get(nxt) == WHITE:
                color[nxt] = GREY
                path.append(nxt)
                stack.append(iter(graph[nxt]))
    return None


def reachable(graph, start):
    seen, todo = set(), [start]
    while todo:
        h = todo.pop()
        if h in seen:
            continue
        seen.add(h)
        todo.extend(graph.get(h, ()))
    return seen


def header_lengths(root):
    """{header: number of lines} with paths relative to root."""
    lengths = {}
    for dirpath, _, files in os.walk(os.path.join(root, "dynstage")):
        for name in files:
            if name.endswith(".hpp"):
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    lengths[os.path.relpath(path, root)] = sum(1 for _ in f)
    return lengths


def check(root, max_lines=MAX_LINES):
    """The list of problems (empty when all is well)."""
    graph, problems = read_graph(root)
    if not graph:
        return [f"no headers under {root}/dynstage"]
    cycle = find_cycle(graph)
    if cycle:
        problems.append("include cycle: " + " -> ".join(cycle))
    for umbrella, wanted in (
        ("dynstage/dynstage.hpp", set(graph)),
        ("dynstage/core.hpp",
         {h for h in graph if h not in CORE_EXCLUDED and not h.startswith(CORE_EXCLUDED_PREFIXES)}),
    ):
        if umbrella not in graph:
            problems.append(f"umbrella header {umbrella} is missing")
            continue
        missed = sorted(wanted - reachable(graph, umbrella))
        if missed:
            problems.append(f"{umbrella} does not reach (so its implementation TU does not compile "
                            f"their DYNSTAGE_IMPLEMENTATION definitions): " + ", ".join(missed))
    for h, n in sorted(header_lengths(root).items()):
        if n > max_lines:
            problems.append(f"{h} has {n} lines (limit {max_lines}): split it into headers of one idea "
                            "each (docs/architecture.md, 'Where things are')")
    return problems


def self_test():
    """The checks catch what they are for, on small made-up trees."""
    def tree(d, files):
        for rel, incs in files.items():
            p = os.path.join(d, "dynstage", rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", encoding="utf-8") as f:
                f.write("#pragma once\n" + "".join(f"#include {i}\n" for i in incs))
        return d

    good = {"dynstage.hpp": ['"core.hpp"', '"jit/jit.hpp"'], "core.hpp": ['"a.hpp"', '"b.hpp"'],
            "jit/jit.hpp": ['"../llvm/x.hpp"', "<vector>"], "llvm/x.hpp": ['"../a.hpp"'],
            "a.hpp": [], "b.hpp": ['"a.hpp"']}
    cases = [
        ("a layered tree", good, None),
        ("a circle of two", {**good, "a.hpp": ['"b.hpp"']},
         "include cycle: dynstage/a.hpp -> dynstage/b.hpp -> dynstage/a.hpp"),
        ("an #ifdef'd back edge", {**good, "a.hpp": ["\"c.hpp\"\n#ifdef X\n#include \"b.hpp\"\n#endif"],
                                   "c.hpp": []}, "include cycle:"),
        ("a header no umbrella reaches", {**good, "lone.hpp": []}, "does not reach"),
        ("a core header core.hpp misses", {**good, "core.hpp": ['"a.hpp"']},
         "dynstage/core.hpp does not reach"),
        ("an include of nothing", {**good, "b.hpp": ['"nothere.hpp"']}, "names no file"),
        # With a limit of 3 lines, which every header of `good` keeps.
        ("a header over the line limit", {**good, "b.hpp": ['"a.hpp"', "<vector>", "<string>"]},
         "dynstage/b.hpp has 4 lines (limit 3)", 3),
        ("an llvm/ header over the line limit",
         {**good, "llvm/x.hpp": ['"../a.hpp"', "<vector>", "<string>"]}, "dynstage/llvm/x.hpp has 4 lines", 3),
    ]
    ok = True
    for what, files, expected, *max_lines in cases:
        with tempfile.TemporaryDirectory(prefix="include_graph_") as d:
            problems = check(tree(d, files), *max_lines)
        text = "\n".join(problems)
        if expected is None and problems:
            print(f"FAIL: {what}: unexpected problems:\n{text}")
            ok = False
        elif expected is not None and expected not in text:
            print(f"FAIL: {what}: expected '{expected}', got:\n{text or '(no problems)'}")
            ok = False
        else:
            print(f"ok: {what}" + (f": {text}" if text else ""))
    return ok


def main(argv):
    if argv[1:] == ["--self-test"]:
        return 0 if self_test() else 1
    args, max_lines = argv[1:], MAX_LINES
    if len(args) == 3 and args[0] == "--max-lines" and args[1].isdigit():
        args, max_lines = args[2:], int(args[1])
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(args[0], max_lines)
    for p in problems:
        print("FAIL: " + p)
    if problems:
        return 1
    graph, _ = read_graph(args[0])
    print(f"ok: {len(graph)} headers, {sum(map(len, graph.values()))} includes, no cycle; "
          "core.hpp and dynstage.hpp reach every header they must; none is over "
          f"{max_lines} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
