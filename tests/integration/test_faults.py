#!/usr/bin/env python3
"""The fault matrix cases not covered elsewhere (the rest: docs/operations.md,
"Fault matrix"): slow-loris connections (a partial preface, partial headers),
1,000 idle connections, a rapid-reset flood, a malformed protobuf, hostile
metadata (millions of entries, thousands of distinct streams, megabyte
values), zero GPUs and missing NVML symbols. Each asserts the exact observable outcome, and that
a well-behaved client is served meanwhile. Loopback only, bounded.

Environment (CTest): KEDA_GPU_SCALER, NVML_SIM_LIBRARY, KGS_GO_CLIENT.
"""
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import unittest

from kgs_sim import Sim, device
from kgs_util import (ServerProcess, child_env, cpu_seconds, free_port, http_get, md_args,
                      proc_status_kib, scaler_command)

SERVER = os.environ["KEDA_GPU_SCALER"]
SIM = os.environ["NVML_SIM_LIBRARY"]
CLIENT = os.environ["KGS_GO_CLIENT"]
WRAPPER = os.environ.get("KGS_SERVER_WRAPPER", "").split()
SANITIZED = os.environ.get("KGS_SANITIZE", "") in ("ON", "1", "TRUE", "YES")
SLOW = 5.0 if WRAPPER else 1.0
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
MD = {"metricType": "gpu_utilization", "targetValue": "50"}


def frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack(">I", stream) + payload


SETTINGS = frame(4, 0, 0)
# HPACK: :method POST (static 3), :scheme http (6), :path / (4), :authority
# localhost (a literal with the static name 1; nghttp2 ignores a request
# without it), content-type: application/grpc (a literal, static name 31).
REQ_BLOCK = bytes([0x83, 0x86, 0x84, 0x41, 9]) + b"localhost" + \
    bytes([0x0f, 0x10, 16]) + b"application/grpc"


class Server(ServerProcess):
    def __init__(self, scenario, *args):
        self.tmp = tempfile.mkdtemp()
        self.sim = Sim(scenario)
        self.port, self.probe = free_port(), free_port()
        super().__init__(scaler_command(SERVER, self.port, self.probe, nvml_library=SIM,
                                        extra=args),
                         child_env(scenario=self.sim.path), wrapper=WRAPPER,
                         log_path=os.path.join(self.tmp, "log"))
        self.wait_tcp(self.port, 15 * SLOW)

    def fds(self):
        return len(os.listdir("/proc/%d/fd" % self.proc.pid))

    def poll(self, md=None, timeout="10s"):
        p = subprocess.run([CLIENT, "poll", "-addr", "127.0.0.1:%d" % self.port,
                            "-max-time", timeout] + md_args(md or MD),
                           capture_output=True, text=True, timeout=60)
        return json.loads(p.stdout.splitlines()[0])

    def close(self):
        code, _ = self.stop(10 * SLOW)
        text = self.output(3000)
        self.close_log()
        self.sim.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        if WRAPPER and code != 0:
            raise AssertionError("server exited %s under %s:\n%s" % (code, WRAPPER[0], text))


def closed_within(sock, seconds):
    """Seconds until the peer closed the connection, or None."""
    sock.settimeout(0.2)
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        try:
            data = sock.recv(65536)
            if not data:
                return time.monotonic() - t0
        except socket.timeout:
            continue
        except OSError:
            return time.monotonic() - t0
    return None


def four():
    return {"devices": [device(i, gpu_util=10 * (i + 1)) for i in range(4)]}


