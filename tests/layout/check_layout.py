#!/usr/bin/env python3
"""Layout rules of src/ that the compiler does not check (DESIGN.md, "Layout"):

  core-includes SRC   every file under SRC/core includes project headers from
                      SRC/core only ("core/..."); system headers are fine.
  include-cycles SRC  no circular includes: the graph of project includes
                      between the files under SRC has no cycle.
  header-guards SRC   every header under SRC is guarded by one pattern,
                      KGS_<FOLDER>_<FILE>_H from its path (core/err.h:
                      KGS_CORE_ERR_H), so a guard names its file and two
                      headers never share one.
  self-test           runs every check on temporary trees, clean and with a
                      planted violation, and fails if a check does not fail
                      where it must (or fails where it must not).

The tree is walked, nothing is listed by hand: a new folder or file is checked
the day it appears. An include is resolved as the compiler does with -I SRC:
"x/y.h" next to the including file first, then SRC/x/y.h; <x/y.h> only as
SRC/x/y.h (anything else is a system header). Exit status 0 when the rule
holds, 1 naming every violation, 2 on a usage error.
"""
import os
import re
import sys
import tempfile

SOURCE_EXTS = (".c", ".h")

# Known exceptions to core-includes: (including file, include) relative to
# SRC, each with why it is tolerated. An entry that no longer matches an
# include fails the check, so an exception cannot outlive its reason.
CORE_ALLOWED = {}

INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
BLOCK_COMMENT_RE = re.compile(r"/\*.*?\*/", re.S)
LINE_COMMENT_RE = re.compile(r"//[^\n]*")


def source_files(root):
    """Every .c/.h file under root, as paths relative to root, sorted."""
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(SOURCE_EXTS):
                out.append(os.path.relpath(os.path.join(d, f), root))
    return out


def includes(root, rel):
    """[(line number, quote char, include text)] of file root/rel, outside comments."""
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        text = f.read()
    # Blank comments out but keep their newlines, so line numbers stay right.
    keep_lines = lambda m: re.sub(r"[^\n]", " ", m.group(0))
    text = BLOCK_COMMENT_RE.sub(keep_lines, text)
    text = LINE_COMMENT_RE.sub(keep_lines, text)
    return [(text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2).strip())
            for m in INCLUDE_RE.finditer(text)]


def resolve(root, rel, quote, name):
    """The included file as a path relative to root, or None when it is not a
    file under root (a system header, or a generated one)."""
    candidates = [os.path.join(root, name)]
    if quote == '"':
        candidates.insert(0, os.path.join(root, os.path.dirname(rel), name))
    for c in candidates:
        if os.path.isfile(c):
            r = os.path.relpath(os.path.realpath(c), os.path.realpath(root))
            if not r.startswith(".." + os.sep) and r != "..":
                return r
    return None


def check_core_includes(root, allowed):
    """Problems (strings) with the includes of root/core/**; [] when clean."""
    problems = []
    used = set()
    core = "core" + os.sep
    for rel in source_files(root):
        if not rel.startswith(core):
            continue
        for line, quote, name in includes(root, rel):
            target = resolve(root, rel, quote, name)
            if target is None and quote == "<":
                continue  # a system header
            if target is not None and target.startswith(core):
                continue
            key = (rel, name)
            if key in allowed:
                used.add(key)
                continue
            where = ("%s is outside core/" % target) if target \
                else "not a file under core/ (a generated or misspelt header?)"
            close = '"' if quote == '"' else ">"
            problems.append("%s:%d includes %s%s%s: %s; src/core may include only core/ headers"
                            % (rel, line, quote, name, close, where))
    for key in sorted(set(allowed) - used):
        problems.append("allow-list entry %s includes %s matches no include any more (%s): "
                        "drop it from CORE_ALLOWED in %s" % (key[0], key[1], allowed[key],
                                                             os.path.basename(__file__)))
    return problems


def include_graph(root):
    """{file: sorted [included project files]} over every source file under root."""
    graph = {}
    for rel in source_files(root):
        deps = set()
        for _, quote, name in includes(root, rel):
            target = resolve(root, rel, quote, name)
            if target is not None:
                deps.add(target)
        graph[rel] = sorted(deps)
    return graph


def cycles(graph):
    """One cycle per strongly connected component that has one, each as a
    list of files [a, b, ..., a]; deterministic (sorted) order."""
    index, low, on_stack, stack, sccs = {}, {}, set(), [], []
    counter = [0]

    def strongconnect(v):
        # Iterative Tarjan: deep include chains must not hit Python's recursion limit.
        work = [(v, iter(graph.get(v, ())))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph.get(w, ()))))
                    advanced = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                sccs.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)

    found = []
    for comp in sorted(sccs):
        members = set(comp)
        start = comp[0]
        if len(comp) == 1 and start not in graph.get(start, ()):
            continue
        # Shortest way from start back to start inside the component (BFS).
        prev = {start: None}
        queue = [start]
        last = None
        while queue and last is None:
            nxt = []
            for u in queue:
                if start in graph.get(u, ()):
                    last = u
                    break
                for w in graph.get(u, ()):
                    if w in members and w not in prev:
                        prev[w] = u
                        nxt.append(w)
            queue = nxt
        path = [start]
        x = last
        while x != start:
            path.append(x)
            x = prev[x]
        path = [start] + path[1:][::-1] + [start]
        found.append(path)
    return found


def check_include_cycles(root):
    return ["circular include: " + " -> ".join(c) for c in cycles(include_graph(root))]


GUARD_RE = re.compile(r"^#ifndef[ \t]+(\w+)[ \t]*\n#define[ \t]+(\w+)", re.M)


