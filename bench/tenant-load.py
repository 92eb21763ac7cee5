#!/usr/bin/env python3
"""Heavier versions of tests/integration/test_tenant_budgets.py's probes
(issue 28, part B); prints figures, asserts nothing.

  bench/tenant-load.py BUILD_DIR

1. N held 8 MiB bodies (default 256, over four namespaces): peak RSS and
   what the polls in flight hold, with an honest caller's GetMetrics p50 and
   p99 meanwhile.
2. Eight 8 MiB pages polled every 100 ms, once with the default
   --source-read-rate and once with it out of the way (1 TiB/s): the loop's
   slicing alone, and with the namespace's rate; honest p99 and scaler CPU.
3. Ten Redis sources with 900 KiB replies dripped 1 KiB a ms: scaler CPU.

Runs in a network namespace of its own (tests/integration/netns-run), like
the tests. Takes about two minutes.
"""
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/release")
    if os.environ.get("KGS_IN_NETNS") != "1":
        env = dict(os.environ,
                   KEDA_GPU_SCALER=os.path.join(build, "src/server/keda-gpu-scaler"),
                   NVML_SIM_LIBRARY=os.path.join(build, "sim/libnvml-sim.so"),
                   KGS_GO_CLIENT=os.path.join(build, "go-clients/kedaclient"))
        os.execve(os.path.join(ROOT, "tests/integration/netns-run"),
                  ["netns-run", sys.executable, os.path.abspath(__file__), build], env)
    sys.path.insert(0, os.path.join(ROOT, "tests/integration"))
    import test_tenant_budgets as t  # noqa: E402 (needs the environment above)

    class Case:
        """What the probes need of a unittest.TestCase."""

        def __init__(self):
            self.cleanups = []

        def addCleanup(self, fn, *a):
            self.cleanups.append((fn, a))

        def close(self):
            for fn, a in reversed(self.cleanups):
                fn(*a)
            self.cleanups = []

    held(t, Case(), int(os.environ.get("HELD_SOURCES", "256")))
    for rate in (None, str(1 << 40)):
        pages(t, Case(), rate)
    redis(t, Case(), 10)


def held(t, case, n):
    size = 8 * t.MIB
    body = t.page_of(size)
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size

    def serve(c, srv):
        if not t.read_request(c):
            return
        c.sendall(head)
        c.sendall(memoryview(body)[:size - 1])
        srv.mark_done()
        while not srv.stop.is_set() and c.recv(4096):
            pass

    eng = t.TcpServer(serve)
    s = t.Server("--max-sources", str(n + 10))
    try:
        rss0 = s.rss_kib()
        honest = t.Honest(case, s, 20)
        url = "http://127.0.0.1:%d/metrics?i={i}" % eng.port
        for k in range(4):
            ns = "team-%d" % k
            r = s.spray(t.engine_md(url.replace("{i}", ns + "-{i}"), "60s", "30s"),
                        "engineEndpoint", n // 4, namespace=ns, c=n // 4)
            if r.get("calls") != n // 4:
                print("spray: %s" % r, flush=True)
        peak, deadline = 0, time.monotonic() + 60
        while time.monotonic() < deadline and eng.done < n:
            peak = max(peak, s.rss_kib())
            time.sleep(0.25)
        time.sleep(2)
        peak = max(peak, s.rss_kib())
        res = honest.result()
        print("%d held 8 MiB bodies: %d sent, RSS %d -> peak %d KiB, held %s bytes; honest p50 "
              "%.2f ms p99 %.2f ms" % (n, eng.done, rss0, peak, s.metric("source_read_held_bytes"),
                                       res.get("p50_us", 0) / 1000, res.get("p99_us", 0) / 1000),
              flush=True)
    finally:
        case.close()
        s.close()
        eng.close()


def pages(t, case, rate):
    size = 8 * t.MIB
    page = (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % size +
            t.page_of(size))
    served = [0]

    def serve(c, srv):
        if t.read_request(c):
            c.sendall(page)
            served[0] += 1

    eng = t.TcpServer(serve)
    s = t.Server(*(["--source-read-rate", rate] if rate else []))
    try:
        url = "http://127.0.0.1:%d/metrics?i={i}" % eng.port
        s.spray(t.engine_md(url, "100ms", "2s"), "engineEndpoint", 8, namespace="pages", c=8)
        time.sleep(1)
        cpu0, t0, n0 = s.cpu(), time.monotonic(), served[0]
        res = t.Honest(case, s, 15).result()
        took = time.monotonic() - t0
        print("8 x 8 MiB pages at 100 ms, --source-read-rate %s: %.1f pages/s, scaler CPU %.2f "
              "core; honest p50 %.2f ms p99 %.2f ms max %.2f ms" %
              (rate or "default", (served[0] - n0) / took, (s.cpu() - cpu0) / took,
               res.get("p50_us", 0) / 1000, res.get("p99_us", 0) / 1000,
               res.get("max_us", 0) / 1000), flush=True)
    finally:
        case.close()
        s.close()
        eng.close()


def redis(t, case, n):
    reply = b"+" + b"v" * (900 * 1024) + b"\r\n"

    def drip(c, srv):
        if not c.recv(4096):
            return
        for o in range(0, len(reply), 1024):
            if srv.stop.is_set():
                return
            c.sendall(reply[o:o + 1024])
            time.sleep(0.001)
        srv.mark_done()

    red = t.TcpServer(drip)
    s = t.Server()
    try:
        md = {"metricType": "queue_length", "targetValue": "5",
              "redisAddress": "127.0.0.1:%d" % red.port, "redisListName": "jobs-{i}",
              "sourceInterval": "200ms", "sourceTimeout": "5s"}
        s.spray(md, "redisListName", n, namespace="queues", c=n)
        time.sleep(1)
        cpu0, t0, d0 = s.cpu(), time.monotonic(), red.done
        time.sleep(15)
        took = time.monotonic() - t0
        print("%d Redis sources, 900 KiB replies dripped 1 KiB a ms: %d replies, scaler CPU %.3f "
              "core" % (n, red.done - d0, (s.cpu() - cpu0) / took), flush=True)
    finally:
        case.close()
        s.close()
        red.close()


if __name__ == "__main__":
    main()