class SlowAndIdleClients(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # 1,000 connections from one address: above the default per-peer
        # share (half of --max-connections), so that is raised too.
        cls.s = Server(four(), "--handshake-timeout", "1s", "--idle-timeout", "3s",
                       "--max-connections", "1100", "--max-connections-per-peer", "1100")

    @classmethod
    def tearDownClass(cls):
        cls.s.close()

    def connect(self):
        c = socket.create_connection(("127.0.0.1", self.s.port), timeout=5)
        self.addCleanup(c.close)
        return c

    def test_partial_preface_is_closed_by_the_handshake_timeout(self):
        c = self.connect()
        c.sendall(PREFACE[:10])
        took = closed_within(c, 5 * SLOW)
        self.assertIsNotNone(took, "a partial preface kept the connection open")
        self.assertGreaterEqual(took, 0.8)
        self.assertLess(took, 2.5 * SLOW, "closed by the idle timeout, not the handshake one")

    def test_partial_headers_are_closed_by_the_handshake_timeout(self):
        c = self.connect()
        # A HEADERS frame announcing 100 bytes, of which 3 arrive.
        c.sendall(PREFACE + SETTINGS + struct.pack(">I", 100)[1:] + bytes([1, 4]) +
                  struct.pack(">I", 1) + b"\x83\x86\x84")
        took = closed_within(c, 5 * SLOW)
        self.assertIsNotNone(took, "partial headers kept the connection open")
        self.assertLess(took, 2.5 * SLOW, "closed by the idle timeout, not the handshake one")

    def test_a_request_without_its_message_is_closed(self):
        # Complete headers, no DATA and no END_STREAM: the request never completes.
        c = self.connect()
        c.sendall(PREFACE + SETTINGS + frame(1, 0x4, 1, REQ_BLOCK))
        took = closed_within(c, 5 * SLOW)
        self.assertIsNotNone(took, "an incomplete request kept the connection open")
        self.assertLess(took, 2.5 * SLOW)

    def test_honest_clients_are_served_among_200_slow_ones(self):
        slow = []
        for _ in range(200):
            c = self.connect()
            c.sendall(PREFACE[:5])
            slow.append(c)
        t0 = time.monotonic()
        r = self.s.poll()
        self.assertNotIn("error", r)
        self.assertLess(time.monotonic() - t0, 5 * SLOW)
        # and every slow one is gone after the timeout
        self.assertTrue(all(closed_within(c, 5 * SLOW) is not None for c in slow[:20]))

    def test_1000_idle_connections(self):
        base = self.s.fds()
        idle = []
        for _ in range(1000):
            c = self.connect()
            c.sendall(PREFACE + SETTINGS)  # a complete, idle HTTP/2 connection
            idle.append(c)
        deadline = time.monotonic() + 5 * SLOW
        while self.s.fds() < base + 900 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertGreaterEqual(self.s.fds(), base + 900, "the server did not accept them")
        t0 = time.monotonic()
        r = self.s.poll()
        self.assertNotIn("error", r)
        self.assertLess(time.monotonic() - t0, 3 * SLOW)
        # --idle-timeout 3s: every idle connection gets GOAWAY and is closed.
        deadline = time.monotonic() + 10 * SLOW
        while self.s.fds() > base + 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertLessEqual(self.s.fds(), base + 5, "idle connections were not closed")
        for c in idle:
            c.close()


class Abuse(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = Server(four())

    @classmethod
    def tearDownClass(cls):
        cls.s.close()

    def test_rapid_reset_flood(self):
        """HEADERS then RST_STREAM, 20,000 times: the server stays responsive
        and stops the attacker (nghttp2's rapid-reset limit) without growing."""
        c = socket.create_connection(("127.0.0.1", self.s.port), timeout=5)
        self.addCleanup(c.close)
        c.sendall(PREFACE + SETTINGS)
        burst = b"".join(frame(1, 0x4, sid, REQ_BLOCK) + frame(3, 0, sid, struct.pack(">I", 8))
                         for sid in range(1, 40001, 2))
        try:
            c.sendall(burst)
        except OSError:
            pass  # closed under us: that is the point
        # nghttp2's limit (1,000 resets, then 100/s) ends the attacker's connection.
        took = closed_within(c, 10 * SLOW)
        self.assertIsNotNone(took, "the rapid-reset connection was not closed")
        self.assertLess(took, 5 * SLOW, "closed by a timeout, not by the reset limit")
        r = self.s.poll()
        self.assertNotIn("error", r)
        with open("/proc/%d/status" % self.s.proc.pid) as f:
            rss = [int(l.split()[1]) for l in f if l.startswith("VmRSS:")][0]
        self.assertLess(rss, 512 * 1024, "RSS %d KiB after the flood" % rss)

    def test_malformed_protobuf_is_invalid_argument(self):
        body = os.path.join(self.s.tmp, "bad.bin")
        with open(body, "wb") as f:
            f.write(b"\x00\x00\x00\x00\x03\xff\xff\xff")  # a gRPC frame with bad protobuf
        p = subprocess.run(["nghttp", "-v", "-d", body, "-H", ":method: POST",
                            "-H", "content-type: application/grpc", "-H", "te: trailers",
                            "http://127.0.0.1:%d/externalscaler.ExternalScaler/IsActive"
                            % self.s.port], capture_output=True, text=True, timeout=30)
        self.assertIn("grpc-status: 3", p.stdout, p.stdout[-2000:])
        self.assertIn("protobuf", p.stdout)


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def pb_len(field, payload):
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def get_metrics_request(entries):
    """A GetMetricsRequest whose ScaledObjectRef carries `entries` (a list of
    (key, value) bytes) as scalerMetadata (field 3), built by hand: a map of
    millions of empty entries is no dict a client library would send."""
    ref = pb_len(1, b"so") + pb_len(2, b"default") + \
        b"".join(pb_len(3, pb_len(1, k) + pb_len(2, v)) if k or v else b"\x1a\x00"
                 for k, v in entries)
    return pb_len(1, ref) + pb_len(2, b"m")


class Honest:
    """KEDA's polling in the background: kedaclient load -c 1 (GetMetrics
    calls one after the other over one connection) for `seconds`; result()
    is its summary (calls, errors, p50_us, p99_us, max_us)."""

    def __init__(self, test, server, seconds):
        self.proc = subprocess.Popen(
            [CLIENT, "load", "-addr", "127.0.0.1:%d" % server.port, "-c", "1",
             "-duration", "%ds" % seconds, "-max-time", "%ds" % (seconds + 30)] + md_args(MD),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        test.addCleanup(self.stop)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()

    def result(self):
        out, err = self.proc.communicate(timeout=60)
        return json.loads(out.splitlines()[0]) if out.strip() else {"fatal": err}


class MetadataBudgets(unittest.TestCase):
    """Issue 16, metadata: each probe on a fresh server (peak RSS is a
    per-process figure), with an honest KEDA-like caller polling meanwhile.
    The chart's memory limits are 128 Mi (agent) and 256 Mi (aggregator);
    every probe must stay below 64 MiB peak."""

    PEAK_KIB = 64 * 1024

    def server(self, *args):
        metrics = free_port()
        s = Server(four(), "--metrics-port", str(metrics), *args)
        s.metrics = metrics
        self.addCleanup(s.close)
        deadline = time.monotonic() + 10 * SLOW
        while "error" in s.poll() and time.monotonic() < deadline:
            time.sleep(0.1)
        return s

    def raw_call(self, s, method, body):
        """One call with nghttp (flow control done right); (grpc-status,
        grpc-message, seconds)."""
        path = os.path.join(s.tmp, "body.bin")
        with open(path, "wb") as f:
            f.write(b"\x00" + struct.pack(">I", len(body)) + body)
        t0 = time.monotonic()
        p = subprocess.run(["nghttp", "-v", "-d", path, "-H", ":method: POST",
                            "-H", "content-type: application/grpc", "-H", "te: trailers",
                            "http://127.0.0.1:%d/externalscaler.ExternalScaler/%s"
                            % (s.port, method)], capture_output=True, text=True, timeout=60)
        took = time.monotonic() - t0
        status = [l.split("grpc-status:")[1].strip() for l in p.stdout.splitlines()
                  if "grpc-status:" in l]
        message = [l.split("grpc-message:")[1].strip() for l in p.stdout.splitlines()
                   if "grpc-message:" in l]
        return (status[0] if status else None, message[0] if message else "", took)

    def metric(self, s, name, labels=""):
        status, body = http_get(s.metrics, "/metrics")
        self.assertEqual(status, 200, body)
        for line in body.splitlines():
            if line.startswith("keda_gpu_scaler_%s%s " % (name, labels)):
                return float(line.split()[-1])
        self.fail("no keda_gpu_scaler_%s%s in /metrics" % (name, labels))

    def figures(self, s, cpu0, honest):
        """Prints and returns the server's peak RSS and RSS (KiB), its CPU
        seconds since cpu0, and the honest caller's summary."""
        f = {"peak": proc_status_kib(s.proc.pid, "VmHWM"),
             "rss": proc_status_kib(s.proc.pid, "VmRSS"),
             "cpu": cpu_seconds(s.proc.pid) - cpu0, "honest": honest.result()}
        h = f["honest"]
        print("\n    %s: peak %.1f MiB, RSS %.1f MiB, CPU %.2f s; honest caller: %s calls, "
              "%s errors, p99 %.1f ms, max %.1f ms"
              % (self.id().rsplit(".", 1)[1], f["peak"] / 1024, f["rss"] / 1024, f["cpu"],
                 h.get("calls"), h.get("errors"), h.get("p99_us", 0) / 1000,
                 h.get("max_us", 0) / 1000), flush=True)
        return f

    def assert_bounded(self, f, rss_kib=None):
        h = f["honest"]
        self.assertEqual(h.get("errors"), 0, h)
        self.assertGreater(h.get("calls", 0), 10, h)
        self.assertLess(h.get("max_us", 1e9), 1e6 * SLOW, "an honest call waited: %s" % h)
        if WRAPPER or SANITIZED:
            # valgrind's or ASan's own memory (shadow, quarantine) and speed:
            # the figures are not the server's; the release build asserts them
            return
        self.assertLess(f["peak"], self.PEAK_KIB, "peak RSS %d KiB" % f["peak"])
        if rss_kib:
            self.assertLess(f["rss"], rss_kib, "RSS %d KiB retained" % f["rss"])

    def test_4_mib_of_empty_metadata_entries_is_refused_before_decoding(self):
        s = self.server()
        cpu0 = cpu_seconds(s.proc.pid)
        honest = Honest(self, s, 3)
        body = get_metrics_request([(b"", b"")] * 2000000)
        self.assertLess(len(body), 4 * 1024 * 1024)
        cpu1 = cpu_seconds(s.proc.pid)
        code, msg, took = self.raw_call(s, "GetMetrics", body)
        attack_cpu = cpu_seconds(s.proc.pid) - cpu1  # the honest calls of those ms included
        f = self.figures(s, cpu0, honest)
        print("    the attack's call: %.2f s, server CPU meanwhile %.2f s" % (took, attack_cpu))
        self.assertEqual(code, "8", msg)  # RESOURCE_EXHAUSTED
        self.assertIn("request message: %d bytes, at most 65536 (--max-request-bytes)"
                      % len(body), msg)
        self.assertLess(took, 2 * SLOW)
        self.assert_bounded(f)
        if not WRAPPER:
            self.assertLess(attack_cpu, 0.5)  # 1.3 s before
        self.assertEqual(self.metric(s, "limit_refusals_total", '{limit="max-request-bytes"}'), 1)

    def test_64_kib_of_empty_entries_is_refused_by_the_entry_limit(self):
        """Under the request cap, 32,000 entries are counted on the wire
        and refused before protobuf-c builds them."""
        s = self.server()
        cpu0 = cpu_seconds(s.proc.pid)
        honest = Honest(self, s, 3)
        cpu1 = cpu_seconds(s.proc.pid)
        code, msg, _ = self.raw_call(s, "GetMetrics", get_metrics_request([(b"", b"")] * 32000))
        # and the bytes of the keys and values, under the entry limit
        big = get_metrics_request([(b"k%d" % i, b"v" * 300) for i in range(200)])
        code2, msg2, _ = self.raw_call(s, "GetMetrics", big)
        attack_cpu = cpu_seconds(s.proc.pid) - cpu1
        f = self.figures(s, cpu0, honest)
        self.assertEqual(code, "8", msg)
        self.assertIn("32000 entries, at most 256 (--max-metadata-entries)", msg)
        self.assertEqual(code2, "8", msg2)
        self.assertIn("at most 32768 (--max-metadata-bytes)", msg2)
        self.assert_bounded(f)
        if not WRAPPER:
            self.assertLess(attack_cpu, 0.5)
        self.assertEqual(self.metric(s, "limit_refusals_total",
                                     '{limit="max-metadata-entries"}'), 1)
        self.assertEqual(self.metric(s, "limit_refusals_total", '{limit="max-metadata-bytes"}'), 1)
        self.assertEqual(self.metric(s, "config_cache_entries"), 1)  # the honest caller's

    def test_10000_distinct_streams_on_one_connection(self):
        """Each open stream pins its configuration (~28 KiB): beyond the
        namespace's share of the connection's budget (--max-stream-bytes,
        half of it for a namespace alone) new streams are refused;
        what the accepted ones pinned is given back when they close, and
        what stays cached is bounded by --config-cache-bytes."""
        s = self.server()
        cpu0 = cpu_seconds(s.proc.pid)
        honest = Honest(self, s, 8)
        p = subprocess.run([CLIENT, "streams", "-addr", "127.0.0.1:%d" % s.port, "-n", "10000",
                            "-distinct", "-timeout", "%ds" % (20 * SLOW),
                            "-max-time", "%ds" % (40 * SLOW)] + md_args(MD),
                           capture_output=True, text=True, timeout=90 * SLOW)
        r = json.loads(p.stdout.splitlines()[0])
        print("\n    streams: %s" % {k: r.get(k) for k in ("opened", "first_messages",
                                                         "early_codes", "t_ms")}, flush=True)
        # the client is gone: its streams end and give back what they pinned
        deadline = time.monotonic() + 5 * SLOW
        while time.monotonic() < deadline and self.metric(s, "stream_pinned_bytes") > 0:
            time.sleep(0.1)
        f = self.figures(s, cpu0, honest)
        refused = r.get("early_codes", {}).get("RESOURCE_EXHAUSTED", 0)
        # 32 MiB a connection, one namespace alone half: KEDA's share (~580
        # distinct pushed triggers) is served
        self.assertGreater(r["first_messages"], 500, r)
        self.assertEqual(r["first_messages"] + refused, 10000, r)
        self.assertIn("--max-stream-bytes 33554432, per connection)",
                      r.get("first_error", {}).get("message", ""))
        self.assertEqual(self.metric(s, "stream_pinned_bytes"), 0)
        self.assertEqual(self.metric(s, "limit_refusals_total", '{limit="max-stream-bytes"}'),
                         refused)
        self.assertLessEqual(self.metric(s, "config_cache_bytes"), 32 * 1024 * 1024)
        # retained: the accepted streams' entries, cached (~16 MiB), nothing
        # of the refused ones (refused before their maps were parsed)
        self.assertLess(self.metric(s, "config_cache_bytes"), 17 * 1024 * 1024)
        self.assert_bounded(f, rss_kib=32 * 1024)

    def test_200_maps_with_a_1_mib_value_are_refused(self):
        s = self.server()
        cpu0 = cpu_seconds(s.proc.pid)
        honest = Honest(self, s, 4)
        p = subprocess.run([CLIENT, "big", "-addr", "127.0.0.1:%d" % s.port, "-distinct",
                            "-n", "200", "-bytes", str(1 << 20), "-max-time", "%ds" % (60 * SLOW)]
                           + md_args(MD), capture_output=True, text=True, timeout=90 * SLOW)
        r = json.loads(p.stdout.splitlines()[0])
        f = self.figures(s, cpu0, honest)
        self.assertEqual(r["codes"], {"RESOURCE_EXHAUSTED": 200}, r)
        self.assertIn("at most 65536 (--max-request-bytes)", r["message"])
        self.assert_bounded(f, rss_kib=32 * 1024)

    def test_200_rejected_1_mib_maps_are_cached_without_their_map(self):
        """With the caps raised to let 1 MiB maps in, each rejected map is
        cached as a digest and a message, not a 1 MiB canonical key."""
        s = self.server("--max-request-bytes", "4194304", "--max-metadata-bytes", "4194304")
        cpu0 = cpu_seconds(s.proc.pid)
        honest = Honest(self, s, 4)
        p = subprocess.run([CLIENT, "big", "-addr", "127.0.0.1:%d" % s.port, "-distinct",
                            "-n", "200", "-bytes", str(1 << 20), "-max-time", "%ds" % (60 * SLOW)]
                           + md_args(MD), capture_output=True, text=True, timeout=90 * SLOW)
        r = json.loads(p.stdout.splitlines()[0])
        f = self.figures(s, cpu0, honest)
        self.assertEqual(r["codes"], {"INVALID_ARGUMENT": 200}, r)
        self.assertIn('unknown metadata key "big"', r["message"])
        self.assertEqual(self.metric(s, "config_cache_entries"), 201)  # and the honest one
        self.assertLess(self.metric(s, "config_cache_bytes"), 1024 * 1024)
        self.assert_bounded(f, rss_kib=32 * 1024)


class NvmlFaults(unittest.TestCase):
    def test_zero_gpus_is_unavailable_never_zero(self):
        s = Server({"devices": []})
        self.addCleanup(s.close)
        r = s.poll()
        self.assertEqual(r.get("error", {}).get("code"), "UNAVAILABLE", r)
        self.assertIn("GPU", r["error"]["message"])

    def test_missing_symbol_is_failed_precondition_for_that_metric_only(self):
        s = Server(dict(four(), missing_symbols=["nvmlDeviceGetPowerUsage"]))
        self.addCleanup(s.close)
        deadline = time.monotonic() + 10 * SLOW
        r = {}
        while time.monotonic() < deadline:
            r = s.poll()
            if "error" not in r:
                break
            time.sleep(0.2)
        self.assertEqual(r.get("metricValueFloat"), 100, r)  # 10+20+30+40
        r = s.poll({"metricType": "power_draw", "targetValue": "300"})
        self.assertEqual(r.get("error", {}).get("code"), "FAILED_PRECONDITION", r)
        self.assertIn("power", r["error"]["message"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
