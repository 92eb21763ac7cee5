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
   of them), polled every second, in three cases run in turn, ROUNDS times
   (a fresh aggregator each, the same pods, the same durations):
     gauge  today's engine_queue trigger with podSelector on the tests' vLLM
            fixture (tests/fixtures/engines/vllm.txt, 6.5 KB);
     body   the same trigger on a page that also carries vLLM's latency
            histograms (TTFT, inter-token latency and the older
            time-per-output-token, e2e, queue time; vllm-latency.txt's real
            bucket layouts, 2 engines, counts times the pod's scrape number
            so every scrape adds requests): the cost of parsing the bigger
            page without keeping windows;
     slo    metricType slo on that page (ttftP90Target 500ms, tpotP90Target
            50ms, e2eP99Target 10s, queueTimeP90Target 1s, windowSeconds 30
            by default): windows kept per pod and merged.
   Each case waits for the expected value (slo: the hand-computed 1.417 x
   PODS replicas x 100, so the windows have deltas), then measures scaler CPU
   over SCRAPE_SECONDS (per pod scrape and per poll of all pods), GetMetrics
   p50/p99 (kedaclient load, 1 in flight, 5 s) and peak RSS; printed with the
   ratios body/gauge and slo/gauge (per round, side by side; median over
   the rounds).

TRIALS 0 skips part 1 (the scrape cost alone: ~50 s per round at 500 pods).
(CPU is read from /proc in 10 ms ticks: with a few pods the ratios are ticks,
not figures.)
KGS_DEMAND_PERF=DIR: `perf record` of the scaler over each case's CPU window
into DIR/perf-CASE.data (the last round's kept; see where the time goes with
`perf report -i DIR/perf-slo.data --sort dso,symbol`); figures then include
perf's own overhead.
Runs in its own network namespace (tests/integration/netns-run); bounded.

  tests/integration/netns-run python3 bench/demand-load.py BUILD_DIR [TRIALS] [PODS] [ROUNDS]

