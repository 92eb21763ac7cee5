#!/usr/bin/env python3
"""Demand sources under load; prints figures, asserts nothing.

1. Activation latency: a standalone scaler with a real redis-server, one
   StreamIsActive stream (as KEDA's external-push holds) on a queue_length
   trigger; per trial the list is empty and the stream says false, then, after
   a random pause (so the push lands anywhere in the poll cycle), one LPUSH,
   and the time until the stream pushes true. TRIALS trials at each
   sourceInterval. (KEDA's own polling would take U(0, pollingInterval): 15 s
   on average at the default 30 s.)
2. Scrape cost: an aggregator over a fake Kubernetes API listing PODS Ready
   vLLM pods (IPs 127.1.x.y, one asyncio server on 0.0.0.0 answering for all
   of them with the tests' vLLM fixture), one engine_queue trigger with
   podSelector, polled every second: scaler CPU, peak RSS, GetMetrics p50/p99
   (kedaclient load, 1 in flight) and polls answered per second.

Runs in its own network namespace (tests/integration/netns-run); bounded.

  tests/integration/netns-run python3 bench/demand-load.py BUILD_DIR [TRIALS] [PODS]
"""
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from fake_kube_api import FakeKubeAPI  # noqa: E402
from kgs_util import cpu_seconds as cpu_s, free_port, md_args, stop_process  # noqa: E402
from kgs_util import proc_status_kib as status  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "bench"))
from figures import record  # noqa: E402

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/release")
TRIALS = int(sys.argv[2]) if len(sys.argv) > 2 else 100
PODS = int(sys.argv[3]) if len(sys.argv) > 3 else 500
SERVER = os.path.join(build, "src/server/keda-gpu-scaler")
SIM = os.path.join(build, "sim/libnvml-sim.so")
CLIENT = os.path.join(build, "go-clients/kedaclient")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def stop(p):
    stop_process(p, 10)


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def activation(tmp):
    rport = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(rport), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no", "--dir", tmp],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            rs = socket.create_connection(("127.0.0.1", rport), timeout=2)
            break
        except OSError:
            time.sleep(0.05)
    rf = rs.makefile("rb")

    def cmd(*a):
        rs.sendall(resp(*a))
        return rf.readline()

    port, probe = free_port(), free_port()
    scen = os.path.join(tmp, "scenario.json")
    with open(os.path.join(ROOT, "sim/scenarios/idle-4xh100.json")) as f:
        open(scen, "w").write(f.read())
    srv = subprocess.Popen([SERVER, "--listen-address", "127.0.0.1", "--port", str(port),
                            "--probe-port", str(probe), "--metrics-port", "0", "--nvml-library",
                            SIM, "--log-level", "warn"],
                           env={"PATH": "/usr/bin:/bin", "NVML_SIM_SCENARIO": scen},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    results = {}
    try:
        for interval in ("100ms", "1s"):
            md = {"metricType": "queue_length", "targetValue": "1", "redisAddress":
                  "127.0.0.1:%d" % rport, "redisListName": "wake-" + interval,
                  "sourceInterval": interval}
            stream = subprocess.Popen([CLIENT, "stream", "-addr", "127.0.0.1:%d" % port,
                                       "-count", "0", "-timeout", "600s", "-max-time", "610s"] +
                                      md_args(md), stdout=subprocess.PIPE, text=True)
            lat = []
            state = None

            def next_msg():
                line = stream.stdout.readline()
                if not line:
                    raise SystemExit("stream ended")
                return json.loads(line)

            deadline = time.monotonic() + 400
            while state is not False:
                state = next_msg().get("result")
            period = 0.1 if interval == "100ms" else 1.0
            rng = random.Random(1)
            for _ in range(TRIALS):
                if time.monotonic() > deadline:
                    break
                time.sleep(rng.uniform(0, period))
                t0 = time.time()
                cmd("LPUSH", md["redisListName"], "job")
                m = next_msg()
                while m.get("result") is not True:
                    m = next_msg()
                lat.append(m["unix_ms"] - t0 * 1000)
                cmd("DEL", md["redisListName"])
                m = next_msg()
                while m.get("result") is not False:
                    m = next_msg()
            stream.terminate()
            stream.wait(5)
            results[interval] = lat
    finally:
        stop(srv)
        redis.terminate()
        redis.wait(5)
    return results


class Engines:
    """One asyncio HTTP server on 0.0.0.0 answering every pod IP."""

    def __init__(self, body):
        self.body = body
        self.requests = 0
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait(10)

    async def _handle(self, reader, writer):
        try:
            await reader.readuntil(b"\r\n\r\n")
            self.requests += 1
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                         b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
                         % (len(self.body), self.body))
            await writer.drain()
        except Exception:
            pass
        finally:
            writer.close()

    def _run(self, ready):
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(
            asyncio.start_server(self._handle, "0.0.0.0", self.port, backlog=4096))
        ready.set()
        self.loop.run_until_complete(server.serve_forever())


