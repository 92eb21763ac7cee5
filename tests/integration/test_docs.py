#!/usr/bin/env python3
"""The docs against the code: every flag gpu-metrics knows is documented,
every documented flag exists, every gpu-metrics example line in the docs
parses (run with --dry-run), and every JSON field the docs name is in the
real output; every repository path and relative link a doc names exists;
every shell command of README.md, docs/quickstart.md (and the pages in
COMMAND_DOCS) that can run without a cluster or network runs, and exits as
the doc says."""
import fnmatch
import glob
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import textwrap
import unittest

from kgs_util import SOURCE_DIR, timeout_multiplier

GPU_METRICS = os.environ["GPU_METRICS"]
SIM = os.environ["NVML_SIM_LIBRARY"]
SRC = SOURCE_DIR
DOCS = [os.path.join(SRC, "README.md"), os.path.join(SRC, "docs", "hpc.md")]
# A SLURM job context so %j/%n/%t templates expand in examples.
JOB_ENV = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "1", "SLURMD_NODENAME": "n1", "SLURM_PROCID": "0"}


def read(p):
    with open(p) as f:
        return f.read()


def help_flags():
    out = subprocess.run([GPU_METRICS, "--help"], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"^\s+(--[a-z-]+)", out, re.M))


def example_lines():
    """gpu-metrics command lines inside ``` blocks of the docs."""
    for path in DOCS:
        for block in re.findall(r"```(?:sh|bash|console)?\n(.*?)```", read(path), re.S):
            for line in block.splitlines():
                line = line.split(" #")[0].strip()
                m = re.search(r"(?:^|\s)(gpu-metrics(?:\s[^|&;']*)?)", line)
                if m and not line.startswith("#"):
                    yield path, m.group(1).strip().rstrip("\\").strip()


class Docs(unittest.TestCase):
    def test_every_flag_is_documented_in_hpc_md(self):
        hpc = read(DOCS[1])
        for flag in help_flags():
            self.assertTrue(flag in hpc, "flag %s is missing from docs/hpc.md" % flag)

    def test_every_documented_flag_exists(self):
        known = help_flags()
        for path in DOCS:
            for flag in set(re.findall(r"`gpu-metrics[^`]*?(--[a-z-]+)", read(path))):
                self.assertIn(flag, known, "%s documents unknown flag %s" % (path, flag))

    def test_every_example_command_parses(self):
        n = 0
        for path, cmd in example_lines():
            argv = shlex.split(cmd)[1:]
            r = subprocess.run([GPU_METRICS] + argv + ["--dry-run"], env=JOB_ENV,
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, "%s: `%s`: %s" % (path, cmd, r.stderr))
            n += 1
        self.assertGreater(n, 5)

    def test_documented_json_fields_exist_in_real_output(self):
        r = subprocess.run([GPU_METRICS, "--nvml-library", SIM, "--format", "json"],
                           env={"PATH": "/usr/bin:/bin", "NVML_SIM_SCENARIO":
                                os.path.join(SRC, "sim/scenarios/mig-a100.json")},
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        keys = set(doc) | set(doc["environment"])
        for d in doc["devices"]:
            keys |= set(d)
            for m in d["mig_instances"]:
                keys |= set(m)
        schema = read(DOCS[1]).split("## Output schema", 1)[1]
        # The field table: first-column names of each row.
        table_rows = re.findall(r"^\| (`[^|]+`) \|", schema, re.M)
        names = set()
        for cell in table_rows:
            names |= set(re.findall(r"`([a-z_]+)`", cell))
        self.assertGreater(len(names), 20)
        for name in sorted(names):
            self.assertIn(name, keys, "docs/hpc.md names field %s, which the JSON lacks" % name)
        # And the reverse: every device field is in the table.
        for k in doc["devices"][0]:
            self.assertIn(k, names, "JSON device field %s is undocumented" % k)


SERVER = os.environ["KEDA_GPU_SCALER"]
SERVER_DOC = os.path.join(SRC, "docs", "server.md")


def server_flags(*args):
    out = subprocess.run([SERVER] + list(args), capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"^\s+(--[a-z-]+)", out, re.M))


