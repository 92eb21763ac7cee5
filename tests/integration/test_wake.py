#!/usr/bin/env python3
"""A queue always speaks at zero (issue 27): a demand trigger whose engine URL
has nobody behind it — refused, a connect that times out, a proxy's 503, a
server that never answers — still wakes the workload from zero on its queue,
within one sourceInterval of the first queued item, through KEDA's own
client code (grpc-go: GetMetrics, IsActive and the external-push stream);
once the engine answers, the fleet is sized from it. An engine that held
work and stops answering keeps the value unknown (UNAVAILABLE) while the
queue still says active. Both roles: standalone, and an aggregator over the
fake Kubernetes API (a podSelector at zero pods, and an explicit URL).

A real redis-server and real HTTP servers on loopback, in a network
namespace of its own (tests/integration/netns-run).

Environment (CTest): KEDA_GPU_SCALER, NVML_SIM_LIBRARY, KGS_GO_CLIENT,
KGS_SOURCE_DIR.
"""
import os
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
from kgs_util import free_port, http_ok, wait_for
import test_demand as td
from test_demand import (CLIENT, PASSWORD, SIM, SLOW, WRAPPER, EngineServer, Redis, Streaming,
                         start_scaler, stop)

INTERVAL_S = 0.2  # sourceInterval of every trigger here


class NoAccept:
    """A listener whose accept queue is full: the kernel drops every new SYN,
    so a connect times out, as it does to a Service without endpoints under
    IPVS, or to a pod address that is gone."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(0)
        self.port = self.sock.getsockname()[1]
        self.held = []
        for _ in range(3):
            c = socket.socket()
            c.setblocking(False)
            try:
                c.connect(("127.0.0.1", self.port))
            except BlockingIOError:
                pass
            self.held.append(c)

    def close(self):
        for c in self.held:
            c.close()
        self.sock.close()


class Silent:
    """Takes every connection and never answers: a server that is there but
    does not respond within sourceTimeout."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        for c in self.conns:
            c.close()


def dead_port():
    """A loopback port nothing listens on: connect is refused."""
    return free_port()


class WakeCase(unittest.TestCase):
    """Polls and streams with kedaclient (grpc-go) against one scaler."""

    addr = None

    def poll(self, md, ns="default", sub="poll"):
        return td.Demand.poll(self, md, self.addr) if sub == "poll" else self.call(sub, md, ns)

    def call(self, sub, md, ns="default"):
        import json
        p = subprocess.run([CLIENT, sub, "-addr", self.addr, "-namespace", ns, "-max-time", "20s"] +
                           sum((["-metadata", "%s=%s" % kv] for kv in md.items()), []),
                           capture_output=True, text=True, timeout=30)
        return json.loads(p.stdout.splitlines()[0])

    def poll_until(self, md, pred, timeout=8.0):
        return td.Demand.poll_until(self, md, pred, timeout, self.addr)

    def wake(self, md, push):
        """The trigger reads an empty queue as inactive (an answer, not an
        error), then `push()` queues work and the external-push stream says
        true within one sourceInterval; GetMetrics then orders replicas.
        Returns the push latency in ms."""
        r = self.poll_until(md, lambda r: "error" not in r, timeout=8)
        self.assertFalse(r["active"], r)
        self.assertEqual(r["metricValueFloat"], 0, r)
        s = Streaming(self.addr, md)
        try:
            s.until(False, 5 * SLOW)
            t0 = time.time()
            push()
            m = s.until(True, 5 * SLOW)
            latency_ms = m["unix_ms"] - t0 * 1000
        finally:
            s.close()
        r = self.poll_until(md, lambda r: "error" not in r and r["active"], timeout=5)
        self.assertGreaterEqual(r["metricValueFloat"], 100, r)  # at least one replica
        self.assertTrue(r["active"], r)
        return latency_ms


