#!/usr/bin/env python3
"""The runtime closure of the container image, derived from the binaries.

Used two ways:
  * `make dist` runs `closure.py stage ...`: stages the image's file set into
    build/dist/rootfs/ and writes build/dist/runtime-packages.txt, the Debian
    packages (beyond what debian:12-slim already carries) that provide every
    shared library `ldd` reports for the staged ELF files. It fails when the
    Dockerfile's runtime `apt-get install` list disagrees.
  * tests/deploy/dist/test_closure.py imports it (CTest deploy_dist).

Nothing here names a library or a package: libraries come from `ldd`, their
packages from `dpkg -S`, and the base image's package set from the dpkg
database (see base_packages()).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

# Packages the runtime stage installs that no shared library asks for. Each
# needs a reason; anything else beyond the closure is an error.
RUNTIME_EXTRAS = {
    "ca-certificates": "system CA roots: TLS verification of engine, demand and "
                       "rediss:// sources (SSL_CTX_set_default_verify_paths) when "
                       "--source-ca-file is not given",
}

# The image layout (mirrored by the Dockerfile's final stage).
BIN_DIR = "usr/local/bin"
SIM_DIR = "usr/local/share/keda-gpu-scaler/sim"


class ClosureError(Exception):
    pass


# Dynamic loaders seen by ldd() (the line without "=>").
INTERPRETERS = set()


# ---------------------------------------------------------------- ldd / dpkg

def ldd(path):
    """[(soname, resolved path or None)] for one ELF file; the vDSO is skipped.

    A library ldd cannot find comes back with path None."""
    interps = INTERPRETERS
    env = dict(os.environ, LC_ALL="C")
    r = subprocess.run(["ldd", path], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise ClosureError(f"ldd {path} failed ({r.returncode}): {r.stderr.strip() or r.stdout.strip()}")
    out = []
    for line in r.stdout.splitlines():
        line = line.strip()
        if not line or line.startswith("statically linked"):
            continue
        if "=>" in line:
            name, rest = (s.strip() for s in line.split("=>", 1))
            if rest.startswith("not found"):
                out.append((name, None))
                continue
            target = rest.split(" (", 1)[0].strip()
            if not target:  # "linux-vdso.so.1 =>  (0x...)" on old glibc
                continue
            out.append((name, target))
        else:
            target = line.split(" (", 1)[0].strip()
            if target.startswith("/"):  # the dynamic loader (PT_INTERP), by path
                out.append((os.path.basename(target), target))
                interps.add(target)
            # else: linux-vdso.so.1 (0x...), provided by the kernel
    return out


def _path_aliases(path):
    """The spellings dpkg may know a library by. Debian 12 is /usr-merged
    (/lib -> usr/lib), but packages record the path they shipped: libc6 says
    /lib/x86_64-linux-gnu/libc.so.6, libssl3 /usr/lib/x86_64-linux-gnu/...
    ldd prints either, and a soname is often a symlink to the real file."""
    seen = []

    def add(p):
        if p not in seen:
            seen.append(p)
        for a, b in (("/lib/", "/usr/lib/"), ("/lib64/", "/usr/lib64/"),
                     ("/lib32/", "/usr/lib32/")):
            if p.startswith(a) and b + p[len(a):] not in seen:
                seen.append(b + p[len(a):])
            elif p.startswith(b) and a + p[len(b):] not in seen:
                seen.append(a + p[len(b):])

    add(path)
    add(os.path.realpath(path))
    return seen


def dpkg_owner(path):
    """The package that ships `path` (or one of its aliases), or None."""
    env = dict(os.environ, LC_ALL="C")
    for p in _path_aliases(path):
        r = subprocess.run(["dpkg-query", "-S", p], capture_output=True, text=True, env=env)
        if r.returncode != 0:
            continue
        for line in r.stdout.splitlines():
            if line.startswith("diversion by"):
                continue
            pkgs, sep, _ = line.partition(": /")
            if not sep:
                continue
            # "libc6:amd64" or "a:amd64, b:amd64" (a path shared by several)
            first = pkgs.split(",")[0].strip()
            return first.split(":")[0]
    return None


def _dpkg_installed():
    """{package: fields} for every installed package."""
    fmt = "${Package}\\t${Essential}\\t${Priority}\\t${db:Status-Abbrev}\\t${Pre-Depends}\\t${Depends}\\t${Provides}\\n"
    r = subprocess.run(["dpkg-query", "-W", "-f=" + fmt], capture_output=True, text=True,
                       env=dict(os.environ, LC_ALL="C"))
    if r.returncode != 0:
        raise ClosureError(f"dpkg-query -W failed: {r.stderr.strip()}")
    pkgs = {}
    for line in r.stdout.splitlines():
        f = line.split("\t")
        if len(f) != 7 or not f[3].startswith("ii"):
            continue
        name, essential, prio, _, pre, dep, prov = f
        info = pkgs.setdefault(name, {"essential": False, "priority": prio, "deps": [],
                                      "provides": []})
        info["essential"] |= essential == "yes"
        info["deps"] += [c for c in (pre + "," + dep).split(",") if c.strip()]
        info["provides"] += [p.split("(")[0].strip() for p in prov.split(",") if p.strip()]
    return pkgs


def base_packages():
    """The packages debian:12-slim carries, as this machine's dpkg knows them.

    debian:12-slim is a debootstrap --variant=minbase: every Essential: yes
    package and every Priority: required one, plus what they depend on
    (Depends and Pre-Depends). Priority alone is not enough: libc6 and
    libgcc-s1 say "optional" and are in the image only as dependencies of
    essential packages, hence the closure. Alternatives ("a | b") take the
    first one installed here."""
    pkgs = _dpkg_installed()
    provided_by = {}
    for name, info in pkgs.items():
        for p in info["provides"]:
            provided_by.setdefault(p, name)

    def resolve(atom):
        n = re.split(r"[\s(\[]", atom.strip(), maxsplit=1)[0].split(":")[0]
        if n in pkgs:
            return n
        return provided_by.get(n)

    todo = [n for n, i in pkgs.items() if i["essential"] or i["priority"] == "required"]
    base = set()
    while todo:
        n = todo.pop()
        if n in base:
            continue
        base.add(n)
        for clause in pkgs[n]["deps"]:
            for alt in clause.split("|"):
                r = resolve(alt)
                if r:
                    if r not in base:
                        todo.append(r)
                    break
    return base


# ---------------------------------------------------------------- closure

def closure(elf_files):
    """{library path or soname: {"package": pkg or None, "needed_by": [files]}}."""
    libs = {}
    for f in elf_files:
        for soname, path in ldd(f):
            key = path or soname
            e = libs.setdefault(key, {"soname": soname, "path": path, "package": None,
                                      "needed_by": []})
            e["needed_by"].append(os.path.basename(f))
    for e in libs.values():
        if e["path"]:
            e["package"] = dpkg_owner(e["path"])
    return libs


def needed_packages(libs, base):
    """The packages the runtime stage must install: owners not in the base."""
    return sorted({e["package"] for e in libs.values() if e["package"] and e["package"] not in base})


def check(libs, runtime_pkgs, base):
    """Problems (strings) with a runtime package list against a closure:
    unresolved libraries, libraries no package ships, libraries whose package
    neither the list nor the base image provides, and unexplained extras."""
    problems = []
    runtime_pkgs = set(runtime_pkgs)
    for key in sorted(libs):
        e = libs[key]
        who = ", ".join(sorted(set(e["needed_by"])))
        if not e["path"]:
            problems.append(f"{e['soname']} (needed by {who}) does not resolve: ldd says not found")
        elif not e["package"]:
            problems.append(f"{e['path']} (needed by {who}) belongs to no Debian package "
                            "(a local build? the image cannot install it)")
        elif e["package"] not in runtime_pkgs and e["package"] not in base:
            problems.append(f"{e['path']} (needed by {who}) comes from {e['package']}, which is "
                            "neither in the runtime install list nor in debian:12-slim")
    need = set(needed_packages(libs, base))
    for p in sorted(runtime_pkgs - need):
        if p not in RUNTIME_EXTRAS:
            problems.append(f"runtime install list has {p}, which no library needs "
                            "(remove it, or give it a reason in RUNTIME_EXTRAS)")
    return problems


# ---------------------------------------------------------------- Dockerfile

def dockerfile_stages(text):
    """[{"from": image, "name": alias or None, "instructions": [(KEYWORD, args)]}].

    Continuation lines are joined and comments dropped; enough of the
    Dockerfile grammar for what the tests rely on."""
    stages = []
    logical, cur = [], ""
    for raw in text.splitlines():
        s = raw.strip()
        if not cur and (not s or s.startswith("#")):
            continue
        if cur and s.startswith("#"):
            continue  # a comment inside a continued instruction
        if s.endswith("\\"):
            cur += s[:-1] + " "
            continue
        cur += s
        logical.append(cur.strip())
        cur = ""
    if cur.strip():
        logical.append(cur.strip())
    for line in logical:
        kw, _, args = line.partition(" ")
        kw = kw.upper()
        args = args.strip()
        if kw == "FROM":
            parts = [p for p in args.split() if not p.startswith("--")]
            name = parts[2] if len(parts) >= 3 and parts[1].upper() == "AS" else None
            stages.append({"from": parts[0] if parts else "", "name": name, "instructions": []})
        elif stages:
            stages[-1]["instructions"].append((kw, args))
        else:
            stages.append({"from": None, "name": None, "instructions": [(kw, args)]})
    return stages


def apt_install_packages(stage):
    """The package names of every `apt-get install` in a stage's RUN lines."""
    pkgs = []
    for kw, args in stage["instructions"]:
        if kw != "RUN":
            continue
        for cmd in re.split(r"&&|;|\|\|", args):
            toks = cmd.split()
            for i, t in enumerate(toks):
                if t in ("apt-get", "apt") and "install" in toks[i + 1:]:
                    j = toks.index("install", i + 1)
                    pkgs += [p for p in toks[j + 1:] if not p.startswith("-")]
                    break
    return pkgs