class ServerDocs(unittest.TestCase):
    def test_every_server_flag_is_in_the_flag_table(self):
        doc = read(SERVER_DOC)
        for flag in server_flags("--help"):
            self.assertTrue("`%s`" % flag in doc, "flag %s is missing from docs/server.md" % flag)

    def test_every_flag_in_the_table_exists(self):
        known = server_flags("--help")
        table = read(SERVER_DOC).split("### Flags", 1)[1].split("###", 1)[0]
        for flag in set(re.findall(r"`(--[a-z-]+)`", table)):
            self.assertIn(flag, known, "docs/server.md documents unknown flag %s" % flag)

    def test_every_query_flag_is_documented(self):
        doc = read(SERVER_DOC)
        for flag in server_flags("query", "--help"):
            self.assertTrue(flag in doc, "query flag %s is missing from docs/server.md" % flag)

    def test_every_validate_flag_is_documented(self):
        doc = read(SERVER_DOC)
        for flag in server_flags("validate", "--help"):
            self.assertTrue(flag in doc, "validate flag %s is missing from docs/server.md" % flag)

    def test_every_environment_variable_the_server_reads_is_documented(self):
        """getenv() names in the server's sources, and the KEDA_GPU_SCALER_<FLAG>
        form of every flag, against the Environment section."""
        env_doc = read(SERVER_DOC).split("### Environment", 1)[1].split("\n## ", 1)[0]
        names = set()
        for d in ("server", "cluster", "scaler", "sources", "net", "nvml"):
            for root, _, files in os.walk(os.path.join(SRC, "src", d)):
                for f in files:
                    if f.endswith(".c"):
                        names |= set(re.findall(r'getenv\("([A-Z_]+)"\)',
                                                read(os.path.join(root, f))))
        self.assertIn("NODE_NAME", names)
        for n in names:
            self.assertIn("`%s`" % n, env_doc, "environment variable %s is undocumented" % n)
        self.assertIn("KEDA_GPU_SCALER_<FLAG>", env_doc)
        # The generic form really works for a flag: KEDA_GPU_SCALER_PORT=bad is refused.
        p = subprocess.run([SERVER], capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin", "KEDA_GPU_SCALER_PORT": "bad"})
        self.assertEqual(p.returncode, 2)
        self.assertIn("KEDA_GPU_SCALER_PORT", p.stderr)

    def test_documented_metric_names_exist_in_the_code(self):
        src = read(os.path.join(SRC, "src", "server", "metrics.c"))
        table = read(SERVER_DOC).split("### Metrics", 1)[1].split("##", 1)[0]
        names = set()
        for cell in re.findall(r"^\| ([^|]+) \|", table, re.M):
            names |= set(re.findall(r"`([a-z_]+)(?:\{[^`]*\})?`", cell))
        self.assertGreater(len(names), 20)
        for n in names:
            if n in ("keda_gpu_scaler_",):
                continue
            self.assertTrue('"%s"' % n in src, "docs/server.md names metric %s, not in metrics.c" % n)


# ---- repository paths and links the docs name ----

BUILD = os.environ.get("KGS_BUILD_DIR", os.path.join(SRC, "build", "release"))
PATH_DOCS = ["README.md", "docs/*.md", "sim/README.md", "bench/README.md", "deploy/**/README*"]
# Written by a command other than the build, so absent from a fresh build:
# named in the docs as what that command leaves behind.
MADE_BY_COMMANDS = {
    "bench/out": "make bench",
    "build/dist": "make dist",
    "build/release/demo-llm-node.json": "make run",
}
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


def path_docs():
    out = []
    for pattern in PATH_DOCS:
        out += sorted(glob.glob(os.path.join(SRC, pattern), recursive=True))
    return out


def repo_dirs():
    """Top-level directories of the repository: a token naming one of them
    first (`src/...`, `deploy/...`) is a repository path."""
    return sorted(d for d in os.listdir(SRC) if os.path.isdir(os.path.join(SRC, d))
                  and not d.startswith(".") and d != "build") + ["build"]


def split_markdown(text):
    """(code blocks, prose without them)."""
    return FENCE.findall(text), FENCE.sub("", text)


def path_tokens(text, dirs):
    """Path-looking words of backtick spans and code blocks."""
    blocks, prose = split_markdown(text)
    chunks = blocks + re.findall(r"`([^`\n]+)`", prose)
    head = re.compile(r"^(?:\./)?(?:%s)/" % "|".join(map(re.escape, dirs)))
    # A relative path through a folder named after the project (the chart's,
    # deploy/helm/keda-gpu-scaler) is this repository's too, whatever its
    # first folder: `charts/keda-gpu-scaler/values.yaml` is a wrong path, not
    # another project's. Not: absolute paths (an installed tree), image names
    # (a registry host first), PREFIX/... placeholders.
    ours = re.compile(r"^(?![A-Z][A-Z0-9_]*/)[a-z0-9_-]+/(?:[^/\s]+/)*keda-gpu-scaler/")
    for chunk in chunks:
        chunk = re.sub(r"[a-z][a-z0-9+.-]*://\S*", " ", chunk)   # URLs
        for tok in re.split(r"[\s=,;\"'`()\[\]|&]+", chunk):
            if not head.match(tok) and not (ours.match(tok) and ":" not in tok):
                continue
            tok = re.sub(r":\d.*$", "", tok)            # file:line
            tok = tok.rstrip(".:,;")
            if tok.startswith("./"):
                tok = tok[2:]
            yield tok


def repository_files():
    """Every path of the repository (files and their directories): git's
    tracked and not-ignored files, so a build output or `make bench` result
    lying in the tree does not count; the tree itself where there is no git."""
    try:
        out = subprocess.run(["git", "-C", SRC, "ls-files", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    paths = set()
    for f in out.splitlines():
        parts = f.split("/")
        for i in range(1, len(parts) + 1):
            paths.add("/".join(parts[:i]))
    return paths


REPO_FILES = repository_files()


def in_repository(pattern):
    pattern = pattern.rstrip("/")
    if REPO_FILES is None:
        return bool(glob.glob(os.path.join(SRC, pattern), recursive=True))
    if not any(c in pattern for c in "*?["):
        return pattern in REPO_FILES
    rx = re.compile(fnmatch.translate(pattern).replace(".*", "[^/]*"))
    return any(rx.match(p) for p in REPO_FILES)


def placeholder_glob(tok):
    """sim/scenarios/NAME.json -> sim/scenarios/*.json (an upper-case word
    standing for a name the reader picks)."""
    return "/".join(re.sub(r"^[A-Z][A-Z0-9_]+", "*", part) for part in tok.split("/"))


def path_problem(tok):
    """None when the repository path `tok` exists (or is made by the build,
    in the build directory the test was given), else what is wrong."""
    if any(c in tok for c in "<>{}$%") or "…" in tok or "..." in tok:
        return None                                  # a template, not a path
    for prefix in MADE_BY_COMMANDS:
        if tok == prefix or tok.startswith(prefix + "/"):
            return None
    parts = tok.split("/")
    if parts[0] == "build":
        # build/release/X, build/asan/X, build/fuzz/X: the same tree layout,
        # checked in the build directory this test runs for.
        if len(parts) < 2 or parts[1] == "":
            return None
        if parts[1] not in ("release", "asan", "fuzz"):
            return "no build directory %s/ (the builds are build/release, build/asan, build/fuzz)" % (
                "/".join(parts[:2]))
        rest = "/".join(parts[2:])
        if not rest or glob.glob(os.path.join(BUILD, rest)):
            return None
        return "the build does not make %s (looked in %s)" % (rest, BUILD)
    for candidate in (tok, placeholder_glob(tok)):
        if in_repository(candidate):
            return None
    if in_repository(tok + ".c"):
        return None                                  # a program, named without its .c
    return "no such file or directory in the repository"


def github_slugs(text):
    """The anchors GitHub gives a file's headings."""
    slugs = set()
    for line in FENCE.sub("", text).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        n = 0
        while (slug if n == 0 else "%s-%d" % (slug, n)) in slugs:
            n += 1
        slugs.add(slug if n == 0 else "%s-%d" % (slug, n))
    return slugs


def link_problems(doc_path, text):
    _, prose = split_markdown(text)
    for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", prose):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue                                 # https:, mailto:
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(doc_path), path)) if path else doc_path
        if not os.path.exists(full):
            yield "link (%s): no such file" % target
            continue
        if anchor and full.endswith(".md") and anchor not in github_slugs(read(full)):
            yield "link (%s): %s has no heading with that anchor" % (target, os.path.relpath(full, SRC))


def folder_commands(text, dirs):
    """Commands (a backtick span or a shell block's line: a path, then arguments)
    whose program is a folder of the repository, like `tools/scalesim
    recommend ...` for the folder of scalesim's sources."""
    _, prose = split_markdown(text)
    lines = re.findall(r"`([^`\n]+)`", prose)
    for block in SHELL_FENCE.findall(text):   # shell blocks only: others list folders
        lines += [l.strip().lstrip("$ ") for l in block.splitlines()]
    head = re.compile(r"^(?:\./)?(?:%s)/" % "|".join(map(re.escape, dirs)))
    for line in lines:
        m = re.match(r"^(\S+)\s+[-\w]", line)
        if m and head.match(m.group(1)) and os.path.isdir(os.path.join(SRC, m.group(1))):
            yield line


def doc_path_problems(paths):
    dirs = repo_dirs()
    problems = []
    for path in paths:
        text = read(path)
        rel = os.path.relpath(path, SRC)
        for tok in sorted(set(path_tokens(text, dirs))):
            why = path_problem(tok)
            if why:
                problems.append("%s names `%s`: %s" % (rel, tok, why))
        for cmd in folder_commands(text, dirs):
            problems.append("%s gives `%s` as a command, but %s is a folder (name the built "
                            "program and the build that makes it)" % (rel, cmd, cmd.split()[0]))
        problems += ["%s: %s" % (rel, p) for p in link_problems(path, text)]
    return problems


class DocPaths(unittest.TestCase):
    def test_every_repository_path_and_link_in_the_docs_exists(self):
        docs = path_docs()
        self.assertGreater(len(docs), 10, docs)
        problems = doc_path_problems(docs)
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_every_repository_path_in_the_help_texts_exists(self):
        dirs = repo_dirs()
        problems, n = [], 0
        for argv in ([GPU_METRICS, "--help"], [SERVER, "--help"], [SERVER, "query", "--help"],
                     [SERVER, "validate", "--help"]):
            out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
            for tok in sorted(set(path_tokens("```\n%s```\n" % out, dirs))):
                n += 1
                why = path_problem(tok)
                if why:
                    problems.append("%s %s names `%s`: %s" % (
                        os.path.basename(argv[0]), " ".join(argv[1:]), tok, why))
        self.assertEqual(problems, [], "\n" + "\n".join(problems))
        self.assertGreater(n, 0)

    def test_the_path_check_fails_on_a_bad_path(self):
        with tempfile.TemporaryDirectory() as d:
            doc = os.path.join(d, "x.md")
            with open(doc, "w") as f:
                f.write("See `src/server/no_such_file.c` and `sim/scenarios/NAME.json`,\n"
                        "`charts/keda-gpu-scaler/values.yaml`, `PREFIX/lib/keda-gpu-scaler/x.so`,\n"
                        "`ghcr.io/keda-gpu-scaler/keda-gpu-scaler:0.1.0`,\n"
                        "`tools/scalesim recommend --trace FILE`, `tools/scalesim` alone,\n"
                        "```sh\nNVML_SIM_SCENARIO=sim/scenarios/nope.json build/sim/libnvml-sim.so\n"
                        "build/release/sim/libnvml-sim.so bench/out/x.svg ../shared/data/x\n```\n"
                        "[a](%s/docs/server.md#no-such-heading) [b](%s/docs/nope.md) "
                        "[c](%s/docs/server.md#using-it-from-keda) [d](https://example.com/src/x)\n"
                        % (SRC, SRC, SRC))
            problems = doc_path_problems([doc])
        text = "\n".join(problems)
        for bad in ("src/server/no_such_file.c", "sim/scenarios/nope.json", "build/sim",
                    "no-such-heading", "docs/nope.md", "charts/keda-gpu-scaler/values.yaml",
                    "gives `tools/scalesim recommend --trace FILE` as a command"):
            self.assertIn(bad, text)
        for good in ("NAME.json", "build/release/sim", "bench/out", "shared/data", "#using-it-from-keda",
                     "example.com", "PREFIX", "ghcr.io"):
            self.assertNotIn(good, text)
        self.assertEqual(len(problems), 7, text)

    def test_every_scaler_address_uses_the_namespace_the_manifests_deploy(self):
        """One namespace on every page: the one deploy/manifests and the chart's
        NOTES (release keda-gpu-scaler in namespace keda-gpu-scaler) give."""
        kust = read(os.path.join(SRC, "deploy/manifests/base/kustomization.yaml"))
        ns = re.search(r"^namespace:\s*(\S+)", kust, re.M).group(1)
        want = re.compile(r"^keda-gpu-scaler\.%s\.svc(\.cluster\.local)?:6000$" % re.escape(ns))
        files = path_docs() + sorted(glob.glob(os.path.join(SRC, "deploy/examples/*.yaml")))
        n, wrong = 0, []
        for path in files:
            for addr in re.findall(r"scalerAddress:\s*`?([A-Za-z0-9.:-]+)", read(path)):
                n += 1
                if not want.match(addr):
                    wrong.append("%s: scalerAddress %s" % (os.path.relpath(path, SRC), addr))
        self.assertEqual(wrong, [], "the manifests deploy keda-gpu-scaler.%s.svc:6000:\n%s" % (
            ns, "\n".join(wrong)))
        self.assertGreater(n, 8)

    def test_every_scaled_object_and_trigger_in_the_docs_validates(self):
        """YAML blocks that are ScaledObjects / ScaledJobs, `triggers:` lists
        and trigger `metadata:` maps pass `keda-gpu-scaler validate` (the
        server's own checks), fragments wrapped into a ScaledObject."""
        head = ("apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\n"
                "metadata: {name: doc, namespace: ml}\nspec:\n  scaleTargetRef: {name: doc}\n")
        n, problems = 0, []
        for path in path_docs():
            text = read(path)
            for m in re.finditer(r"^```ya?ml[ \t]*\n(.*?)^```", text, re.M | re.S):
                y = textwrap.dedent(m.group(1))
                first = next((l for l in y.splitlines() if l.strip() and not l.startswith("#")), "")
                if re.search(r"^kind:\s*Scaled(Object|Job)\b", y, re.M):
                    doc = y
                elif first.startswith("triggers:"):
                    doc = head + textwrap.indent(y, "  ")
                elif first.startswith("metadata:") and not re.search(r"^\s+name:", y, re.M):
                    if "scalerAddress" not in y:
                        y = y.replace("metadata:", "metadata:\n  scalerAddress: "
                                      "keda-gpu-scaler.keda-gpu-scaler.svc:6000", 1)
                    doc = head + "  triggers:\n    - type: external\n" + textwrap.indent(y, "      ")
                else:
                    continue
                n += 1
                r = subprocess.run([SERVER, "validate", "-"], input=doc, capture_output=True,
                                   text=True)
                if r.returncode != 0:
                    problems.append("%s:%d: %s%s" % (os.path.relpath(path, SRC),
                                    text.count("\n", 0, m.start(1)) + 1, r.stdout, r.stderr))
        self.assertEqual(problems, [], "\n".join(problems))
        self.assertGreaterEqual(n, 5)

    def test_every_make_target_the_docs_name_exists(self):
        makefile = read(os.path.join(SRC, "Makefile"))
        targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, re.M))
        self.assertIn("install", targets)
        n, wrong = 0, []
        for path in path_docs():
            blocks, prose = split_markdown(read(path))
            # a command line of a block (`$ ` prompt or not), or a backtick span
            for chunk in blocks + re.findall(r"`([^`\n]+)`", prose):
                for target in re.findall(r"^[ \t]*(?:\$ )?make ([a-z][a-z-]*)", chunk, re.M):
                    n += 1
                    if target not in targets:
                        wrong.append("%s: make %s" % (os.path.relpath(path, SRC), target))
        self.assertEqual(wrong, [], "not Makefile targets:\n" + "\n".join(wrong))
        self.assertGreater(n, 10)

    def test_every_test_function_the_docs_name_exists(self):
        """`test_x` in a backtick span: a test of that name (or, ending in
        `…`/`*`, that prefix) is defined somewhere under tests/."""
        sources = []
        for root, _, files in os.walk(os.path.join(SRC, "tests")):
            if "node_modules" in root:
                continue
            sources += [read(os.path.join(root, f)) for f in files if f.endswith((".c", ".py"))]
        defined = set()
        for text in sources:
            defined |= set(re.findall(r"\b(test_\w+)\s*\(", text))
        n, missing = 0, []
        for path in path_docs():
            _, prose = split_markdown(read(path))
            for name in re.findall(r"`(test_\w+[…*]?)`", prose):
                n += 1
                stem = name.rstrip("…*")
                if not (stem in defined or (stem != name and any(d.startswith(stem) for d in defined))):
                    missing.append("%s: %s" % (os.path.relpath(path, SRC), name))
        self.assertEqual(missing, [], "no such test:\n" + "\n".join(missing))
        self.assertGreater(n, 20)

    def test_every_test_the_fault_matrix_names_exists(self):
        doc = read(os.path.join(SRC, "docs", "operations.md")).split("## Fault matrix", 1)[1]
        n = 0
        for line in doc.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 3 or not cells[2].startswith("test_"):
                continue
            current = None
            for tok in re.findall(r"`[^`]+`|test_\w+", cells[2]):
                if not tok.startswith("`"):
                    current = tok
                    continue
                if current is None:
                    continue
                src = read(os.path.join(SRC, "tests", "integration", current + ".py"))
                name = tok.strip("`").rstrip("…*")
                self.assertRegex(src, r"def %s" % re.escape(name),
                                 "docs/operations.md: %s has no test %s" % (current, tok))
                n += 1
        self.assertGreater(n, 20)


