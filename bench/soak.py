#!/usr/bin/env python3
"""Soak: KEDA-like load on one standalone scaler for DURATION seconds (default
1800), with the stand-in's values changing every second and faults injected
every 5 minutes; prints RSS, open descriptors and error counts at the start
(after a 60 s warm-up) and at the end. Prints figures; asserts nothing.

Load: `kedaclient soak` on one connection: 100 ScaledObjects (metricType
demand over the node's GPUs, a Redis list and a vLLM endpoint), each with a
StreamIsActive stream and GetMetricSpec + GetMetrics + IsActive every 5 s.
Faults, in turn: a GPU lost for 20 s; NVML calls taking 3 s for 20 s; Redis
stopped (SIGSTOP) for 20 s; the engine answering 503 for 20 s.

Runs in its own network namespace (tests/integration/netns-run):

  tests/integration/netns-run python3 bench/soak.py BUILD_DIR [DURATION_S]
"""
import http.server
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from kgs_sim import Sim, device  # noqa: E402
from kgs_util import free_port  # noqa: E402
from kgs_util import proc_status_kib as status_kib  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "bench"))
from figures import record  # noqa: E402

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/release")
DURATION = int(sys.argv[2]) if len(sys.argv) > 2 else 1800
SERVER = os.path.join(build, "src/server/keda-gpu-scaler")
SIM = os.path.join(build, "sim/libnvml-sim.so")
CLIENT = os.path.join(build, "go-clients/kedaclient")


def fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def metrics(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("keda_gpu_scaler_") and not line.startswith("#"):
            name = line.split("{")[0].split()[0]
            try:
                out[name] = out.get(name, 0) + float(line.rsplit(" ", 1)[1])
            except ValueError:
                pass
    return out


class Engine:
    def __init__(self):
        self.waiting, self.running, self.broken = 0, 0, False
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                if outer.broken:
                    body, code = b"overloaded\n", 503
                else:
                    body = ("vllm:num_requests_waiting{engine=\"0\"} %d\n"
                            "vllm:num_requests_running{engine=\"0\"} %d\n"
                            "vllm:kv_cache_usage_perc{engine=\"0\"} 0.5\n"
                            % (outer.waiting, outer.running)).encode()
                    code = 200
                try:
                    self.send_response(code)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def redis_cmd(sock, *args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    sock.sendall(out)
    return sock.recv(4096)


def main():
    tmp = tempfile.TemporaryDirectory()
    rng = random.Random(7)
    utils = [20, 40, 60, 80]
    sim = Sim({"devices": [device(i, gpu_util=u) for i, u in enumerate(utils)]})
    rport = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(rport), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no", "--dir", tmp.name],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    rsock = socket.create_connection(("127.0.0.1", rport), timeout=5)
    engine = Engine()
    port, mport, probe = free_port(), free_port(), free_port()
    srv = subprocess.Popen([SERVER, "--listen-address", "127.0.0.1", "--port", str(port),
                            "--metrics-port", str(mport), "--probe-port", str(probe),
                            "--nvml-library", SIM, "--log-level", "error"],
                           env={"PATH": "/usr/bin:/bin", "NVML_SIM_SCENARIO": sim.path},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    md = {"metricType": "demand", "targetQueuePerReplica": "5",
          "targetRunningPerReplica": "8", "redisAddress": "127.0.0.1:%d" % rport,
          "redisListName": "soak", "engine": "vllm",
          "vllmEndpoint": "http://127.0.0.1:%d/metrics" % engine.port}
    client = subprocess.Popen([CLIENT, "soak", "-addr", "127.0.0.1:%d" % port, "-n", "100",
                               "-interval", "5s", "-duration", "%ds" % DURATION, "-vary", "targetGpu",
                               "-max-time", "%ds" % (DURATION + 120)] +
                              sum((["-metadata", "%s=%s" % kv] for kv in md.items()), []),
                              stdout=subprocess.PIPE, text=True)
    minutes = []
    threading.Thread(target=lambda: [minutes.append(json.loads(l)) for l in client.stdout],
                     daemon=True).start()
    faults = ["gpu_lost", "nvml_slow", "redis_stopped", "engine_503"]
    fault_log = []
    start = None
    t0 = time.monotonic()
    fault_until, fault = 0, None
    try:
        while time.monotonic() - t0 < DURATION:
            t = time.monotonic() - t0
            # Values change every second: a random walk per GPU, queue and engine.
            utils = [max(0, min(100, u + rng.randint(-10, 10))) for u in utils]
            devs = [device(i, gpu_util=u) for i, u in enumerate(utils)]
            if fault == "gpu_lost":
                devs[1]["errors"] = {"nvmlDeviceGetUtilizationRates": "GPU_IS_LOST"}
            if fault == "nvml_slow":
                devs[0]["latency_ms"] = {"nvmlDeviceGetPowerUsage": 3000}
            sim.rewrite({"devices": devs})
            if fault != "redis_stopped":  # a stopped Redis would block the driver too
                redis_cmd(rsock, "RPUSH", "soak", "x") if rng.random() < 0.5 else \
                    redis_cmd(rsock, "LPOP", "soak")
            engine.waiting = max(0, engine.waiting + rng.randint(-2, 2))
            engine.running = rng.randint(0, 8)
            if start is None and t >= 60:
                start = {"t": t, "rss_kib": status_kib(srv.pid, "VmRSS"), "fds": fds(srv.pid),
                         "m": metrics(mport)}
            # A fault every 5 minutes, 20 s long.
            if fault is None and t >= 90 and int(t) % 300 < 2 and t > fault_until + 60:
                fault = faults[len(fault_log) % len(faults)]
                fault_log.append((int(t), fault))
                fault_until = t + 20
                if fault == "redis_stopped":
                    redis.send_signal(signal.SIGSTOP)
                if fault == "engine_503":
                    engine.broken = True
            elif fault and t >= fault_until:
                if fault == "redis_stopped":
                    redis.send_signal(signal.SIGCONT)
                engine.broken = False
                fault = None
            time.sleep(1)
        if fault == "redis_stopped":
            redis.send_signal(signal.SIGCONT)
        client.wait(180)
        end = {"t": time.monotonic() - t0, "rss_kib": status_kib(srv.pid, "VmRSS"),
               "fds": fds(srv.pid), "m": metrics(mport), "hwm_kib": status_kib(srv.pid, "VmHWM")}
    finally:
        for p in (client, srv, redis):
            if p.poll() is None:
                p.send_signal(signal.SIGCONT if p is redis else signal.SIGTERM)
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        sim.close()
        tmp.cleanup()

    def errs(m):
        return m.get("keda_gpu_scaler_scaler_request_errors_total", 0)

    def reqs(m):
        return m.get("keda_gpu_scaler_scaler_requests_total", 0)

    summary = minutes[-1] if minutes else {}
    lines = [
        "== soak: %d s, 100 ScaledObjects on one connection (streams + polling every 5 s), "
        "values changing every second, faults: %s" % (DURATION, ", ".join(
            "%s@%ds" % (f, t) for t, f in fault_log)),
        "server RSS        start %6.1f MiB   end %6.1f MiB   growth %+.1f MiB   (peak %.1f MiB)"
        % (start["rss_kib"] / 1024, end["rss_kib"] / 1024,
           (end["rss_kib"] - start["rss_kib"]) / 1024, end["hwm_kib"] / 1024),
        "open descriptors  start %6d       end %6d" % (start["fds"], end["fds"]),
        "RPCs finished     start %8.0f   end %8.0f   errors start %6.0f end %6.0f"
        % (reqs(start["m"]), reqs(end["m"]), errs(start["m"]), errs(end["m"])),
        "source polls      %8.0f, failed %6.0f (faults make polls fail by design)"
        % (end["m"].get("keda_gpu_scaler_source_polls_total", 0),
           end["m"].get("keda_gpu_scaler_source_poll_failures_total", 0)),
        "client            poll rounds %s, errors %s, stream messages %s, stream ends %s"
        % (summary.get("poll_rounds"), summary.get("poll_errors"),
           summary.get("stream_messages"), summary.get("stream_ends")),
    ]
    print("\n".join(lines))
    record("soak: RSS at the end", end["rss_kib"], "KiB")
    record("soak: descriptors at the end", end["fds"], "fds", noise=0.1)
    os.makedirs(os.path.join(ROOT, "bench/out"), exist_ok=True)
    with open(os.path.join(ROOT, "bench/out/soak.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
        for m in minutes:
            f.write(json.dumps(m) + "\n")


if __name__ == "__main__":
    if os.environ.get("KGS_IN_NETNS") != "1":
        raise SystemExit("run through tests/integration/netns-run (own network namespace)")
    main()
