#!/usr/bin/env python3
"""keda-gpu-scaler's gRPC server end to end: the real binary on the NVML
stand-in, driven by KEDA-like clients (kedaclient on grpc-go 1.33, grpc-js,
raw HTTP/2 through nghttp).

Environment (set by CTest): KEDA_GPU_SCALER, NVML_SIM_LIBRARY,
KGS_SOURCE_DIR, KGS_BUILD_DIR, KGS_GO_CLIENT (kedaclient).

Reference mode: with KGS_BASELINE_SERVER (the Go baseline-server) set and
KEDA_GPU_SCALER unset, the cases whose behaviour both servers share run
against the baseline instead; the others are skipped. That checks the
harness and the clients themselves.

Every wait is bounded; every server runs on free loopback ports.
"""
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

from kgs_sim import H100, Sim, device  # noqa: F401 (H100 for scenario tweaks)
from kgs_util import SOURCE_DIR, ServerProcess, free_port, http_get, md_args, scaler_command
from kgs_util import Streaming as KedaStream
from kgs_util import wait_for as poll_until

SERVER = os.environ.get("KEDA_GPU_SCALER", "")
BASELINE = os.environ.get("KGS_BASELINE_SERVER", "")
SIM = os.environ.get("NVML_SIM_LIBRARY", "")
CLIENT = os.environ.get("KGS_GO_CLIENT", "")
SRC = SOURCE_DIR
MODE = "c" if SERVER else ("baseline" if BASELINE else "")

SAMPLE_S = 0.2  # --sample-interval 200ms
# KGS_SERVER_WRAPPER runs the server under a tool (valgrind): every server
# must then exit 0 at SIGTERM, i.e. memcheck found no error and no leak.
WRAPPER = os.environ.get("KGS_SERVER_WRAPPER", "").split()
SLOW = 10.0 if WRAPPER else 1.0
MD = {"metricType": "gpu_utilization", "targetValue": "50"}
METHOD = "/externalscaler.ExternalScaler/"


# Under `make test` every tool is installed; a missing one is a failure,
# not a skip (KGS_REQUIRE_ALL=1 is set by CTest).
REQUIRE_ALL = os.environ.get("KGS_REQUIRE_ALL") == "1"


def require(ok, why):
    """Skip (reference/ad-hoc runs) or fail (make test) when a tool is missing."""
    if ok:
        return
    if REQUIRE_ALL:
        raise AssertionError("required for make test: " + why)
    raise unittest.SkipTest(why)


def setUpModule():
    if REQUIRE_ALL and MODE != "c":
        raise AssertionError("KGS_REQUIRE_ALL=1 but KEDA_GPU_SCALER is not set")
    if not MODE:
        raise unittest.SkipTest("neither KEDA_GPU_SCALER nor KGS_BASELINE_SERVER is set")
    require(CLIENT and os.access(CLIENT, os.X_OK),
            "KGS_GO_CLIENT (kedaclient) is not set or not executable")


def c_only(fn):
    """The case needs the C server (the NVML stand-in, its metadata rules, its HTTP port)."""
    return unittest.skipUnless(MODE == "c", "C server only (reference mode: %s)" % MODE)(fn)


# ---- scenarios (as in test_cli.py) ----

def four_gpus(utils=(10, 20, 30, 40), **per_device):
    """4 H100s with these gpu_util values; per_device: {index: extra device keys}."""
    devs = [device(i, gpu_util=u) for i, u in enumerate(utils)]
    for i, extra in per_device.get("extra", {}).items():
        devs[i].update(extra)
    return {"driver_version": "560.35.03", "devices": devs}


# ---- processes ----

class Server(ServerProcess):
    """The server under test (C, or the Go baseline in reference mode)."""

    def __init__(self, scenario, tls=None, client_ca=False, wait=True, extra_args=(), port=None):
        self.sim = Sim(scenario)
        self.port = port or free_port()
        self.metrics_port = free_port()
        self.probe_port = free_port()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NODE_NAME": "kgs-test-node"}
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
            if k in os.environ:
                env[k] = os.environ[k]
        if MODE == "c":
            env["NVML_SIM_SCENARIO"] = self.sim.path
            cmd = scaler_command(SERVER, self.port, self.probe_port, self.metrics_port,
                                 nvml_library=SIM,
                                 sample_interval="%dms" % int(SAMPLE_S * 1000))
            if tls:
                cmd += ["--tls-cert", tls.server_cert, "--tls-key", tls.server_key]
                if client_ca:
                    cmd += ["--tls-client-ca", tls.ca]
            cmd += list(extra_args)
        else:
            utils = ",".join(str(d["values"]["gpu_util"]) for d in scenario["devices"])
            cmd = [BASELINE, "-listen", "127.0.0.1:%d" % self.port, "-gpu-util", utils]
            if tls:
                cmd += ["-tls-cert", tls.server_cert, "-tls-key", tls.server_key]
                if client_ca:
                    cmd += ["-tls-client-ca", tls.ca]
        super().__init__(cmd, env, wrapper=WRAPPER, stdin=subprocess.DEVNULL)
        if wait:
            self.wait_ready(timeout=10.0 * SLOW)
        else:
            # Only wait for the probe port to answer at all.
            end = time.monotonic() + 10.0 * SLOW
            while time.monotonic() < end and http_get(self.probe_port, "/healthz")[0] != 200:
                time.sleep(0.05)

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    def wait_ready(self, timeout=10.0):
        if MODE == "c":
            return self.wait_http_ready(self.probe_port, timeout)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise AssertionError("server exited %d before ready:\n%s"
                                     % (self.proc.returncode, self.output()))
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise AssertionError("server not ready within %.0f s:\n%s" % (timeout, self.output()))

    def close(self):
        code, _ = self.stop(timeout=5.0 * SLOW)
        out = self.output()
        self.sim.close()
        self.close_log()
        if WRAPPER and code != 0:
            raise AssertionError("server under %s exited %s:\n%s" % (WRAPPER[0], code, out))


def kc(server, sub, *args, md=None, tls=None, timeout=30):
    """Runs kedaclient SUB against server; returns (exit status, [JSON lines])."""
    cmd = [CLIENT, sub, "-addr", server.addr, "-max-time", "%ds" % timeout] + md_args(md)
    cmd += tls or []
    cmd += list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 10)
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    if p.returncode == 2:
        raise AssertionError("kedaclient usage error: %s" % p.stderr)
    return p.returncode, lines