def scrape_cost(tmp):
    with open(os.path.join(ROOT, "tests/fixtures/engines/vllm.txt"), "rb") as f:
        body = f.read()
    engines = Engines(body)
    api = FakeKubeAPI(token="bench")
    api.start()
    token = os.path.join(tmp, "token")
    with open(token, "w") as f:
        f.write("bench")
    for i in range(PODS):
        api.add_pod("bench", "vllm-%d" % i, labels={"app": "vllm"}, node="n-%d" % (i % 50),
                    phase="Running", pod_ip="127.1.%d.%d" % (i // 250, i % 250 + 1))
    port, probe = free_port(), free_port()
    agg = subprocess.Popen([SERVER, "--role", "aggregator", "--listen-address", "127.0.0.1",
                            "--port", str(port), "--probe-port", str(probe), "--metrics-port",
                            "0", "--agents", "127.0.0.1:%d" % free_port(), "--kube-api", api.url,
                            "--kube-token-file", token, "--log-level", "error"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    addr = "127.0.0.1:%d" % port
    md = {"metricType": "engine_queue", "engine": "vllm", "targetValue": "5",
          "podSelector": "app=vllm", "enginePort": str(engines.port)}
    want = 7.0 * PODS
    try:
        end = time.monotonic() + 60
        r = {}
        while time.monotonic() < end:
            p = subprocess.run([CLIENT, "poll", "-addr", addr, "-namespace", "bench"] +
                               md_args(md), capture_output=True, text=True, timeout=30)
            r = json.loads(p.stdout.splitlines()[0]) if p.stdout.strip() else {}
            if r.get("metricValueFloat") == want:
                break
            time.sleep(0.5)
        else:
            raise SystemExit("aggregator never answered %s: %s" % (want, r))
        time.sleep(2)
        c0, t0, n0 = cpu_s(agg.pid), time.monotonic(), engines.requests
        time.sleep(10)
        dt = time.monotonic() - t0
        cpu = (cpu_s(agg.pid) - c0) / dt
        polls = (engines.requests - n0) / dt
        p = subprocess.run([CLIENT, "load", "-addr", addr, "-namespace", "bench", "-c", "1",
                            "-n", "20000", "-duration", "5s"] + md_args(md),
                           capture_output=True, text=True, timeout=60)
        load = json.loads(p.stdout.splitlines()[-1])
        rss = status(agg.pid, "VmHWM") / 1024
        return cpu, polls, load, rss, len(body)
    finally:
        stop(agg)
        api.stop()


def main():
    tmp = tempfile.TemporaryDirectory()
    lines = []

    def out(s):
        print(s)
        lines.append(s)

    acts = activation(tmp.name)
    out("== activation: LPUSH -> StreamIsActive true (queue_length on a Redis list)")
    for interval, lat in acts.items():
        out("sourceInterval %-5s  %3d trials  p50 %6.1f ms  p90 %6.1f ms  p99 %6.1f ms  max %6.1f ms"
            % (interval, len(lat), statistics.median(lat), pct(lat, 90), pct(lat, 99), max(lat)))
        record("demand: LPUSH -> push p50, sourceInterval %s" % interval, statistics.median(lat),
               "ms", noise=0.5)
    out("(KEDA polling alone at the default pollingInterval 30 s: 15 000 ms on average)")
    cpu, polls, load, rss, size = scrape_cost(tmp.name)
    out("== scrape cost: %d Ready vLLM pods (%d-byte /metrics each), polled every 1 s"
        % (PODS, size))
    out("aggregator CPU               %6.1f %% of one core (%.0f polls/s answered)"
        % (cpu * 100, polls))
    out("GetMetrics p50 / p99 (1 in flight) %6.0f / %6.0f us  (%d calls, %d errors)"
        % (load["p50_us"], load["p99_us"], load["calls"], load["errors"]))
    out("aggregator peak RSS          %6.1f MiB" % rss)
    record("demand: 500-pod scrape CPU", cpu * 100, "% core", noise=0.3)
    record("demand: 500-pod scrape peak RSS", rss * 1024, "KiB")
    os.makedirs(os.path.join(ROOT, "bench/out"), exist_ok=True)
    with open(os.path.join(ROOT, "bench/out/demand.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    tmp.cleanup()


if __name__ == "__main__":
    if os.environ.get("KGS_IN_NETNS") != "1":
        raise SystemExit("run through tests/integration/netns-run (own network namespace)")
    main()
