#!/usr/bin/env python3
"""Issue 28, part B: budgets that hold across tenants, and a loop that stays
responsive. Each probe runs a fresh standalone scaler with grpc-go
(kedaclient) as KEDA, often with an honest caller polling a GPU trigger
meanwhile, against loopback servers written here:

- 128 engine pages of 8 MiB whose last byte never comes (the server holds
  every connection): RSS stays far under the chart's 256 Mi limit (bodies
  are parsed as they arrive, never held) and the honest caller's GetMetrics
  p99 under 100 ms;
- eight valid 8 MiB pages polled every 100 ms: the honest p99 stays under
  10 ms (64 KiB of a response per readiness event; --source-read-rate
  bounds what one namespace's pages cost the loop);
- a Redis reply dripped 1 KiB at a time to 4 sources costs under 5 % of a
  core (the reply is scanned where the last read stopped, not from byte 0);
- a frozen engine shared by URL with a trigger of another namespace that
  asked for sourceTimeout 30s: this trigger's error comes after its own
  bound, not 30 s;
- one namespace's 600 streams on KEDA's one connection leave another
  namespace's stream served;
- a burned --source-create-rate bucket does not refuse another namespace's
  first source;
- 60,000 distinct demand triggers and 5,000 slo triggers keep RSS under
  64 MiB, and RSS returns to its baseline once they are unused for
  --source-idle.

Margins: every figure is printed; thresholds are the issue's, with the
margins each assertion states. Runs in its own network namespace
(tests/integration/netns-run). Bounded: each test under ~60 s.

Environment (CTest): KEDA_GPU_SCALER, NVML_SIM_LIBRARY, KGS_GO_CLIENT.
"""
import json
import os
import socket
import subprocess
import threading
import time
import unittest

from kgs_util import ProbedScaler, cpu_seconds, md_args, proc_status_kib

SERVER = os.environ["KEDA_GPU_SCALER"]
SIM = os.environ["NVML_SIM_LIBRARY"]
CLIENT = os.environ["KGS_GO_CLIENT"]
WRAPPER = os.environ.get("KGS_SERVER_WRAPPER", "").split()
SLOW = 5.0 if WRAPPER else 1.0
# ASan's or valgrind's own memory (shadow, quarantine) and speed: RSS, CPU
# and latency are not the server's there; the release build asserts them,
# every build asserts the rest.
SANITIZED = bool(WRAPPER) or os.environ.get("KGS_SANITIZE", "") in ("ON", "1", "TRUE", "YES")
FIGURES = not SANITIZED
GPU_MD = {"metricType": "gpu_utilization", "targetValue": "50"}
MIB = 1024 * 1024
LINE = b'vllm:num_requests_waiting{model_name="m",engine="0",pad="%s"} 1\n'


