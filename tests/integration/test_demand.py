#!/usr/bin/env python3
"""Demand signals end to end: a real redis-server, real HTTP servers serving
engine metrics in each engine's format, the scaler (standalone, and an
aggregator over a fake Kubernetes API for podSelector scrapes), and grpc-go
(KEDA's client library) calling it as KEDA does.

Runs inside its own network namespace (tests/integration/netns-run) with
only loopback up: some cases name 169.254.169.254 and metadata hosts, which
must never be reached.

Environment (CTest): KEDA_GPU_SCALER, NVML_SIM_LIBRARY, KGS_GO_CLIENT,
KGS_SOURCE_DIR.
"""
import http.server
import json
import os
import re
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.request

from fake_engines import FakeEngine
from fake_kube_api import FakeKubeAPI
from kgs_sim import Sim, device
from kgs_util import Streaming as KedaStream
from kgs_util import SOURCE_DIR, child_env, free_port, http_ok, scaler_command, stop_process, wait_for

SERVER = os.environ["KEDA_GPU_SCALER"]
SIM = os.environ["NVML_SIM_LIBRARY"]
CLIENT = os.environ["KGS_GO_CLIENT"]
FIXTURES = os.path.join(SOURCE_DIR, "tests", "fixtures", "engines")
WRAPPER = os.environ.get("KGS_SERVER_WRAPPER", "").split()
SLOW = 5.0 if WRAPPER else 1.0
PASSWORD = "s3cret-Queue-Pass"


# ---- Redis ------------------------------------------------------------------------


def resp_encode(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


class RespReader:
    def __init__(self, sock):
        self.f = sock.makefile("rb")

    def read(self):
        line = self.f.readline()
        t, rest = line[:1], line[1:-2]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            raise RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)
            return data[:-2].decode()
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError("bad RESP line %r" % line)


def ossl(*a):
    subprocess.run(["openssl"] + list(a), check=True, capture_output=True, timeout=60)


def make_client_cert(d):
    """A client certificate (clientAuth) signed by make_pki(d)'s CA, its key
    0600 (the server refuses a key every user can read)."""
    p = lambda n: os.path.join(d, n)
    with open(p("cli.ext"), "w") as f:
        f.write("extendedKeyUsage=clientAuth\n")
    ossl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
         p("cli.key"), "-out", p("cli.csr"), "-subj", "/CN=keda-gpu-scaler")
    ossl("x509", "-req", "-in", p("cli.csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"),
         "-CAcreateserial", "-out", p("cli.pem"), "-days", "2", "-extfile", p("cli.ext"))
    os.chmod(p("cli.key"), 0o600)
    return p("cli.pem"), p("cli.key")