def dockerfile_runtime_packages(path):
    with open(path, encoding="utf-8") as fh:
        stages = dockerfile_stages(fh.read())
    if not stages:
        raise ClosureError(f"{path}: no FROM line")
    return apt_install_packages(stages[-1])


def _tag_problem(image):
    if image.startswith("$"):
        return f"FROM {image}: the base image must be written out, not an ARG"
    ref = image.split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    if ":" not in last:
        return f"FROM {image}: no tag (means latest); pin it"
    if last.rsplit(":", 1)[1] == "latest":
        return f"FROM {image}: the latest tag; pin it"
    return None


def dockerfile_problems(text):
    """What the project relies on in the Dockerfile, as a list of problems."""
    problems = []
    stages = dockerfile_stages(text)
    if len(stages) < 2 or any(st["from"] is None for st in stages):
        return problems + ["want a multi-stage build: a build stage and a runtime stage, "
                           "every instruction after a FROM"]
    for st in stages:
        p = _tag_problem(st["from"])
        if p:
            problems.append(p)
    build, final = stages[0], stages[-1]
    if not build["from"].startswith("debian:12"):
        problems.append(f"build stage FROM {build['from']}: want debian:12")
    if final["from"].split("@")[0] != "debian:12-slim":
        problems.append(f"runtime stage FROM {final['from']}: want debian:12-slim")
    if not any(st["name"] for st in stages[:-1]):
        problems.append("the build stage has no name (FROM ... AS build)")

    # The final stage: non-root, exec-form entrypoint, labels, ports.
    kws = {}
    for kw, args in final["instructions"]:
        kws.setdefault(kw, []).append(args)
    users = kws.get("USER", [])
    if not users:
        problems.append("the runtime stage has no USER (it would run as root)")
    else:
        user = users[-1].split(":")
        if not user[0].isdigit() or int(user[0]) == 0:
            problems.append(f"USER {users[-1]}: want a numeric non-zero uid "
                            "(runAsNonRoot can only verify a number)")
        elif len(user) > 1 and (not user[1].isdigit() or int(user[1]) == 0):
            problems.append(f"USER {users[-1]}: want a numeric non-zero gid")
    eps = kws.get("ENTRYPOINT", [])
    if not eps:
        problems.append("the runtime stage has no ENTRYPOINT")
    else:
        try:
            ep = json.loads(eps[-1])
            if not (isinstance(ep, list) and ep and all(isinstance(a, str) for a in ep)
                    and ep[0].startswith("/")):
                raise ValueError
        except ValueError:
            problems.append(f"ENTRYPOINT {eps[-1]}: want exec form with an absolute path, "
                            '["/usr/local/bin/keda-gpu-scaler"] (no shell in the way of signals)')
    labels = " ".join(kws.get("LABEL", []))
    for key in ("version", "revision", "source", "licenses"):
        if f"org.opencontainers.image.{key}=" not in labels:
            problems.append(f"no org.opencontainers.image.{key} label in the runtime stage")
    exposed = set(" ".join(kws.get("EXPOSE", [])).split())
    for port in ("6000", "9090", "8081"):
        if port not in exposed and port + "/tcp" not in exposed:
            problems.append(f"port {port} is not EXPOSEd")
    if not any(a.startswith("--from=") for a in kws.get("COPY", [])):
        problems.append("the runtime stage copies nothing from the build stage")

    # The build stage: ARG VERSION/COMMIT, their guard, and the cmake stamp.
    bargs = {a.split("=")[0].strip() for kw, a in build["instructions"] if kw == "ARG"}
    for a in ("VERSION", "COMMIT"):
        if a not in bargs:
            problems.append(f"the build stage has no ARG {a}")
    if version_guard(build) is None:
        problems.append("no RUN in the build stage rejects an empty or \"dev\" VERSION/COMMIT")
    runs = " ".join(a for kw, a in build["instructions"] if kw == "RUN")
    for flag in ("-DKGS_VERSION=", "-DKGS_GIT_DESCRIBE=", "-DKGS_WERROR=ON",
                 "-DCMAKE_BUILD_TYPE=Release"):
        if flag not in runs:
            problems.append(f"the build stage's cmake has no {flag}")
    return problems