def kc1(server, sub, *args, **kw):
    """One-shot subcommand: exit status 0 and exactly one JSON object."""
    rc, lines = kc(server, sub, *args, **kw)
    if rc != 0 or len(lines) != 1:
        raise AssertionError("kedaclient %s: exit %d, output %r\nserver:\n%s"
                             % (sub, rc, lines, server.output()))
    return lines[0]


def Streaming(server, sub, *args, md=None, max_time=60):
    """A kedaclient run against server whose JSON lines are read as they arrive."""
    return KedaStream(CLIENT, sub, server.addr, *args, md=md, max_time=max_time)


# ---- raw gRPC over nghttp (server-side checks a grpc-go client cannot make) ----

def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(tag, data):
    return _varint(tag << 3 | 2) + _varint(len(data)) + data


def scaled_object_ref(name="so", namespace="default", md=None):
    msg = _field(1, name.encode()) + _field(2, namespace.encode())
    for k, v in (md or {}).items():
        msg += _field(3, _field(1, k.encode()) + _field(2, v.encode()))
    return msg


def grpc_frame(msg):
    return struct.pack(">BI", 0, len(msg)) + msg


def nghttp_call(server, method, body, headers=(), timeout=5):
    """POSTs one gRPC request with nghttp -v; returns its frame dump."""
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(body)
        f.flush()
        cmd = ["nghttp", "-v", "-n", "-d", f.name, "-t", "%ds" % timeout,
               "-H", "content-type: application/grpc", "-H", "te: trailers"]
        for h in headers:
            cmd += ["-H", h]
        cmd.append("http://%s%s%s" % (server.addr, METHOD, method))
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 5)
        return p.stdout + p.stderr


# ---- TLS material ----

