#!/usr/bin/env python3
"""The docs against the code: every flag gpu-metrics knows is documented,
every documented flag exists, every gpu-metrics example line in the docs
parses (run with --dry-run), and every JSON field the docs name is in the
real output."""
import json
import os
import re
import shlex
import subprocess
import unittest

from kgs_util import SOURCE_DIR

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


if __name__ == "__main__":
    unittest.main(verbosity=2)
