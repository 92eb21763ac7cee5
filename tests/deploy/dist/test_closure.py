#!/usr/bin/env python3
"""CTest deploy_dist: the container image's runtime closure, checked without
a Docker engine.

The Dockerfile's runtime stage is debian:12-slim plus an `apt-get install`
list; the binaries must find every shared library there. Libraries come from
`ldd` on the built binaries, their packages from `dpkg -S`, the base image's
packages from the dpkg database (closure.base_packages); nothing is
hard-coded. Environment (from CMake): KEDA_GPU_SCALER, GPU_METRICS,
NVML_SIM_LIBRARY, KGS_SOURCE_DIR, KGS_BUILD_DIR.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import closure  # noqa: E402

SOURCE = os.environ.get("KGS_SOURCE_DIR") or os.path.abspath(os.path.join(HERE, "..", "..", ".."))
SCALER = os.environ.get("KEDA_GPU_SCALER", "")
CLI = os.environ.get("GPU_METRICS", "")
SIM = os.environ.get("NVML_SIM_LIBRARY", "")
DOCKERFILE = os.path.join(SOURCE, "Dockerfile")
MIN_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}

_cache = {}


def shipped():
    """The ELF files the image ships: the two binaries and the NVML stand-in."""
    return [SCALER, CLI, SIM]


def libs():
    if "libs" not in _cache:
        _cache["libs"] = closure.closure(shipped())
    return _cache["libs"]


def base():
    if "base" not in _cache:
        _cache["base"] = closure.base_packages()
    return _cache["base"]


def dockerfile_text():
    with open(DOCKERFILE, encoding="utf-8") as fh:
        return fh.read()


def install_deps_array(name):
    """A bash array (BUILD_PKGS=(...)) from scripts/install-deps."""
    with open(os.path.join(SOURCE, "scripts", "install-deps"), encoding="utf-8") as fh:
        text = fh.read()
    m = re.search(r"^%s=\(([^)]*)\)" % re.escape(name), text, re.M)
    if not m:
        raise AssertionError(f"scripts/install-deps has no {name}=(...)")
    return m.group(1).split()


class Inputs(unittest.TestCase):
    def test_binaries_and_tools_are_there(self):
        for p in shipped():
            self.assertTrue(p and os.path.isfile(p), f"built file missing: {p!r}")
        for tool in ("ldd", "dpkg-query"):
            self.assertTrue(shutil.which(tool), f"{tool} is needed (Debian: libc-bin, dpkg)")
        self.assertTrue(os.path.isfile(DOCKERFILE), DOCKERFILE)

    def test_base_set_is_plausible(self):
        # The package that ships the dynamic loader is in every Debian image;
        # if the derived base set misses it, the derivation is broken.
        interp = [e for e in libs().values() if e["path"] in closure.INTERPRETERS]
        self.assertTrue(interp, "ldd reported no dynamic loader")
        self.assertIn(interp[0]["package"], base())
        self.assertGreater(len(base()), 20, "the essential/required closure is implausibly small")


class Closure(unittest.TestCase):
    """(a) every library resolves and comes from the install list or the base."""

    def test_every_library_resolves_to_a_package(self):
        self.assertTrue(libs(), "ldd reported nothing")
        bad = [f"{e['soname']} ({', '.join(e['needed_by'])}): "
               + ("not found" if not e["path"] else "owned by no package")
               for e in libs().values() if not e["path"] or not e["package"]]
        self.assertEqual(bad, [])

    def test_every_library_is_provided_in_the_image(self):
        listed = closure.dockerfile_runtime_packages(DOCKERFILE)
        missing = [f"{e['path']} from {e['package']} ({', '.join(e['needed_by'])})"
                   for e in libs().values()
                   if e["package"] and e["package"] not in listed and e["package"] not in base()]
        self.assertEqual(missing, [], "libraries the runtime stage would lack")

    def test_nvml_is_not_linked(self):
        # NVML is dlopen()ed from the driver the NVIDIA runtime mounts; a
        # link-time dependency would make the image unusable without it.
        for e in libs().values():
            self.assertNotIn("nvidia-ml", e["soname"], e)


class PackageLists(unittest.TestCase):
    """(b) the Dockerfile's lists equal what is needed."""

    def test_runtime_list_equals_closure(self):
        listed = closure.dockerfile_runtime_packages(DOCKERFILE)
        self.assertEqual(len(listed), len(set(listed)), f"duplicates in {listed}")
        need = set(closure.needed_packages(libs(), base()))
        self.assertEqual(sorted(need - set(listed)), [], "missing from the runtime install list")
        extras = sorted(set(listed) - need)
        unexplained = [p for p in extras if p not in closure.RUNTIME_EXTRAS]
        self.assertEqual(unexplained, [], "installed but no library needs them")
        for p in extras:
            self.assertTrue(closure.RUNTIME_EXTRAS[p].strip(), p)
        self.assertEqual(closure.check(libs(), listed, base()), [])

    def test_extras_are_not_in_the_base(self):
        # An extra the base image already has is dead weight in the list.
        for p in closure.RUNTIME_EXTRAS:
            self.assertNotIn(p, base(), p)

    def test_build_stage_installs_build_pkgs(self):
        stages = closure.dockerfile_stages(dockerfile_text())
        built = closure.apt_install_packages(stages[0])
        want = install_deps_array("BUILD_PKGS")
        self.assertEqual(sorted(set(want) - set(built)), [],
                         "scripts/install-deps BUILD_PKGS missing from the build stage")
        # Anything more must be a package the project already declares.
        declared = set(want) | set(install_deps_array("TEST_PKGS"))
        self.assertEqual(sorted(set(built) - declared), [],
                         "build stage installs packages scripts/install-deps does not know")

    def test_dist_stages_the_same_closure(self):
        # `make dist` (closure.py stage) on this build: the rootfs is exactly
        # the image's file set, runtime-packages.txt the closure.
        build = os.environ.get("KGS_BUILD_DIR")
        if not build:
            self.skipTest("KGS_BUILD_DIR not set")
        with tempfile.TemporaryDirectory() as out:
            r = subprocess.run([sys.executable, os.path.join(HERE, "closure.py"), "stage",
                                "--build", build, "--source", SOURCE, "--out", out,
                                "--dockerfile", DOCKERFILE], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            files = []
            for d, _, fs in os.walk(os.path.join(out, "rootfs")):
                files += [os.path.relpath(os.path.join(d, f), os.path.join(out, "rootfs")) for f in fs]
            bins = sorted(f for f in files if f.startswith(closure.BIN_DIR + "/"))
            self.assertEqual(bins, [closure.BIN_DIR + "/gpu-metrics",
                                    closure.BIN_DIR + "/keda-gpu-scaler"])
            self.assertEqual(sorted(set(files) - set(bins)),
                             sorted(f for f in files if f.startswith(closure.SIM_DIR + "/")),
                             "rootfs holds files outside the binaries and the sim")
            self.assertFalse([f for f in files if ".so." in os.path.basename(f)],
                             "rootfs carries a shared library of its own")
            with open(os.path.join(out, "runtime-packages.txt"), encoding="utf-8") as fh:
                self.assertEqual(fh.read().split(), closure.needed_packages(libs(), base()))


class StagedRun(unittest.TestCase):
    """(c) the binaries start from a staged copy with a minimal environment."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kgs-dist-")
        cls.bin = os.path.join(cls.tmp, closure.BIN_DIR)
        os.makedirs(cls.bin)
        for p in (SCALER, CLI):
            shutil.copy2(p, cls.bin)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_staged(self, name, *args):
        r = subprocess.run([os.path.join(self.bin, name), *args], capture_output=True, text=True,
                           env=MIN_ENV, cwd=self.tmp, timeout=30)
        self.assertEqual(r.returncode, 0, f"{name} {' '.join(args)}: rc {r.returncode}\n"
                         f"{r.stdout}{r.stderr}")
        return r.stdout

    def stamp(self, name):
        out = self.run_staged(name, "--version").strip()
        m = re.fullmatch(re.escape(name) + r" (\S+) \((\S+)\)", out)
        self.assertTrue(m, f"{name} --version: {out!r}")
        return m.group(1), m.group(2)

    def test_version(self):
        version, commit = self.stamp("keda-gpu-scaler")
        self.assertNotIn(version.lower(), ("", "dev", "unknown", "0.0.0"))
        self.assertRegex(version, r"^\d+\.\d+\.\d+")
        if os.path.exists(os.path.join(SOURCE, ".git")):
            self.assertNotIn(commit.lower(), ("dev", "unknown"),
                             "built from git, yet no commit in --version")
        self.assertEqual(self.stamp("gpu-metrics"), (version, commit))

    def test_gpu_metrics_dry_run(self):
        self.assertTrue(self.run_staged("gpu-metrics", "--dry-run").strip())

    def test_scaler_help(self):
        self.assertIn("keda-gpu-scaler", self.run_staged("keda-gpu-scaler", "--help"))

    def test_runtime_smoke_run_passes_on_the_staged_copy(self):
        # The final stage's last RUN (the image build's own smoke test), with
        # the staged directory for /usr/local/bin: passes with this build's
        # stamp, fails with another commit.
        final = closure.dockerfile_stages(dockerfile_text())[-1]
        runs = [a for kw, a in final["instructions"] if kw == "RUN" and "--version" in a]
        self.assertTrue(runs, "the runtime stage never runs the binaries")
        script = runs[-1].replace("/" + closure.BIN_DIR, self.bin)
        version, commit = self.stamp("keda-gpu-scaler")
        for c, ok in ((commit, True), (commit + "x", False)):
            r = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True,
                               env=dict(MIN_ENV, VERSION=version, COMMIT=c), cwd=self.tmp)
            self.assertEqual(r.returncode == 0, ok, f"COMMIT={c}: {r.stdout}{r.stderr}")

    def test_commit_override_reaches_the_compile_line(self):
        # -DKGS_GIT_DESCRIBE/-DKGS_VERSION (what the Dockerfile passes) must
        # beat git describe. Configure only; the flags file shows the stamp.
        with tempfile.TemporaryDirectory() as b:
            r = subprocess.run(["cmake", "-S", SOURCE, "-B", b, "-DCMAKE_BUILD_TYPE=Release",
                                "-DKGS_VERSION=9.8.7", "-DKGS_GIT_DESCRIBE=feedc0de"],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
            for rel in ("src/server/CMakeFiles/keda-gpu-scaler.dir/flags.make",
                        "src/cli/CMakeFiles/gpu-metrics.dir/flags.make"):
                with open(os.path.join(b, rel), encoding="utf-8") as fh:
                    flags = fh.read()
                self.assertIn('KGS_GIT_DESCRIBE=\\"feedc0de\\"', flags, rel)
                self.assertIn('KGS_VERSION=\\"9.8.7\\"', flags, rel)


class DockerfileShape(unittest.TestCase):
    """(d) what we rely on in the Dockerfile."""

    def test_well_formed(self):
        self.assertEqual(closure.dockerfile_problems(dockerfile_text()), [])

    def test_guard_rejects_empty_and_dev(self):
        # Run the guard's own shell text, as `docker build` would.
        guard = closure.version_guard(closure.dockerfile_stages(dockerfile_text())[0])
        self.assertIsNotNone(guard)
        cases = [("", "abc1234", False), ("dev", "abc1234", False), ("0.1.0", "", False),
                 ("0.1.0", "dev", False), ("0.1.0", "abc1234", True)]
        for version, commit, ok in cases:
            r = subprocess.run(["/bin/sh", "-c", guard], capture_output=True, text=True,
                               env=dict(MIN_ENV, VERSION=version, COMMIT=commit))
            self.assertEqual(r.returncode == 0, ok,
                             f"VERSION={version!r} COMMIT={commit!r}: rc {r.returncode} {r.stderr}")
            if not ok:
                self.assertIn("build arg", r.stderr)

    def test_image_layout_matches_dist(self):
        text = dockerfile_text()
        self.assertIn("/" + closure.BIN_DIR, text)
        self.assertIn("/" + closure.SIM_DIR, text)
        self.assertIn('"/%s/keda-gpu-scaler"' % closure.BIN_DIR, text)

    def test_dockerignore_keeps_what_cmake_reads(self):
        with open(os.path.join(SOURCE, ".dockerignore"), encoding="utf-8") as fh:
            pats = [l.strip() for l in fh if l.strip() and not l.startswith("#")]
        for needed in ("src", "proto", "sim", "tests", "cmake", "CMakeLists.txt", "bench", "fuzz"):
            self.assertNotIn(needed, pats)
        self.assertIn(".git", pats)
        self.assertIn("build", pats)


class SelfTest(unittest.TestCase):
    """(e) the checks catch what they are for."""

    def test_missing_package_is_reported_with_its_library(self):
        need = closure.needed_packages(libs(), base())
        self.assertTrue(need, "nothing to drop: the closure needs no package beyond the base")
        for drop in need:
            fake = [p for p in need if p != drop] + list(closure.RUNTIME_EXTRAS)
            problems = closure.check(libs(), fake, base())
            dropped_libs = [e["path"] for e in libs().values() if e["package"] == drop]
            self.assertTrue(problems, f"dropping {drop} went unnoticed")
            for path in dropped_libs:
                self.assertTrue(any(path in p and drop in p for p in problems),
                                f"{path} ({drop}) not reported: {problems}")

    def test_missing_package_fails_the_dockerfile_check(self):
        need = closure.needed_packages(libs(), base())
        text = dockerfile_text()
        listed = closure.dockerfile_runtime_packages(DOCKERFILE)
        drop = need[-1]
        fake = re.sub(r"(?<=\s)%s(?=\s)" % re.escape(drop), "", text)
        with tempfile.NamedTemporaryFile("w", suffix=".Dockerfile", delete=False) as fh:
            fh.write(fake)
        try:
            got = closure.dockerfile_runtime_packages(fh.name)
        finally:
            os.unlink(fh.name)
        self.assertEqual(sorted(got), sorted(p for p in listed if p != drop))
        self.assertTrue(any(drop in p for p in closure.check(libs(), got, base())))

    def test_unexplained_extra_and_unresolved_library_are_reported(self):
        listed = closure.dockerfile_runtime_packages(DOCKERFILE)
        problems = closure.check(libs(), listed + ["kgs-selftest-extra"], base())
        self.assertTrue(any("kgs-selftest-extra" in p for p in problems), problems)
        fake_libs = dict(libs())
        fake_libs["libkgs-selftest.so.9"] = {"soname": "libkgs-selftest.so.9", "path": None,
                                             "package": None, "needed_by": ["keda-gpu-scaler"]}
        problems = closure.check(fake_libs, listed, base())
        self.assertTrue(any("libkgs-selftest.so.9" in p and "not found" in p for p in problems),
                        problems)

    def test_bad_dockerfiles_are_rejected(self):
        good = dockerfile_text()
        stages = closure.dockerfile_stages(good)
        final_from = stages[-1]["from"]
        bad = {
            "untagged base": good.replace("FROM " + final_from, "FROM debian", 1),
            "latest tag": good.replace("FROM " + final_from, "FROM debian:latest", 1),
            "root user": re.sub(r"^USER .*$", "USER 0:0", good, flags=re.M),
            "named user": re.sub(r"^USER .*$", "USER nonroot", good, flags=re.M),
            "no user": re.sub(r"^USER .*$", "", good, flags=re.M),
            "shell-form entrypoint": re.sub(r"^ENTRYPOINT .*$",
                                            "ENTRYPOINT /usr/local/bin/keda-gpu-scaler",
                                            good, flags=re.M),
            "single stage": "FROM debian:12-slim\nUSER 65532\n"
                            'ENTRYPOINT ["/usr/local/bin/keda-gpu-scaler"]\n',
            "no guard": good.replace("exit 1", "true"),
            "no ARG COMMIT": re.sub(r"^ARG COMMIT$", "", good, count=1, flags=re.M),
        }
        for what, text in bad.items():
            self.assertNotEqual(text, good, f"self-test edit did not apply: {what}")
            self.assertTrue(closure.dockerfile_problems(text), f"{what} went unnoticed")

    def test_ldd_parser(self):
        r = closure.ldd(SCALER)
        self.assertTrue(all(p and p.startswith("/") for _, p in r), r)
        self.assertFalse(any("vdso" in n for n, _ in r), r)

    def test_unresolvable_library_is_reported(self):
        # A real ELF whose library is gone: ldd says "not found", and the
        # closure check must say so for the file that needs it.
        cc = shutil.which("cc") or shutil.which("gcc")
        if not cc:
            self.skipTest("no C compiler")
        with tempfile.TemporaryDirectory() as d:
            lib = os.path.join(d, "libkgsgone.so")
            subprocess.run([cc, "-shared", "-fPIC", "-o", lib, "-x", "c", "-"],
                           input="int kgs_gone(void) { return 1; }\n", text=True, check=True)
            exe = os.path.join(d, "needs-gone")
            subprocess.run([cc, "-o", exe, "-x", "c", "-", "-L" + d, "-lkgsgone"],
                           input="int kgs_gone(void);\nint main(void) { return kgs_gone(); }\n",
                           text=True, check=True)
            os.unlink(lib)
            fake = closure.closure([exe])
            listed = closure.dockerfile_runtime_packages(DOCKERFILE)
            problems = closure.check(fake, listed, base())
            self.assertTrue(any("libkgsgone.so" in p and "not found" in p and "needs-gone" in p
                                for p in problems), problems)


if __name__ == "__main__":
    unittest.main(verbosity=2)
