#!/usr/bin/env python3
"""`make run` is a demo, not a test rig: it installs and builds only what it
runs. Checked without installing anything: scripts/install-deps --check with
a dpkg-query that reports every package absent, make's dry runs, a configure
without cmocka, and the demo script with its gRPC port taken."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ["KGS_SOURCE_DIR"]
BUILD = os.environ["KGS_BUILD_DIR"]
INSTALL_DEPS = os.path.join(SOURCE, "scripts", "install-deps")
# The demo writes its log and node file to KGS_DEMO_DIR: this test and its
# neighbour run at once on one build tree and must not share them.
DEMO_DIR = tempfile.TemporaryDirectory(prefix="kgs-demo-")
os.environ["KGS_DEMO_DIR"] = DEMO_DIR.name


def bash_array(name):
    text = open(INSTALL_DEPS, encoding="utf-8").read()
    m = re.search(r"^%s=\((.*?)\)" % name, text, re.M | re.S)
    assert m, name
    return m.group(1).split()


class InstallDeps(unittest.TestCase):
    def check(self, *args):
        """install-deps --check on a machine with nothing installed (no
        package, no node, npm or kubectl on PATH): the packages it wants."""
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "dpkg-query"), "w") as f:
                f.write("#!/bin/sh\nexit 1\n")
            os.chmod(os.path.join(d, "dpkg-query"), 0o755)
            os.symlink(shutil.which("bash"), os.path.join(d, "bash"))
            p = subprocess.run([INSTALL_DEPS, *args, "--check"], capture_output=True, text=True,
                               env={"PATH": d}, timeout=30)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        m = re.match(r"missing: (.*)", p.stdout)
        self.assertTrue(m, p.stdout)
        return set(m.group(1).split())

    def test_the_default_set_is_what_the_build_needs(self):
        self.assertEqual(self.check(), set(bash_array("BUILD_PKGS")))

    def test_no_test_tool_for_make_run(self):
        wanted = self.check()
        for p in ("golang-go", "prometheus", "valgrind", "redis-server", "nodejs", "npm",
                  "libcmocka-dev", "kubernetes-client", "clang-14"):
            self.assertNotIn(p, wanted)

    def test_the_test_set_adds_the_test_tools(self):
        wanted = self.check("test")
        self.assertEqual(wanted - set(bash_array("BUILD_PKGS")) - set(bash_array("TEST_PKGS")),
                         {"nodejs", "npm", "kubernetes-client"})
        self.assertLessEqual(set(bash_array("TEST_PKGS")), wanted)
        self.assertIn("clang-14", self.check("test", "fuzz"))

    def test_unknown_argument_names_the_valid_ones(self):
        p = subprocess.run([INSTALL_DEPS, "tests", "--check"], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown argument 'tests' (valid: test, fuzz, --check)", p.stderr)


class MakeTargets(unittest.TestCase):
    def dry(self, target):
        with tempfile.TemporaryDirectory() as d:
            p = subprocess.run(["make", "-n", "-C", SOURCE, target, "RELEASE_DIR=" + d],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def test_make_build_and_run_build_only_the_programs(self):
        for target in ("build", "run", "install"):
            out = self.dry(target)
            builds = [l for l in out.splitlines() if "cmake --build" in l]
            self.assertEqual(len(builds), 1, out)
            self.assertIn("--target keda-gpu-scaler gpu-metrics nvml-sim llm-fleet-sim",
                          builds[0])
            self.assertNotIn("install-deps test", out)
            self.assertNotIn("npm", out)

    def test_make_run_tells_the_llm_story_unless_a_scenario_is_given(self):
        out = self.dry("run")
        self.assertRegex(out, r"scripts/run-demo \S+ *\n")  # no scenario: the LLM story
        with tempfile.TemporaryDirectory() as d:
            p = subprocess.run(["make", "-n", "-C", SOURCE, "run", "RELEASE_DIR=" + d,
                                "SCENARIO=sim/scenarios/mig-a100.json"],
                               capture_output=True, text=True, timeout=60)
        self.assertIn("scripts/run-demo %s sim/scenarios/mig-a100.json" % d, p.stdout)

    def test_make_test_installs_and_builds_the_tests(self):
        out = self.dry("test")
        self.assertIn("scripts/install-deps test", out)
        self.assertRegex(out, r"cmake --build \S+ -j \d+\n")  # the whole tree


class ConfigureWithoutTestPackages(unittest.TestCase):
    def test_configure_without_cmocka_skips_the_test_tree(self):
        with tempfile.TemporaryDirectory() as pc, tempfile.TemporaryDirectory() as build:
            found = False
            for d in ("/usr/lib/x86_64-linux-gnu/pkgconfig", "/usr/lib/pkgconfig",
                      "/usr/share/pkgconfig"):
                if not os.path.isdir(d):
                    continue
                for f in os.listdir(d):
                    if f == "cmocka.pc":
                        found = True
                    elif f.endswith(".pc") and not os.path.exists(os.path.join(pc, f)):
                        os.symlink(os.path.join(d, f), os.path.join(pc, f))
            self.assertTrue(found, "cmocka.pc not where this test looks for it")
            env = dict(os.environ, PKG_CONFIG_LIBDIR=pc)
            p = subprocess.run(["cmake", "-S", SOURCE, "-B", build, "-DCMAKE_BUILD_TYPE=Release"],
                               capture_output=True, text=True, env=env, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("the test tree is not configured", p.stdout)
            n = subprocess.run(["ctest", "--test-dir", build, "-N"], capture_output=True,
                               text=True, timeout=30)
            names = re.findall(r"Test +#\d+: (\S+)", n.stdout)
            # only the fuzz corpora's replays remain (they need no test package)
            self.assertTrue(names, n.stdout[-2000:])
            self.assertEqual([t for t in names if not t.endswith("_corpus")], [])
            t = subprocess.run(["cmake", "--build", build, "--target", "help"],
                               capture_output=True, text=True, timeout=30)
            for prog in ("keda-gpu-scaler", "gpu-metrics", "nvml-sim"):
                self.assertIn(prog, t.stdout)


class BenchFigures(unittest.TestCase):
    """make bench names every figure worse than the committed one beyond its
    noise (bench/figures.py), so a regression cannot pass unseen."""

    def run_compare(self, committed, now):
        with tempfile.TemporaryDirectory() as d:
            c = os.path.join(d, "figures.json")
            r = os.path.join(d, "run.jsonl")
            with open(c, "w") as f:
                json.dump(committed, f)
            env = dict(os.environ, KGS_BENCH_FIGURES=r)
            code = "import sys; sys.path.insert(0, %r); import figures\n" % os.path.join(
                SOURCE, "bench")
            for name, value, better, noise in now:
                code += "figures.record(%r, %r, 'KiB', better=%r, noise=%r)\n" % (
                    name, value, better, noise)
            subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=30)
            return subprocess.run([sys.executable, os.path.join(SOURCE, "bench", "figures.py"),
                                   "compare", c, r], capture_output=True, text=True, timeout=30)

    def fig(self, value, better="lower", noise=0.1):
        return {"value": value, "unit": "KiB", "better": better, "noise": noise}

    def test_worse_beyond_noise_is_named_and_noise_is_not(self):
        p = self.run_compare({"idle RSS": self.fig(4700), "peak RSS": self.fig(8000),
                              "calls/s": self.fig(1000, "higher")},
                             [("idle RSS", 8800, "lower", 0.1), ("peak RSS", 8500, "lower", 0.1),
                              ("calls/s", 700, "higher", 0.1)])
        self.assertEqual(p.returncode, 1, p.stdout)
        rows = {l.split(" (KiB)")[0]: l for l in p.stdout.splitlines() if "(KiB)" in l}
        self.assertIn("WORSE", rows["idle RSS"])
        self.assertIn("1.87", rows["idle RSS"])
        self.assertIn("noise", rows["peak RSS"])
        self.assertIn("WORSE", rows["calls/s"])
        self.assertIn("2 figure(s) WORSE beyond noise", p.stdout)

    def test_better_new_and_unmeasured_figures_are_not_regressions(self):
        p = self.run_compare({"idle RSS": self.fig(8800), "gone": self.fig(1)},
                             [("idle RSS", 4700, "lower", 0.1), ("brand new", 3, "lower", 0.1)])
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertRegex(p.stdout, r"idle RSS \(KiB\).*better")
        self.assertRegex(p.stdout, r"brand new \(KiB\).*new")
        self.assertRegex(p.stdout, r"gone \(KiB\).*not measured")
        self.assertIn("no figure worse beyond noise", p.stdout)


class Demo(unittest.TestCase):
    def run_demo(self, scenario, env):
        return subprocess.run([os.path.join(SOURCE, "scripts", "run-demo"), BUILD, scenario],
                              capture_output=True, text=True, timeout=30,
                              env=dict(os.environ, **env), cwd=SOURCE)

    def free_port(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    def test_a_taken_port_names_the_variable_that_moves_it(self):
        ports = {k: str(self.free_port()) for k in
                 ("KGS_DEMO_PORT", "KGS_DEMO_PROBE_PORT", "KGS_DEMO_METRICS_PORT")}
        for var in ports:
            with socket.socket() as taken:
                taken.bind(("127.0.0.1", 0))
                taken.listen()
                port = taken.getsockname()[1]
                p = self.run_demo("sim/scenarios/idle-4xh100.json", dict(ports, **{var: str(port)}))
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn("could not listen on 127.0.0.1:%d: Address already in use" % port,
                          p.stderr)
            self.assertIn("make run %s=%d" % (var, port + 1), p.stderr)

    def test_every_bundled_scenario_says_what_it_shows(self):
        """The demo's banner and sim/README.md's table describe every bundled
        scenario (none falls to the banner's "your scenario")."""
        text = open(os.path.join(SOURCE, "scripts", "run-demo"), encoding="utf-8").read()
        table = open(os.path.join(SOURCE, "sim", "README.md"), encoding="utf-8").read()
        names = sorted(f for f in os.listdir(os.path.join(SOURCE, "sim", "scenarios"))
                       if f.endswith(".json"))
        self.assertGreaterEqual(len(names), 7, names)
        for name in names:
            branch = re.search(r"\n  %s\)\n(.*?);;" % re.escape(name), text, re.S)
            self.assertTrue(branch and "shows=" in branch.group(1),
                            "run-demo's banner does not describe %s" % name)
            self.assertTrue(re.search(r"\n\| `%s` \| [^|]+\| [^|]+\|" % re.escape(name), table),
                            "sim/README.md's table does not describe %s" % name)

    def test_mig_a100_returns_to_zero(self):
        """mig-a100's 3g.40gb instance holds 4 GiB (10 %) with nothing
        running: below the demo's activationThreshold 11, so 0 replicas."""
        ports = {k: str(self.free_port()) for k in
                 ("KGS_DEMO_PORT", "KGS_DEMO_PROBE_PORT", "KGS_DEMO_METRICS_PORT")}
        p = subprocess.Popen([os.path.join(SOURCE, "scripts", "run-demo"), BUILD,
                              "sim/scenarios/mig-a100.json"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, cwd=SOURCE,
                             env=dict(os.environ, **ports), start_new_session=True)
        try:
            out, _ = p.communicate(timeout=6)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 15)
            out, _ = p.communicate(timeout=10)
        self.assertIn("What it shows: the 3g.40gb instance fills 4 -> 30 GiB", out)
        self.assertRegex(out, r"value 10\.19\d* +active false +replicas: 0 ", out)

    def test_every_bundled_scenario_shows_a_trigger_that_answers(self):
        """make run SCENARIO=... shows values, not an error, on each bundled
        node that has GPUs to read (mig-a100: memory per MIG instance)."""
        for name in ("inference-burst.json", "mig-a100.json", "idle-4xh100.json",
                     "llm-fleet-8xh100.json"):
            ports = {k: str(self.free_port()) for k in
                     ("KGS_DEMO_PORT", "KGS_DEMO_PROBE_PORT", "KGS_DEMO_METRICS_PORT")}
            p = subprocess.Popen([os.path.join(SOURCE, "scripts", "run-demo"), BUILD,
                                  "sim/scenarios/" + name], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, cwd=SOURCE,
                                 env=dict(os.environ, **ports), start_new_session=True)
            try:
                out, _ = p.communicate(timeout=6)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 15)
                out, _ = p.communicate(timeout=10)
            self.assertRegex(out, r"keda_gpu_metric +target \d+ +value [0-9.]+ +active", name + out)
            self.assertNotRegex(out, r"GetMetric\w*: [A-Z_]+:", name + out)

    def test_a_missing_scenario_lists_the_bundled_ones(self):
        p = self.run_demo("sim/scenarios/nope.json", {})
        self.assertEqual(p.returncode, 2)
        self.assertIn("no scenario file sim/scenarios/nope.json", p.stderr)
        self.assertIn("inference-burst.json", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