def page_of(size):
    """A valid vLLM page of exactly `size` bytes (many series of the waiting
    gauge: every line is parsed and summed)."""
    line = LINE % (b"x" * 40)
    body = line * (size // len(line))
    rest = size - len(body)
    if rest:
        body += b"#" + b" " * (rest - 2) + b"\n"
    return body


class Server(ProbedScaler):
    def __init__(self, *args):
        super().__init__(SERVER, SIM, args, WRAPPER, SLOW)

    def rss_kib(self):
        return proc_status_kib(self.proc.pid, "VmRSS")

    def cpu(self):
        return cpu_seconds(self.proc.pid)

    def client(self, args, timeout=60):
        p = subprocess.run([CLIENT] + args[:1] + ["-addr", "127.0.0.1:%d" % self.port] + args[1:],
                           capture_output=True, text=True, timeout=timeout)
        lines = p.stdout.splitlines()
        if not lines:
            return {"fatal": p.stderr}
        return [json.loads(x) for x in lines] if len(lines) > 1 else json.loads(lines[0])

    def poll(self, md, namespace="default"):
        return self.client(["poll", "-namespace", namespace, "-max-time", "20s"] + md_args(md))

    def spray(self, md, vary, n, namespace="default", c=16, namespaces=1, seconds=120):
        return self.client(["spray", "-namespace", namespace, "-n", str(n), "-c", str(c),
                            "-vary", vary, "-namespaces", str(namespaces),
                            "-max-time", "%ds" % seconds] + md_args(md), timeout=seconds + 30)


class Honest:
    """KEDA's polling in the background: kedaclient load -c 1, with a pause
    between calls so it samples the loop rather than loads it."""

    def __init__(self, test, server, seconds, pace="2ms"):
        self.proc = subprocess.Popen(
            [CLIENT, "load", "-addr", "127.0.0.1:%d" % server.port, "-c", "1", "-pace", pace,
             "-duration", "%ds" % seconds, "-max-time", "%ds" % (seconds + 30)] +
            md_args(GPU_MD), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        test.addCleanup(self.stop)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()

    def result(self):
        out, err = self.proc.communicate(timeout=90)
        return json.loads(out.splitlines()[0]) if out.strip() else {"fatal": err}


class TcpServer:
    """A threaded loopback server: handler(conn, self) per connection, on a
    daemon thread; close() ends the listener and every connection."""

    def __init__(self, handler):
        self.handler = handler
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1024)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.conns = []
        self.done = 0  # handlers that sent everything they meant to
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.conns.append(c)
            threading.Thread(target=self._run, args=(c,), daemon=True).start()

    def _run(self, c):
        try:
            self.handler(c, self)
        except OSError:
            pass
        finally:
            try:
                c.close()
            except OSError:
                pass

    def mark_done(self):
        with self.lock:
            self.done += 1

    def close(self):
        self.stop.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        with self.lock:
            for c in self.conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def read_request(c):
    """Reads an HTTP request head (bounded); False when the peer left."""
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        chunk = c.recv(4096)
        if not chunk:
            return False
        data += chunk
    return True


def engine_md(url, interval="1s", timeout="2s"):
    return {"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
            "engineEndpoint": url, "sourceInterval": interval, "sourceTimeout": timeout}


class TenantBudgets(unittest.TestCase):
    def server(self, *args):
        s = Server(*args)
        self.addCleanup(s.close)
        return s

    def tcp(self, handler):
        t = TcpServer(handler)
        self.addCleanup(t.close)
        return t

    def test_128_held_8_mib_bodies_pin_little(self):
        """Before: each held poll kept its 8 MiB (1,031 MiB for 128)."""
        size = 8 * MIB
        body = page_of(size)
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % size

        def held(c, srv):
            if not read_request(c):
                return
            c.sendall(head)
            c.sendall(memoryview(body)[:size - 1])
            srv.mark_done()
            while not srv.stop.is_set() and c.recv(4096):  # hold until the scaler leaves
                pass

        eng = self.tcp(held)
        s = self.server("--max-sources", "200")
        per_ns = 64 if FIGURES else 8  # a sanitizer build parses ~10x slower
        rss0 = s.rss_kib()
        honest = Honest(self, s, 12)
        url = "http://127.0.0.1:%d/metrics?i={i}" % eng.port
        # (each first call waits up to 2.5 s for its source's first poll,
        # which never ends here: all 64 of a namespace at once)
        for ns in ("team-a", "team-b"):
            r = s.spray(engine_md(url.replace("{i}", ns + "-{i}"), "30s", "30s"),
                        "engineEndpoint", per_ns, namespace=ns, c=per_ns)
            self.assertEqual(r.get("calls"), per_ns, r)
        n = 2 * per_ns
        deadline = time.monotonic() + 40 * SLOW
        want = n * (size - 1) * 0.99
        peak = 0
        while time.monotonic() < deadline:
            peak = max(peak, s.rss_kib())
            got = s.metric("source_response_bytes_total") or 0
            if eng.done >= n and got >= want:
                break
            time.sleep(0.25)
        read = s.metric("source_response_bytes_total") or 0
        peak = max(peak, s.rss_kib())
        res = honest.result()
        print("\n    %d held 8 MiB bodies: %d sent, %.0f MiB read, RSS %d -> peak %d KiB, "
              "held now %s bytes; honest p50 %.2f ms p99 %.2f ms (%s calls, %s errors)" %
              (n, eng.done, read / MIB, rss0, peak, s.metric("source_read_held_bytes"),
               res.get("p50_us", 0) / 1000, res.get("p99_us", 0) / 1000, res.get("calls"),
               res.get("errors")), flush=True)
        self.assertGreaterEqual(eng.done, n, "not every body was sent")
        self.assertGreaterEqual(read, want, "the scaler did not read every body")
        # the chart's limit is 256 Mi; a held body pins a partial line: allow 128 MiB
        if FIGURES:
            self.assertLess(peak, 128 * 1024, "RSS peaked at %d KiB" % peak)
        self.assertLess(s.metric("source_read_held_bytes"), 32 * MIB)
        self.assertEqual(res.get("errors", 1), 0, res)
        self.assertGreater(res.get("calls", 0), 100, res)
        if FIGURES:
            self.assertLess(res["p99_us"], 100000, res)

    def test_eight_8_mib_pages_at_100ms_leave_the_loop_responsive(self):
        """Before: 28-33 ms of loop CPU per page, honest p99 101-122 ms."""
        size = 8 * MIB
        page = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                b"Connection: close\r\n\r\n" % size) + page_of(size)
        served = [0]

        def serve(c, srv):
            if read_request(c):
                c.sendall(page)
                served[0] += 1

        eng = self.tcp(serve)
        s = self.server()
        # the machine's own noise (a shared 2-core VM): the honest p99 alone
        base = Honest(self, s, 4).result()
        url = "http://127.0.0.1:%d/metrics?i={i}" % eng.port
        r = s.spray(engine_md(url, "100ms", "2s"), "engineEndpoint", 8, namespace="pages", c=8)
        self.assertEqual(r.get("calls"), 8, r)
        time.sleep(1)
        cpu0, t0, n0 = s.cpu(), time.monotonic(), served[0]
        honest = Honest(self, s, 12)
        res = honest.result()
        cpu = (s.cpu() - cpu0) / (time.monotonic() - t0)
        pages = served[0] - n0
        waits = s.metric("source_read_rate_waits_total")
        print("\n    8 x 8 MiB pages at 100 ms: %d pages served in %.1f s, scaler CPU %.2f core, "
              "%s polls waited for --source-read-rate; honest p50 %.2f ms p99 %.2f ms max "
              "%.2f ms (%s calls; alone before: p99 %.2f ms)" %
              (pages, time.monotonic() - t0, cpu, waits, res.get("p50_us", 0) / 1000,
               res.get("p99_us", 0) / 1000, res.get("max_us", 0) / 1000, res.get("calls"),
               base.get("p99_us", 0) / 1000), flush=True)
        self.assertGreater(pages, 20, "the pages were not polled")
        if FIGURES:  # a sanitizer build parses slower than the rate
            self.assertGreater(waits or 0, 0, "the namespace's read rate never bounded a poll")
        self.assertEqual(res.get("errors", 1), 0, res)
        self.assertGreater(res.get("calls", 0), 100, res)
        # the bound, 10 ms, above what the machine's own load gives
        # the caller alone (about 1 ms on an idle machine)
        if FIGURES:
            self.assertLess(res["p99_us"], 10000 + base.get("p99_us", 0), (res, base))

    def test_a_dripped_redis_reply_costs_under_5_percent_of_a_core(self):
        """Before: 0.38-0.41 core with 4 sources (the reply re-parsed from
        byte 0 after every read)."""
        # a simple string of 900 KiB: before, every read searched it from
        # its first byte for its CRLF
        reply = b"+" + b"v" * (900 * 1024) + b"\r\n"
        self.assertLess(len(reply), 1024 * 1024)

        def drip(c, srv):
            if not c.recv(4096):
                return
            for o in range(0, len(reply), 1024):
                if srv.stop.is_set():
                    return
                c.sendall(reply[o:o + 1024])
                time.sleep(0.001)
            srv.mark_done()

        red = self.tcp(drip)
        s = self.server()
        md = {"metricType": "queue_length", "targetValue": "5",
              "redisAddress": "127.0.0.1:%d" % red.port, "redisListName": "jobs-{i}",
              "sourceInterval": "200ms", "sourceTimeout": "5s"}
        r = s.spray(md, "redisListName", 4, namespace="queues", c=4)
        self.assertEqual(r.get("calls"), 4, r)
        time.sleep(1)
        cpu0, t0, d0 = s.cpu(), time.monotonic(), red.done
        time.sleep(10 * SLOW)
        cpu = (s.cpu() - cpu0) / (time.monotonic() - t0)
        replies = red.done - d0
        print("\n    4 Redis sources, %d KiB replies dripped 1 KiB a ms: %d whole replies in "
              "10 s, scaler CPU %.3f core" % (len(reply) // 1024, replies, cpu), flush=True)
        self.assertGreaterEqual(replies, 8, "the replies were not dripped")
        if FIGURES:
            self.assertLess(cpu, 0.05)
        got = s.poll(dict(md, redisListName="jobs-10"), namespace="queues")
        self.assertEqual(got["error"]["code"], "UNAVAILABLE", got)
        self.assertIn("a simple string, not an integer", got["error"]["message"])

    def test_another_namespaces_30s_timeout_does_not_delay_this_error(self):
        """Before: the frozen engine's value was served until 30.5 s."""
        frozen = threading.Event()
        ok = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
              b"Content-Length: 28\r\n\r\nvllm:num_requests_waiting 3\n")

        def serve(c, srv):
            if not read_request(c):
                return
            if not frozen.is_set():
                c.sendall(ok)
                return
            while not srv.stop.is_set() and c.recv(4096):  # accepted, never answered
                pass

        eng = self.tcp(serve)
        s = self.server()
        url = "http://127.0.0.1:%d/metrics" % eng.port
        patient = engine_md(url, "1s", "30s")
        mine = engine_md(url, "500ms", "1s")
        deadline = time.monotonic() + 10 * SLOW
        got = {}
        while time.monotonic() < deadline:
            s.poll(patient, namespace="patient")
            got = s.poll(mine, namespace="victim")
            if "error" not in got:
                break
            time.sleep(0.2)
        self.assertNotIn("error", got)
        frozen.set()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 15 * SLOW:
            got = s.poll(mine, namespace="victim")
            if "error" in got:
                break
            time.sleep(0.1)
        took = time.monotonic() - t0
        print("\n    frozen engine: this trigger's error after %.1f s (its own bound 1.5 s; "
              "the other namespace's timeout 30 s)" % took, flush=True)
        self.assertEqual(got.get("error", {}).get("code"), "UNAVAILABLE", got)
        self.assertIn("stale", got["error"]["message"])
        # stale after max(3 x 500ms, 500ms + 1s) = 1.5 s, one poll apart: allow 4 s
        self.assertLess(took, 4 * SLOW)

    def test_one_namespaces_600_streams_leave_anothers_stream_served(self):
        """Before: 572 streams of one namespace filled the connection's 16 MiB
        and the other namespace's stream was RESOURCE_EXHAUSTED."""
        s = self.server()
        r = s.client(["streams", "-namespace", "attacker", "-n", "600", "-distinct",
                      "-then-namespace", "victim", "-timeout", "%ds" % (30 * SLOW),
                      "-max-time", "%ds" % (50 * SLOW)] + md_args(GPU_MD), timeout=90 * SLOW)
        print("\n    600 streams of one namespace: %s" %
              {k: r.get(k) for k in ("opened", "first_messages", "early_codes", "then")},
              flush=True)
        self.assertIn("first_message_ms", r.get("then", {}), r)
        self.assertGreater(r.get("first_messages", 0), 500, r)
        refused = r.get("early_codes", {}).get("RESOURCE_EXHAUSTED", 0)
        self.assertEqual(r["first_messages"] + refused, 600, r)
        if refused:
            self.assertIn("namespace attacker's open streams", r["first_error"]["message"])

    def test_a_burned_create_rate_bucket_spares_another_namespaces_first_source(self):
        """Before: another namespace's new trigger was refused for 2-6 s."""
        def refuse(c, srv):
            pass  # accepted and closed: every poll fails, nothing else matters

        eng = self.tcp(refuse)
        s = self.server("--source-create-rate", "0.2,5")
        url = "http://127.0.0.1:%d/m?o={i}" % eng.port
        r = s.spray(engine_md(url), "engineEndpoint", 30, namespace="attacker", c=4)
        refused = r.get("codes", {}).get("RESOURCE_EXHAUSTED", 0)
        print("\n    burned bucket: %s; " % r, end="", flush=True)
        self.assertGreaterEqual(refused, 20, r)
        self.assertIn("--source-create-rate", r.get("first_error", {}).get("message", ""))
        got = s.poll(engine_md(url.replace("{i}", "victim")), namespace="victim")
        print("another namespace's first source: %s" % got, flush=True)
        self.assertNotEqual(got.get("error", {}).get("code"), "RESOURCE_EXHAUSTED", got)
        # its poll ran: the error is the engine's, not a budget's
        self.assertIn("error", got)
        self.assertNotIn("--source-create-rate", got["error"]["message"])

    def test_60000_demand_and_5000_slo_triggers_keep_rss_bounded_and_return(self):
        """Before: 173 MiB beside the cache for 60,000 triggers, 479 MiB for
        5,000 slo triggers, still 479 MiB at 760 s."""
        def refuse(c, srv):
            pass

        eng = self.tcp(refuse)
        s = self.server("--source-idle", "5s")
        url = "http://127.0.0.1:%d/metrics" % eng.port
        time.sleep(1)
        rss0 = s.rss_kib()
        t0 = time.monotonic()
        demand = engine_md(url)
        r1 = s.spray(demand, "targetValue", 60000, namespace="churn", c=16, namespaces=8,
                     seconds=90)
        rss1 = s.rss_kib()
        slo = {"metricType": "slo", "engine": "vllm", "vllmEndpoint": url,
               "ttftP99Target": "{i}ms", "tpotP99Target": "100ms", "e2eP99Target": "30s",
               "queueTimeP99Target": "2s"}
        r2 = s.spray(slo, "ttftP99Target", 5000, namespace="slo", c=16, namespaces=4,
                     seconds=60)
        hwm = proc_status_kib(s.proc.pid, "VmHWM")
        subs, sub_bytes = s.metric("subscriptions"), s.metric("subscription_bytes")
        cache = s.metric("config_cache_bytes")
        took = time.monotonic() - t0
        # unused from now: after --source-idle (5 s) and a sweep, all of it goes
        deadline = time.monotonic() + 25 * SLOW
        rss2 = s.rss_kib()
        while time.monotonic() < deadline:
            rss2 = s.rss_kib()
            if rss2 <= rss0 + 4 * 1024 and (s.metric("subscriptions") or 0) == 0:
                break
            time.sleep(0.5)
        back = time.monotonic() - (t0 + took)
        print("\n    60,000 demand triggers (%s) and 5,000 slo triggers (%s) in %.0f s: RSS "
              "%d -> %d -> peak %d KiB (subscriptions %s, %s bytes; cache %s bytes); %.1f s "
              "after, RSS %d KiB, %s subscriptions" %
              (r1.get("codes"), r2.get("codes"), took, rss0, rss1, hwm, subs, sub_bytes, cache,
               back, rss2, s.metric("subscriptions")), flush=True)
        self.assertEqual(r1.get("calls"), 60000, r1)
        self.assertEqual(r2.get("calls"), 5000, r2)
        if FIGURES:
            self.assertLess(hwm, 64 * 1024, "RSS peaked at %d KiB" % hwm)
        self.assertLessEqual(sub_bytes or 0, 16 * MIB)
        self.assertEqual(s.metric("subscriptions"), 0)
        # back to the baseline: within 4 MiB of it (the allocator's own
        # bookkeeping and the GPU trigger's state stay)
        if FIGURES:
            self.assertLessEqual(rss2, rss0 + 4 * 1024,
                                 "RSS %d KiB, baseline %d KiB" % (rss2, rss0))


if __name__ == "__main__":
    unittest.main(verbosity=2)
