#!/usr/bin/env python3
"""Layout rules of src/ that the compiler does not check (DESIGN.md, "Layout"):

  core-includes SRC   every file under SRC/core includes project headers from
                      SRC/core only ("core/..."); system headers are fine.
  include-cycles SRC  no circular includes: the graph of project includes
                      between the files under SRC has no cycle.
  folder-arrows SRC   every project include from SRC/<A>/ to SRC/<B>/ is an
                      arrow A -> B that FOLDER_ARROWS allows; the table itself
                      points only down the layers (core at the bottom, server
                      and cli at the top), and an arrow that points up is
                      allowed only file by file, in ARROW_EXCEPTIONS, with
                      its reason.
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

# The folders of src/, each with its layer (0 at the bottom; docs/architecture.md,
# "Source layout") and the folders below it that its files may include. Derived
# from the include graph as it is, each arrow confirmed to point down; a folder
# not listed here may include nothing outside itself. An include the table does
# not allow fails folder-arrows: add the arrow here only when it points down.
FOLDER_ARROWS = {
    "core": (0, set()),
    "net": (1, {"core"}),
    "env": (1, {"core"}),
    "gpu": (1, {"core"}),
    "nvml": (2, {"core", "gpu"}),
    "amdgpu": (2, {"core", "gpu"}),
    "amdsmi": (2, {"core", "gpu"}),
    "kube": (3, {"core", "net", "amdgpu"}),
    "sources": (3, {"core", "net"}),
    "cluster": (4, {"core", "net", "amdgpu", "kube"}),
    "scaler": (4, {"core", "net", "sources"}),
    "server": (5, {"core", "net", "env", "gpu", "nvml", "kube", "sources", "cluster", "scaler"}),
    "cli": (5, {"core", "env", "gpu", "nvml", "kube"}),
}

# Arrows that point up, allowed for one file each: (including file, target
# folder) relative to SRC, with why. An entry that no longer matches an include
# fails the check, so an exception cannot outlive its reason.
_SELECT_WHY = ("gpu/select opens the backends that implement gpu/backend.h: it sits above "
               "them (its own library, kgs_gpu_select), the rest of gpu/ below them")
ARROW_EXCEPTIONS = {
    ("gpu/select.c", "nvml"): _SELECT_WHY,
    ("gpu/select.c", "amdgpu"): _SELECT_WHY,
    ("gpu/select.c", "amdsmi"): _SELECT_WHY,
    ("gpu/select.h", "amdsmi"): _SELECT_WHY + " (gpu_selection_t hands out the amd-smi loader)",
    ("gpu/select.h", "nvml"): _SELECT_WHY + " (gpu_selection_t hands out the NVML loader)",
}

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


def folder_of(rel):
    """core/err.h -> "core"; None for a file directly under SRC."""
    parts = rel.split(os.sep)
    return parts[0] if len(parts) > 1 else None


def check_arrow_table(table, exceptions):
    """Problems with the table itself: an allowed arrow that does not point
    down, a target with no row, an exception that points down (it belongs in
    the table) or names a folder with no row."""
    problems = []
    for a in sorted(table):
        layer, allowed = table[a]
        for b in sorted(allowed):
            if b not in table:
                problems.append("FOLDER_ARROWS: %s -> %s: %s has no row" % (a, b, b))
            elif table[b][0] >= layer:
                problems.append("FOLDER_ARROWS: %s -> %s does not point down (layer %d -> %d): "
                                "an upward include is a named exception in ARROW_EXCEPTIONS"
                                % (a, b, layer, table[b][0]))
    for (rel, b), why in sorted(exceptions.items()):
        a = folder_of(rel)
        if a not in table or b not in table:
            problems.append("ARROW_EXCEPTIONS: %s -> %s/: a folder with no row in FOLDER_ARROWS"
                            % (rel, b))
        elif table[b][0] < table[a][0]:
            problems.append("ARROW_EXCEPTIONS: %s -> %s/ points down: allow %s -> %s in "
                            "FOLDER_ARROWS instead (%s)" % (rel, b, a, b, why))
    return problems


def check_folder_arrows(root, table, exceptions):
    """Problems (strings) with the includes between folders of root; [] when
    every include is an arrow the table allows."""
    problems = check_arrow_table(table, exceptions)
    used = set()
    for rel in source_files(root):
        a = folder_of(rel)
        if a is None:
            continue
        for line, quote, name in includes(root, rel):
            target = resolve(root, rel, quote, name)
            b = folder_of(target) if target else None
            if b is None or b == a:
                continue
            if a in table and b in table[a][1]:
                continue
            if (rel, b) in exceptions:
                used.add((rel, b))
                continue
            close = '"' if quote == '"' else ">"
            if a not in table:
                why = "%s/ has no row in FOLDER_ARROWS (its layer and the folders it may " \
                      "include)" % a
            else:
                allowed = ", ".join(sorted(table[a][1])) or "nothing outside itself"
                up = " (an upward include: layer %d -> %d)" % (table[a][0], table[b][0]) \
                    if b in table and table[b][0] >= table[a][0] else ""
                why = "arrow %s -> %s is not allowed%s; %s/ may include: %s" % (
                    a, b, up, a, allowed)
            problems.append("%s:%d includes %s%s%s: %s (FOLDER_ARROWS in %s)"
                            % (rel, line, quote, name, close, why, os.path.basename(__file__)))
    for key in sorted(set(exceptions) - used):
        problems.append("exception %s -> %s/ matches no include any more (%s): drop it from "
                        "ARROW_EXCEPTIONS in %s" % (key[0], key[1], exceptions[key],
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

    table = {"core": (0, set()), "net": (1, {"core"}), "gpu": (1, {"core"}),
             "nvml": (2, {"core", "gpu"}), "server": (3, {"core", "net", "nvml"})}
    layered = {
        "core/a.h": '#include <stdio.h>\n',
        "net/x.h": '#include "core/a.h"\n#include "proto/gen.pb-c.h"\n',
        "gpu/backend.h": '#include "core/a.h"\n',
        "gpu/select.c": '#include "gpu/backend.h"\n#include "nvml/nvml.h"\n',
        "nvml/nvml.h": '#include "gpu/backend.h"\n#include "nvml.h"\n',
        "server/main.c": '#include "net/x.h"\n#include <nvml/nvml.h>\n#include "core/a.h"\n',
    }
    select_up = {("gpu/select.c", "nvml"): "t"}
    with _tree(layered) as root:
        expect("clean tree, folder-arrows", check_folder_arrows(root, table, select_up), [])
        expect("upward include without its exception", check_folder_arrows(root, table, {}),
               ['gpu/select.c:2 includes "nvml/nvml.h": arrow gpu -> nvml is not allowed '
                "(an upward include: layer 1 -> 2); gpu/ may include: core"])
        stale = {**select_up, ("core/a.h", "net"): "t"}
        expect("stale exception", check_folder_arrows(root, table, stale),
               ["exception core/a.h -> net/ matches no include any more"])
    planted = dict(layered)
    planted["net/x.c"] = '#include "net/x.h"\n\n#include "server/main.h"\n'
    planted["server/main.h"] = "int x;\n"
    planted["core/b.c"] = '#include <nvml/nvml.h>\n'
    planted["server/more.c"] = '#include "gpu/backend.h"\n'  # down, but not in the table
    planted["env/e.c"] = '#include "core/a.h"\n'  # a folder with no row
    with _tree(planted) as root:
        problems = check_folder_arrows(root, table, select_up)
        expect("net includes server (upward)", problems,
               ['net/x.c:3 includes "server/main.h": arrow net -> server is not allowed '
                "(an upward include: layer 1 -> 3); net/ may include: core"])
        expect("core includes nvml, angle", problems,
               ["core/b.c:1 includes <nvml/nvml.h>: arrow core -> nvml is not allowed",
                "core/ may include: nothing outside itself"])
        expect("a downward arrow the table lacks", problems,
               ['server/more.c:1 includes "gpu/backend.h": arrow server -> gpu is not allowed; '
                "server/ may include: core, net, nvml"])
        expect("a folder with no row", problems, ["env/e.c:1 includes \"core/a.h\": env/ has no row"])
        if len(problems) != 4:
            failures.append("folder-arrows: expected exactly 4 problems, got %s" % problems)
    expect("table arrow pointing up", check_arrow_table(
        dict(table, net=(1, {"core", "nvml"})), {}),
        ["FOLDER_ARROWS: net -> nvml does not point down (layer 1 -> 2)"])
    expect("table arrow within a layer", check_arrow_table(
        dict(table, net=(1, {"core", "gpu"})), {}),
        ["FOLDER_ARROWS: net -> gpu does not point down (layer 1 -> 1)"])
    expect("exception that points down", check_arrow_table(table, {("server/m.c", "gpu"): "t"}),
           ["ARROW_EXCEPTIONS: server/m.c -> gpu/ points down"])
    expect("the real table", check_arrow_table(FOLDER_ARROWS, ARROW_EXCEPTIONS), [])

    for f in failures:
        print("self-test FAILED: " + f)
    if not failures:
        print("self-test: each check passes a clean tree and fails a planted violation")
    return 1 if failures else 0


def main(argv):
    if len(argv) == 2 and argv[1] == "self-test":
        return self_test()
    if len(argv) != 3 or argv[1] not in ("core-includes", "include-cycles", "header-guards",
                                         "folder-arrows"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = argv[2]
    if not os.path.isdir(os.path.join(root, "core")):
        print("%s: no core/ folder under %s: not a source root" % (argv[1], root),
              file=sys.stderr)
        return 2
    if argv[1] == "core-includes":
        problems = check_core_includes(root, CORE_ALLOWED)
    elif argv[1] == "folder-arrows":
        problems = check_folder_arrows(root, FOLDER_ARROWS, ARROW_EXCEPTIONS)
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