def version_guard(build_stage):
    """The RUN instruction that guards VERSION/COMMIT (its shell text), or None:
    the first RUN mentioning both, "dev" and an exit, before any cmake."""
    for kw, args in build_stage["instructions"]:
        if kw != "RUN":
            continue
        if re.search(r"\bcmake\s+(-S|-B|--build)", args):
            return None  # the build itself: a guard after it comes too late
        if "VERSION" in args and "COMMIT" in args and "dev" in args and "exit" in args:
            return args
    return None


# ---------------------------------------------------------------- staging

def elf_files_in(rootfs):
    out = []
    for d, _, files in os.walk(rootfs):
        for f in sorted(files):
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                if fh.read(4) == b"\x7fELF":
                    out.append(p)
    return sorted(out)


def stage(build, source, out, dockerfile):
    rootfs = os.path.join(out, "rootfs")
    if os.path.exists(rootfs):
        shutil.rmtree(rootfs)
    bindir = os.path.join(rootfs, BIN_DIR)
    simdir = os.path.join(rootfs, SIM_DIR)
    os.makedirs(bindir)
    os.makedirs(simdir)
    for rel in ("src/server/keda-gpu-scaler", "src/cli/gpu-metrics"):
        src = os.path.join(build, rel)
        if not os.path.isfile(src):
            raise ClosureError(f"{src} is missing: build first (make build)")
        shutil.copy2(src, bindir)
    shutil.copy2(os.path.join(build, "sim", "libnvml-sim.so"), simdir)
    shutil.copytree(os.path.join(source, "sim", "scenarios"), os.path.join(simdir, "scenarios"))

    libs = closure(elf_files_in(rootfs))
    base = base_packages()
    need = needed_packages(libs, base)
    with open(os.path.join(out, "runtime-packages.txt"), "w", encoding="utf-8") as fh:
        fh.write("".join(p + "\n" for p in need))
    print(f"dist: staged {rootfs}")
    for key in sorted(libs):
        e = libs[key]
        tag = "base" if e["package"] in base else "install"
        print(f"  {e['soname']:28} {e['package'] or '?':18} {tag}")
    print(f"dist: runtime packages ({os.path.join(out, 'runtime-packages.txt')}): {' '.join(need)}")

    listed = dockerfile_runtime_packages(dockerfile)
    problems = check(libs, listed, base)
    with open(dockerfile, encoding="utf-8") as fh:
        problems += dockerfile_problems(fh.read())
    if problems:
        for p in problems:
            print(f"dist: {dockerfile}: {p}", file=sys.stderr)
        print("dist: the runtime stage should install: "
              + " ".join(sorted(set(need) | (set(listed) & set(RUNTIME_EXTRAS)))),
              file=sys.stderr)
        return 1
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("stage", help="stage build/dist (make dist)")
    s.add_argument("--build", required=True, help="the release build directory")
    s.add_argument("--source", default=".", help="the source tree (for sim/scenarios)")
    s.add_argument("--out", required=True, help="where rootfs/ and runtime-packages.txt go")
    s.add_argument("--dockerfile", required=True)
    a = ap.parse_args(argv)
    try:
        return stage(a.build, a.source, a.out, a.dockerfile)
    except ClosureError as e:
        print(f"dist: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
