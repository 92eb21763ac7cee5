#!/usr/bin/env python3
"""The fault matrix cases not covered elsewhere (the rest: docs/operations.md,
"Fault matrix"): slow-loris connections (a partial preface, partial headers),
1,000 idle connections, a rapid-reset flood, a malformed protobuf, zero GPUs
and missing NVML symbols. Each asserts the exact observable outcome, and that
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
from kgs_util import ServerProcess, child_env, free_port, md_args, scaler_command

SERVER = os.environ["KEDA_GPU_SCALER"]
SIM = os.environ["NVML_SIM_LIBRARY"]
CLIENT = os.environ["KGS_GO_CLIENT"]
WRAPPER = os.environ.get("KGS_SERVER_WRAPPER", "").split()
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
        cls.s = Server(four(), "--handshake-timeout", "1s", "--idle-timeout", "3s",
                       "--max-connections", "1100")

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
