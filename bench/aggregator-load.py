#!/usr/bin/env python3
"""The aggregator at scale: AGENTS simulated agents x GPUS GPUs (bench/agent_farm,
real Agent/Watch servers publishing every second), a fake Kubernetes API with a
WORKLOAD-pod workload (one pod per agent holding all its GPUs, label app=bench),
one aggregator subscribed to all of them. Measures: aggregator CPU per second of
snapshot ingest, GetMetrics p50/p99 for the workload (kedaclient load, 1 in
flight), time from an agent's changed snapshot leaving the agent to the new
value in GetMetrics and to the StreamIsActive push, and aggregator RSS.
Loopback only, bounded. Prints figures; asserts nothing.

  bench/aggregator-load.py BUILD_DIR [AGENTS] [GPUS] [WORKLOAD] [dra] [pods=N]
                           [interval=MS] [per=N]

With "dra", every odd-numbered agent reports its GPUs as DRA devices
(gpu.nvidia.com, pool farm-node-N, device gpu-G), so half the workload's
pods are DRA-allocated, and the fake API serves one NVIDIA-style
ResourceSlice per such node mapping them to the GPUs' UUIDs: the aggregator
watches the slices and resolves every such device on every snapshot.

Options after WORKLOAD (and "dra"), as KEY=VALUE:
  pods=N       the fake API holds N pods in all: the workload's plus filler pods of other
               tenants (fake_kube_api.add_filler_pods: 40 namespaces, four labels, spread
               over the agents' nodes, one in ten asking for a GPU), and once the
               figures are taken a 410 relist is forced (the fake's history compacted and
               the watch cut, as bench/kube-relist.py does), so the peak RSS includes it.
  interval=MS  how often each agent publishes (default 1000).
  per=N        agents per agent_farm process (default 2500: ~5,000 descriptors each,
               a listener and a connection an agent, under each process's own limit).
The farm runs as ceil(AGENTS / per) processes; their address lists are merged into
--agents. Above 8,000 agents the agents listen on [::1] (a 12-byte entry instead of
16): one argument may hold 128 KiB (the kernel's MAX_ARG_STRLEN), and an IPv4 list of
10,000 is 160 KB. Before the run it prints the aggregator's descriptor arithmetic.
"""
import json
import math
import os
import queue
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from fake_kube_api import FakeKubeAPI  # noqa: E402
from kgs_util import cpu_seconds as cpu_s, free_port, md_args  # noqa: E402
from kgs_util import proc_status_kib as status  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "bench"))
from figures import record  # noqa: E402

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/release")
AGENTS = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
GPUS = int(sys.argv[3]) if len(sys.argv) > 3 else 8
WORKLOAD = int(sys.argv[4]) if len(sys.argv) > 4 else 500
DRA = False
PODS = 0          # 0: the workload's pods only, no relist
INTERVAL_MS = 1000
PER = 2500
for arg in sys.argv[5:]:
    key, _, val = arg.partition("=")
    if arg == "dra":
        DRA = True
    elif key in ("pods", "interval", "per") and val.isdigit() and int(val) > 0:
        if key == "pods":
            PODS = int(val)
        elif key == "interval":
            INTERVAL_MS = int(val)
        else:
            PER = int(val)
    else:
        sys.exit("aggregator-load.py: invalid argument %r: expected dra, pods=N, interval=MS "
                 "or per=N (N, MS positive integers)" % arg)
if PODS and PODS < WORKLOAD:
    sys.exit("aggregator-load.py: pods=%d is fewer than the %d-pod workload: pods= is the "
             "total, workload included" % (PODS, WORKLOAD))
# One argument's limit (MAX_ARG_STRLEN, 32 pages): "127.0.0.1:NNNNN," is 16 bytes,
# "[::1]:NNNNN," 12.
ARG_MAX_BYTES = 131072
LISTEN = "::1" if AGENTS * 16 > ARG_MAX_BYTES else "127.0.0.1"
SERVER = os.path.join(build, "src/server/keda-gpu-scaler")
FARM = os.path.join(build, "bench/agent_farm")
CLIENT = os.path.join(build, "go-clients/kedaclient")


