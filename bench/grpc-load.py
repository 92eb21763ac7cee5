#!/usr/bin/env python3
"""Side-by-side gRPC benchmark: keda-gpu-scaler (C) against the Go baseline
(grpc-go 1.33, tests/integration/go/baseline-server). Builds nothing.

  bench/grpc-load.py --ours BUILD/src/keda-gpu-scaler --baseline OUT/baseline-server \\
                     --client OUT/kedaclient --sim BUILD/sim/libnvml-sim.so [--out FILE]

Each server runs alone on loopback (ours on the NVML stand-in with the
idle-4xh100 scenario). Per server: idle RSS 1 s after ready; then
`kedaclient load` (GetMetrics over ONE connection, 5 s deadline per call)
with -c 1, 32, 256, each bounded at 200k calls or 10 s; server CPU
(utime+stime of all threads, /proc/PID/stat) before/after each load divided
by the calls that succeeded; peak RSS (VmHWM) at the end. Then, for ours
only, freshness: the time from rewriting the scenario's gpu_util until
GetMetrics shows the new value, and until a StreamIsActive push of `true`
arrives, at the default sample interval (1 s) and at 200 ms.

Client and server share the machine, so throughput is client-bound and
noisy; server CPU per call is the stable figure. Prints a table; asserts
nothing.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from kgs_util import cpu_seconds, free_port, md_args, proc_status_kib, stop_process  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "bench"))
from figures import record  # noqa: E402

MD = {"metricType": "gpu_utilization", "targetValue": "50"}
lines = []


def out(s=""):
    print(s, flush=True)
    lines.append(s)


def write_scenario(path, scen):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(scen, f)
    os.replace(tmp, path)


def proc_status(pid, key):
    return proc_status_kib(pid, key, missing=None)  # kB, or a count


class Srv:
    def __init__(self, kind, args, scenario_path=None, sample_interval=None):
        self.kind, self.port = kind, free_port()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NODE_NAME": "bench-node"}
        if kind == "ours":
            self.probe = free_port()
            env["NVML_SIM_SCENARIO"] = scenario_path
            cmd = [args.ours, "--listen-address", "127.0.0.1", "--port", str(self.port),
                   "--metrics-port", str(free_port()), "--probe-port", str(self.probe),
                   "--nvml-library", args.sim]
            if sample_interval:
                cmd += ["--sample-interval", sample_interval]
        else:
            cmd = [args.baseline, "-listen", "127.0.0.1:%d" % self.port]
        self.p = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.client = args.client
        end = time.monotonic() + 15
        while time.monotonic() < end:
            if self.p.poll() is not None:
                sys.exit("%s exited %d: %s" % (kind, self.p.returncode, self.p.stderr.read().decode()))
            if self.ready():
                return
            time.sleep(0.05)
        self.stop()
        sys.exit("%s not ready within 15 s" % kind)

    def ready(self):
        if self.kind == "ours":
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % self.probe, timeout=1) as r:
                    return r.status == 200
            except OSError:
                return False
        r = subprocess.run([self.client, "health", "-addr", self.addr, "-max-time", "5s"],
                           capture_output=True, text=True, timeout=15)
        return r.returncode == 0 and '"SERVING"' in r.stdout

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    def stop(self):
        stop_process(self.p, 5)
        self.p.stderr.close()


def kedaclient(args, sub, srv, *extra, timeout=60):
    cmd = [args.client, sub, "-addr", srv.addr, "-max-time", "%ds" % timeout] + md_args(MD) + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 10)
    if r.returncode != 0:
        sys.exit("kedaclient %s failed (%d): %s %s" % (sub, r.returncode, r.stdout, r.stderr))
    return [json.loads(l) for l in r.stdout.splitlines() if l.strip()]


def measure(args, kind, scenario_path):
    srv = Srv(kind, args, scenario_path)
    try:
        time.sleep(1)
        res = {"idle_rss_kb": proc_status(srv.p.pid, "VmRSS"),
               "threads_idle": proc_status(srv.p.pid, "Threads"), "loads": {}}
        for c in args.conc:
            c0 = cpu_seconds(srv.p.pid)
            r = kedaclient(args, "load", srv, "-c", str(c), "-n", str(args.calls),
                           "-duration", args.duration, timeout=120)[-1]
            c1 = cpu_seconds(srv.p.pid)
            if "error" in r:
                sys.exit("%s: load -c %d: %s" % (kind, c, r))
            r["cpu_us_per_call"] = (c1 - c0) / r["calls"] * 1e6 if r["calls"] else float("nan")
            r["threads"] = proc_status(srv.p.pid, "Threads")
            res["loads"][c] = r
        res["peak_rss_kb"] = proc_status(srv.p.pid, "VmHWM")
        return res
    finally:
        srv.stop()


def freshness(args, base_scen, interval, trials):
    """Seconds from a scenario rewrite to (a) GetMetrics showing it, (b) a pushed true."""
    d = tempfile.mkdtemp(prefix="kgs-fresh-")
    path = os.path.join(d, "scenario.json")
    scen = json.loads(json.dumps(base_scen))
    for dev in scen["devices"]:
        dev["values"]["gpu_util"] = 0
    write_scenario(path, scen)
    srv = Srv("ours", args, path, interval)
    pull, push = [], []
    try:
        for k in range(trials):
            # (a) pull: sum of gpu_util becomes 10 + k
            want = 10 + k
            w = subprocess.Popen([args.client, "watch", "-addr", srv.addr, "-value", str(want),
                                  "-interval", "2ms", "-timeout", "10s", "-max-time", "20s"]
                                 + md_args(MD), stdout=subprocess.PIPE, text=True)
            first = json.loads(w.stdout.readline())
            assert first.get("ready"), first
            scen["devices"][0]["values"]["gpu_util"] = want
            t0 = time.time() * 1000
            write_scenario(path, scen)
            last = json.loads(w.stdout.readline())
            w.wait(15)
            w.stdout.close()
            if "unix_ms" in last:
                pull.append((last["unix_ms"] - t0) / 1000)
            # (b) push: from all-idle to active (activationThreshold 5)
            scen["devices"][0]["values"]["gpu_util"] = 0
            write_scenario(path, scen)
            time.sleep(2.5 * parse_s(interval or "1s"))
            s = subprocess.Popen([args.client, "stream", "-addr", srv.addr, "-count", "0",
                                  "-timeout", "10s", "-max-time", "20s"]
                                 + md_args(dict(MD, activationThreshold="5", pollIntervalSeconds="60")),
                                 stdout=subprocess.PIPE, text=True)
            m = json.loads(s.stdout.readline())
            if m.get("result") is not False:
                s.kill()
                s.wait(5)
                s.stdout.close()
                continue
            scen["devices"][0]["values"]["gpu_util"] = 50
            t0 = time.time() * 1000
            write_scenario(path, scen)
            for line in s.stdout:
                m = json.loads(line)
                if m.get("result") is True:
                    push.append((m["unix_ms"] - t0) / 1000)
                    break
                if "end" in m:
                    break
            s.kill()
            s.wait(5)
            s.stdout.close()
            scen["devices"][0]["values"]["gpu_util"] = 0
            write_scenario(path, scen)
            time.sleep(2.5 * parse_s(interval or "1s"))
    finally:
        srv.stop()
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        os.rmdir(d)
    return pull, push


def parse_s(s):
    return float(s[:-2]) / 1000 if s.endswith("ms") else float(s[:-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ours", required=True)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--sim", required=True)
    ap.add_argument("--scenario", default=os.path.join(ROOT, "sim", "scenarios", "idle-4xh100.json"))
    ap.add_argument("--conc", default="1,32,256")
    ap.add_argument("--calls", type=int, default=200000)
    ap.add_argument("--duration", default="10s")
    ap.add_argument("--trials", type=int, default=5, help="freshness trials per interval")
    ap.add_argument("--skip-freshness", action="store_true")
    ap.add_argument("--out", help="also write the table here")
    args = ap.parse_args()
    args.conc = [int(c) for c in args.conc.split(",")]
    for b in (args.ours, args.baseline, args.client):
        if not os.access(b, os.X_OK):
            sys.exit("not executable: " + b)
    with open(args.scenario) as f:
        base_scen = json.load(f)

    d = tempfile.mkdtemp(prefix="kgs-bench-")
    scen_path = os.path.join(d, "scenario.json")
    write_scenario(scen_path, base_scen)
    try:
        res = {k: measure(args, k, scen_path) for k in ("ours", "baseline")}
    finally:
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        os.rmdir(d)

    out("== gRPC server: keda-gpu-scaler (C) vs Go baseline (grpc-go 1.33), loopback, kedaclient load,")
    out("   GetMetrics over one connection, bounded at %d calls or %s; %d CPUs"
        % (args.calls, args.duration, os.cpu_count()))
    row = "%-34s %14s %14s %8s"
    out(row % ("figure", "ours", "baseline", "ratio"))

    def line(label, a, b, fmt="%.1f"):
        ratio = "%.2f" % (a / b) if b else "-"
        out(row % (label, fmt % a, fmt % b, ratio))
    o, b = res["ours"], res["baseline"]
    line("idle RSS (MiB)", o["idle_rss_kb"] / 1024, b["idle_rss_kb"] / 1024, "%.2f")
    line("peak RSS, VmHWM (MiB)", o["peak_rss_kb"] / 1024, b["peak_rss_kb"] / 1024, "%.2f")
    line("threads idle", o["threads_idle"], b["threads_idle"], "%d")
    record("grpc: idle RSS", o["idle_rss_kb"], "KiB")
    record("grpc: peak RSS under load", o["peak_rss_kb"], "KiB")
    record("grpc: threads idle", o["threads_idle"], "threads", noise=0)
    for c in args.conc:
        lo, lb = o["loads"][c], b["loads"][c]
        line("c=%d server CPU per call (us)" % c, lo["cpu_us_per_call"], lb["cpu_us_per_call"], "%.2f")
        line("c=%d calls/s" % c, lo["calls_per_s"], lb["calls_per_s"], "%.0f")
        line("c=%d p50 (us)" % c, lo["p50_us"], lb["p50_us"], "%.0f")
        line("c=%d p99 (us)" % c, lo["p99_us"], lb["p99_us"], "%.0f")
        line("c=%d calls that succeeded" % c, lo["calls"], lb["calls"], "%d")
        if lo["errors"] or lb["errors"]:
            out("   errors: ours %s, baseline %s" % (lo["error_codes"], lb["error_codes"]))
        line("c=%d threads under load" % c, lo["threads"], lb["threads"], "%d")
        record("grpc: c=%d CPU per call" % c, lo["cpu_us_per_call"], "us", noise=0.3)
        if lb["cpu_us_per_call"]:
            record("grpc: c=%d CPU per call / Go baseline" % c,
                   lo["cpu_us_per_call"] / lb["cpu_us_per_call"], "ratio", noise=0.3)
        record("grpc: c=%d p99" % c, lo["p99_us"], "us", noise=0.5)

    if not args.skip_freshness:
        out()
        out("== freshness (ours): scenario rewrite -> GetMetrics shows it / StreamIsActive pushes true")
        out("%-22s %8s %10s %10s %8s %10s %10s" % ("sample interval", "pull n", "median s", "max s",
                                                     "push n", "median s", "max s"))
        for interval in (None, "200ms"):
            pull, push = freshness(args, base_scen, interval, args.trials)
            if push:
                record("grpc: push freshness median, %s" % (interval or "1s"),
                       statistics.median(push), "s", noise=0.3)
            f = lambda xs: ("%.3f" % statistics.median(xs), "%.3f" % max(xs)) if xs else ("-", "-")
            out("%-22s %8d %10s %10s %8d %10s %10s" % ((interval or "default (1s)"), len(pull), *f(pull),
                                                       len(push), *f(push)))
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