class WakeStandalone(WakeCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.redis = Redis(cls.tmp.name)
        cls.sim = Sim({"devices": [device(0, gpu_util=0)]})
        cls.metrics_port = free_port()
        cls.proc, cls.port, cls.probe, cls.log = start_scaler(
            cls.tmp.name, ["--nvml-library", SIM], {"NVML_SIM_SCENARIO": cls.sim.path},
            metrics_port=cls.metrics_port)
        if not wait_for(lambda: http_ok(cls.probe, "/readyz"), 15 * SLOW):
            cls.log.seek(0)
            raise AssertionError("scaler not ready:\n" + cls.log.read()[-3000:])
        cls.addr = "127.0.0.1:%d" % cls.port
        cls.latencies = []

    @classmethod
    def tearDownClass(cls):
        code = stop(cls.proc)
        cls.log.seek(0)
        text = cls.log.read()
        cls.log.close()
        cls.redis.close()
        cls.sim.close()
        cls.tmp.cleanup()
        if cls.latencies:
            print("\nwake latency (queue item -> StreamIsActive true), sourceInterval %d ms: %s ms"
                  % (INTERVAL_S * 1000, ", ".join("%.0f" % x for x in sorted(cls.latencies))))
        if WRAPPER and code != 0:
            raise AssertionError("scaler exited %s under %s:\n%s" % (code, WRAPPER[0],
                                                                     text[-4000:]))

    def md(self, url, key, **kw):
        m = {"metricType": "demand", "engine": "vllm", "vllmEndpoint": url,
             "redisAddress": "127.0.0.1:%d" % self.redis.port, "redisPasswordFromEnv": PASSWORD,
             "redisListName": key, "sourceInterval": "%dms" % (INTERVAL_S * 1000),
             "sourceTimeout": "500ms"}
        m.update(kw)
        return m

    def push(self, key, n=5):
        return lambda: [self.redis.cmd("LPUSH", key, "req-%d" % i) for i in range(n)]

    def check_wake(self, url, key, **kw):
        self.redis.cmd("DEL", key)
        md = self.md(url, key, **kw)
        ms = self.wake(md, self.push(key))
        self.latencies.append(ms)
        # within one sourceInterval, plus the push's own path (a few ms; more
        # under valgrind)
        self.assertLess(ms, (INTERVAL_S * 1000 + 150) * SLOW, "push took %.0f ms" % ms)
        return md

    def test_refused(self):
        """Nothing listens on the engine's port (kube-proxy rejects a Service
        without endpoints); then the replica comes up and is read."""
        port = dead_port()
        url = "http://127.0.0.1:%d/metrics" % port
        md = self.check_wake(url, "refused")
        # The first replica is Ready: its engine answers and is read (2 waiting
        # there + 5 in the queue); the model sizes from it, not from a default.
        srv = EngineServer("127.0.0.1", port)
        try:
            e = FakeEngine("vllm", waiting=2, running=4)
            e.run(rate=2)
            srv.pages.set("/metrics", e.text, headers={"Content-Type": e.content_type})
            r = self.poll_until(md, lambda r: "error" not in r and r["active"], timeout=8)
            self.assertGreaterEqual(r["metricValueFloat"], 100, r)
            # sized from what the engine shows: 7 requests, nothing learned
            # but that the first replica answered: 1 replica, 2 at most
            # (the queueing model once asked for 28 here: issue 29)
            time.sleep(1.5)
            r = self.poll_until(md, lambda r: "error" not in r and r["active"], timeout=8)
            self.assertLessEqual(r["metricValueFloat"], 200, r)
        finally:
            srv.close()

    def test_connect_times_out(self):
        srv = NoAccept()
        try:
            self.check_wake("http://127.0.0.1:%d/metrics" % srv.port, "dropped")
        finally:
            srv.close()

    def test_proxy_answers_503(self):
        srv = EngineServer()
        try:
            srv.pages.set("/metrics", "no healthy upstream\n", status=503)
            self.check_wake(srv.url("/metrics"), "gateway")
        finally:
            srv.close()

    def test_server_that_never_answered_times_out(self):
        srv = Silent()
        try:
            self.check_wake("http://127.0.0.1:%d/metrics" % srv.port, "silent")
        finally:
            srv.close()

    def test_engine_that_held_work_and_stopped_answering(self):
        """Busy, then too slow to answer: what it holds is not known, so
        GetMetrics is UNAVAILABLE naming it — but work in the queue still says
        active, and with an empty queue IsActive is an error too (never a
        made-up false)."""
        key = "busy"
        self.redis.cmd("DEL", key)
        srv = EngineServer()
        try:
            busy = FakeEngine("vllm", running=6).text()
            srv.pages.set("/metrics", busy)
            md = self.md(srv.url("/metrics"), key)
            self.poll_until(md, lambda r: "error" not in r and r["active"])
            srv.pages.set("/metrics", lambda: time.sleep(1.5) or busy)  # answers too late
            r = self.poll_until(md, lambda r: "error" in r, timeout=6)
            self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
            self.assertIn("timed out", r["error"]["message"])
            a = self.call("isactive", md)
            self.assertIn("error", a)  # busy before, nothing queued: not known
            self.redis.cmd("LPUSH", key, "a", "b", "c")
            a = None
            end = time.monotonic() + 5 * SLOW
            while time.monotonic() < end:
                a = self.call("isactive", md)
                if a.get("result") is True:
                    break
                time.sleep(0.1)
            self.assertEqual(a.get("result"), True, a)
            r = self.poll(md)
            self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)  # the value stays unknown
        finally:
            srv.close()

    def query(self, md, *extra):
        q = subprocess.run([os.environ["KEDA_GPU_SCALER"], "query", "--address", self.addr,
                            "--name", "llama", "--namespace", "default"] + list(extra) +
                           sum((["--metadata", "%s=%s" % kv] for kv in md.items()), []),
                           capture_output=True, text=True, timeout=30)
        return q.stdout + q.stderr

    def test_the_decision_is_visible(self):
        """Two signals with targets: query and /metrics (promtool-valid) name
        each signal's value, what it asks for, and the one that decided."""
        srv = EngineServer()
        try:
            # 12 waiting: 12 / 5 = 2.4 replicas; KV 90 %: 90 / 30 = 3 replicas
            srv.pages.set("/metrics", FakeEngine("vllm", waiting=12, running=4, kv=0.9).text())
            md = {"metricType": "demand", "engine": "vllm", "vllmEndpoint": srv.url("/metrics"),
                  "targetQueuePerReplica": "5", "targetKvCache": "30", "metricName": "llama",
                  "sourceInterval": "200ms"}
            self.poll_until(md, lambda r: "error" not in r and r["metricValueFloat"] == 300)
            out = self.query(md)
            self.assertIn("signals: queue 12 (needs 2.4)", out)
            self.assertIn("kv_cache 90% (needs 3)", out)
            self.assertIn("decided by kv_cache: 3 replicas", out)
            self.assertIn("engines: 1 of 1 answering", out)
            body = urllib.request.urlopen(
                "http://127.0.0.1:%d/metrics" % self.metrics_port, timeout=5).read().decode()
            lab = 'scaledobject_namespace="default",scaledobject="llama",metric="llama"'
            self.assertIn('keda_gpu_scaler_trigger_decided_by{%s,signal="kv_cache"} 1' % lab, body)
            self.assertIn('keda_gpu_scaler_trigger_signal{%s,signal="queue"} 12' % lab, body)
            self.assertIn('keda_gpu_scaler_trigger_signal_replicas{%s,signal="queue"} 2.4' % lab,
                          body)
            self.assertIn('keda_gpu_scaler_trigger_value{%s} 300' % lab, body)
            p = subprocess.run(["promtool", "check", "metrics"], input=body,
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        finally:
            srv.close()

    def test_long_messages_arrive_whole(self):
        """An error far over 480 bytes reaches KEDA's client whole, and
        query prints it whole."""
        srv = EngineServer()
        try:
            path = "/" + "/".join(["tenant-%02d-model-shard" % i for i in range(20)]) + "/metrics"
            md = {"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
                  "vllmEndpoint": srv.url(path), "sourceInterval": "200ms"}
            r = self.poll_until(md, lambda r: "error" in r)
            msg = r["error"]["message"]
            self.assertGreater(len(msg), 480, msg)
            self.assertIn(path + ": HTTP 404 (want 200)", msg)
            self.assertIn(path + ": HTTP 404 (want 200)", self.query(md))
        finally:
            srv.close()

    def test_without_a_queue_the_failure_stays_one(self):
        """Nothing else speaks: the refused engine is UNAVAILABLE, as before."""
        md = {"metricType": "demand", "engine": "vllm", "sourceInterval": "200ms",
              "vllmEndpoint": "http://127.0.0.1:%d/metrics" % dead_port(),
              "targetQueuePerReplica": "5"}
        r = self.poll_until(md, lambda r: "error" in r)
        self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
        self.assertIn("Connection refused", r["error"]["message"])


class WakeAggregator(WakeCase):
    """The aggregator: a podSelector with no pod at all is a known 0 (the
    queue wakes it); an explicit engine URL follows the standalone rule."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.api = FakeKubeAPI(token="t")
        self.api.start()
        token = os.path.join(self.tmp.name, "token")
        with open(token, "w") as f:
            f.write("t")
        self.redis = Redis(self.tmp.name)
        self.proc, gport, _, self.log = start_scaler(
            self.tmp.name, ["--role", "aggregator", "--agents", "127.0.0.1:%d" % free_port(),
                            "--kube-api", self.api.url, "--kube-token-file", token])
        self.addr = "127.0.0.1:%d" % gport

    def tearDown(self):
        code = stop(self.proc)
        self.log.seek(0)
        text = self.log.read()
        self.log.close()
        self.redis.close()
        self.api.stop()
        self.tmp.cleanup()
        if WRAPPER and code:
            self.fail("aggregator exited %s:\n%s" % (code, text[-4000:]))

    def base(self, key):
        self.redis.cmd("DEL", key)
        return {"metricType": "demand", "engine": "vllm",
                "redisAddress": "127.0.0.1:%d" % self.redis.port,
                "redisPasswordFromEnv": PASSWORD, "redisListName": key,
                "sourceInterval": "%dms" % (INTERVAL_S * 1000), "sourceTimeout": "500ms"}

    def test_pod_selector_at_zero_pods(self):
        md = dict(self.base("sel"), podSelector="app=llama", namespace="default")
        ms = self.wake(md, lambda: self.redis.cmd("LPUSH", "sel", "a", "b"))
        self.assertLess(ms, (INTERVAL_S * 1000 + 150) * SLOW, "push took %.0f ms" % ms)

    def test_explicit_url_refused(self):
        md = dict(self.base("url"), vllmEndpoint="http://127.0.0.1:%d/metrics" % dead_port())
        ms = self.wake(md, lambda: self.redis.cmd("LPUSH", "url", "a", "b"))
        self.assertLess(ms, (INTERVAL_S * 1000 + 150) * SLOW, "push took %.0f ms" % ms)


if __name__ == "__main__":
    if os.environ.get("KGS_IN_NETNS") != "1":
        raise SystemExit("run through tests/integration/netns-run (its own network namespace)")
    unittest.main(verbosity=2)