def descriptor_arithmetic():
    """What the aggregator will hold open, against the limit it will have (it raises its
    soft RLIMIT_NOFILE to the hard one at start, as the farm does)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # At rest beside its agents the aggregator holds 11 (measured at 1,000 agents: 1,011
    # open, 1,003 of them sockets): stdio, the loop's epoll, signal and wake-up
    # descriptors, the gRPC and probe listeners, the Kubernetes watch.
    rest = 11
    keda = 1024   # --max-connections' default: KEDA's (and this bench's) gRPC clients
    probes = 64   # the probe port's connection cap
    margin = 16   # a Kubernetes LIST beside the watch, the DNS thread, files
    need = AGENTS + rest + keda + probes + margin
    print("descriptors: %d agents + %d at rest (listeners, Kubernetes watch, loop, stdio) + "
          "%d probe-port + %d KEDA (--max-connections) + %d margin = %d; RLIMIT_NOFILE hard "
          "%d (soft %d, raised to the hard one at start): %s"
          % (AGENTS, rest, probes, keda, margin, need, hard, soft,
             "fits, %d spare" % (hard - need) if need <= hard else
             "SHORT by %d" % (need - hard)))
    print("agent farm: %d process(es) of <= %d agents, <= %d descriptors each"
          % (math.ceil(AGENTS / PER), PER, 2 * PER + 16))


def time_wait_sockets():
    """Loopback TCP sockets in TIME_WAIT (state 06 in /proc/net/tcp and tcp6)."""
    n = 0
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                n += sum(1 for line in f if line.split()[3:4] == ["06"])
        except OSError:
            pass
    return n


def wait_for_ports():
    """A run just before this one leaves its 10,000 connections in TIME_WAIT
    for 60 s, holding their ports: with 10,000 listeners and the aggregator's
    10,000 client ports beside them, the ephemeral range (28,232 ports by
    default) runs out and the farm fails with "bind: Address already in use".
    Wait (at most 70 s) until fewer than 1,000 are left."""
    n, waited = time_wait_sockets(), 0
    if AGENTS < 2000 or n < 1000:
        return
    print("waiting for %d sockets in TIME_WAIT (the last run's) to free their ports" % n)
    while n >= 1000 and waited < 70:
        time.sleep(2)
        waited += 2
        n = time_wait_sockets()


def start_farms(tmp, bump):
    """ceil(AGENTS / PER) agent_farm processes; the first holds agent 0 (the probe's
    node) and alone reports the bump. Returns (processes, merged address list)."""
    farms, files = [], []
    for k in range(math.ceil(AGENTS / PER)):
        first, n = k * PER, min(PER, AGENTS - k * PER)
        path = os.path.join(tmp, "agents-%d" % k)
        files.append(path)
        farms.append(subprocess.Popen(
            [FARM, str(n), str(GPUS), "1", str(INTERVAL_MS), path, bump] +
            (["dra"] if DRA else []) + ["first=%d" % first, "listen=" + LISTEN],
            stdout=subprocess.PIPE if k == 0 else subprocess.DEVNULL, text=True))
    end = time.monotonic() + 60 + AGENTS / 100
    while not all(os.path.exists(f) for f in files):
        if time.monotonic() > end or any(p.poll() is not None for p in farms):
            for p in farms:
                p.kill()
            sys.exit("agent_farm did not start")
        time.sleep(0.1)
    lists = []
    for path in files:
        with open(path) as f:
            lists.append(f.read().strip())
    agents = ",".join(lists)
    if len(agents) >= ARG_MAX_BYTES:
        for p in farms:
            p.kill()
        sys.exit("--agents would be %d bytes: one argument may hold %d (MAX_ARG_STRLEN)"
                 % (len(agents), ARG_MAX_BYTES - 1))
    return farms, agents


def sockets(pid):
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            n += os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:")
        except OSError:
            pass
    return n


def pod_lists(api):
    return [r for r in api.requests_of("list") if r.get("obj", "Pod") == "Pod"
            and r["status"] == 200]


def main():
    tmp = tempfile.TemporaryDirectory()
    bump = os.path.join(tmp.name, "bump")
    api = FakeKubeAPI(token="bench")
    api.start()
    token = os.path.join(tmp.name, "token")
    with open(token, "w") as f:
        f.write("bench")
    for i in range(WORKLOAD):
        labels = {"app": "bench"}
        if i == 0:
            labels["probe"] = "yes"
        api.add_pod("bench", "w-%d-0" % i, labels=labels, node="farm-node-%d" % i,
                    phase="Running")
    if PODS > WORKLOAD:
        api.add_filler_pods(PODS - WORKLOAD, ["farm-node-%d" % i for i in range(AGENTS)])
    if DRA:
        for i in range(1, AGENTS, 2):
            api.add_resource_slice("farm-node-%d-gpu.nvidia.com" % i, "gpu.nvidia.com",
                                   "farm-node-%d" % i, node="farm-node-%d" % i,
                                   devices=[("gpu-%d" % g, "GPU-farm-%05d-%02d" % (i, g))
                                            for g in range(GPUS)])
    descriptor_arithmetic()
    wait_for_ports()
    farms, agents = start_farms(tmp.name, bump)
    farm = farms[0]
    port, probe = free_port(), free_port()
    log_path = os.path.join(tmp.name, "aggregator.log")
    log = open(log_path, "w")
    agg = subprocess.Popen([SERVER, "--role", "aggregator", "--listen-address", "127.0.0.1",
                            "--port", str(port), "--probe-port", str(probe), "--metrics-port",
                            "0", "--agents", agents, "--kube-api", api.url, "--kube-token-file",
                            token, "--sample-interval", "%dms" % INTERVAL_MS, "--log-level",
                            "warn"],
                           stdout=subprocess.DEVNULL, stderr=log)
    addr = "127.0.0.1:%d" % port
    md = {"metricType": "gpu_utilization", "targetValue": "50", "podSelector": "app=bench"}

    def fail(why):
        log.flush()
        with open(log_path, errors="replace") as f:
            tail = f.read()[-3000:]
        sys.exit("%s\naggregator log (tail):\n%s" % (why, tail))

    try:
        # Ready, and every workload pod's node reporting.
        end = time.monotonic() + 120 + AGENTS / 50
        r = {}
        while time.monotonic() < end:
            if agg.poll() is not None:
                fail("aggregator exited with %d" % agg.returncode)
            p = subprocess.run([CLIENT, "poll", "-addr", addr, "-namespace", "bench"] +
                               md_args(md), capture_output=True, text=True, timeout=30)
            r = json.loads(p.stdout.splitlines()[0]) if p.stdout.strip() else {}
            if "metricValueFloat" in r:
                break
            time.sleep(0.5)
        else:
            fail("aggregator never answered: %s" % r)
        # Every agent connected: the aggregator holds a socket per agent.
        end = time.monotonic() + 60 + AGENTS / 50
        while sockets(agg.pid) < AGENTS and time.monotonic() < end:
            time.sleep(0.5)
        fds_open, socks = len(os.listdir("/proc/%d/fd" % agg.pid)), sockets(agg.pid)
        time.sleep(3)
        c0, t0 = cpu_s(agg.pid), time.monotonic()
        f0 = sum(cpu_s(f.pid) for f in farms)
        time.sleep(10)
        dt = time.monotonic() - t0
        ingest = (cpu_s(agg.pid) - c0) / dt
        farm_cpu = (sum(cpu_s(f.pid) for f in farms) - f0) / dt
        p = subprocess.run([CLIENT, "load", "-addr", addr, "-namespace", "bench", "-c", "1",
                            "-n", "20000", "-duration", "5s"] + md_args(md),
                           capture_output=True, text=True, timeout=60)
        load = json.loads(p.stdout.splitlines()[-1]) if p.stdout.strip() else {}
        if "p50_us" not in load:
            fail("GetMetrics load failed (exit %d): %s %s"
                 % (p.returncode, p.stdout[-1000:], p.stderr[-1000:]))
        # Freshness: agent 0's GPUs go to 100 %; its pod alone is the probe workload.
        probe_md = {"metricType": "gpu_utilization", "targetValue": "50",
                    "podSelector": "probe=yes", "activationThreshold": "80",
                    "pollIntervalSeconds": "60"}
        stream = subprocess.Popen([CLIENT, "stream", "-addr", addr, "-namespace", "bench",
                                   "-count", "0", "-timeout", "30s"] + md_args(probe_md),
                                  stdout=subprocess.PIPE, text=True)
        first = json.loads(stream.stdout.readline())
        watch = subprocess.Popen([CLIENT, "watch", "-addr", addr, "-namespace", "bench",
                                  "-value", "100", "-interval", "2ms", "-timeout", "30s"] +
                                 md_args(probe_md), stdout=subprocess.PIPE, text=True)
        watch.stdout.readline()  # {"ready": true, ...}
        open(bump, "w").close()
        published = json.loads(farm.stdout.readline())["bump_publish_unix_ms"]
        pushed = None
        seen = []
        for line in stream.stdout:
            obj = json.loads(line)
            seen.append(obj)
            if obj.get("result") is True:
                pushed = obj["unix_ms"]
                break
        if pushed is None:
            print("stream ended without a push: %s" % seen[-3:])
        pulled = json.loads(watch.stdout.readline()).get("unix_ms")
        stream.terminate()
        watch.terminate()
        relist = ""
        if PODS:
            # The aggregator's resourceVersion is now too old: its next watch gets 410.
            pages = len(pod_lists(api))
            before = (status(agg.pid, "VmRSS") / 1024, status(agg.pid, "VmHWM") / 1024)
            t_relist = time.monotonic()
            api.advance_rv()
            api.compact()
            api.break_watches()
            api.wait_for(lambda a: len(pod_lists(a)) >= 2 * pages, timeout=300)
            relist = ", one 410 relist of %d pages in %.1f s" % (
                pages, time.monotonic() - t_relist)
        time.sleep(5)
        rss_mib = status(agg.pid, "VmHWM") / 1024
        settled_mib = status(agg.pid, "VmRSS") / 1024
        print("== aggregator: %d agents x %d GPUs, %d-pod workload%s%s, agents publish every "
              "%g s%s" % (AGENTS, GPUS, WORKLOAD, ", half of it DRA-allocated" if DRA else "",
                          ", %d pods in the cluster" % PODS if PODS else "",
                          INTERVAL_MS / 1000,
                          " (on [::1], %d farm processes)" % len(farms) if LISTEN == "::1"
                          else " (%d farm processes)" % len(farms) if len(farms) > 1 else ""))
        print("snapshot ingest CPU            %6.1f %% of one core (%d snapshots/s)"
              % (ingest * 100, round(AGENTS * 1000 / INTERVAL_MS)))
        print("GetMetrics p50 / p99 (1 in flight) %6.0f / %6.0f us  (%d calls, %d errors)"
              % (load["p50_us"], load["p99_us"], load["calls"], load["errors"]))
        print("freshness, agent snapshot -> GetMetrics   %5d ms" % (pulled - published))
        print("freshness, agent snapshot -> StreamIsActive push %5d ms (first message %s)"
              % ((pushed - published) if pushed else -1, first.get("result")))
        print("aggregator peak RSS            %6.1f MiB%s" % (rss_mib, relist))
        if PODS:
            print("aggregator RSS before the relist %4.1f MiB (peak until then %.1f MiB)"
                  % before)
        print("aggregator RSS, settled        %6.1f MiB (5 s after the last measurement)"
              % settled_mib)
        print("aggregator descriptors open    %6d (%d sockets), agent farms' CPU %.0f %% of "
              "one core, load average %.1f on %d CPUs"
              % (fds_open, socks, farm_cpu * 100, os.getloadavg()[0], os.cpu_count()))
        tag = " (half DRA)" if DRA else ""
        if AGENTS != 1000 or GPUS != 8 or PODS or INTERVAL_MS != 1000:
            tag = " (%d agents x %d GPUs%s%s%s)" % (
                AGENTS, GPUS, ", half DRA" if DRA else "",
                ", %d pods" % PODS if PODS else "",
                ", every %d ms" % INTERVAL_MS if INTERVAL_MS != 1000 else "")
        record("aggregator: snapshot ingest CPU" + tag, ingest * 100, "% core", noise=0.3)
        record("aggregator: GetMetrics p99" + tag, load["p99_us"], "us", noise=0.5)
        record("aggregator: peak RSS" + tag, rss_mib * 1024, "KiB")
    finally:
        for proc in [agg] + farms:
            proc.send_signal(signal.SIGTERM)
        for proc in [agg] + farms:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()
        api.stop()
        tmp.cleanup()


if __name__ == "__main__":
    main()