# ---- sentences that name counts, make targets and binaries ----

NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty".split())}


def number_of(word):
    word = word.lower()
    return int(word) if word.isdigit() else NUMBER_WORDS.get(word)


def count_examples():
    return len(glob.glob(os.path.join(SRC, "deploy", "examples", "*.yaml")))


def count_fuzz_targets():
    return len(glob.glob(os.path.join(SRC, "fuzz", "fuzz_*.c")))


def count_validate_max_pairs():
    m = re.search(r"#define MAX_PAIRS (\d+)", read(os.path.join(SRC, "src", "server", "validate.c")))
    return int(m.group(1))


def count_serving_engines():
    """The Serving engines table's rows, less epp (the gateway, not an engine)."""
    table = read(os.path.join(SRC, "docs", "configuration.md")).split("### Serving engines", 1)[1]
    rows = re.findall(r"^\| `([a-z]+)` \|.*\| (\d+) \|$", table.split("\n\n", 2)[1], re.M)
    return len([r for r, _ in rows if r != "epp"])


# A sentence that names how many of something there are, and how to count
# them: (pattern with the number as group 1, counter, what is counted). Each
# pattern must match somewhere, so rewording a sentence cannot drop its check.
COUNT_CLAIMS = [
    (r"\b(\w+) tested examples\b", count_examples, "deploy/examples/*.yaml"),
    (r"\bAll (\w+) targets have had\b", count_fuzz_targets, "fuzz/fuzz_*.c"),
    (r"\b(\w+) keys a map \(validate\)", count_validate_max_pairs, "validate.c's MAX_PAIRS"),
    (r"\b(\w+) engines and the inference gateway\b", count_serving_engines,
     "the Serving engines table's engines"),
]


