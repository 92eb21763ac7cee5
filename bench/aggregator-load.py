#!/usr/bin/env python3
"""The aggregator at scale: AGENTS simulated agents x GPUS GPUs (bench/agent_farm,
real Agent/Watch servers publishing every second), a fake Kubernetes API with a
WORKLOAD-pod workload (one pod per agent holding all its GPUs, label app=bench),
one aggregator subscribed to all of them. Measures: aggregator CPU per second of
snapshot ingest, GetMetrics p50/p99 for the workload (kedaclient load, 1 in
flight), time from an agent's changed snapshot leaving the agent to the new
value in GetMetrics and to the StreamIsActive push, and aggregator RSS.
Loopback only, bounded. Prints figures; asserts nothing.

  bench/aggregator-load.py BUILD_DIR [AGENTS] [GPUS] [WORKLOAD] [dra]

With "dra", every odd-numbered agent reports its GPUs as DRA devices
(gpu.nvidia.com, pool farm-node-N, device gpu-G), so half the workload's
pods are DRA-allocated, and the fake API serves one NVIDIA-style
ResourceSlice per such node mapping them to the GPUs' UUIDs: the aggregator
watches the slices and resolves every such device on every snapshot.
"""
import json
import os
import queue
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
DRA = len(sys.argv) > 5 and sys.argv[5] == "dra"
SERVER = os.path.join(build, "src/server/keda-gpu-scaler")
FARM = os.path.join(build, "bench/agent_farm")
CLIENT = os.path.join(build, "go-clients/kedaclient")


def main():
    tmp = tempfile.TemporaryDirectory()
    addr_file = os.path.join(tmp.name, "agents")
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
    if DRA:
        for i in range(1, AGENTS, 2):
            api.add_resource_slice("farm-node-%d-gpu.nvidia.com" % i, "gpu.nvidia.com",
                                   "farm-node-%d" % i, node="farm-node-%d" % i,
                                   devices=[("gpu-%d" % g, "GPU-farm-%05d-%02d" % (i, g))
                                            for g in range(GPUS)])
    farm = subprocess.Popen([FARM, str(AGENTS), str(GPUS), "1", "1000", addr_file, bump] +
                            (["dra"] if DRA else []), stdout=subprocess.PIPE, text=True)
    end = time.monotonic() + 60
    while not (os.path.exists(addr_file) and os.path.getsize(addr_file) > 0):
        if time.monotonic() > end or farm.poll() is not None:
            sys.exit("agent_farm did not start")
        time.sleep(0.1)
    time.sleep(0.2)
    with open(addr_file) as f:
        agents = f.read().strip()
    port, probe = free_port(), free_port()
    agg = subprocess.Popen([SERVER, "--role", "aggregator", "--listen-address", "127.0.0.1",
                            "--port", str(port), "--probe-port", str(probe), "--metrics-port",
                            "0", "--agents", agents, "--kube-api", api.url, "--kube-token-file",
                            token, "--sample-interval", "1s", "--log-level", "warn"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    addr = "127.0.0.1:%d" % port
    md = {"metricType": "gpu_utilization", "targetValue": "50", "podSelector": "app=bench"}
    try:
        # Ready, and every workload pod's node reporting.
        end = time.monotonic() + 120
        while time.monotonic() < end:
            p = subprocess.run([CLIENT, "poll", "-addr", addr, "-namespace", "bench"] +
                               md_args(md), capture_output=True, text=True, timeout=30)
            r = json.loads(p.stdout.splitlines()[0]) if p.stdout.strip() else {}
            if "metricValueFloat" in r:
                break
            time.sleep(0.5)
        else:
            sys.exit("aggregator never answered: %s" % r)
        time.sleep(3)
        c0, t0 = cpu_s(agg.pid), time.monotonic()
        time.sleep(10)
        ingest = (cpu_s(agg.pid) - c0) / (time.monotonic() - t0)
        p = subprocess.run([CLIENT, "load", "-addr", addr, "-namespace", "bench", "-c", "1",
                            "-n", "20000", "-duration", "5s"] + md_args(md),
                           capture_output=True, text=True, timeout=60)
        load = json.loads(p.stdout.splitlines()[-1])
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
        rss_mib = status(agg.pid, "VmHWM") / 1024
        print("== aggregator: %d agents x %d GPUs, %d-pod workload%s, agents publish every 1 s"
              % (AGENTS, GPUS, WORKLOAD, ", half of it DRA-allocated" if DRA else ""))
        print("snapshot ingest CPU            %6.1f %% of one core (%d snapshots/s)"
              % (ingest * 100, AGENTS))
        print("GetMetrics p50 / p99 (1 in flight) %6.0f / %6.0f us  (%d calls, %d errors)"
              % (load["p50_us"], load["p99_us"], load["calls"], load["errors"]))
        print("freshness, agent snapshot -> GetMetrics   %5d ms" % (pulled - published))
        print("freshness, agent snapshot -> StreamIsActive push %5d ms (first message %s)"
              % ((pushed - published) if pushed else -1, first.get("result")))
        print("aggregator peak RSS            %6.1f MiB" % rss_mib)
        tag = " (half DRA)" if DRA else ""
        record("aggregator: snapshot ingest CPU" + tag, ingest * 100, "% core", noise=0.3)
        record("aggregator: GetMetrics p99" + tag, load["p99_us"], "us", noise=0.5)
        record("aggregator: peak RSS" + tag, rss_mib * 1024, "KiB")
    finally:
        for proc in (agg, farm):
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        api.stop()
        tmp.cleanup()


if __name__ == "__main__":
    main()