def guard_for(rel):
    """core/err.h -> KGS_CORE_ERR_H"""
    return "KGS_" + re.sub(r"[^A-Za-z0-9]", "_", rel[:-2]).upper() + "_H"


def check_header_guards(root):
    problems = []
    for rel in source_files(root):
        if not rel.endswith(".h"):
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = BLOCK_COMMENT_RE.sub("", f.read())
        want = guard_for(rel)
        m = GUARD_RE.search(text)
        if not m:
            problems.append("%s: no include guard (#ifndef %s, #define %s)" % (rel, want, want))
        elif m.group(1) != want or m.group(2) != want:
            problems.append("%s: include guard %s, want %s" % (rel, m.group(1), want))
    return problems


# ---- self-test: each check must fail on a tree that breaks its rule ----

def _tree(files):
    d = tempfile.TemporaryDirectory(prefix="kgs-layout-")
    for rel, text in files.items():
        p = os.path.join(d.name, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
    return d


def self_test():
    failures = []

    def expect(what, problems, needles):
        if not needles and problems:
            failures.append("%s: expected no problem, got %s" % (what, problems))
        for n in needles:
            if not any(n in p for p in problems):
                failures.append("%s: expected a problem naming %r, got %s" % (what, n, problems))

    clean = {
        "core/a.h": '#include <stdio.h>\n#include "core/b.h"\n',
        "core/b.h": "/* #include \"net/x.h\" in a comment is no include */\n",
        "core/a.c": '#include "core/a.h"\n#include "b.h"\n#include <math.h>\n',
        "net/x.h": '#include "core/a.h"\n#include "proto/gen.pb-c.h"\n',
        "net/x.c": '#include "net/x.h"\n',
    }
    with _tree(clean) as root:
        expect("clean tree, core-includes", check_core_includes(root, {}), [])
        expect("clean tree, include-cycles", check_include_cycles(root), [])
        # An allow-list entry that matches nothing fails: it has outlived its reason.
        expect("stale allow-list entry", check_core_includes(root, {("core/a.c", "net/x.h"): "t"}),
               ["allow-list entry core/a.c includes net/x.h matches no include"])

    bad_core = dict(clean)
    bad_core["core/a.c"] += '#include "net/x.h"\n'
    bad_core["core/b.h"] += "#include <net/x.h>\n"
    bad_core["core/c.c"] = '#include "proto/gen.pb-c.h"\n'
    with _tree(bad_core) as root:
        problems = check_core_includes(root, {})
        expect("core includes net/, quoted", problems, ['core/a.c:4 includes "net/x.h"'])
        expect("core includes net/, angle", problems, ["core/b.h:2 includes <net/x.h>"])
        expect("core includes a generated header", problems,
               ['core/c.c:1 includes "proto/gen.pb-c.h"'])
        # The allow-list tolerates exactly its entry, and only that one.
        problems = check_core_includes(root, {("core/a.c", "net/x.h"): "t"})
        expect("allowed include", [p for p in problems if "core/a.c" in p], [])
        expect("allowed include leaves the others", problems, ["core/b.h:2"])

    guarded = {"core/a.h": "/* a */\n#ifndef KGS_CORE_A_H\n#define KGS_CORE_A_H\n#endif\n",
               "net/x.h": "#ifndef KGS_NET_X_H\n#define KGS_NET_X_H\n#endif\n",
               "net/x.c": "int x;\n"}
    with _tree(guarded) as root:
        expect("guarded headers", check_header_guards(root), [])
    misguarded = dict(guarded)
    misguarded["net/x.h"] = "#ifndef KGS_X_H\n#define KGS_X_H\n#endif\n"
    misguarded["net/y.h"] = "int y;\n"
    with _tree(misguarded) as root:
        problems = check_header_guards(root)
        expect("a guard of the other pattern", problems,
               ["net/x.h: include guard KGS_X_H, want KGS_NET_X_H"])
        expect("no guard", problems, ["net/y.h: no include guard"])

    loop = dict(clean)
    loop["net/y.h"] = '#include "net/z.h"\n'
    loop["net/z.h"] = '#include "core/a.h"\n#include "net/y.h"\n'
    loop["core/b.h"] += '#include "a.h"\n'  # core/a.h -> core/b.h -> core/a.h
    loop["env/self.h"] = '#include "env/self.h"\n'
    with _tree(loop) as root:
        problems = check_include_cycles(root)
        expect("two-header cycle", problems,
               ["circular include: core/a.h -> core/b.h -> core/a.h"])
        expect("cycle through another folder", problems,
               ["circular include: net/y.h -> net/z.h -> net/y.h"])
        expect("self include", problems, ["circular include: env/self.h -> env/self.h"])
        if len(problems) != 3:
            failures.append("expected exactly 3 cycles, got %s" % problems)

    for f in failures:
        print("self-test FAILED: " + f)
    if not failures:
        print("self-test: each check passes a clean tree and fails a planted violation")
    return 1 if failures else 0


def main(argv):
    if len(argv) == 2 and argv[1] == "self-test":
        return self_test()
    if len(argv) != 3 or argv[1] not in ("core-includes", "include-cycles", "header-guards"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = argv[2]
    if not os.path.isdir(os.path.join(root, "core")):
        print("%s: no core/ folder under %s: not a source root" % (argv[1], root),
              file=sys.stderr)
        return 2
    if argv[1] == "core-includes":
        problems = check_core_includes(root, CORE_ALLOWED)
    elif argv[1] == "header-guards":
        problems = check_header_guards(root)
    else:
        problems = check_include_cycles(root)
    for p in problems:
        print(p)
    if problems:
        print("%s: %d problem(s) under %s" % (argv[1], len(problems), root))
        return 1
    print("%s: %d files under %s, none breaks the rule" % (argv[1], len(source_files(root)),
                                                        root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