def count_problems(docs):
    """One line per count sentence that disagrees, and the patterns no doc matched."""
    problems, seen = [], set()
    for path in docs:
        text = re.sub(r"\s+", " ", read(path))
        for pattern, counter, what in COUNT_CLAIMS:
            for m in re.finditer(pattern, text):
                seen.add(pattern)
                said, real = number_of(m.group(1)), counter()
                if said != real:
                    problems.append("%s: \"%s\" says %s, but there are %d (%s)" % (
                        os.path.relpath(path, SRC), m.group(0), m.group(1), real, what))
    return problems, [p for p, _, _ in COUNT_CLAIMS if p not in seen]


def makefile_targets():
    """(.PHONY targets, every rule target that is no file)."""
    text = read(os.path.join(SRC, "Makefile")).replace("\\\n", " ")
    phony = set(re.search(r"^\.PHONY:(.*)$", text, re.M).group(1).split())
    rules = set(re.findall(r"^([a-z][a-z-]*):(?!=)", text, re.M))
    return phony, rules


def make_help():
    return subprocess.run(["make", "-s", "--no-print-directory", "-C", SRC, "help"],
                          capture_output=True, text=True, check=True, timeout=60).stdout


def make_builds(target):
    """The CMake targets `make TARGET` builds (make's dry run): a set, or None
    for the whole tree."""
    out = subprocess.run(["make", "-n", "--no-print-directory", "-C", SRC, target],
                         capture_output=True, text=True, timeout=60).stdout
    built = set()
    for line in out.splitlines():
        if "cmake --build" not in line:
            continue
        m = re.search(r"--target (.*)$", line)
        if not m:
            return None
        built |= set(m.group(1).split())
    return built


