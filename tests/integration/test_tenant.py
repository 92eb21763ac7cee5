#!/usr/bin/env python3
"""Who may claim what, through a real aggregator on a fake Kubernetes API
(issue 28, docs/operations.md "Multi-tenant model"):

- a trigger's `namespace:` other than its ScaledObject's is refused unless
  --allow-cross-namespace lists the pair; the refusal is the same whatever
  the selector (the label oracle: team=finance with 2 pods, team=hr with
  none), names none of the other namespace's pods, and reaches none of
  them; GetMetricSpec, GetMetrics, IsActive and `query` (Explain) alike;
- a --source-auth profile with pods=own-namespace sends its token to a
  podSelector pod only while that pod, of the ScaledObject's namespace,
  still holds the address: when the address moves to another namespace's
  pod, polls stop carrying the token at once.

Runs inside its own network namespace (tests/integration/netns-run); the
engines listen on 127.0.0.x; every wait is bounded."""
import http.server
import json
import os
import subprocess
import tempfile
import threading
import time
import unittest

from fake_kube_api import FakeKubeAPI
from kgs_util import free_port, http_ok, wait_for
from test_demand import CLIENT, SERVER, SLOW, WRAPPER, start_scaler, stop, vllm_text

TOKEN = "kgs-tenant-token.eyJzdWIiOiJ0In0.sig"


class Engine:
    """A vLLM /metrics on host:port that records every request's
    Authorization header (None when there was none)."""

    def __init__(self, host, port, waiting):
        self.seen = []
        self.lock = threading.Lock()
        outer = self
        body = vllm_text(waiting, 1, 0.5).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def do_GET(self):
                with outer.lock:
                    outer.seen.append(self.headers.get("Authorization"))
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def count(self, header=None):
        with self.lock:
            return len(self.seen) if header is None else self.seen.count(header)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def call(cmd, addr, ns, md):
    """kedaclient CMD (spec, poll) as ScaledObject ns/so; its first JSON line."""
    p = subprocess.run([CLIENT, cmd, "-addr", addr, "-namespace", ns, "-max-time", "20s"] +
                       sum((["-metadata", "%s=%s" % kv] for kv in md.items()), []),
                       capture_output=True, text=True, timeout=30)
    return json.loads(p.stdout.splitlines()[0])


def error_of(r):
    e = r.get("error")
    return (e.get("code"), e.get("message", "")) if isinstance(e, dict) else (None, "")