Defaults: TRIALS 100, PODS 500, ROUNDS 3.
"""
import asyncio
import json
import os
import random
import signal
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
from latency_hist import LatencyEngine  # noqa: E402
from kgs_util import cpu_seconds as cpu_s, free_port, md_args, stop_process  # noqa: E402
from kgs_util import proc_status_kib as status  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "bench"))
from figures import record  # noqa: E402

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/release")
TRIALS = int(sys.argv[2]) if len(sys.argv) > 2 else 100
PODS = int(sys.argv[3]) if len(sys.argv) > 3 else 500
ROUNDS = int(sys.argv[4]) if len(sys.argv) > 4 else 3
SCRAPE_SECONDS = 10  # CPU measured over this long per case, then 5 s of GetMetrics load
PERF_DIR = os.environ.get("KGS_DEMAND_PERF")  # perf record of each case's scrape window
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
    """One asyncio HTTP server on 0.0.0.0 answering every pod IP. body(k) is
    the page for a pod's k-th scrape (k counted per pod IP from 1), so pages
    may change between scrapes; set_body switches it between cases."""

    def __init__(self, body):
        self.body = body
        self.requests = 0
        self.scrapes = {}  # pod IP -> scrapes answered
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait(10)

    def set_body(self, body):
        self.body = body

    async def _handle(self, reader, writer):
        try:
            await reader.readuntil(b"\r\n\r\n")
            self.requests += 1
            ip = writer.get_extra_info("sockname")[0]
            k = self.scrapes.get(ip, 0) + 1
            self.scrapes[ip] = k
            body = self.body(k)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                         b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
                         % (len(body), body))
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


# The observations behind tests/fixtures/engines/vllm-latency.txt
# (latency_hist.fixtures()): (signal, seconds, requests, engine label).
VLLM_LATENCY_OBS = (("ttft", 0.3, 30, 0), ("ttft", 0.6, 6, 0), ("ttft", 0.9, 4, 0),
                    ("ttft", 0.3, 50, 1), ("ttft", 0.6, 6, 1), ("ttft", 0.9, 4, 1),
                    ("tpot", 0.04, 100, 0), ("tpot", 0.06, 100, 1),
                    ("e2e", 2.25, 40, 0), ("e2e", 4.0, 60, 1),
                    ("queue", 0.125, 90, 0), ("queue", 0.375, 10, 0))
TTFT_HELP = b"# HELP vllm:time_to_first_token_seconds"


class HistBodies:
    """vLLM pages with the latency histograms: the gauge fixture's gauges and
    counters (tests/fixtures/engines/vllm.txt without its one TTFT histogram)
    followed by vllm-latency.txt's histograms (TTFT, inter-token latency and
    the older time-per-output-token, e2e and queue time; vLLM's bucket
    layouts, 2 engines) with every count times the scrape number k: each
    scrape adds the fixture's 100 TTFT / 200 TPOT / 100 e2e / 100 queue
    requests, so the windows have deltas. Pages are built once per k."""

    def __init__(self, gauge_body):
        self.head = gauge_body[:gauge_body.index(TTFT_HELP)]
        self.pages = {}
        self.lock = threading.Lock()

    def __call__(self, k):
        with self.lock:
            page = self.pages.get(k)
            if page is None:
                e = LatencyEngine("vllm", model="llama-3.1-8b", engines=2, both_tpot=True)
                for signal, seconds, n, engine in VLLM_LATENCY_OBS:
                    e.observe(signal, seconds, n * k, engine)
                text = e.text().encode()
                page = self.head + text[text.index(TTFT_HELP):]
                self.pages[k] = page
                self.pages.pop(k - 8, None)  # pods stay within a few scrapes of each other
            return page


# The scrape-cost cases, run in turn ROUNDS times: (name, trigger, page).
# gauge: today's engine_queue trigger on the 6.5 KB gauge fixture; body: the
# same trigger on the histogram-bearing page (the cost of parsing a bigger
# page, no windows kept); slo: metricType slo on that page, four latency
# targets, windows of the default windowSeconds (30).
GAUGE_MD = {"metricType": "engine_queue", "engine": "vllm", "targetValue": "5",
            "podSelector": "app=vllm"}
SLO_MD = {"metricType": "slo", "engine": "vllm", "podSelector": "app=vllm",
          "ttftP90Target": "500ms", "tpotP90Target": "50ms", "e2eP99Target": "10s",
          "queueTimeP90Target": "1s"}
CASES = (("gauge", GAUGE_MD, "gauge"), ("body", GAUGE_MD, "hist"), ("slo", SLO_MD, "hist"))


def expected(name):
    """What the aggregator answers once every pod is polled: engine_queue,
    7 waiting per pod; slo, the worst ratio is TTFT's p90 (merged buckets
    le=0.5: 80, 0.75: 92 of 100 per scrape: 0.5 + 0.25 x 10/12 = 0.7083 s
    against 500 ms; TPOT p90 0.07 s / 50 ms = 1.4, e2e p99 4.96 s / 10 s,
    queue p90 0.3 s / 1 s) times the PODS Ready pods, x 100."""
    if name == "slo":
        return 100.0 * PODS * (0.5 + 0.25 * 10 / 12) / 0.5
    return 7.0 * PODS


def scrape_case(name, md, engines, api, token):
    port, probe = free_port(), free_port()
    agg = subprocess.Popen([SERVER, "--role", "aggregator", "--listen-address", "127.0.0.1",
                            "--port", str(port), "--probe-port", str(probe), "--metrics-port",
                            "0", "--agents", "127.0.0.1:%d" % free_port(), "--kube-api", api.url,
                            "--kube-token-file", token, "--log-level", "error"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    addr = "127.0.0.1:%d" % port
    md = dict(md, enginePort=str(engines.port))
    want = expected(name)
    try:
        end = time.monotonic() + 60
        r = {}
        while time.monotonic() < end:
            p = subprocess.run([CLIENT, "poll", "-addr", addr, "-namespace", "bench"] +
                               md_args(md), capture_output=True, text=True, timeout=30)
            r = json.loads(p.stdout.splitlines()[0]) if p.stdout.strip() else {}
            if abs(r.get("metricValueFloat", -1) - want) < 1e-3 * want:
                break
            time.sleep(0.5)
        else:
            raise SystemExit("%s: aggregator never answered %s: %s" % (name, want, r))
        time.sleep(2)
        perf = None
        if PERF_DIR:
            perf = subprocess.Popen(["perf", "record", "-q", "-F", "999", "-p", str(agg.pid),
                                     "-o", os.path.join(PERF_DIR, "perf-%s.data" % name)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        c0, t0, n0 = cpu_s(agg.pid), time.monotonic(), engines.requests
        time.sleep(SCRAPE_SECONDS)
        dt = time.monotonic() - t0
        cpu = cpu_s(agg.pid) - c0
        if perf:
            perf.send_signal(signal.SIGINT)
            perf.wait(30)
        scrapes = engines.requests - n0
        p = subprocess.run([CLIENT, "load", "-addr", addr, "-namespace", "bench", "-c", "1",
                            "-n", "20000", "-duration", "5s"] + md_args(md),
                           capture_output=True, text=True, timeout=60)
        load = json.loads(p.stdout.splitlines()[-1])
        return {"cpu": cpu / dt, "scrapes_per_s": scrapes / dt,
                "cpu_us_per_scrape": cpu / scrapes * 1e6 if scrapes else None,
                "p50": load["p50_us"], "p99": load["p99_us"], "calls": load["calls"],
                "errors": load["errors"], "rss": status(agg.pid, "VmHWM") / 1024}
    finally:
        stop(agg)


def scrape_cost(tmp):
    with open(os.path.join(ROOT, "tests/fixtures/engines/vllm.txt"), "rb") as f:
        gauge_body = f.read()
    pages = {"gauge": lambda k: gauge_body, "hist": HistBodies(gauge_body)}
    engines = Engines(pages["gauge"])
    api = FakeKubeAPI(token="bench")
    api.start()
    token = os.path.join(tmp, "token")
    with open(token, "w") as f:
        f.write("bench")
    for i in range(PODS):
        api.add_pod("bench", "vllm-%d" % i, labels={"app": "vllm"}, node="n-%d" % (i % 50),
                    phase="Running", pod_ip="127.1.%d.%d" % (i // 250, i % 250 + 1))
    runs = {name: [] for name, _, _ in CASES}
    try:
        for _ in range(ROUNDS):
            for name, md, page in CASES:
                engines.set_body(pages[page])
                runs[name].append(scrape_case(name, md, engines, api, token))
    finally:
        api.stop()
    sizes = {"gauge": len(gauge_body), "hist": len(pages["hist"](1))}
    return runs, sizes


def main():
    started = time.monotonic()
    tmp = tempfile.TemporaryDirectory()
    lines = []

    def out(s):
        print(s)
        lines.append(s)

    if TRIALS > 0:
        acts = activation(tmp.name)
        out("== activation: LPUSH -> StreamIsActive true (queue_length on a Redis list)")
        for interval, lat in acts.items():
            out("sourceInterval %-5s  %3d trials  p50 %6.1f ms  p90 %6.1f ms  p99 %6.1f ms  "
                "max %6.1f ms" % (interval, len(lat), statistics.median(lat), pct(lat, 90),
                                  pct(lat, 99), max(lat)))
            record("demand: LPUSH -> push p50, sourceInterval %s" % interval,
                   statistics.median(lat), "ms", noise=0.5)
        out("(KEDA polling alone at the default pollingInterval 30 s: 15 000 ms on average)")
    runs, sizes = scrape_cost(tmp.name)
    out("== scrape cost: %d Ready vLLM pods polled every 1 s; %d rounds of %d s per case, "
        "cases alternating" % (PODS, ROUNDS, SCRAPE_SECONDS))
    out("gauge: engine_queue on the %d-byte gauge page (today's)" % sizes["gauge"])
    out("body:  engine_queue on the %d-byte page with the latency histograms (parse only)"
        % sizes["hist"])
    out("slo:   metricType slo (p90 TTFT 500ms, p90 TPOT 50ms, p99 e2e 10s, p90 queue 1s; "
        "windowSeconds 30) on that page")
    out("%-6s %5s %8s %11s %8s %13s %10s %9s" % (
        "case", "round", "CPU %", "us/scrape", "ms/poll", "p50/p99 us", "peak MiB", "scrapes/s"))
    for r in range(ROUNDS):
        for name, _, _ in CASES:
            f = runs[name][r]
            out("%-6s %5d %8.1f %11.1f %8.1f %6.0f/%6.0f %10.1f %9.0f%s" % (
                name, r + 1, f["cpu"] * 100, f["cpu_us_per_scrape"],
                f["cpu_us_per_scrape"] * PODS / 1000, f["p50"], f["p99"], f["rss"],
                f["scrapes_per_s"], "  (%d errors)" % f["errors"] if f["errors"] else ""))
    # ratios against the gauge case of the same round (run side by side), median over rounds
    ratio = {}
    for name in ("body", "slo"):
        for key in ("cpu_us_per_scrape", "rss", "p99"):
            ratio[name, key] = statistics.median(
                runs[name][r][key] / runs["gauge"][r][key] for r in range(ROUNDS))
        out("%s / gauge (median of the rounds' ratios): CPU per scrape %.2f x, peak RSS %.2f x, "
            "GetMetrics p99 %.2f x" % (name, ratio[name, "cpu_us_per_scrape"],
                                       ratio[name, "rss"], ratio[name, "p99"]))
        out("  CPU per scrape, round by round: %s" % "  ".join(
            "%.2f" % (runs[name][r]["cpu_us_per_scrape"] / runs["gauge"][r]["cpu_us_per_scrape"])
            for r in range(ROUNDS)))
    ok = ratio["slo", "cpu_us_per_scrape"] <= 2 and ratio["slo", "rss"] <= 2
    out("slo within 2 x the gauge scrape (CPU and RSS): %s" % ("yes" if ok else "NO"))

    def med(name, key):
        return statistics.median(f[key] for f in runs[name])

    fig = "demand: %d-pod " % PODS
    record(fig + "scrape CPU", med("gauge", "cpu") * 100, "% core", noise=0.3)
    record(fig + "scrape peak RSS", med("gauge", "rss") * 1024, "KiB")
    record(fig + "slo scrape CPU", med("slo", "cpu") * 100, "% core", noise=0.3)
    record(fig + "slo scrape peak RSS", med("slo", "rss") * 1024, "KiB")
    record(fig + "slo / gauge scrape CPU", ratio["slo", "cpu_us_per_scrape"], "ratio", noise=0.3)
    record(fig + "slo / gauge scrape peak RSS", ratio["slo", "rss"], "ratio", noise=0.1)
    record(fig + "body / gauge scrape CPU", ratio["body", "cpu_us_per_scrape"], "ratio",
           noise=0.3)
    out("(demand-load.py wall time %.0f s)" % (time.monotonic() - started))
    os.makedirs(os.path.join(ROOT, "bench/out"), exist_ok=True)
    with open(os.path.join(ROOT, "bench/out/demand.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    tmp.cleanup()


if __name__ == "__main__":
    if os.environ.get("KGS_IN_NETNS") != "1":
        raise SystemExit("run through tests/integration/netns-run (own network namespace)")
    main()