def cmake_target_of(binary):
    """build/release/sim/libnvml-sim.so -> nvml-sim; .../scalesim -> scalesim."""
    name = os.path.basename(binary)
    return re.sub(r"^lib(.*)\.so$", r"\1", name)


def build_claims(text):
    """(make target, build path) for each paragraph of prose that says a
    `make X` builds a `build/release/...` file."""
    _, prose = split_markdown(text)
    for para in re.split(r"\n\s*\n", prose):
        if not re.search(r"\bbuil(?:ds|t)\b", para):
            continue
        targets = re.findall(r"`make ([a-z][a-z-]*)`", para)
        paths = re.findall(r"`(build/release/[^`\s]+)", para)
        if len(targets) and len(paths):
            # the target the sentence says builds it: the first one after "builds"/"built"
            said = re.search(r"`make ([a-z][a-z-]*)` builds|built by `make ([a-z][a-z-]*)`", para)
            target = (said.group(1) or said.group(2)) if said else targets[0]
            for p in paths:
                yield target, p


def build_claim_problems(docs, builds=make_builds):
    problems, n = [], 0
    for path in docs:
        for target, binary in build_claims(read(path)):
            n += 1
            built = builds(target)
            if built is not None and cmake_target_of(binary) not in built:
                problems.append("%s: says `make %s` builds `%s`, but make %s builds only %s" % (
                    os.path.relpath(path, SRC), target, binary, target, sorted(built)))
    return problems, n