class Tenants(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.api = FakeKubeAPI(token="t")
        self.api.start()
        self.kube_token = os.path.join(self.tmp.name, "kube-token")
        with open(self.kube_token, "w") as f:
            f.write("t")
        self.engines, self.proc = [], None

    def tearDown(self):
        code, text = None, ""
        if self.proc:
            code = stop(self.proc)
            self.log.seek(0)
            text = self.log.read()
            self.log.close()
        for e in self.engines:
            e.close()
        self.api.stop()
        self.tmp.cleanup()
        if WRAPPER and code:
            self.fail("aggregator exited %s:\n%s" % (code, text[-4000:]))

    def start_aggregator(self, *extra):
        self.proc, gport, probe, self.log = start_scaler(
            self.tmp.name, ["--role", "aggregator", "--agents", "127.0.0.1:%d" % free_port(),
                            "--kube-api", self.api.url, "--kube-token-file", self.kube_token] +
            list(extra))
        self.assertTrue(wait_for(lambda: http_ok(probe, "/healthz"), 15 * SLOW))
        return "127.0.0.1:%d" % gport

    def log_text(self):
        self.log.seek(0)
        return self.log.read()

    def poll_until(self, addr, ns, md, pred, timeout=10.0):
        last = None
        end = time.monotonic() + timeout * SLOW
        while time.monotonic() < end:
            last = call("poll", addr, ns, md)
            if pred(last):
                return last
            time.sleep(0.1)
        self.fail("not met within %.0f s; last answer %s\nlog: %s" %
                  (timeout, last, self.log_text()[-2000:]))

    def test_another_namespace_is_refused_unless_the_operator_allows_it(self):
        api = self.api
        port = free_port("127.0.0.41")
        for ip, waiting in (("127.0.0.41", 3), ("127.0.0.42", 4)):
            self.engines.append(Engine(ip, port, waiting))
        api.add_pod("victim", "payroll-0", labels={"team": "finance"}, phase="Running",
                    pod_ip="127.0.0.41", node="n1")
        api.add_pod("victim", "payroll-1", labels={"team": "finance"}, phase="Running",
                    pod_ip="127.0.0.42", node="n1")
        addr = self.start_aggregator("--allow-cross-namespace", "monitoring:victim")

        def md(team):
            return {"metricType": "engine_queue", "engine": "vllm", "podSelector": "team=" + team,
                    "namespace": "victim", "enginePort": str(port), "targetValue": "5",
                    "sourceInterval": "100ms"}
        want = ("namespace victim: triggers of namespace attacker may select pods of their own "
                "namespace only; the operator allows another with "
                "--allow-cross-namespace=attacker:victim on the server")
        answers = []
        for team in ("finance", "hr"):  # 2 pods, and none: the same answer
            for cmd in ("spec", "poll"):
                r = call(cmd, addr, "attacker", md(team))
                self.assertEqual(error_of(r), ("PERMISSION_DENIED", want), r)
                answers.append(json.dumps(r.get("error")))
        self.assertEqual(len(set(answers)), 1, answers)
        q = subprocess.run([SERVER, "query", "--address", addr, "--namespace", "attacker"] +
                           sum((["--metadata", "%s=%s" % kv] for kv in md("finance").items()),
                               []), capture_output=True, text=True, timeout=30)
        self.assertNotEqual(q.returncode, 0, q.stdout)
        self.assertIn("PERMISSION_DENIED", q.stdout + q.stderr)
        time.sleep(0.5 * SLOW)  # what polls would have run meanwhile (100 ms)
        for e in self.engines:
            self.assertEqual(e.count(), 0, "the victim's pods were scraped for attacker")
        for text in answers + [q.stdout, q.stderr, self.log_text()]:
            for leak in ("payroll", "127.0.0.41", "127.0.0.42"):
                self.assertNotIn(leak, text)
        # the namespace itself, and the namespace the operator allowed, are served
        r = self.poll_until(addr, "victim", md("finance"), lambda r: "error" not in r)
        self.assertEqual(r["metricValueFloat"], 7, r)
        r = self.poll_until(addr, "monitoring", md("finance"), lambda r: "error" not in r)
        self.assertEqual(r["metricValueFloat"], 7, r)
        r = call("poll", addr, "monitoring", md("hr"))
        self.assertEqual(r.get("metricValueFloat"), 0, r)

    def test_pod_credential_follows_the_pod_not_the_address(self):
        api = self.api
        token = os.path.join(self.tmp.name, "scrape-token")
        with open(token, "w") as f:
            f.write(TOKEN + "\n")
        port = free_port("127.0.0.51")
        engine = Engine("127.0.0.51", port, 3)
        self.engines.append(engine)
        uid = api.add_pod("llm", "vllm-0", labels={"app": "vllm"}, phase="Running",
                          pod_ip="127.0.0.51", node="n1")
        addr = self.start_aggregator(
            "--source-auth", "pods:token-file=%s,namespaces=llm,pods=own-namespace,http=allow"
            % token)
        md = {"metricType": "engine_queue", "engine": "vllm", "podSelector": "app=vllm",
              "enginePort": str(port), "targetValue": "5", "sourceInterval": "100ms",
              "sourceAuth": "pods"}
        r = self.poll_until(addr, "llm", md, lambda r: "error" not in r)
        self.assertEqual(r["metricValueFloat"], 3, r)
        self.assertGreater(engine.count("Bearer " + TOKEN), 0)
        # a profile without pods=own-namespace may not go to pods at all
        r = call("spec", addr, "llm", dict(md, sourceAuth="pods", namespace="victim"))
        self.assertEqual(error_of(r)[0], "PERMISSION_DENIED", r)
        self.assertIn("a profile's credential goes only to the ScaledObject's own namespace (llm)",
                      error_of(r)[1])
        # The pod goes; its address goes to another namespace's pod. The
        # source for the address lives on until it idles out (minutes), and
        # would carry the token there.
        api.delete_pod(uid)
        api.add_pod("victim", "db-0", labels={"app": "db"}, phase="Running",
                    pod_ip="127.0.0.51", node="n1")
        r = self.poll_until(addr, "llm", md, lambda r: r.get("metricValueFloat") == 0)
        time.sleep(1.0 * SLOW)  # the pod list's watch and a poll in flight settle
        before = engine.count("Bearer " + TOKEN)
        time.sleep(2.0 * SLOW)  # 20 polls at 100 ms
        self.assertEqual(engine.count("Bearer " + TOKEN), before,
                         "the token followed the address to another namespace's pod")
        self.assertIn("sourceAuth pods: credential not sent: pod llm/vllm-0 no longer holds "
                      "127.0.0.51", self.log_text())
        self.assertNotIn(TOKEN, self.log_text())


if __name__ == "__main__":
    unittest.main()