def make_pki(d):
    """A throwaway CA and a server certificate for localhost / 127.0.0.1."""
    p = lambda n: os.path.join(d, n)
    ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", p("ca.key"), "-out", p("ca.pem"), "-days", "2", "-subj", "/CN=kgs-test-ca")
    with open(p("srv.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    ossl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
         p("srv.key"), "-out", p("srv.csr"), "-subj", "/CN=kgs-test-redis")
    ossl("x509", "-req", "-in", p("srv.csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"),
         "-CAcreateserial", "-out", p("srv.pem"), "-days", "2", "-extfile", p("srv.ext"))
    return p("ca.pem"), p("srv.pem"), p("srv.key")


class Redis:
    """redis-server on a free loopback port, no persistence, with a password;
    with tls=(cert, key) it also listens for TLS on tls_port."""

    def __init__(self, tmp, tls=None):
        self.port = free_port()
        cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--dir", tmp, "--requirepass", PASSWORD]
        self.tls_port = None
        if tls:
            self.tls_port = free_port()
            cmd += ["--tls-port", str(self.tls_port), "--tls-cert-file", tls[0],
                    "--tls-key-file", tls[1], "--tls-auth-clients", "no"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.sock = None
        if not wait_for(self._connect, 10):
            raise AssertionError("redis-server did not start")

    def _connect(self):
        try:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=2)
        except OSError:
            return False
        self.reader = RespReader(self.sock)
        self.cmd("AUTH", PASSWORD)
        return True

    def cmd(self, *args):
        self.sock.sendall(resp_encode(*args))
        return self.reader.read()

    def close(self):
        if self.sock:
            self.sock.close()
        self.proc.terminate()
        self.proc.wait(5)


# ---- engine metrics servers ---------------------------------------------------------


class Pages:
    """What the engine servers answer: path -> (status, body, extra headers)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.pages = {}
        self.hits = {}

    def set(self, path, body, status=200, headers=None):
        with self.lock:
            self.pages[path] = (status, body if callable(body) else body.encode(), headers or {})

    def get(self, path):
        with self.lock:
            self.hits[path] = self.hits.get(path, 0) + 1
            return self.pages.get(path)


def make_handler(pages):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def do_GET(self):
            try:
                self._get()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the scaler gave up (a timeout case): nothing to answer

        def _get(self):
            p = pages.get(self.path)
            if p is None:
                status, body, headers = 404, b"not found\n", {}
            else:
                status, body, headers = p
                if callable(body):
                    body = body().encode()
            self.send_response(status)
            self.send_header("Content-Type",
                             headers.get("Content-Type", "text/plain; version=0.0.4; charset=utf-8"))
            for k, v in headers.items():
                if k != "Content-Type":
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


class EngineServer:
    def __init__(self, host="127.0.0.1", port=0, pages=None):
        self.pages = pages or Pages()
        self.httpd = http.server.ThreadingHTTPServer((host, port), make_handler(self.pages))
        self.httpd.daemon_threads = True
        self.host, self.port = host, self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path):
        return "http://%s:%d%s" % (self.host, self.port, path)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class RawServer:
    """A loopback TCP server that answers every connection with the same
    bytes (after reading what the client sends first) and closes it: a
    server that is not what the trigger says it is."""

    def __init__(self, reply):
        self.reply = reply
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            try:
                c.settimeout(2)
                try:
                    c.recv(65536)
                except OSError:
                    pass
                c.sendall(self.reply)
            except OSError:
                pass
            finally:
                c.close()

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


def vllm_text(waiting, running, kv, completed=0):
    """A vLLM V1 scrape with these gauges, and its counters at `completed`
    requests (fake_engines.FakeEngine for counters that grow on their own)."""
    return FakeEngine("vllm", waiting=waiting, running=running, kv=kv,
                      completed=completed).text()


class Triton:
    """Counters that grow at `rate` requests/s with `wait_ms` of queueing each,
    as a function of wall time; reset() starts them from 0 (a restart)."""

    def __init__(self, rate, wait_ms):
        self.rate, self.wait_ms = rate, wait_ms
        self.t0 = time.monotonic() - 100  # 100 s of history already
        self.lock = threading.Lock()

    def reset(self):
        with self.lock:
            self.t0 = time.monotonic()

    def text(self):
        with self.lock:
            n = int((time.monotonic() - self.t0) * self.rate)
        return ("# HELP nv_inference_request_success Number of successful inference requests\n"
                "# TYPE nv_inference_request_success counter\n"
                'nv_inference_request_success{model="resnet",version="1"} %d\n'
                'nv_inference_request_success{model="bert",version="1"} 0\n'
                "# TYPE nv_inference_queue_duration_us counter\n"
                'nv_inference_queue_duration_us{model="resnet",version="1"} %d\n'
                'nv_inference_queue_duration_us{model="bert",version="1"} 0\n'
                "# TYPE nv_inference_pending_request_count gauge\n"
                'nv_inference_pending_request_count{model="resnet",version="1"} 0\n') % (
                    n, int(n * self.wait_ms * 1000))


# The counter samples each fake engine writes (docs/configuration.md, "Serving engines").
ENGINE_COUNTERS = {
    "vllm": ("vllm:request_success_total{", "vllm:prompt_tokens_total{",
             "vllm:generation_tokens_total{"),
    "sglang": ("sglang:num_requests_total{", "sglang:prompt_tokens_total{",
               "sglang:generation_tokens_total{"),
    "tgi": ("tgi_request_success ", "tgi_request_input_length_sum ",
            "tgi_request_generated_tokens_sum "),
    "triton": ("nv_inference_request_success{",),
}


# ---- the scaler and KEDA's client ------------------------------------------------------


class Streaming(KedaStream):
    """kedaclient stream: StreamIsActive messages as they arrive."""

    def __init__(self, addr, md, max_time=60):
        super().__init__(CLIENT, "stream", addr, "-count", "0", "-timeout", "%ds" % max_time,
                         md=md, max_time=max_time + 5)

    def until(self, result, timeout):
        """The first message saying `result` within timeout seconds."""
        return super().until(result, time.monotonic() + timeout)[1]


def start_scaler(tmp, extra=(), env_extra=None, metrics_port=0):
    port, probe = free_port(), free_port()
    log = open(os.path.join(tmp, "scaler-%d.log" % port), "w+")
    p = subprocess.Popen(
        WRAPPER + scaler_command(SERVER, port, probe, metrics_port, extra=extra),
        env=child_env(**(env_extra or {})), stdout=log, stderr=subprocess.STDOUT)
    return p, port, probe, log


def stop(p):
    return stop_process(p, 5 * SLOW)


class StandaloneEngineCase(unittest.TestCase):
    """One standalone scaler on the simulated node, an EngineServer for the
    test's engines, and kedaclient polls: what the engine-signal test files
    (test_slo.py, test_token_rates.py) share. Under a WRAPPER (valgrind) the
    scaler's exit status is checked at the end."""

    @classmethod
    def extra_scaler_args(cls):
        """More flags for the scaler (called once cls.tmp exists)."""
        return []

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.engines = EngineServer()
        cls.sim = Sim({"devices": [device(0, gpu_util=30)]})
        cls.proc, cls.port, cls.probe, cls.log = start_scaler(
            cls.tmp.name, ["--nvml-library", SIM] + cls.extra_scaler_args(),
            {"NVML_SIM_SCENARIO": cls.sim.path})
        if not wait_for(lambda: http_ok(cls.probe, "/readyz"), 15 * SLOW):
            cls.log.seek(0)
            raise AssertionError("scaler not ready:\n" + cls.log.read()[-3000:])
        cls.addr = "127.0.0.1:%d" % cls.port

    @classmethod
    def tearDownClass(cls):
        code = stop(cls.proc)
        cls.log.seek(0)
        text = cls.log.read()
        cls.log.close()
        cls.engines.close()
        cls.sim.close()
        cls.tmp.cleanup()
        if WRAPPER and code != 0:
            raise AssertionError("scaler exited %s under %s:\n%s" % (code, WRAPPER[0],
                                                                     text[-4000:]))

    def poll(self, md, ns="default"):
        p = subprocess.run([CLIENT, "poll", "-addr", self.addr, "-namespace", ns,
                            "-max-time", "20s"] +
                           sum((["-metadata", "%s=%s" % kv] for kv in md.items()), []),
                           capture_output=True, text=True, timeout=30)
        self.answered(p.stdout + p.stderr)
        return json.loads(p.stdout.splitlines()[0])

    def answered(self, text):
        """Every answer's text, for subclasses that check what answers hold."""

    def poll_until(self, md, pred, timeout=8.0, ns="default"):
        last = None
        end = time.monotonic() + timeout * SLOW
        while time.monotonic() < end:
            last = self.poll(md, ns)
            if pred(last):
                return last
            time.sleep(0.1)
        self.log.seek(0)
        self.fail("condition not met within %.1f s; last answer: %s\nlog: %s" %
                  (timeout, last, self.log.read()[-2000:]))


class Demand(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.ca, cert, key = make_pki(cls.tmp.name)
        cls.redis = Redis(cls.tmp.name, tls=(cert, key))
        cls.engines = EngineServer()
        cls.sim = Sim({"devices": [device(0, gpu_util=30), device(1, gpu_util=50)]})
        cls.metrics_port = free_port()
        cls.proc, cls.port, cls.probe, cls.log = start_scaler(
            cls.tmp.name, ["--nvml-library", SIM, "--source-ca-file", cls.ca],
            {"NVML_SIM_SCENARIO": cls.sim.path}, metrics_port=cls.metrics_port)
        if not wait_for(lambda: http_ok(cls.probe, "/readyz"), 15 * SLOW):
            cls.log.seek(0)
            raise AssertionError("scaler not ready:\n" + cls.log.read()[-3000:])
        cls.addr = "127.0.0.1:%d" % cls.port

    @classmethod
    def tearDownClass(cls):
        code = stop(cls.proc)
        cls.log.seek(0)
        text = cls.log.read()
        cls.log.close()
        cls.engines.close()
        cls.redis.close()
        cls.sim.close()
        cls.tmp.cleanup()
        if WRAPPER and code != 0:
            raise AssertionError("scaler exited %s under %s:\n%s" % (code, WRAPPER[0],
                                                                     text[-4000:]))
        if PASSWORD in text:
            raise AssertionError("the Redis password appears in the scaler's log")

    def poll(self, md, addr=None):
        p = subprocess.run([CLIENT, "poll", "-addr", addr or self.addr, "-max-time", "20s"] +
                           sum((["-metadata", "%s=%s" % kv] for kv in md.items()), []),
                           capture_output=True, text=True, timeout=30)
        return json.loads(p.stdout.splitlines()[0])

    def poll_until(self, md, pred, timeout=5.0, addr=None):
        """Polls until pred(result) holds; returns the last result."""
        last = None
        end = time.monotonic() + timeout * SLOW
        while time.monotonic() < end:
            last = self.poll(md, addr)
            if pred(last):
                return last
            time.sleep(0.1)
        self.fail("condition not met within %.1f s; last answer: %s" % (timeout, last))

    def value_is(self, v):
        return lambda r: "error" not in r and abs(r["metricValueFloat"] - v) < 1e-6

    # ---- serving engines -----------------------------------------------------------

    def test_engine_fixtures_in_each_engines_format(self):
        for name in ("vllm", "triton", "tgi", "sglang"):
            self.engines.pages.set("/fx/%s" % name, fixture("%s.txt" % name))
        cases = [  # engine, metricType, expected (tests/fixtures/engines/README.md)
            ("vllm", "engine_queue", 7), ("vllm", "engine_running", 5),
            ("vllm", "engine_kv_cache", 60), ("triton", "engine_queue", 6),
            ("tgi", "engine_queue", 4), ("tgi", "engine_running", 2),
            ("sglang", "engine_queue", 9), ("sglang", "engine_running", 3),
            ("sglang", "engine_kv_cache", 42)]
        for engine, mt, want in cases:
            md = {"metricType": mt, "engine": engine, "targetValue": "2",
                  "engineEndpoint": self.engines.url("/fx/%s" % engine)}
            r = self.poll_until(md, lambda r: "error" not in r)
            self.assertAlmostEqual(r["metricValueFloat"], want, places=6, msg=(engine, mt, r))
            self.assertTrue(r["active"], (engine, mt, r))
        # The Go system's names and profile, summed over two pods (Go took the last line).
        two = ",".join(self.engines.url("/fx/vllm") + "?pod=%d" % i for i in range(2))
        self.engines.pages.set("/fx/vllm?pod=0", fixture("vllm.txt"))
        self.engines.pages.set("/fx/vllm?pod=1", fixture("vllm.txt"))
        r = self.poll_until({"profile": "vllm-queue-depth", "vllmEndpoint": two},
                            self.value_is(14))
        self.assertEqual(r["metricName"], "keda_gpu_vllm_queue_depth")
        self.assertEqual(r["targetSizeFloat"], 5)
        r = self.poll_until({"metricType": "vllm_kv_cache_usage", "targetValue": "80",
                             "vllmEndpoint": two}, self.value_is(120))

    def test_model_filter_and_missing_metric(self):
        self.engines.pages.set("/mf/vllm", fixture("vllm.txt"))
        md = {"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
              "engineEndpoint": self.engines.url("/mf/vllm"), "model": "no-such-model"}
        r = self.poll_until(md, lambda r: "error" in r)
        self.assertEqual(r["error"]["code"], "FAILED_PRECONDITION", r)
        self.assertIn("no-such-model", r["error"]["message"])
        # TGI metrics read as vLLM: the gauge is missing, never 0.
        self.engines.pages.set("/mf/tgi", fixture("tgi.txt"))
        r = self.poll_until({"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
                             "engineEndpoint": self.engines.url("/mf/tgi")},
                            lambda r: "error" in r)
        self.assertEqual(r["error"]["code"], "FAILED_PRECONDITION", r)
        self.assertIn("waiting-requests", r["error"]["message"])

    def test_unreachable_engine_is_unavailable_naming_it(self):
        dead = "http://127.0.0.1:%d/metrics" % free_port()
        self.engines.pages.set("/ok/vllm", vllm_text(3, 1, 0.1))
        md = {"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
              "engineEndpoint": self.engines.url("/ok/vllm") + "," + dead}
        r = self.poll_until(md, lambda r: "error" in r)
        self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
        self.assertIn(dead, r["error"]["message"])
        self.assertIn("1 of 2", r["error"]["message"])
        # partialData: ignore leaves the dead pod out.
        md["partialData"] = "ignore"
        self.poll_until(md, self.value_is(3))
        # An HTTP error status is a failure too.
        self.engines.pages.set("/503", "overloaded\n", status=503)
        r = self.poll_until({"metricType": "engine_queue", "engine": "tgi", "targetValue": "1",
                             "engineEndpoint": self.engines.url("/503")},
                            lambda r: "error" in r)
        self.assertIn("HTTP 503", r["error"]["message"])

    def test_metric_follows_demand(self):
        self.engines.pages.set("/follow", vllm_text(0, 0, 0))
        md = {"metricType": "engine_queue", "engine": "vllm", "targetValue": "4",
              "engineEndpoint": self.engines.url("/follow"), "sourceInterval": "100ms"}
        r = self.poll_until(md, self.value_is(0))
        self.assertFalse(r["active"])
        for waiting in (5, 17, 2, 0):
            self.engines.pages.set("/follow", vllm_text(waiting, 0, 0))
            r = self.poll_until(md, self.value_is(waiting))
            self.assertEqual(r["active"], waiting > 0)
        # Nothing waiting but requests running: still active (a busy fleet).
        self.engines.pages.set("/follow", vllm_text(0, 3, 0.2))
        r = self.poll_until(md, lambda r: "error" not in r and r["active"])
        self.assertEqual(r["metricValueFloat"], 0)

    def test_first_call_waits_for_the_first_poll(self):
        """KEDA's first GetMetrics comes right after GetMetricSpec: it must get
        the value once the first poll lands, not UNAVAILABLE."""
        def slow():
            time.sleep(0.4)
            return vllm_text(6, 0, 0)
        self.engines.pages.set("/slow", slow)
        r = self.poll({"metricType": "engine_queue", "engine": "vllm", "targetValue": "3",
                       "engineEndpoint": self.engines.url("/slow")})
        self.assertNotIn("error", r)
        self.assertEqual(r["metricValueFloat"], 6)
        self.assertGreaterEqual(r["ms"]["metrics"], 300, r)  # it waited for the poll
        # A source that never answers within the timeout: UNAVAILABLE naming it,
        # after the wait, not a hung call.
        def hung():
            time.sleep(3)
            return vllm_text(1, 0, 0)
        self.engines.pages.set("/hung", hung)
        r = self.poll({"metricType": "engine_queue", "engine": "vllm", "targetValue": "3",
                       "engineEndpoint": self.engines.url("/hung"), "sourceTimeout": "500ms"})
        self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
        self.assertIn("timed out after 500ms", r["error"]["message"])

    def test_names_are_resolved_and_checked(self):
        self.engines.pages.set("/byname", vllm_text(2, 0, 0))
        url = "http://localhost:%d/byname" % self.engines.port
        r = self.poll_until({"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
                             "engineEndpoint": url}, self.value_is(2))
        self.assertTrue(r["active"])
        r = self.poll({"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
                       "engineEndpoint": "http://no-such-host.invalid:8000/metrics"})
        self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
        self.assertIn("no-such-host.invalid", r["error"]["message"])

    def test_https_engine_endpoint(self):
        """https: ALPN http/1.1, SNI and the host name checked against the
        certificate, trusted through --source-ca-file."""
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(self.tmp.name, "srv.pem"),
                            os.path.join(self.tmp.name, "srv.key"))
        ctx.set_alpn_protocols(["http/1.1"])
        srv = EngineServer("0.0.0.0")  # this network namespace only
        srv.httpd.socket = ctx.wrap_socket(srv.httpd.socket, server_side=True)
        try:
            srv.pages.set("/secure", vllm_text(4, 1, 0.5))
            url = "https://localhost:%d/secure" % srv.port
            self.poll_until({"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
                             "engineEndpoint": url}, self.value_is(4))
            # The certificate does not name 127.0.0.2: refused.
            r = self.poll_until({"metricType": "engine_queue", "engine": "vllm",
                                 "targetValue": "1",
                                 "engineEndpoint": "https://127.0.0.2:%d/secure" % srv.port},
                                lambda r: "error" in r)
            self.assertIn("certificate verification", r["error"]["message"])
        finally:
            srv.close()

    def test_demand_with_a_gpu_signal(self):
        """Standalone: the node's GPUs (30 % + 50 % = 80) with targetGpu 40
        need 2 replicas; a queue of 12 at 4 per replica needs 3."""
        self.redis.cmd("DEL", "gq")
        md = self.redis_md(metricType="demand", targetGpu="40", activationGpu="90",
                           targetQueuePerReplica="4", redisListName="gq")
        r = self.poll_until(md, self.value_is(200))
        self.assertFalse(r["active"])  # 80 is not above activationGpu 90, nothing queued
        for i in range(12):
            self.redis.cmd("RPUSH", "gq", str(i))
        r = self.poll_until(md, self.value_is(300))
        self.assertTrue(r["active"])
        self.redis.cmd("DEL", "gq")
        # With a GPU signal the GPU selection keys apply; without one they are refused.
        r = self.poll(dict(md, gpuIndex="1"))
        self.assertNotIn("error", r)
        r = self.poll({"metricType": "demand", "targetQueuePerReplica": "4", "gpuIndex": "1",
                       "redisAddress": "127.0.0.1:%d" % self.redis.port, "redisListName": "gq"})
        self.assertEqual(r["error"]["code"], "INVALID_ARGUMENT", r)

    def test_a_name_with_several_addresses_falls_back_to_the_next(self):
        """A dual-stack name whose first address refuses connections: the
        next poll uses the next address. /etc/hosts is bind-mounted inside
        this test's own mount namespace (tests/integration/netns-run)."""
        hosts = os.path.join(self.tmp.name, "hosts")
        with open(hosts, "w") as f:
            f.write("127.0.0.1 localhost\n127.0.0.9 kgs-dual\n::1 kgs-dual\n")
        subprocess.run(["mount", "--bind", hosts, "/etc/hosts"], check=True)
        self.addCleanup(subprocess.run, ["umount", "/etc/hosts"])

        class V6Server(http.server.ThreadingHTTPServer):
            address_family = socket.AF_INET6
        pages = Pages()
        pages.set("/dual", vllm_text(8, 0, 0))
        httpd = V6Server(("::1", 0), make_handler(pages))
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        url = "http://kgs-dual:%d/dual" % httpd.server_address[1]
        r = self.poll_until({"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
                             "engineEndpoint": url, "sourceInterval": "100ms"},
                            self.value_is(8), timeout=10)
        self.assertTrue(r["active"])

    def test_redirect_is_not_followed(self):
        self.engines.pages.set("/moved", "", status=302,
                               headers={"Location": "http://169.254.169.254/latest/meta-data/"})
        r = self.poll_until({"metricType": "engine_queue", "engine": "tgi", "targetValue": "1",
                             "engineEndpoint": self.engines.url("/moved")},
                            lambda r: "error" in r)
        self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
        self.assertIn("redirects are not followed", r["error"]["message"])

    def test_ssrf_guard_refuses_metadata_targets(self):
        for url in ("http://169.254.169.254/latest/meta-data", "http://metadata.google.internal/",
                    "http://[fd00:ec2::254]/", "http://[::ffff:169.254.169.254]/",
                    "http://user:pw@127.0.0.1/metrics"):
            r = self.poll({"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
                           "engineEndpoint": url})
            self.assertEqual(r.get("error", {}).get("code"), "INVALID_ARGUMENT", (url, r))
        r = self.poll({"metricType": "queue_length", "targetValue": "1",
                       "redisAddress": "169.254.169.254:6379", "redisListName": "q"})
        self.assertEqual(r.get("error", {}).get("code"), "INVALID_ARGUMENT", r)

    def test_fake_engines_serve_growing_counters_beside_the_gauges(self):
        """The fakes (fake_engines.py) export each engine's completed-request and
        token counters in its own format, growing as requests complete; the
        scaler reads the gauges beside them unchanged, as text and as OpenMetrics,
        and Triton's success counter as a rate."""
        for engine, om in (("vllm", False), ("vllm", True), ("sglang", False),
                           ("sglang", True), ("tgi", False), ("triton", False)):
            e = FakeEngine(engine, waiting=5, running=2, kv=0.25, openmetrics=om, completed=3)
            path = "/fake/%s%s" % (engine, "-om" if om else "")
            self.engines.pages.set(path, e.text, headers={"Content-Type": e.content_type})
            md = {"metricType": "engine_queue", "engine": engine, "targetValue": "1",
                  "engineEndpoint": self.engines.url(path), "sourceInterval": "100ms"}
            self.poll_until(md, self.value_is(5))
            before = e.counters()
            e.run(50)
            self.assertTrue(wait_for(lambda: e.counters()[0] >= before[0] + 5, 5), engine)
            after = e.counters()
            self.assertEqual(after[1] - before[1], (after[0] - before[0]) * e.prompt_len)
            self.assertEqual(after[2] - before[2], (after[0] - before[0]) * e.gen_len)
            text = e.text()
            for sample in ENGINE_COUNTERS[engine]:
                self.assertIn("\n" + sample, text, engine)
            if engine == "triton":
                self.assertNotIn("token", text)  # Triton has no token counters
            self.poll_until(md, self.value_is(5))
            if engine == "triton":
                rate = {"metricType": "triton_request_rate", "engine": "triton",
                        "targetValue": "10", "windowSeconds": "2", "sourceInterval": "100ms",
                        "engineEndpoint": self.engines.url(path)}
                self.poll_until(rate, lambda r: "error" not in r and
                                abs(r["metricValueFloat"] - 50) < 8, timeout=8)
            e.run(0)

    def test_a_url_answered_by_replicas_taking_turns(self):
        """A Service URL in front of two vLLM replicas: each poll (a new
        connection) may reach either. The counters of one are never
        differenced against the other's, and once a process answers again
        after another the URL is marked as taking turns: its counters teach
        the queueing model no rate (one replica's rate is not the fleet's),
        and `query` says so and what to do instead."""
        replicas = []
        for k in range(2):
            e = FakeEngine("vllm", running=1)
            e.start_time = 1764662400.0 + 42 * k  # prometheus_client's process collector
            e.run(rate=5)
            replicas.append(e)
        turn = [0]

        def page():
            turn[0] += 1
            return replicas[turn[0] % 2].text()

        self.engines.pages.set("/svc", page, headers={"Content-Type": replicas[0].content_type})
        url = self.engines.url("/svc")
        md = {"metricType": "demand", "engine": "vllm", "engineEndpoint": url,
              "sourceInterval": "100ms", "capacityPerReplica": "10"}
        self.poll_until(md, lambda r: "error" not in r)
        q = subprocess.run([SERVER, "query", "--address", self.addr, "--watch", "--count", "3",
                            "--interval", "1s"] +
                           sum((["--metadata", "%s=%s" % kv] for kv in md.items()), []),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(q.returncode, 0, q.stdout + q.stderr)
        engines = [x for x in q.stdout.splitlines() if "engines:" in x]
        model = [x for x in q.stdout.splitlines() if "queueing model:" in x]
        self.assertTrue(engines and model, q.stdout)
        self.assertIn("1 answered by processes taking turns (first: vllm %s)" % url, engines[-1])
        self.assertIn("list each replica's URL", engines[-1])
        self.assertIn("lambda_rps 0 (prior, the processes behind an engine URL take turns",
                      model[-1])
        for e in replicas:
            e.run(0)

    def test_triton_rates_over_the_window_not_between_calls(self):
        t = Triton(rate=40, wait_ms=2.5)
        self.engines.pages.set("/triton", t.text)
        base = {"engineEndpoint": self.engines.url("/triton"), "engine": "triton",
                "windowSeconds": "2", "sourceInterval": "100ms", "targetValue": "10"}
        rate = dict(base, metricType="triton_request_rate")
        wait = dict(base, metricType="triton_queue_wait_ms")
        self.poll_until(rate, lambda r: "error" not in r and abs(r["metricValueFloat"] - 40) < 6,
                        timeout=8)
        # Back-to-back calls (GetMetrics, IsActive, GetMetrics ...) all see the
        # window's rate; the Go system would report 0 between two close calls.
        for _ in range(10):
            r = self.poll(rate)
            self.assertLess(abs(r["metricValueFloat"] - 40), 6, r)
            self.assertTrue(r["active"])
            w = self.poll(wait)
            self.assertLess(abs(w["metricValueFloat"] - 2.5), 0.01, w)
        # A restart resets the counters: no negative rate, the window restarts.
        t.reset()
        for _ in range(10):
            r = self.poll(rate)
            if "error" not in r:
                self.assertGreaterEqual(r["metricValueFloat"], 0, r)
            time.sleep(0.05)
        self.poll_until(rate, lambda r: "error" not in r and abs(r["metricValueFloat"] - 40) < 6,
                        timeout=8)

    # ---- queues ------------------------------------------------------------------------

    def redis_md(self, **kw):
        md = {"redisAddress": "127.0.0.1:%d" % self.redis.port,
              "redisPasswordFromEnv": PASSWORD, "sourceInterval": "100ms"}
        md.update(kw)
        return md

    def test_scale_from_zero_on_a_redis_list_with_push(self):
        """Zero replicas: StreamIsActive says false; items pushed to Redis make
        it push true within one source cadence; the metric follows the queue;
        drained and nothing running, it goes back to false."""
        self.redis.cmd("DEL", "jobs")
        self.engines.pages.set("/fleet", vllm_text(0, 0, 0))
        md = self.redis_md(metricType="demand", redisListName="jobs", targetQueuePerReplica="5",
                           targetRunningPerReplica="8", engine="vllm",
                           vllmEndpoint=self.engines.url("/fleet"))
        r = self.poll_until(md, self.value_is(0))
        self.assertFalse(r["active"])
        self.assertEqual(r["targetSizeFloat"], 100)
        s = Streaming(self.addr, md)
        try:
            s.until(False, 5 * SLOW)
            t0 = time.time()
            for i in range(12):
                self.redis.cmd("LPUSH", "jobs", "job-%d" % i)
            m = s.until(True, 5 * SLOW)
            latency_ms = m["unix_ms"] - t0 * 1000
            self.assertLess(latency_ms, 1000 * SLOW, "push took %.0f ms" % latency_ms)
            r = self.poll_until(md, self.value_is(240))  # 12 / 5 per replica -> 3 replicas
            # The queue drains but requests still run: active.
            self.redis.cmd("DEL", "jobs")
            self.engines.pages.set("/fleet", vllm_text(0, 4, 0.3))
            r = self.poll_until(md, self.value_is(50))  # 4 running / 8 per replica
            self.assertTrue(r["active"])
            # Nothing running: inactive, pushed.
            self.engines.pages.set("/fleet", vllm_text(0, 0, 0))
            s.until(False, 5 * SLOW)
        finally:
            s.close()

    def test_stream_opened_while_the_engine_fails_stays_open(self):
        """KEDA's push path after an outage: a StreamIsActive opened while the
        answer is unknown is not ended with UNAVAILABLE (KEDA would wait its
        2, 4 ... 60 s backoff to retry); it stays open, silent, and pushes as
        soon as the engine answers. The pull path keeps the error."""
        self.engines.pages.set("/outage", "overloaded\n", status=503)
        md = {"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
              "engineEndpoint": self.engines.url("/outage"), "sourceInterval": "100ms"}
        r = self.poll_until(md, lambda r: "error" in r and "HTTP 503" in r["error"]["message"])
        self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
        s = Streaming(self.addr, md)
        try:
            with self.assertRaises(AssertionError):  # nothing, and no end, for 1.5 s
                s.next(1.5)
            self.assertIsNone(s.proc.poll())
            self.engines.pages.set("/outage", vllm_text(2, 0, 0))
            s.until(True, 5 * SLOW)
        finally:
            s.close()

    def test_redis_stream_lag_and_pending(self):
        self.redis.cmd("DEL", "events")
        lag = self.redis_md(metricType="queue_length", targetValue="10", redisStream="events",
                            redisConsumerGroup="workers")
        # No stream yet: nothing was ever queued.
        self.poll_until(lag, self.value_is(0))
        for i in range(5):
            self.redis.cmd("XADD", "events", "*", "n", str(i))
        # The group does not exist yet (no consumer ever ran): all 5 wait for it.
        r = self.poll_until(lag, self.value_is(5))
        self.assertTrue(r["active"])
        self.redis.cmd("XGROUP", "CREATE", "events", "workers", "0")
        self.redis.cmd("XREADGROUP", "GROUP", "workers", "c1", "COUNT", "2", "STREAMS", "events",
                       ">")
        self.poll_until(lag, self.value_is(3))
        pending = dict(lag, redisStreamMeasure="pending")
        self.poll_until(pending, self.value_is(2))
        length = dict(lag, redisStreamMeasure="length")
        self.poll_until(length, self.value_is(5))

    def test_redis_wrong_password_is_unavailable_without_echoing_it(self):
        md = self.redis_md(metricType="queue_length", targetValue="1", redisListName="x",
                           redisPasswordFromEnv="wrong-" + PASSWORD)
        r = self.poll_until(md, lambda r: "error" in r)
        self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
        self.assertIn("AUTH failed", r["error"]["message"])
        self.assertNotIn(PASSWORD, r["error"]["message"])
        # An unreachable Redis: UNAVAILABLE naming it, never 0.
        port = free_port()
        r = self.poll_until({"metricType": "queue_length", "targetValue": "1",
                             "redisAddress": "127.0.0.1:%d" % port, "redisListName": "x"},
                            lambda r: "error" in r)
        self.assertIn("127.0.0.1:%d" % port, r["error"]["message"])

    def test_redis_over_tls(self):
        self.redis.cmd("DEL", "tlsq")
        self.redis.cmd("RPUSH", "tlsq", "a", "b", "c")
        md = {"metricType": "queue_length", "targetValue": "1", "redisListName": "tlsq",
              "redisAddress": "rediss://localhost:%d" % self.redis.tls_port,
              "redisPasswordFromEnv": PASSWORD}
        self.poll_until(md, self.value_is(3))
        # The same with redisTLS and an IP: the certificate's IP SAN is checked.
        md2 = dict(md, redisAddress="127.0.0.1:%d" % self.redis.tls_port, redisTLS="true")
        self.poll_until(md2, self.value_is(3))
        # Plain TCP to the TLS port fails, and says so rather than reading 0.
        r = self.poll_until(dict(md, redisAddress="127.0.0.1:%d" % self.redis.tls_port),
                            lambda r: "error" in r)
        self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
        # A scaler that does not trust the CA refuses the server.
        p, port, probe, log = start_scaler(self.tmp.name, ["--nvml-library", SIM],
                                           {"NVML_SIM_SCENARIO": self.sim.path})
        try:
            wait_for(lambda: http_ok(probe, "/readyz"), 15 * SLOW)
            r = self.poll_until(md, lambda r: "error" in r, addr="127.0.0.1:%d" % port)
            self.assertIn("certificate verification", r["error"]["message"])
        finally:
            code = stop(p)
            log.close()
        if WRAPPER:
            self.assertEqual(code, 0, "the second scaler exited %s under %s" % (code, WRAPPER[0]))

    def test_source_counters_on_metrics(self):
        self.engines.pages.set("/counted", vllm_text(1, 0, 0))
        self.poll_until({"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
                         "engineEndpoint": self.engines.url("/counted")}, self.value_is(1))

        def scrape():
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.metrics_port,
                                        timeout=2) as r:
                text = r.read().decode()
            return {l.split()[0]: float(l.split()[1]) for l in text.splitlines()
                    if l.startswith("keda_gpu_scaler_source")}
        m = scrape()
        self.assertGreaterEqual(m["keda_gpu_scaler_sources"], 1, m)
        polls = m["keda_gpu_scaler_source_polls_total"]
        self.assertGreater(m["keda_gpu_scaler_source_response_bytes_total"], 0, m)
        self.assertTrue(wait_for(lambda: scrape()["keda_gpu_scaler_source_polls_total"] > polls,
                                 5 * SLOW))

    # ---- no secret and no byte of a reply in any error or log (issue 16) -------------

    def log_text(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def scrape_metrics(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.metrics_port,
                                    timeout=2) as r:
            return r.read().decode(errors="replace")

    def test_credentials_in_urls_are_masked_in_errors_logs_and_explain(self):
        secret = "pw-Url-Secret-7"
        dead = free_port()
        cases = [  # metadata, the code, what the message shows instead
            ({"metricType": "queue_length", "targetValue": "1", "redisListName": "q",
              "redisAddress": "redis://u:%s@127.0.0.1:%d" % (secret, self.redis.port)},
             "INVALID_ARGUMENT", "redis://u:***@127.0.0.1"),
            ({"metricType": "queue_length", "targetValue": "1", "redisListName": "q",
              "redisAddress": "u:%s@127.0.0.1:%d" % (secret, self.redis.port)},
             "INVALID_ARGUMENT", "u:***@127.0.0.1"),
            ({"metricType": "queue_length", "targetValue": "1", "demandMetric": "q",
              "demandEndpoint": "http://u:%s@127.0.0.1:%d/metrics" % (secret, dead)},
             "INVALID_ARGUMENT", "http://u:***@127.0.0.1"),
            ({"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
              "engineEndpoint": "http://127.0.0.1:%d/m,http://u:%s@127.0.0.1:%d/m" % (
                  dead, secret, dead)},
             "INVALID_ARGUMENT", "http://u:***@127.0.0.1"),
            # accepted (a token in the query is the server's business), then
            # failing to connect: the source's name in the error and the WARN
            ({"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
              "engineEndpoint": "http://127.0.0.1:%d/metrics?access_token=%s" % (dead, secret)},
             "UNAVAILABLE", "?access_token=***"),
            ({"metricType": "queue_length", "targetValue": "1", "demandMetric": "q",
              "demandEndpoint": "http://127.0.0.1:%d/q?pod=1&token=%s" % (dead, secret)},
             "UNAVAILABLE", "?pod=1&token=***"),
        ]
        for md, code, shown in cases:
            r = self.poll_until(md, lambda r: "error" in r)
            self.assertEqual(r["error"]["code"], code, (md, r))
            self.assertNotIn(secret, r["error"]["message"], md)
            self.assertIn(shown, r["error"]["message"], md)
        # Explain (keda-gpu-scaler query) of a queueing-model trigger
        md = {"metricType": "demand", "engine": "vllm", "capacityPerReplica": "10",
              "engineEndpoint": "http://127.0.0.1:%d/metrics?api_key=%s" % (dead, secret)}
        self.poll_until(md, lambda r: "error" in r)
        q = subprocess.run([SERVER, "query", "--address", self.addr] +
                           sum((["--metadata", "%s=%s" % kv] for kv in md.items()), []),
                           capture_output=True, text=True, timeout=30)
        self.assertNotIn(secret, q.stdout + q.stderr)
        self.assertIn("api_key=***", q.stdout + q.stderr)
        self.assertNotIn(secret, self.scrape_metrics())
        time.sleep(0.2 * SLOW)  # the sources' WARN lines
        log = self.log_text()
        self.assertNotIn(secret, log)
        self.assertIn("access_token=***", log)  # the WARN is there, masked

    def test_response_bodies_and_replies_are_never_echoed(self):
        token = "tok-Body-Secret-4242"
        # what an internal page the scaler can reach might hold (issue 16: the
        # first 48 bytes came back in the gRPC error and the WARN line)
        self.engines.pages.set("/internal", "<html>token=%s</html>\n" % token,
                               headers={"Content-Type": "text/html"})
        self.engines.pages.set("/half", "vllm:num_requests_waiting %s\n" % token)
        servers = [RawServer(b"HTTP/1.1 503 %s\r\nContent-Length: 0\r\n\r\n" % token.encode()),
                   RawServer(b"220 %s ESMTP ready\r\n" % token.encode()),
                   RawServer(b"$%d\r\n%s\r\n" % (len(token), token.encode())),
                   RawServer(b"-ERR %s\r\n:1\r\n" % token.encode()),
                   RawServer(b"+%s\r\n" % token.encode())]
        for srv in servers:
            self.addCleanup(srv.close)
        http, smtp, bulk, err, simple = servers
        engine = {"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
                  "sourceInterval": "100ms"}
        prom = {"metricType": "queue_length", "targetValue": "1", "demandMetric": "q",
                "sourceInterval": "100ms"}
        redis = {"metricType": "queue_length", "targetValue": "1", "redisListName": "q",
                 "sourceInterval": "100ms"}
        self.redis.cmd("SET", "not-a-list", token)
        cases = [  # metadata, what the message says instead
            (dict(engine, engineEndpoint=self.engines.url("/internal")),
             "no metric name at column 1"),
            (dict(prom, demandEndpoint=self.engines.url("/internal")),
             "no metric name at column 1"),
            (dict(engine, engineEndpoint=self.engines.url("/half")),
             "invalid value at column 27"),
            (dict(engine, engineEndpoint="http://127.0.0.1:%d/m" % http.port), "HTTP 503"),
            (dict(engine, engineEndpoint="http://127.0.0.1:%d/m" % smtp.port),
             "not an HTTP response"),
            (dict(redis, redisAddress="127.0.0.1:%d" % smtp.port), "not a RESP2 type byte"),
            (dict(redis, redisAddress="127.0.0.1:%d" % bulk.port),
             "a bulk string, not an integer"),
            (dict(redis, redisAddress="127.0.0.1:%d" % simple.port),
             "a simple string, not an integer"),
            (dict(redis, redisAddress="127.0.0.1:%d" % err.port, redisPasswordFromEnv="x"),
             "AUTH failed: Redis answered ERR (the server's text is not shown)"),
            # a real redis-server: a string where a list should be
            (self.redis_md(redisListName="not-a-list", metricType="queue_length",
                           targetValue="1"), "Redis answered WRONGTYPE"),
        ]
        for md, says in cases:
            r = self.poll_until(md, lambda r: "error" in r)
            self.assertEqual(r["error"]["code"], "UNAVAILABLE", (md, r))
            self.assertNotIn(token, r["error"]["message"], md)
            self.assertNotIn("tok-", r["error"]["message"], md)
            self.assertIn(says, r["error"]["message"], (md, r))
        time.sleep(0.2 * SLOW)
        self.assertNotIn("tok-", self.log_text())

    def test_a_negative_queue_length_is_an_error(self):
        neg = RawServer(b":-5\r\n")
        self.addCleanup(neg.close)
        r = self.poll_until({"metricType": "queue_length", "targetValue": "1",
                             "redisListName": "q", "redisAddress": "127.0.0.1:%d" % neg.port},
                            lambda r: "error" in r)
        self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
        self.assertIn("Redis answered -5, not a length", r["error"]["message"])
        # two samples of 1e308 sum to +Inf: an error naming the source, not INT64_MAX
        self.engines.pages.set("/huge", "q 1e308\nq{a=\"1\"} 1e308\n")
        r = self.poll_until({"metricType": "queue_length", "targetValue": "1",
                             "demandMetric": "q", "demandEndpoint": self.engines.url("/huge")},
                            lambda r: "error" in r or r["metricValueFloat"] > 1e9)
        self.assertIn("error", r)
        self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
        self.assertIn("/huge", r["error"]["message"])

    def test_generic_prometheus_queue(self):
        self.engines.pages.set("/gateway", (
            "# TYPE gateway_queue_depth gauge\n"
            'gateway_queue_depth{pool="gpu",model="llama-3.1-8b"} 7\n'
            'gateway_queue_depth{pool="gpu",model="mistral"} 2\n'
            'gateway_queue_depth{pool="cpu",model="llama-3.1-8b"} 100\n'))
        md = {"metricType": "queue_length", "targetValue": "3",
              "demandEndpoint": self.engines.url("/gateway"), "demandMetric": "gateway_queue_depth",
              "demandLabels": 'pool="gpu"'}
        self.poll_until(md, self.value_is(9))
        md["demandLabels"] = 'pool="gpu",model!="mistral"'
        self.poll_until(md, self.value_is(7))
        md["demandMetric"] = "gateway_missing"
        r = self.poll_until(md, lambda r: "error" in r)
        self.assertIn("no sample of gateway_missing", r["error"]["message"])


def doc_trigger_examples():
    """The metadata maps of the external / external-push triggers in the
    YAML examples of docs/configuration.md, server.md and quickstart.md."""
    found = []
    for name in ("configuration.md", "server.md", "quickstart.md"):
        with open(os.path.join(SOURCE_DIR, "docs", name)) as f:
            text = f.read()
        for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
            lines = block.splitlines()
            for i, line in enumerate(lines):
                if re.match(r"\s*-?\s*type: external", line) is None:
                    continue
                md, indent = {}, None
                for follow in lines[i + 1:]:
                    if follow.strip() == "metadata:" or follow.strip().startswith("metadata:"):
                        indent = -1
                        continue
                    if indent is None:
                        continue
                    m = re.match(r"(\s*)([A-Za-z][A-Za-z0-9]*):\s*(.*?)\s*(#.*)?$", follow)
                    if not m:
                        break
                    if indent == -1:
                        indent = len(m.group(1))
                    if len(m.group(1)) != indent:
                        break
                    md[m.group(2)] = m.group(3).strip('"')
                if md:
                    md.pop("scalerAddress", None)
                    found.append(md)
    assert len(found) >= 2, found
    return found


class DemandAggregator(unittest.TestCase):
    """podSelector: the aggregator scrapes every Ready pod the selector picks,
    at the pod's IP (127.0.0.x here) and enginePort."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.api = FakeKubeAPI(token="t")
        self.api.start()
        self.token = os.path.join(self.tmp.name, "token")
        with open(self.token, "w") as f:
            f.write("t")
        self.servers, self.proc = [], None

    def start_aggregator(self):
        """Starts an aggregator on the fake API; returns its gRPC address. The
        triggers here come from ScaledObjects of namespace default and select
        pods of ml (namespace: ml): an operator's grant, --allow-cross-namespace.
        The docs' examples name the profile epp (the EPP's metrics port: plain
        HTTP behind Kubernetes authentication, podSelector pods) and vault (an
        https URL of vllm.llm.svc; a token stands in for its certificate)."""
        self.proc, gport, _, self.log = start_scaler(
            self.tmp.name, ["--role", "aggregator", "--agents", "127.0.0.1:%d" % free_port(),
                            "--kube-api", self.api.url, "--kube-token-file", self.token,
                            "--allow-cross-namespace", "default:ml", "--source-auth",
                            "epp:token-file=%s,namespaces=ml,pods=own-namespace,http=allow;"
                            "vault:token-file=%s,namespaces=ml,hosts=vllm.llm.svc" %
                            (self.token, self.token)])
        return "127.0.0.1:%d" % gport

    def tearDown(self):
        code = None
        if self.proc:
            code = stop(self.proc)
            self.log.seek(0)
            text = self.log.read()
            self.log.close()
        for srv in self.servers:
            srv.close()
        self.api.stop()
        self.tmp.cleanup()
        if WRAPPER and code:
            self.fail("aggregator exited %s:\n%s" % (code, text[-4000:]))

    def test_engine_pods_from_the_pod_list(self):
        api = self.api
        port = free_port("127.0.0.21")
        for i, ip in enumerate(("127.0.0.21", "127.0.0.22")):
            srv = EngineServer(ip, port)
            srv.pages.set("/metrics", vllm_text(3 + i, 1, 0.5))
            self.servers.append(srv)
        api.add_pod("ml", "vllm-0", labels={"app": "vllm"}, phase="Running",
                    pod_ip="127.0.0.21", node="n1")
        api.add_pod("ml", "vllm-1", labels={"app": "vllm"}, phase="Running",
                    pod_ip="127.0.0.22", node="n1")
        # Still loading its model: Running, not Ready, nothing listening.
        loading = api.add_pod("ml", "vllm-2", labels={"app": "vllm"}, phase="Running",
                              pod_ip="127.0.0.23", node="n1", ready=False)
        api.add_pod("ml", "other", labels={"app": "other"}, phase="Running",
                    pod_ip="127.0.0.24", node="n1")
        addr = self.start_aggregator()
        d = Demand()
        md = {"metricType": "engine_queue", "engine": "vllm", "targetValue": "2",
              "podSelector": "app=vllm", "namespace": "ml", "enginePort": str(port),
              "sourceInterval": "100ms"}
        r = d.poll_until(md, lambda r: "error" not in r, timeout=10, addr=addr)
        self.assertEqual(r["metricValueFloat"], 7, r)  # 3 + 4; the loading pod skipped
        # The pod becomes Ready but its server does not answer: UNAVAILABLE ...
        api.modify_pod(loading, ready=True)
        r = d.poll_until(md, lambda r: "error" in r, timeout=10, addr=addr)
        self.assertIn("ml/vllm-2", r["error"]["message"])
        # ... unless partialData: ignore.
        r = d.poll_until(dict(md, partialData="ignore"), lambda r: "error" not in r,
                         timeout=10, addr=addr)
        self.assertEqual(r["metricValueFloat"], 7, r)
        # Every trigger example in the docs is accepted as written.
        for md_doc in doc_trigger_examples():
            p2 = subprocess.run([CLIENT, "spec", "-addr", addr, "-namespace", "ml",
                                 "-max-time", "20s"] +
                                sum((["-metadata", "%s=%s" % kv]
                                     for kv in md_doc.items()), []),
                                capture_output=True, text=True, timeout=30)
            out = json.loads(p2.stdout.splitlines()[0])
            self.assertNotIn("error", out, (md_doc, out))
        # Zero pods selected: nothing waits in any engine, a known 0.
        r = d.poll_until(dict(md, podSelector="app=none"), lambda r: "error" not in r,
                         timeout=10, addr=addr)
        self.assertEqual(r["metricValueFloat"], 0, r)
        self.assertFalse(r["active"])
    def test_queueing_model_from_counters_and_the_pod_list(self):
        """metricType demand with no per-signal target: the queueing model,
        fed the engines' counters and the pod list (Ready and starting pods,
        aged from creationTimestamp); `query` prints its inputs."""
        api = self.api
        port = free_port("127.0.0.31")
        engines = []
        for i, ip in enumerate(("127.0.0.31", "127.0.0.32")):
            e = FakeEngine("vllm", running=2)
            e.run(rate=10)  # 10 requests/s each, 20 in all, nothing waiting
            srv = EngineServer(ip, port)
            srv.pages.set("/metrics", e.text, headers={"Content-Type": e.content_type})
            self.servers.append(srv)
            engines.append(e)
            api.add_pod("ml", "llama-%d" % i, labels={"app": "llama"}, phase="Running",
                        pod_ip=ip, node="n1")
        # one more on its way: created 30 s ago, no IP, not Ready
        api.add_pod("ml", "llama-2", labels={"app": "llama"}, phase="Pending",
                    created=time.time() - 30)
        addr = self.start_aggregator()
        d = Demand()
        md = {"metricType": "demand", "engine": "vllm", "podSelector": "app=llama",
              "namespace": "ml", "enginePort": str(port), "capacityPerReplica": "10"}
        # lambda 20/s once the 30 s window fills (less before: history that is
        # not there counts as none), capacity 10 configured, T the 120 s prior:
        # (20 + sqrt(2)) / 10 = 2.14 replicas for the load, nothing waits, the
        # starting pod finds no work the Ready ones cannot carry -> 2.14,
        # held at the 3 it rounds to; before the window fills, the 2 Ready
        r = d.poll_until(md, lambda r: "error" not in r and 200 <= r["metricValueFloat"] <= 300,
                         timeout=20, addr=addr)
        self.assertTrue(r["active"], r)  # requests run
        # A new ScaledObject (its own subscription): the model learns the rate
        # within a few rounds.
        q = subprocess.run([SERVER, "query", "--address", addr, "--namespace", "ml",
                            "--name", "llama", "--watch", "--count", "6",
                            "--interval", "1s"] +
                           sum((["--metadata", "%s=%s" % kv] for kv in md.items()), []),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(q.returncode, 0, q.stdout + q.stderr)
        lines = [x for x in q.stdout.splitlines() if "queueing model:" in x]
        self.assertEqual(len(lines), 6, q.stdout)
        self.assertIn("lambda_rps 0 (prior)", lines[0])  # one reading: no rate yet
        self.assertRegex(lines[-1], r"lambda_rps [0-9.e+]+ \(learned\)")
        for want in ("capacity_rps 10 (configured)",
                     "tokens_per_request 325 (learned)",  # 200 generated + 500 prompt / 4
                     "cold_start_s 120 (prior)", "ready 2", "starting 1", "deficit "):
            self.assertIn(want, lines[-1])
        # composite: no model to show, and no error either
        q = subprocess.run([SERVER, "query", "--address", addr, "--namespace", "ml",
                            "--metadata", "metricType=demand", "--metadata", "engine=vllm",
                            "--metadata", "podSelector=app=llama", "--metadata",
                            "enginePort=%d" % port, "--metadata", "targetRunningPerReplica=4"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(q.returncode, 0, q.stdout + q.stderr)
        self.assertNotIn("queueing model:", q.stdout)

    def test_queueing_model_plans_the_cold_start_by_stage(self):
        """The cold start by stage (issue 33) through the aggregator: a pod
        seen loading its weights, then Ready with a start that waited 61 s
        for a node, pulled 38 s and loaded 29 s (the pod status as the
        scheduler and the kubelet write it), teaches the model that the next
        pod pays all three: `query` says cold_start_s 128, learned by stage."""
        from test_cold_start import ready as status_ready, scheduled as status_scheduled
        api = self.api
        port = free_port("127.0.0.41")
        for ip in ("127.0.0.41", "127.0.0.42"):
            e = FakeEngine("vllm", running=2)
            e.run(rate=10)
            srv = EngineServer(ip, port)
            srv.pages.set("/metrics", e.text, headers={"Content-Type": e.content_type})
            self.servers.append(srv)
        api.add_pod("ml", "stage-0", labels={"app": "stage"}, phase="Running",
                    pod_ip="127.0.0.41", node="n1")
        late = api.add_pod("ml", "stage-1", labels={"app": "stage"}, phase="Pending")
        api.set_pod_status(late, status_scheduled(61, running_at=99), node="n2")
        addr = self.start_aggregator()
        md = {"metricType": "demand", "engine": "vllm", "podSelector": "app=stage",
              "namespace": "ml", "enginePort": str(port), "capacityPerReplica": "10"}

        def model_line():
            q = subprocess.run([SERVER, "query", "--address", addr, "--namespace", "ml",
                                "--name", "stage"] +
                               sum((["--metadata", "%s=%s" % kv] for kv in md.items()), []),
                               capture_output=True, text=True, timeout=30)
            lines = [x for x in q.stdout.splitlines() if "queueing model:" in x]
            return lines[-1] if lines else q.stdout + q.stderr

        self.assertIsNotNone(wait_for(lambda: "starting 1" in model_line(), 15 * SLOW, 0.5))
        self.assertIn("cold_start_s 120 (prior)", model_line())
        st = status_ready(61, 99, 128)
        st["podIP"] = "127.0.0.42"
        api.set_pod_status(late, st, node="n2")
        want = "cold_start_s 128 (learned by stage, node + image + weights"
        line = wait_for(lambda: (lambda x: x if want in x else None)(model_line()), 15 * SLOW, 0.5)
        self.assertIsNotNone(line, model_line())
        self.assertIn("ready 2", line)

if __name__ == "__main__":
    if os.environ.get("KGS_IN_NETNS") != "1":
        raise SystemExit("run through tests/integration/netns-run (its own network namespace)")
    unittest.main(verbosity=2)