class DocClaims(unittest.TestCase):
    def test_every_count_the_docs_name_is_the_real_one(self):
        problems, unmatched = count_problems(path_docs())
        self.assertEqual(problems, [], "\n" + "\n".join(problems))
        self.assertEqual(unmatched, [], "no doc says this any more; drop or fix the pattern")

    def test_a_wrong_count_is_caught(self):
        with tempfile.TemporaryDirectory() as d:
            doc = os.path.join(d, "x.md")
            with open(doc, "w") as f:
                f.write("The chart, seven tested\nexamples, and 3 tested examples.\n")
            problems, _ = count_problems([doc])
        self.assertEqual(len(problems), 2, problems)
        self.assertIn('"seven tested examples" says seven, but there are %d' % count_examples(),
                      problems[0])

    def test_make_help_lists_every_target(self):
        """The README says `make help` lists every target: each .PHONY target
        (and every rule that makes no file is one) is in its output."""
        self.assertIn("`make help` lists every target", read(os.path.join(SRC, "README.md")))
        phony, rules = makefile_targets()
        self.assertEqual(rules - phony, set(), "rules that make no file but are not .PHONY")
        self.assertGreater(len(phony), 15)
        out = make_help()
        missing = sorted(t for t in phony if not re.search(r"\bmake %s(?![\w-])" % t, out))
        self.assertEqual(missing, [], "make help does not list these targets")

    def test_each_binary_the_docs_say_a_make_target_builds_it_builds(self):
        problems, n = build_claim_problems(path_docs())
        self.assertEqual(problems, [], "\n" + "\n".join(problems))
        self.assertGreaterEqual(n, 2)
        # and the check can fail: `make build` builds only the programs
        with tempfile.TemporaryDirectory() as d:
            doc = os.path.join(d, "x.md")
            with open(doc, "w") as f:
                f.write("`make build` builds `build/release/tools/scalesim/scalesim`.\n\n"
                        "`make build-tests` builds `build/release/tools/scalesim/scalesim`.\n")
            problems, n = build_claim_problems([doc])
        self.assertEqual(n, 2)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("says `make build` builds `build/release/tools/scalesim/scalesim`, but make "
                      "build builds only ['gpu-metrics', 'keda-gpu-scaler', 'llm-fleet-sim', "
                      "'nvml-sim']", problems[0])


# ---- the shell commands of README.md, the quick start and the pages beside them ----

COMMAND_DOCS = ["README.md", "docs/quickstart.md", "docs/image.md", "docs/amd.md", "sim/README.md",
                "deploy/helm/keda-gpu-scaler/README.md"]