class Pki:
    """A throwaway CA, a server certificate (SAN localhost, 127.0.0.1) and a
    client certificate (clientAuth), made with openssl."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        p = lambda n: os.path.join(d, n)
        self.ca, self.server_cert, self.server_key = p("ca.pem"), p("server.pem"), p("server.key")
        self.client_cert, self.client_key = p("client.pem"), p("client.key")

        def ossl(*a):
            subprocess.run(["openssl"] + list(a), check=True, capture_output=True, timeout=60)
        ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", p("ca.key"), "-out", self.ca,
             "-days", "2", "-subj", "/CN=kgs-test-ca")
        for who, ext in (("server", "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                                    "extendedKeyUsage=serverAuth\n"),
                         ("client", "extendedKeyUsage=clientAuth\n")):
            with open(p(who + ".ext"), "w") as f:
                f.write(ext)
            ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", p(who + ".key"),
                 "-out", p(who + ".csr"), "-subj", "/CN=kgs-test-" + who)
            ossl("x509", "-req", "-in", p(who + ".csr"), "-CA", self.ca, "-CAkey", p("ca.key"),
                 "-CAcreateserial", "-out", p(who + ".pem"), "-days", "2",
                 "-extfile", p(who + ".ext"))

    def rotate_server_cert(self):
        """A new key and certificate for the server, same CA, swapped in by
        rename (as a Kubernetes Secret update does). Returns its serial."""
        d = self.dir.name
        p = lambda n: os.path.join(d, n)

        def ossl(*a):
            return subprocess.run(["openssl"] + list(a), check=True, capture_output=True,
                                  text=True, timeout=60).stdout
        ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", p("new.key"), "-out",
             p("new.csr"), "-subj", "/CN=kgs-test-server-rotated")
        ossl("x509", "-req", "-in", p("new.csr"), "-CA", self.ca, "-CAkey", p("ca.key"),
             "-CAcreateserial", "-out", p("new.pem"), "-days", "2", "-extfile", p("server.ext"))
        os.replace(p("new.key"), self.server_key)
        os.replace(p("new.pem"), self.server_cert)
        return ossl("x509", "-in", self.server_cert, "-noout", "-serial").strip()

    def close(self):
        self.dir.cleanup()


def served_serial(port):
    """The serial of the certificate a new TLS handshake on port gets."""
    p = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-alpn", "h2"],
                       input="", capture_output=True, text=True, timeout=20)
    q = subprocess.run(["openssl", "x509", "-noout", "-serial"], input=p.stdout,
                       capture_output=True, text=True, timeout=20)
    return q.stdout.strip()


# ---- cases ----

class ServerCase(unittest.TestCase):
    """One server per class, on four_gpus() unless SCENARIO says otherwise."""
    SCENARIO = None

    @classmethod
    def setUpClass(cls):
        cls.server = Server(cls.SCENARIO or four_gpus())

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def code_of(self, obj):
        self.assertIn("error", obj, obj)
        return obj["error"]["code"]


class Poll(ServerCase):
    def test_poll_sum_is_default(self):
        r = kc1(self.server, "poll", md=MD)
        self.assertEqual(r["metricValueFloat"], 100, r)
        self.assertEqual(r["metricValue"], 100, r)
        self.assertEqual(r["targetSizeFloat"], 50, r)
        self.assertEqual(r["targetSize"], 50, r)
        self.assertIs(r["active"], True, r)

    def test_poll_max(self):
        r = kc1(self.server, "poll", md=dict(MD, aggregation="max"))
        self.assertEqual(r["metricValueFloat"], 40, r)
        self.assertEqual(r["metricValue"], 40, r)

    def test_activation_threshold(self):
        r = kc1(self.server, "poll", md=dict(MD, activationThreshold="200"))
        self.assertEqual(r["metricValueFloat"], 100, r)
        self.assertIs(r["active"], False, r)

    @c_only
    def test_misspelt_key_is_invalid_argument(self):
        r = kc1(self.server, "poll", md={"metricType": "gpu_utilization", "targetvalue": "50"})
        self.assertEqual(self.code_of(r), "INVALID_ARGUMENT", r)
        self.assertIn('did you mean "targetValue"', r["error"]["message"])

    @c_only
    def test_pod_selector_needs_the_aggregator_role(self):
        r = kc1(self.server, "poll", md=dict(MD, podSelector="app=vllm"))
        self.assertEqual(self.code_of(r), "INVALID_ARGUMENT", r)
        self.assertIn("aggregator role", r["error"]["message"])

    def test_poll_interval_zero_is_invalid_argument(self):
        r = kc1(self.server, "poll", md=dict(MD, pollIntervalSeconds="0"))
        self.assertEqual(self.code_of(r), "INVALID_ARGUMENT", r)

    def test_unimplemented(self):
        for path in (METHOD + "StreamMetricSpec", METHOD + "NoSuchMethod", "/no.such.Service/Call"):
            r = kc1(self.server, "method", "-path", path, "-timeout", "5s")
            self.assertEqual(r["code"], "UNIMPLEMENTED", r)
            self.assertEqual(r["messages"], 0, r)

    def test_big_message_is_resource_exhausted(self):
        r = kc1(self.server, "big", "-bytes", str(5 * 1024 * 1024), md=MD)
        self.assertEqual(r["code"], "RESOURCE_EXHAUSTED", r)
        # and the connection-level damage, if any, is not lasting
        self.assertEqual(kc1(self.server, "poll", md=MD)["metricValueFloat"], 100)

    def test_health(self):
        self.assertEqual(kc1(self.server, "health")["status"], "SERVING")
        rc, lines = kc(self.server, "health-watch", "-count", "1", "-timeout", "5s")
        self.assertEqual(rc, 0, lines)
        self.assertEqual(lines[0]["status"], "SERVING", lines)
        self.assertEqual(lines[-1]["end"]["reason"], "count", lines)


class Streams(ServerCase):
    def test_first_message_at_once(self):
        rc, lines = kc(self.server, "stream", "-count", "1", "-timeout", "5s", md=MD)
        self.assertEqual(rc, 0, lines)
        self.assertIs(lines[0]["result"], True, lines)
        self.assertLess(lines[0]["t_ms"], 500, lines)
        self.assertEqual(lines[-1]["end"]["reason"], "count", lines)

    def test_200_streams_on_one_connection(self):
        r = kc1(self.server, "streams", "-n", "200", "-timeout", "10s", md=MD)
        self.assertEqual(r["opened"], 200, r)
        self.assertEqual(r["first_messages"], 200, r)

    def test_deadline_exceeded(self):
        r = kc1(self.server, "deadline", "-timeout", "300ms", md=MD)
        self.assertEqual(r["code"], "DEADLINE_EXCEEDED", r)
        self.assertGreaterEqual(r["messages"], 1, r)
        self.assertLess(r["t_ms"], 2000, r)
        # the server outlived it (a stream's budget refund once read the
        # freed call: ASan's abort showed as the next call failing)
        self.assertEqual(kc1(self.server, "poll", md=MD)["metricValueFloat"], 100)

    def test_server_honours_grpc_timeout(self):
        require(shutil.which("nghttp"), "nghttp (nghttp2-client) is not installed")
        # The client's own timer is out of the picture here: nghttp has none
        # below its 5 s -t, so grpc-status 4 can only come from the server.
        body = grpc_frame(scaled_object_ref(md=MD))
        t0 = time.monotonic()
        out = nghttp_call(self.server, "StreamIsActive", body, headers=["grpc-timeout: 300m"])
        took = time.monotonic() - t0
        self.assertRegex(out, r"grpc-status: 4\b", out[-3000:])
        self.assertLess(took, 3.0, out[-3000:])

    def test_cancel(self):
        r = kc1(self.server, "cancel", md=MD)
        self.assertEqual(r["code"], "CANCELLED", r)
        self.assertEqual(r["messages"], 1, r)
        self.assertEqual(kc1(self.server, "health")["status"], "SERVING")


class StreamFlips(ServerCase):
    SCENARIO = four_gpus(utils=(0, 0, 0, 0))

    @c_only
    def test_flip_then_periodic_true(self):
        md = dict(MD, activationThreshold="50", pollIntervalSeconds="1")
        s = Streaming(self.server, "stream", "-count", "0", "-timeout", "20s", md=md)
        self.addCleanup(s.close)
        t, m = s.next(5)
        self.assertIs(m.get("result"), False, m)
        self.assertLess(m["t_ms"], 500, m)  # since the client opened the stream
        time.sleep(2 * SAMPLE_S)
        t_change = time.monotonic()
        self.server.sim.rewrite(four_gpus(utils=(90, 0, 0, 0)))
        deadline = t_change + 5
        while True:  # falses may repeat until the sampler sees the change
            t, m = s.next(max(0.1, deadline - time.monotonic()))
            if m.get("result") is True:
                break
            self.assertIn("result", m, m)
        # ~2 sample intervals, plus the stand-in's 10 ms reload check and slack
        self.assertLess(t - t_change, 2 * SAMPLE_S + 0.6, "true after %.3f s" % (t - t_change))
        # while active, true repeats every pollIntervalSeconds (1 s)
        times = [t]
        for _ in range(2):
            t, m = s.next(3)
            self.assertIs(m.get("result"), True, m)
            times.append(t)
        gaps = [b - a for a, b in zip(times, times[1:])]
        for g in gaps:
            self.assertGreater(g, 0.7, gaps)
            self.assertLess(g, 1.5, gaps)


class LostGpu(ServerCase):
    @c_only
    def test_lost_gpu_is_unavailable_never_zero(self):
        scen = four_gpus()
        lost = scen["devices"][2]
        self.assertEqual(kc1(self.server, "poll", md=MD)["metricValueFloat"], 100)
        lost["error_timeline"] = [{"at_s": 0, "call": "*", "error": "GPU_IS_LOST"}]
        self.server.sim.rewrite(scen)
        seen = []

        def unavailable():
            # poll asks GetMetrics, then IsActive: the snapshot with the lost
            # GPU may land between them, so the first error can be IsActive's.
            # The next poll's GetMetrics must fail too.
            r = kc1(self.server, "poll", md=MD)
            seen.append(r)
            return r if "error" in r and r["call"] == "GetMetrics" else None
        r = poll_until(unavailable, timeout=10 * SAMPLE_S + 2)
        self.assertIsNotNone(r, "never UNAVAILABLE: %r" % seen[-3:])
        self.assertTrue(all(x.get("metricValueFloat", 100) != 0 for x in seen), seen)
        self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
        msg = r["error"]["message"]
        self.assertTrue(lost["uuid"] in msg or re.search(r"(?i)\bGPU[ #-]?2\b|index 2\b", msg),
                        "message does not name the GPU: %r" % msg)
        # no value before the change was anything but the full sum; none after it at all
        for x in seen:
            if "error" not in x:
                self.assertEqual(x["metricValueFloat"], 100, seen)
        for _ in range(5):
            x = kc1(self.server, "poll", md=MD)
            self.assertEqual(x.get("error", {}).get("code"), "UNAVAILABLE", x)
            time.sleep(SAMPLE_S)


class Shutdown(ServerCase):
    def test_sigterm_with_200_streams(self):
        s = Streaming(self.server, "streams", "-n", "200", "-timeout", "20s", "-hold", md=MD)
        self.addCleanup(s.close)
        _, first = s.next(15)
        self.assertEqual(first["first_messages"], 200, first)
        rc, took = self.server.stop(timeout=5)
        self.assertEqual(rc, 0, "exit %s after %.2f s\n%s" % (rc, took, self.server.output()))
        self.assertLess(took, 5)
        _, ends = s.next(10)
        self.assertEqual(ends["ended"], {"OK": 200}, ends)
        self.assertEqual(ends["still_open"], 0, ends)


class Tls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require(shutil.which("openssl"), "openssl is not installed")
        cls.pki = Pki()

    @classmethod
    def tearDownClass(cls):
        cls.pki.close()

    def start(self, client_ca=False):
        s = Server(four_gpus(), tls=self.pki, client_ca=client_ca)
        self.addCleanup(s.close)
        return s

    def tls(self, cert=False, server_name=None):
        a = ["-tls", "-ca", self.pki.ca]
        if cert:
            a += ["-cert", self.pki.client_cert, "-key", self.pki.client_key]
        if server_name:
            a += ["-server-name", server_name]
        return a

    def test_world_readable_key_is_refused(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        key = os.path.join(d, "tls.key")
        shutil.copy(self.pki.server_key, key)
        os.chmod(key, 0o644)
        p = subprocess.run([SERVER, "--nvml-library", SIM, "--listen-address", "127.0.0.1",
                            "--port", "0", "--metrics-port", "0", "--probe-port", "0",
                            "--tls-cert", self.pki.server_cert, "--tls-key", key],
                           capture_output=True, text=True, timeout=30,
                           env={"PATH": "/usr/bin:/bin",
                                **{k: v for k, v in os.environ.items()
                                   if k.endswith("SAN_OPTIONS")}})
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("is readable by every user (mode 0644)", p.stderr)
        os.chmod(key, 0o640)  # group-readable (fsGroup) is accepted
        scen = os.path.join(d, "s.json")
        with open(scen, "w") as f:
            json.dump(four_gpus(), f)
        p = subprocess.Popen([SERVER, "--nvml-library", SIM, "--listen-address", "127.0.0.1",
                              "--port", "0", "--metrics-port", "0", "--probe-port", "0",
                              "--tls-cert", self.pki.server_cert, "--tls-key", key],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env={"PATH": "/usr/bin:/bin", "NVML_SIM_SCENARIO": scen,
                                  **{k: v for k, v in os.environ.items()
                                     if k.endswith("SAN_OPTIONS")}})
        try:
            line = ""
            end = time.monotonic() + 20
            while "gRPC (TLS)" not in line and time.monotonic() < end and p.poll() is None:
                line = p.stderr.readline()
            self.assertIn("gRPC (TLS)", line)
        finally:
            p.send_signal(signal.SIGTERM)
            p.wait(10)
            p.stderr.close()

    def test_tls_with_alpn_h2(self):
        s = self.start()
        # Under valgrind on a busy 2-core CI machine a first call has been seen
        # to fail transiently; what is checked here is TLS + ALPN, so retry and
        # report the last answer.
        last = {}

        def answered():
            last.clear()
            last.update(kc1(s, "poll", md=MD, tls=self.tls()))
            return "metricValueFloat" in last
        poll_until(answered, 10 * SLOW, interval=0.2)
        r = dict(last)
        self.assertEqual(r.get("metricValueFloat"), 100, r)
        self.assertEqual(r["alpn"], "h2", r)  # kedaclient exits 1 otherwise
        r = kc1(s, "poll", md=MD, tls=self.tls(server_name="localhost"))
        self.assertEqual(r["alpn"], "h2", r)
        # plaintext h2c to a TLS port does not work
        r = kc1(s, "isactive", md=MD)
        self.assertEqual(self.code_of_error(r), "UNAVAILABLE", r)

    @c_only
    def test_rotated_certificate_is_served_without_dropping_calls(self):
        pki = Pki()  # its own, since rotation rewrites the files
        self.addCleanup(pki.close)
        s = Server(four_gpus(), tls=pki)
        self.addCleanup(s.close)
        before = served_serial(s.port)
        self.assertTrue(before.startswith("serial="), before)
        watch = Streaming(s, "stream", "-count", "0", "-timeout", "30s", "-tls", "-ca", pki.ca,
                          md=MD)
        self.addCleanup(watch.close)
        _, first = watch.next(5)
        self.assertIn("result", first, first)
        new = pki.rotate_server_cert()
        self.assertNotEqual(new, before)
        got = poll_until(lambda: served_serial(s.port) == new or None, timeout=10 * SLOW, interval=0.5)
        self.assertTrue(got, "the new certificate was not served within 10 s")
        # New connections verify against the same CA; the open stream lived on.
        r = kc1(s, "poll", md=MD, tls=["-tls", "-ca", pki.ca])
        self.assertEqual(r["metricValueFloat"], 100, r)
        self.assertIsNone(watch.proc.poll(), "the stream opened before the rotation was dropped")

    @c_only
    def test_fifo_tls_file_is_refused_at_reload_with_healthz_answering(self):
        """Issue 28: a TLS file replaced by a FIFO blocked the event loop for
        ever at the next reload (open(2) of a FIFO waits for a writer), and
        /healthz stopped answering. Now each file is opened non-blocking and
        must be a regular file: the reload is refused, naming the file, the
        previous certificate keeps serving, and /healthz answers throughout.
        The certificate, then the client CA, each become a FIFO."""
        pki = Pki()  # its own: its files are replaced
        self.addCleanup(pki.close)
        s = Server(four_gpus(), tls=pki, client_ca=True)
        self.addCleanup(s.close)
        client_ca = pki.ca + ".client"  # the client's own copy: pki.ca becomes a FIFO
        shutil.copy(pki.ca, client_ca)
        mtls = ["-tls", "-ca", client_ca, "-cert", pki.client_cert, "-key", pki.client_key]
        for path in (pki.server_cert, pki.ca):
            with self.subTest(fifo=os.path.basename(path)):
                saved = path + ".saved"
                os.rename(path, saved)
                os.mkfifo(path)
                try:
                    # the reload check runs every 2 s: 6 s of /healthz, each answered at once
                    end = time.monotonic() + 6 * SLOW
                    while time.monotonic() < end:
                        t0 = time.monotonic()
                        code, _ = http_get(s.probe_port, "/healthz")
                        self.assertEqual(code, 200)
                        self.assertLess(time.monotonic() - t0, 1.0 * SLOW)
                        time.sleep(0.2)
                    self.assertIn("TLS reload failed, still serving the previous certificate",
                                  s.output(20000))
                    self.assertIn("%s is not a regular file" % path, s.output(20000))
                    # three checks failed the same way: one WARN line, not one a check
                    self.assertEqual(s.output(20000).count("%s is not a regular file" % path), 1,
                                     s.output(20000))
                    r = kc1(s, "poll", md=MD, tls=mtls)
                    self.assertEqual(r.get("metricValueFloat"), 100, r)
                finally:
                    os.remove(path)
                    os.rename(saved, path)

    @c_only
    def test_query_over_mtls(self):
        s = self.start(client_ca=True)
        args = ["--metadata", "metricType=gpu_utilization", "--metadata", "targetValue=50",
                "--tls", "--ca", self.pki.ca, "--server-name", "localhost"]
        rc, out, err = query(s, *args)
        self.assertEqual(rc, 1, out + err)  # no client certificate: refused
        self.assertIn("UNAVAILABLE", out)
        rc, out, err = query(s, *args, "--cert", self.pki.client_cert, "--key", self.pki.client_key)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("replicas: 2 (AverageValue)", out)

    @c_only
    def test_query_of_a_gpu_trigger_logs_nothing(self):
        """query asks Explain for every trigger; a GPU trigger has no decision
        to show and is told so, but that legitimate question is no WARN in the
        server's log (a real driver's first run logged one per call)."""
        s = self.start()
        rc, out, err = query(s, "--metadata", "metricType=gpu_utilization", "--metadata",
                             "targetValue=50", "--tls", "--ca", self.pki.ca, "--server-name",
                             "localhost")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("replicas: 2 (AverageValue)", out)
        log = s.output()
        self.assertNotIn("Explain ScaledObject", log)
        self.assertNotIn("FAILED_PRECONDITION", log)

    @c_only
    def test_plaintext_client_on_the_tls_port_is_told_to_use_tls(self):
        s = self.start()
        md = ["--metadata", "metricType=gpu_utilization", "--metadata", "targetValue=50"]
        for _ in range(3):
            rc, out, err = query(s, *md)
            self.assertEqual(rc, 1, out + err)
            self.assertIn("GOAWAY INADEQUATE_SECURITY: this port speaks TLS", out)
            self.assertIn("hint: the server speaks TLS: add --tls, with --ca FILE", out)
        # KEDA's own client (grpc-go) reports only "connection closed": for
        # KEDA's operator the server's log says it, once a minute, not per attempt
        r = kc1(s, "isactive", md=MD)
        self.assertEqual(self.code_of_error(r), "UNAVAILABLE", r)
        log = s.output()
        self.assertEqual(log.count("a plaintext HTTP/2 (h2c) client on this TLS port"), 1, log)
        self.assertIn("--tls --ca FILE", log)
        self.assertIn("enableTLS", log)

    @c_only
    def test_tls_client_on_the_h2c_port_is_told_to_drop_tls(self):
        s = Server(four_gpus())
        self.addCleanup(s.close)
        for _ in range(3):
            rc, out, err = query(s, "--metadata", "metricType=gpu_utilization", "--metadata",
                                 "targetValue=50", "--tls", "--ca", self.pki.ca)
            self.assertEqual(rc, 1, out + err)
            self.assertIn("it may speak plaintext HTTP/2 (h2c)", out)
            self.assertIn("hint: the server may speak plaintext HTTP/2 (h2c): try without --tls",
                          out)
        log = s.output()
        self.assertEqual(log.count("a TLS handshake on this plaintext (h2c) port"), 1, log)
        self.assertIn("--tls-cert FILE --tls-key FILE", log)

    def test_mtls_requires_a_client_certificate(self):
        s = self.start(client_ca=True)
        r = kc1(s, "isactive", md=MD, tls=self.tls())
        self.assertEqual(self.code_of_error(r), "UNAVAILABLE", r)
        r = kc1(s, "poll", md=MD, tls=self.tls(cert=True))
        self.assertIs(r["active"], True, r)
        self.assertEqual(r["alpn"], "h2", r)

    def test_grpc_js_over_mtls(self):
        s = self.start(client_ca=True)
        run_js_suite(self, s, {"KGS_TLS_CA": self.pki.ca, "KGS_TLS_CERT": self.pki.client_cert,
                               "KGS_TLS_KEY": self.pki.client_key})

    def code_of_error(self, r):
        self.assertIn("error", r, r)
        return r["error"]["code"]


JS_DIR = os.path.join(SRC, "tests", "integration", "js")


def run_js_suite(case, server, extra_env):
    require(shutil.which("node"), "node is not installed")
    require(os.path.isdir(os.path.join(JS_DIR, "node_modules", "@grpc", "grpc-js")),
            "no node_modules: run npm ci in tests/integration/js")
    env = dict(os.environ, KGS_GRPC_ADDR=server.addr, KGS_METADATA=json.dumps(MD),
               KGS_EXPECT=json.dumps({"metricValueFloat": 100, "metricValue": 100,
                                      "targetSizeFloat": 50, "targetSize": 50, "active": True}))
    env.update(extra_env)
    p = subprocess.run(["node", "--test", JS_DIR], env=env, capture_output=True, text=True,
                       timeout=120)
    case.assertEqual(p.returncode, 0, p.stdout[-4000:] + p.stderr[-2000:])
    case.assertRegex(p.stdout, r"(?m)^# fail 0$")
    if "KGS_TLS_CA" not in extra_env:
        case.assertRegex(p.stdout, r"(?m)^# pass 7$")
    else:
        case.assertRegex(p.stdout, r"(?m)^# pass 8$")


class GrpcJs(ServerCase):
    def test_grpc_js_suite(self):
        run_js_suite(self, self.server, {})


class WireDetails(ServerCase):
    """Details of the gRPC wire contract, checked with raw HTTP/2 (nghttp)."""

    @c_only
    def test_compressed_request_is_unimplemented(self):
        require(shutil.which("nghttp"), "nghttp (nghttp2-client) is not installed")
        msg = scaled_object_ref(md=MD)
        body = struct.pack(">BI", 1, len(msg)) + msg  # compressed flag set
        out = nghttp_call(self.server, "IsActive", body, headers=["grpc-encoding: gzip"])
        self.assertRegex(out, r"grpc-status: 12\b", out[-3000:])

    @c_only
    def test_int_fields_are_ceil_and_llround_of_the_floats(self):
        r = kc1(self.server, "poll", md={"metricType": "gpu_utilization", "targetValue": "12.5",
                                        "aggregation": "avg"})
        self.assertEqual(r["targetSizeFloat"], 12.5, r)
        self.assertEqual(r["targetSize"], 13, r)  # ceil: old KEDA reads only the ints
        self.assertEqual(r["metricValueFloat"], 25, r)
        self.assertEqual(r["metricValue"], 25, r)

    @c_only
    def test_plain_http1_on_the_grpc_port_is_refused_with_an_explanation(self):
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=5) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while True:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
        self.assertTrue(data.startswith(b"HTTP/1.1 400"), data)
        self.assertIn(b"gRPC", data)
        # and the server is unharmed
        self.assertEqual(kc1(self.server, "poll", md=MD)["metricValueFloat"], 100)


class StaleSnapshot(ServerCase):
    """An NVML call that hangs: RPCs keep answering at once, from the last
    snapshot until it is stale, then UNAVAILABLE (never a made-up value);
    readiness and health follow; everything recovers when NVML does."""

    @c_only
    def test_hung_nvml_call_makes_answers_unavailable_then_recover(self):
        scen = four_gpus()
        for d in scen["devices"]:
            d["latency_ms"] = {"nvmlDeviceGetPowerUsage": 3000}
        self.server.sim.rewrite(scen)
        # The sampler is now stuck in a 3 s call per GPU (12 s a sweep); the
        # snapshot goes stale after 3 x 200 ms.
        def stale():
            r = kc1(self.server, "poll", md=MD)
            return r if "error" in r else None
        r = poll_until(stale, timeout=5)
        self.assertIsNotNone(r, "never went stale")
        self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
        self.assertIn("stale", r["error"]["message"])
        self.assertLess(r["ms"], 1000, r)  # answered at once, not after the hung call
        code, body = http_get(self.server.probe_port, "/readyz")
        self.assertEqual(code, 503, body)
        self.assertIn("stale", body)
        self.assertEqual(kc1(self.server, "health")["status"], "NOT_SERVING")
        code, _ = http_get(self.server.probe_port, "/healthz")
        self.assertEqual(code, 200)  # the loop itself is fine
        # NVML recovers: the sweep in progress still has to finish (<= 12 s).
        self.server.sim.rewrite(four_gpus())
        r = poll_until(lambda: (lambda x: x if "error" not in x else None)(
            kc1(self.server, "poll", md=MD)), timeout=20)
        self.assertIsNotNone(r, "did not recover")
        self.assertEqual(r["metricValueFloat"], 100, r)
        self.assertEqual(kc1(self.server, "health")["status"], "SERVING")


class HungNvmlAtShutdown(unittest.TestCase):
    @c_only
    def test_sigterm_exits_promptly_while_an_nvml_call_hangs(self):
        s = Server(four_gpus())
        try:
            scen = four_gpus()
            scen["devices"][0]["latency_ms"] = {"nvmlDeviceGetPowerUsage": 10000}
            s.sim.rewrite(scen)
            time.sleep(1.0)  # the sampler is now inside the 10 s call
            code, took = s.stop(timeout=8)
            self.assertEqual(code, 0, s.output())
            self.assertLess(took, 5.0, s.output())
            self.assertIn("NVML call still running at exit", s.output())
        finally:
            s.close()


class NvmlDownAtStart(unittest.TestCase):
    """NVML fails to initialise: the server stays up, not ready, answers
    UNAVAILABLE, and becomes ready by itself once NVML works."""

    @c_only
    def test_server_waits_for_nvml_and_recovers(self):
        scen = four_gpus()
        scen["init_error"] = "DRIVER_NOT_LOADED"
        server = Server.__new__(Server)
        try:
            Server.__init__(server, scen, wait=False)
            seen = []

            def probe():
                # Before the sampler's first nvmlInit the answer is "no GPU
                # snapshot yet" (also a 503): wait for NVML's own error.
                code, body = http_get(server.probe_port, "/readyz")
                seen.append((code, body))
                return body if code == 503 and "DRIVER_NOT_LOADED" in body else None
            body = poll_until(probe, timeout=10 * SLOW)
            self.assertIsNotNone(body, seen[-3:])
            self.assertTrue(all(code == 503 for code, _ in seen), seen)
            r = kc1(server, "poll", md=MD)
            self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
            self.assertIn("DRIVER_NOT_LOADED", r["error"]["message"])
            server.sim.rewrite(four_gpus())
            server.wait_ready(timeout=15 * SLOW)  # init is retried with backoff (1 s, 2 s, ...)
            self.assertEqual(kc1(server, "poll", md=MD)["metricValueFloat"], 100)
        finally:
            server.close()


class NvmlMessages(unittest.TestCase):
    """NVML down: NVML's own error once per message; a bad stand-in scenario
    is named as such, not as a driver problem."""

    @c_only
    def test_nvml_error_appears_once_per_message(self):
        scen = four_gpus()
        scen["init_error"] = "DRIVER_NOT_LOADED"
        server = Server(scen, wait=False)
        self.addCleanup(server.close)
        r = poll_until(lambda: (lambda x: x if "error" in x else None)(kc1(server, "poll", md=MD)),
                       timeout=10 * SLOW)
        msg = r["error"]["message"]
        self.assertEqual(msg.count("NVML unavailable"), 1, msg)
        self.assertEqual(msg.count("Driver Not Loaded"), 1, msg)
        _, body = http_get(server.probe_port, "/readyz")
        self.assertEqual(body.count("NVML unavailable"), 1, body)
        self.assertNotIn("stand-in", msg)  # a failure the scenario asks for plays a driver's

    @c_only
    def test_bad_scenario_is_named_in_errors_and_log(self):
        scen = four_gpus()
        scen["devices"][0]["values"]["gpu_utl"] = 3  # a typo: the stand-in rejects the file
        server = Server(scen, wait=False)
        self.addCleanup(server.close)
        r = poll_until(lambda: (lambda x: x if "error" in x else None)(kc1(server, "poll", md=MD)),
                       timeout=10 * SLOW)
        msg = r["error"]["message"]
        self.assertIn("from the NVML stand-in: scenario " + server.sim.path, msg)
        self.assertIn("gpu_utl", msg)
        self.assertIn("NVML initialisation failed", server.output())
        self.assertIn("from the NVML stand-in", server.output())


def query(server, *args, timeout=20):
    """keda-gpu-scaler query against server; returns (exit status, stdout, stderr)."""
    p = subprocess.run([SERVER, "query", "--address", server.addr] + list(args),
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


class Query(ServerCase):
    """keda-gpu-scaler query: KEDA's calls, and the replicas KEDA + HPA would pick."""

    @c_only
    def test_query_prints_value_and_average_value_replicas(self):
        rc, out, err = query(self.server, "--metadata", "metricType=gpu_utilization",
                             "--metadata", "targetValue=30", "--replicas", "2")
        self.assertEqual(rc, 0, err)
        # 4 GPUs at 10+20+30+40 = 100 against 30: ceil(100/30) = 4; Value from 2: ceil(2*100/30) = 7
        self.assertRegex(out, r"value 100 +active true +replicas: 4 \(AverageValue\), 7 \(Value, from 2\)")

    @c_only
    def test_query_reports_the_failing_call_and_exits_1(self):
        rc, out, err = query(self.server, "--metadata", "targetvalue=30")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("GetMetricSpec: INVALID_ARGUMENT", out)
        self.assertIn('did you mean "targetValue"', out)

    @c_only
    def test_query_watch_reconnects_with_keda_s_backoff(self):
        """With the server away, --watch retries as KEDA's push loop does (2 s,
        doubling) and the rounds connect again, instead of "connection is
        closed" for ever; once it is back, the stream pushes again."""
        port = free_port()
        q = subprocess.Popen([SERVER, "query", "--address", "127.0.0.1:%d" % port,
                              "--metadata", "metricType=gpu_utilization", "--metadata",
                              "targetValue=30", "--watch", "--interval", "1s", "--count", "12"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(4.5)
            server = Server(four_gpus(), port=port)
            try:
                out, err = q.communicate(timeout=30)
            finally:
                server.close()
        finally:
            if q.poll() is None:
                q.kill()
                q.communicate()
        self.assertIn("StreamIsActive ended: UNAVAILABLE", out)
        self.assertIn("reopening in 2 s", out)
        self.assertIn("reopening in 4 s", out)
        self.assertNotIn("connection is closed", out)
        after = out[out.index("reopening in 4 s"):]
        self.assertIn("StreamIsActive push: active true", after)
        self.assertRegex(after, r"value 100 +active true")

    @c_only
    def test_query_watch_changes_prints_only_changes(self):
        """--changes (make run's screen): a steady node is one line, not one
        per round; without it every round prints. Whole numbers print whole."""
        base = ["--metadata", "metricType=gpu_utilization", "--metadata", "targetValue=30",
                "--watch", "--interval", "200ms", "--count", "6"]
        rc, every, err = query(self.server, *base)
        self.assertEqual(rc, 0, err)
        self.assertEqual(every.count("keda_gpu_metric"), 6, every)
        rc, changes, err = query(self.server, *base, "--changes")
        self.assertEqual(rc, 0, err)
        self.assertEqual(changes.count("keda_gpu_metric"), 1, changes)
        self.assertRegex(changes, r"target 30 +value 100 +active true")
        self.assertLessEqual(changes.count("StreamIsActive push"), 1, changes)
        rc, _, err = query(self.server, "--metadata", "targetValue=30", "--changes")
        self.assertEqual(rc, 2)
        self.assertIn("--changes needs --watch", err)

    @c_only
    def test_query_usage_errors_exit_2(self):
        rc, _, err = query(self.server, "--metadata", "novalue")
        self.assertEqual(rc, 2)
        self.assertIn("KEY=VALUE", err)


# ---- MIG on an A100: no GPM, no utilisation; memory and demand ----

def scenario_file(name):
    with open(os.path.join(SRC, "sim", "scenarios", name)) as f:
        return json.load(f)


def mig_example_triggers():
    """The metadata of each ScaledObject trigger in deploy/examples/mig.yaml."""
    try:
        import yaml
    except ImportError:
        require(False, "python3-yaml is missing")
    with open(os.path.join(SRC, "deploy", "examples", "mig.yaml")) as f:
        docs = [d for d in yaml.safe_load_all(f) if d and d.get("kind") == "ScaledObject"]
    return [t["metadata"] for d in docs for t in d["spec"]["triggers"]]


def one_node(md):
    """An aggregator trigger as the standalone server (one node, no pod list)
    takes it: nodeSelector and podSelector choose nodes and pods of a cluster."""
    return {k: v for k, v in md.items() if k not in ("nodeSelector", "podSelector")}


def hint_words(message, word):
    """The words after each `word ` in message: what a hint tells one to set."""
    return re.findall(r"\b%s ([a-z0-9_.+-]*[a-z0-9_+-])" % word, message)


class MigA100(ServerCase):
    """sim/scenarios/mig-a100.json: an A100 with MIG (no utilisation, no GPM)
    beside an A100 without MIG. Every hint leads to a value; the example's
    triggers get values."""
    SCENARIO = scenario_file("mig-a100.json")

    def walk(self, md, trail=()):
        """Follows every metricType (with the migProfile, or gpuIndex, the
        hint names) until each path answers a value; returns the number of
        hints that named metricType demand. Fails on a circle or a dead end."""
        key = tuple(sorted(md.items()))
        self.assertNotIn(key, trail, "the hints lead in a circle: %s" % (trail + (key,),))
        self.assertLess(len(trail), 4, "no value after 4 hints: %s" % (trail,))
        r = kc1(self.server, "poll", md=dict(md, targetValue="50"))
        if "error" not in r:
            return 0
        self.assertEqual(r["error"]["code"], "FAILED_PRECONDITION", r)
        msg = r["error"]["message"]
        metrics = hint_words(msg[1:], "metricType")  # it opens with the trigger's own
        profiles = hint_words(msg, "migProfile")
        demand = metrics.count("demand")
        steps = [dict({"migProfile": profiles[0]} if profiles else
                      {k: v for k, v in md.items() if k != "metricType"}, metricType=m)
                 for m in metrics if m != "demand"]
        steps += [{"metricType": md["metricType"], "gpuIndex": i}
                  for i in hint_words(msg, "gpuIndex")]
        self.assertTrue(steps or demand, "a hint that leads nowhere: %s" % msg)
        for step in steps:
            demand += self.walk(step, trail + (key,))
        return demand

    @c_only
    def test_every_hint_leads_to_a_value(self):
        starts = [
            {"metricType": "gpu_utilization"},                       # make run's query until now
            {"profile": "mig-sm-active", "migProfile": "3g.40gb"},   # mig.yaml until now
            {"metricType": "gpu_utilization", "migProfile": "3g.40gb"},
            {"metricType": "sm_active"},
            {"metricType": "sm_active", "gpuIndex": "1"},
        ]
        demand = 0
        for md in starts:
            if "profile" in md:
                r = kc1(self.server, "poll", md=md)
                self.assertNotIn("gpu_utilization", r["error"]["message"], r)
                md = {"metricType": "sm_active", "migProfile": md["migProfile"]}
            demand += self.walk(md)
        self.assertGreater(demand, 0)  # MigExampleDemand shows that trigger answering

    @c_only
    def test_the_mig_example_s_memory_trigger_gets_a_value(self):
        gpu = [md for md in mig_example_triggers() if md.get("metricType") != "demand"]
        self.assertEqual(len(gpu), 1, gpu)
        md = one_node(gpu[0])
        self.assertEqual((md["metricType"], md["migProfile"]), ("memory_used_percent", "3g.40gb"))
        r = kc1(self.server, "poll", md=md)
        self.assertNotIn("error", r)
        self.assertEqual(r["targetSizeFloat"], float(md["targetValue"]), r)
        # one 3g.40gb instance: its memory used, % of its own 39.25 GiB
        self.assertGreater(r["metricValueFloat"], 0, r)
        self.assertLess(r["metricValueFloat"], 100, r)
        self.assertIs(r["active"], True, r)


class MigExampleDemand(unittest.TestCase):
    """deploy/examples/mig.yaml's demand trigger on the A100 MIG node: the
    activity that NVML cannot measure there comes from the Redis queue."""

    @c_only
    def test_the_mig_example_s_demand_trigger_follows_the_queue(self):
        require(shutil.which("redis-server"), "redis-server is missing")
        from test_demand import PASSWORD, Redis
        demand = [md for md in mig_example_triggers() if md.get("metricType") == "demand"]
        self.assertEqual(len(demand), 1, demand)
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        redis = Redis(tmp.name)
        self.addCleanup(redis.close)
        server = Server(scenario_file("mig-a100.json"))
        self.addCleanup(server.close)
        md = one_node(demand[0])
        self.assertIn("redisPasswordFromEnv", md)
        md.update(redisAddress="127.0.0.1:%d" % redis.port,
                  redisPasswordFromEnv=PASSWORD)  # KEDA resolves it from the target's env
        r = kc1(server, "poll", md=md)
        self.assertNotIn("error", r)
        self.assertIs(r["active"], False, r)  # nothing queued
        for i in range(3):
            redis.cmd("RPUSH", md["redisListName"], "job-%d" % i)
        # kedaclient's poll asks GetMetrics before IsActive: the queue's
        # next reading may land between them (seen once under a loaded
        # make test: value 0, active), so both are waited for
        r = poll_until(lambda: (lambda x: x if x.get("active") and x.get("metricValueFloat", 0) > 0
                                else None)(kc1(server, "poll", md=md)), timeout=5 * SLOW)
        self.assertIsNotNone(r, "3 queued jobs did not make the trigger active and ask for "
                                "replicas")


class MigA100Timeline(unittest.TestCase):
    """mig-a100.json's 3g.40gb instance fills and empties every 75 s, so a
    memory trigger on it scales up and down (make run's trigger for it);
    here with the timeline 10x faster."""

    @c_only
    def test_memory_per_instance_rises_and_falls(self):
        scen = scenario_file("mig-a100.json")
        self.assertEqual(scen["repeat_after_s"], 75)
        scen["repeat_after_s"] /= 10
        for d in scen["devices"]:
            for obj in [d] + d.get("mig", {}).get("instances", []):
                for step in obj.get("timeline", []):
                    step["at_s"] /= 10
        server = Server(scen)
        self.addCleanup(server.close)
        md = {"metricType": "memory_used_percent", "migProfile": "3g.40gb",
              "targetValue": "25", "activationThreshold": "5"}
        seen, end = [], time.monotonic() + 12 * SLOW
        while time.monotonic() < end:
            r = kc1(server, "poll", md=md)
            self.assertNotIn("error", r)
            v = round(r["metricValueFloat"], 1)
            if not seen or seen[-1] != v:
                seen.append(v)
            if len(seen) >= 7 and max(seen) in seen[:-1] and seen[-1] < max(seen):
                break
            time.sleep(0.1)
        self.assertGreater(max(seen), 75, seen)  # 30 of 39.25 GiB at the peak
        self.assertLess(min(seen), 11, seen)     # 4 GiB: the model alone
        peak = seen.index(max(seen))
        self.assertLess(seen[-1], max(seen), "never fell after its peak: %s" % seen)
        self.assertGreater(peak, 0, "never rose: %s" % seen)


H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def h2_frames_until_eof(sock, timeout):
    """Reads until the server closes; returns the frame types seen (or None on timeout)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        return None
    except ConnectionResetError:
        pass  # closed with our bytes unread: the kernel answers with RST
    types, off = [], 0
    while off + 9 <= len(data):
        length = int.from_bytes(data[off:off + 3], "big")
        types.append(data[off + 3])
        off += 9 + length
    return types


class ConnectionLimits(unittest.TestCase):
    @c_only
    def test_idle_connection_gets_goaway_then_closes(self):
        s = Server(four_gpus(), extra_args=["--idle-timeout", "1s"])
        self.addCleanup(s.close)
        with socket.create_connection(("127.0.0.1", s.port), timeout=5) as sock:
            sock.sendall(H2_PREFACE)
            t0 = time.monotonic()
            types = h2_frames_until_eof(sock, timeout=5 * SLOW)
        self.assertIsNotNone(types, "idle connection was not closed")
        self.assertIn(7, types)  # GOAWAY
        self.assertGreater(time.monotonic() - t0, 0.8)

    @c_only
    def test_connections_beyond_the_cap_are_closed_at_once(self):
        s = Server(four_gpus(), extra_args=["--max-connections", "2", "--max-connections-per-peer", "2"])
        self.addCleanup(s.close)
        held = []
        for _ in range(2):
            c = socket.create_connection(("127.0.0.1", s.port), timeout=5)
            c.sendall(H2_PREFACE)
            held.append(c)
        self.addCleanup(lambda: [c.close() for c in held])
        time.sleep(0.2 * SLOW)
        with socket.create_connection(("127.0.0.1", s.port), timeout=5) as extra:
            extra.sendall(H2_PREFACE)
            self.assertEqual(h2_frames_until_eof(extra, timeout=3 * SLOW), [])
        # the ones within the cap still work: they got the server's SETTINGS
        held[0].settimeout(3)
        self.assertEqual(held[0].recv(9)[3], 4)


class Metrics(ServerCase):
    @c_only
    def test_metrics_exposition(self):
        def fetch():
            code, body = http_get(self.server.metrics_port, "/metrics")
            return body if code == 200 and "keda_gpu_scaler_gpu_utilization_percent" in body else None
        body = poll_until(fetch, timeout=3)
        self.assertIsNotNone(body, http_get(self.server.metrics_port, "/metrics"))
        self.assertRegex(body, r'(?m)^keda_gpu_scaler_gpu_utilization_percent\{[^}]*node="[^"]+"[^}]*\} ')
        require(os.access("/usr/bin/promtool", os.X_OK), "promtool (Debian: prometheus) is missing")
        p = subprocess.run(["/usr/bin/promtool", "check", "metrics"], input=body,
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