SHELL_FENCE = re.compile(r"^```(?:sh|bash|shell|console)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
STEP_S = 30        # the bound of one command (times KGS_TEST_TIMEOUT_MULTIPLIER)
UNTIL_STOPPED_S = 3
MAX_COUNT = 2      # --count 60 --interval 1s: two samples show it works
# Commands that cannot run here, by program (and kubectl verb). A command
# that matches none of these runs as written: a new command in the docs is
# run by default, never skipped without a reason written here.
SKIP = {
    "make": "make builds, and installs packages (scripts/install-deps): never from inside ctest",
    "docker": "needs a Docker daemon (and a registry)",
    "sudo": "changes the machine",
}
KUBECTL_NEEDS_A_CLUSTER = {"get", "run", "describe", "logs", "delete", "exec", "port-forward",
                           "create", "edit", "patch", "rollout", "top", "wait"}
# Runs on a copy of the repository's top level (links), with the stand-in:
JOB_CONTEXT = {"SLURM_JOB_ID": "1", "SLURMD_NODENAME": "n1", "SLURM_PROCID": "0"}


def strip_comment(line):
    """(command, comment) of one shell line: '#' outside quotes, at a word start."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def doc_commands():
    """(doc, line number, command, comment, block) for each command of a shell block."""
    for rel in COMMAND_DOCS:
        text = read(os.path.join(SRC, rel))
        for block, m in enumerate(SHELL_FENCE.finditer(text)):
            first = text.count("\n", 0, m.start(1)) + 1
            cmd, notes, start = "", [], None
            for i, raw in enumerate(m.group(1).splitlines()):
                line, comment = strip_comment(raw)
                if comment:
                    notes.append(comment)
                if not line.strip() and not cmd:
                    continue
                if start is None:
                    start = first + i
                if line.endswith("\\"):
                    cmd += line[:-1].strip() + " "
                    continue
                cmd += line.strip()
                yield rel, start, cmd, " ".join(notes), (rel, block)
                cmd, notes, start = "", [], None


def argv_of(cmd):
    """The words after any leading VAR=value assignments."""
    words = shlex.split(cmd)
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words.pop(0)
    return words


def kubectl_verb(words):
    i = 1
    while i < len(words) and words[i].startswith("-"):
        i += 1 if "=" in words[i] else 2          # -n NS, --namespace NS, --context C
    return (words[i] if i < len(words) else ""), words[i + 1:]


def helm_offline(words, render):
    """helm install NAME CHART [flags] -> the same rendering, offline."""
    opts, pos, i = [], [], 2
    while i < len(words):
        w = words[i]
        if w in ("--namespace", "-n", "--set", "--set-string", "-f", "--values"):
            opts += ["-f" if w == "--values" else w, words[i + 1]]
            i += 2
        elif w == "--create-namespace":
            i += 1
        elif w.startswith("-"):
            raise AssertionError("helm flag %s: teach test_docs.py's helm_offline what it means" % w)
        else:
            pos.append(w)
            i += 1
    name, chart = pos
    if shutil.which("helm"):
        return " ".join(map(shlex.quote, ["helm", "template", name, chart] + opts))
    opts = ["--namespace" if o == "-n" else o for o in opts]
    return " ".join(map(shlex.quote, [render, "--release", name] + opts + [chart]))


def plan(cmd, comment, render):
    """('run', command, runs_until_stopped) or ('skip', reason)."""
    words = argv_of(cmd)
    if not words:
        return "run", cmd, False                   # VAR=value for the lines below
    if cmd.rstrip().endswith("&") and not cmd.rstrip().endswith("&&"):
        return "skip", "starts a background process (a server) that nothing here stops"
    prog = os.path.basename(words[0])
    if prog in SKIP:
        return "skip", SKIP[prog]
    if prog == "kubectl":
        verb, rest = kubectl_verb(words)
        if verb in KUBECTL_NEEDS_A_CLUSTER:
            return "skip", "kubectl %s needs a cluster" % verb
        if verb == "apply" and rest[:1] == ["-k"]:
            return "run", "kubectl kustomize " + shlex.quote(rest[1]), False   # what it applies
        if verb == "apply" and rest[:1] == ["-f"]:
            return "run", "keda-gpu-scaler validate " + shlex.quote(rest[1]), False
    if prog == "helm":
        if words[1] in ("install", "upgrade", "template"):
            return "run", helm_offline(words, render), False
        return "skip", "helm %s needs a cluster" % words[1]
    until_stopped = False
    if prog == "gpu-metrics" and "--interval" in words:
        if "--count" not in words:
            if re.search(r"until (ctrl-c|stopped|interrupted)|ctrl-c", comment, re.I):
                until_stopped = True
            else:
                cmd = re.sub(r"(gpu-metrics)(?=\s|$)", r"\1 --count 1", cmd, count=1)
        else:
            cmd = re.sub(r"--count\s+(\d+)",
                         lambda m: "--count %d" % min(int(m.group(1)), MAX_COUNT), cmd)
    return "run", cmd, until_stopped


def expected_status(comment):
    m = re.search(r"\bexit(?:s| status)?\s+(\d+)", comment)
    return int(m.group(1)) if m else 0


class DocCommands(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kgs-docs-")
        # make install's tree, staged: the docs' bare gpu-metrics and
        # keda-gpu-scaler, and /usr/local/..., are what it installs.
        cls.stage = os.path.join(cls.tmp, "stage")
        cmake = os.environ.get("CMAKE_COMMAND") or shutil.which("cmake") or "cmake"
        subprocess.run([cmake, "--install", BUILD, "--prefix", "/usr/local"], check=True,
                       env=dict(os.environ, DESTDIR=cls.stage), capture_output=True)
        prefix = cls.stage + "/usr/local"
        cls.bin = os.path.join(cls.tmp, "bin")
        os.makedirs(cls.bin)
        # gpu-metrics without --nvml-library gets the stand-in and a scenario.
        with open(os.path.join(cls.bin, "gpu-metrics"), "w") as f:
            f.write('#!/bin/sh\n'
                    ': "${NVML_SIM_SCENARIO:=%s/share/keda-gpu-scaler/scenarios/idle-4xh100.json}"\n'
                    'export NVML_SIM_SCENARIO\n'
                    'case " $* " in *" --nvml-library"*) ;;\n'
                    '  *) set -- --nvml-library %s/lib/keda-gpu-scaler/libnvml-sim.so "$@" ;; esac\n'
                    'exec %s/bin/gpu-metrics "$@"\n' % (prefix, prefix, prefix))
        os.chmod(os.path.join(cls.bin, "gpu-metrics"), 0o755)
        os.symlink(prefix + "/bin/keda-gpu-scaler", os.path.join(cls.bin, "keda-gpu-scaler"))
        # The repository's top level, with build/release this test's build.
        cls.root = os.path.join(cls.tmp, "root")
        os.makedirs(os.path.join(cls.root, "build"))
        for e in os.listdir(SRC):
            if e not in ("build", ".git"):
                os.symlink(os.path.join(SRC, e), os.path.join(cls.root, e))
        os.symlink(BUILD, os.path.join(cls.root, "build", "release"))
        cls.home = os.path.join(cls.tmp, "home")
        os.makedirs(cls.home)
        # tests/deploy/helm's stand-in for `helm template` (built with the tree).
        cls.render = os.path.join(BUILD, "helm-render", "render")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_one(self, cmd, until_stopped):
        env = {"PATH": "%s:/usr/bin:/bin" % self.bin, "HOME": self.home,
               "TMPDIR": self.tmp, "LC_ALL": "C.UTF-8"}
        if "%j" in cmd or "%t" in cmd:
            env.update(JOB_CONTEXT)          # the doc says: in a SLURM job
        cmd = cmd.replace("/usr/local/", self.stage + "/usr/local/")
        p = subprocess.Popen(["/bin/sh", "-c", cmd], cwd=self.root, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
        bound = (UNTIL_STOPPED_S if until_stopped else STEP_S) * timeout_multiplier()
        try:
            out, err = p.communicate(timeout=bound)
            return p.returncode, out, err, False
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGTERM)
            try:
                out, err = p.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                out, err = p.communicate()
            return None, out, err, True

    def test_every_shell_command_of_the_docs_runs(self):
        ran, skipped, assigned = [], [], {}
        for doc, line, cmd, comment, block in doc_commands():
            where = "%s:%d: `%s`" % (doc, line, cmd)
            step = plan(cmd, comment, self.render)
            if step[0] == "skip":
                skipped.append("%s (%s)" % (where, step[1]))
                continue
            _, run_cmd, until_stopped = step
            if not argv_of(cmd):                       # S=... holds for the rest of its block
                assigned[block] = assigned.get(block, "") + cmd + "; "
                continue
            run_cmd = assigned.get(block, "") + run_cmd
            with self.subTest(command=where):
                rc, out, err, timed_out = self.run_one(run_cmd, until_stopped)
                shown = "" if run_cmd == cmd else " (run as `%s`)" % run_cmd
                if until_stopped:
                    self.assertTrue(timed_out, "%s%s: the doc says it runs until stopped, but it "
                                    "exited %s: %s" % (where, shown, rc, err[-2000:]))
                else:
                    self.assertFalse(timed_out, "%s%s: still running after %d s" % (
                        where, shown, STEP_S))
                    self.assertEqual(rc, expected_status(comment), "%s%s exited %s:\n%s%s" % (
                        where, shown, rc, out[-1000:], err[-2000:]))
                ran.append(where + shown)
        print("\nran:\n  %s\nskipped:\n  %s" % ("\n  ".join(ran), "\n  ".join(skipped)))
        self.assertGreater(len(ran), 8)

    def test_plan_skips_only_what_it_says(self):
        r = "/r"
        self.assertEqual(plan("make run", "", r)[0], "skip")
        self.assertEqual(plan("kubectl -n x get pods", "", r)[0], "skip")
        self.assertEqual(plan("kubectl apply -k deploy/manifests/base", "", r),
                         ("run", "kubectl kustomize deploy/manifests/base", False))
        self.assertEqual(plan("kubectl apply -f a.yaml", "", r),
                         ("run", "keda-gpu-scaler validate a.yaml", False))
        self.assertEqual(plan("gpu-metrics --interval 5s", "", r),
                         ("run", "gpu-metrics --count 1 --interval 5s", False))
        self.assertEqual(plan("gpu-metrics --interval 5s", "until Ctrl-C", r),
                         ("run", "gpu-metrics --interval 5s", True))
        self.assertEqual(plan("gpu-metrics --interval 1s --count 60", "", r),
                         ("run", "gpu-metrics --interval 1s --count 2", False))
        self.assertEqual(plan("some-new-tool --flag", "", r), ("run", "some-new-tool --flag", False))
        self.assertEqual(expected_status("exits 3 when a GPU is lost"), 3)
        self.assertEqual(expected_status("a table"), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
