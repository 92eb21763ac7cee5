#!/usr/bin/env python3
"""The aggregator-to-agent link over mutual TLS (issue 16, "cluster"): an
agent serving its Watch with --tls-cert/--tls-key/--tls-client-ca and an
aggregator dialling it with --agents-tls-ca/--agents-tls-cert/--agents-tls-key
and --agents-tls-server-name (agents are dialled by pod IP and share one
certificate for the agents' Service name). Certificates are made with the
openssl CLI in a temp dir: CA "link" signs the agent's server certificate and
the aggregator's client certificate; CA "other" signs an outsider's client
certificate. Everything on loopback.

What an agent's Watch gives away is every pod's namespace/name on its node:
each refusal case asserts that the pod's name never comes back.

Environment (CTest): KEDA_GPU_SCALER, NVML_SIM_LIBRARY, FAKE_KUBELET,
AGENT_WATCH_TOOL, KGS_GO_CLIENT.
"""
import json
import os
import socket
import ssl
import subprocess
import tempfile
import time
import unittest

from kgs_sim import Sim, device
from kgs_util import child_env, free_port, http_ok, scaler_command, stop_process, wait_for

SERVER = os.environ["KEDA_GPU_SCALER"]
SIM = os.environ["NVML_SIM_LIBRARY"]
KUBELET = os.environ["FAKE_KUBELET"]
TOOL = os.environ["AGENT_WATCH_TOOL"]
CLIENT = os.environ["KGS_GO_CLIENT"]
SECRET_POD = "vllm-confidential-7"  # must never reach an unauthenticated caller
AGENT_NAME = "kgs-agents.kgs-test.svc"  # the agents' shared certificate name
EXITS = []  # (what, exit status at SIGTERM): all must be 0 (under ASan: no leak report)


def stop(p, what):
    EXITS.append((what, stop_process(p)))


def ossl(*args):
    return subprocess.run(["openssl"] + list(args), check=True, capture_output=True, text=True,
                          timeout=60).stdout


class Pki:
    """Two CAs and the leaf certificates the cases need (EC P-256: fast)."""

    def __init__(self, d):
        self.d = d
        for ca in ("link", "other"):
            ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", self.p(ca + "-ca.key"), "-out", self.p(ca + "-ca.pem"), "-days", "2",
                 "-subj", "/CN=kgs-test-%s-ca" % ca)
        self.leaf("agent", "link", "subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n" % AGENT_NAME)
        self.leaf("aggregator", "link", "extendedKeyUsage=clientAuth\n")
        self.leaf("outsider", "other", "extendedKeyUsage=clientAuth\n")

    def p(self, name):
        return os.path.join(self.d, name)

    def leaf(self, who, ca, ext, days="2", out=None):
        """A key and certificate for who signed by ca, swapped in by rename
        (as a Secret update does). Returns the certificate's serial."""
        out = out or who
        with open(self.p(who + ".ext"), "w") as f:
            f.write(ext)
        ossl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", self.p(out + ".key.new"), "-out", self.p(out + ".csr"), "-subj",
             "/CN=kgs-test-" + who)
        ossl("x509", "-req", "-in", self.p(out + ".csr"), "-CA", self.p(ca + "-ca.pem"), "-CAkey",
             self.p(ca + "-ca.key"), "-CAcreateserial", "-out", self.p(out + ".pem.new"),
             "-days", days, "-extfile", self.p(who + ".ext"))
        os.chmod(self.p(out + ".key.new"), 0o600)
        os.replace(self.p(out + ".key.new"), self.p(out + ".key"))
        os.replace(self.p(out + ".pem.new"), self.p(out + ".pem"))
        return ossl("x509", "-in", self.p(out + ".pem"), "-noout", "-serial").strip()


class AgentMtls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        cls.pki = Pki(d)
        cls.dev = device(0, gpu_util=73)
        cls.sim = Sim({"devices": [cls.dev]})
        cls.sock = os.path.join(d, "kubelet.sock")
        state = os.path.join(d, "state.json")
        with open(state, "w") as f:
            json.dump({"pods": [{"namespace": "ml", "name": SECRET_POD, "containers": [
                {"name": "main", "devices": [{"resource_name": "nvidia.com/gpu",
                                              "device_ids": [cls.dev["uuid"]]}]}]}]}, f)
        cls.kubelet = subprocess.Popen([KUBELET, "-socket", cls.sock, "-state", state],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_for(lambda: os.path.exists(cls.sock), 10):
            raise AssertionError("fake kubelet did not start")
        cls.port, cls.probe = free_port(), free_port()
        cls.agent_log = open(os.path.join(d, "agent.log"), "w+")
        cls.start_agent()
        cls.aggs = []
        cls.agg = cls.start_aggregator(cls.link_args())
        if not wait_for(lambda: http_ok(cls.agg[2], "/readyz"), 15):
            raise AssertionError("aggregator with mTLS not ready:\n" + cls.log_of(cls.agg))

    @classmethod
    def start_agent(cls):
        p = cls.pki.p
        cls.agent = subprocess.Popen(
            scaler_command(SERVER, cls.port, cls.probe, role="agent", nvml_library=SIM,
                           extra=["--kubelet-socket", cls.sock, "--node-name", "gpu-node-1",
                                  "--tls-cert", p("agent.pem"), "--tls-key", p("agent.key"),
                                  "--tls-client-ca", p("link-ca.pem")]),
            env=child_env(scenario=cls.sim.path), stdout=cls.agent_log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: http_ok(cls.probe, "/readyz"), 10):
            cls.agent_log.seek(0)
            raise AssertionError("agent not ready:\n" + cls.agent_log.read()[-3000:])

    @classmethod
    def link_args(cls, ca="link-ca", cert="aggregator"):
        p = cls.pki.p
        return ["--agents-tls-ca", p(ca + ".pem"), "--agents-tls-cert", p(cert + ".pem"),
                "--agents-tls-key", p(cert + ".key"), "--agents-tls-server-name", AGENT_NAME]

    @classmethod
    def start_aggregator(cls, tls_args):
        port, probe = free_port(), free_port()
        log = open(os.path.join(cls.tmp.name, "agg-%d.log" % port), "w+")
        p = subprocess.Popen(
            scaler_command(SERVER, port, probe, role="aggregator",
                           extra=["--agents", "127.0.0.1:%d" % cls.port, "--kube-api", "none"] +
                           list(tls_args)),
            env=child_env(), stdout=log, stderr=subprocess.STDOUT)
        a = (p, port, probe, log)
        cls.aggs.append(a)
        return a

    @staticmethod
    def log_of(a):
        a[3].flush()
        with open(a[3].name) as f:
            return f.read()

    @classmethod
    def tearDownClass(cls):
        for p, _, _, log in cls.aggs:
            stop(p, log.name)
        stop(cls.agent, cls.agent_log.name)
        stop_process(cls.kubelet)
        bad = []
        for what, code in EXITS:
            if code != 0:
                with open(what) as f:
                    bad.append("%s exited %s:\n%s" % (what, code, f.read()[-3000:]))
        for _, _, _, log in cls.aggs:
            log.close()
        cls.agent_log.close()
        cls.sim.close()
        cls.tmp.cleanup()
        if bad:
            raise AssertionError("\n".join(bad))

    # -- helpers

    def poll(self, port):
        md = {"metricType": "gpu_utilization", "targetValue": "50", "aggregation": "max"}
        p = subprocess.run([CLIENT, "poll", "-addr", "127.0.0.1:%d" % port, "-namespace", "ml",
                            "-max-time", "10s"] + sum((["-metadata", "%s=%s" % kv]
                                                       for kv in md.items()), []),
                           capture_output=True, text=True, timeout=20)
        return json.loads(p.stdout.splitlines()[0])

    def watch(self, *args, count=1):
        """agent_watch_tool against the agent: (exit status, everything it printed)."""
        p = subprocess.run([TOOL, "127.0.0.1:%d" % self.port, str(count)] + list(args),
                           capture_output=True, text=True, timeout=20)
        return p.returncode, p.stdout + p.stderr

    def mtls_watch(self, cert="aggregator"):
        p = self.pki.p
        return self.watch("--ca", p("link-ca.pem"), "--cert", p(cert + ".pem"), "--key",
                          p(cert + ".key"), "--server-name", AGENT_NAME)

    def assert_refused(self, rc, out):
        self.assertNotEqual(rc, 0, out)
        self.assertNotIn(SECRET_POD, out)
        self.assertNotIn('"node"', out)  # not even a snapshot without pods

    def wait_log(self, a, text, timeout=10):
        return wait_for(lambda: text in self.log_of(a), timeout)

    # -- cases

    def test_aggregator_with_mtls_gets_the_agents_snapshot_and_keda_its_value(self):
        r = wait_for(lambda: (lambda x: x if x.get("metricValueFloat") == 73 else None)(
            self.poll(self.agg[1])), 10)
        self.assertIsNotNone(r, "KEDA got no value through the mTLS link: %s\n%s"
                             % (self.poll(self.agg[1]), self.log_of(self.agg)))
        self.assertIn("watching node gpu-node-1 over TLS", self.log_of(self.agg))
        self.assertIn("reading the agents' snapshots over TLS with a client certificate",
                      self.log_of(self.agg))

    def test_the_aggregators_certificate_gets_the_pods(self):
        rc, out = self.mtls_watch()
        self.assertEqual(rc, 0, out)
        self.assertIn(SECRET_POD, out)

    def test_watch_without_a_client_certificate_is_refused(self):
        # TLS that verifies the agent but shows no certificate.
        self.assert_refused(*self.watch("--ca", self.pki.p("link-ca.pem"), "--server-name",
                                        AGENT_NAME))
        # Plaintext h2c, as today's aggregators dial.
        self.assert_refused(*self.watch())
        # Raw TLS with ALPN h2: the handshake or the first read fails, and
        # not one byte of HTTP/2 (let alone a pod name) comes back.
        ctx = ssl.create_default_context(cafile=self.pki.p("link-ca.pem"))
        ctx.check_hostname = False
        ctx.set_alpn_protocols(["h2"])
        got, refusal = b"", None
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as raw:
            try:
                with ctx.wrap_socket(raw, server_hostname=AGENT_NAME) as s:
                    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
                    while True:
                        b = s.recv(65536)
                        if not b:
                            break
                        got += b
            except (ssl.SSLError, ConnectionResetError, BrokenPipeError) as e:
                # The alert (certificate required) or, racing it, the close.
                refusal = e
        self.assertEqual(got, b"", "the agent answered a TLS peer without a certificate")
        self.assertIsNotNone(refusal, "the connection ended cleanly instead of being refused")
        self.assertNotIn(SECRET_POD.encode(), got)

    def test_client_certificate_from_another_ca_is_refused(self):
        self.assert_refused(*self.mtls_watch(cert="outsider"))
        # An aggregator holding it never gets the node, and says why in the
        # flags' words.
        a = self.start_aggregator(self.link_args(cert="outsider"))
        # (the refusal's alert, or a reset when our first write meets the close)
        self.assertTrue(self.wait_log(a, "our client certificate --agents-tls-cert %s"
                                      % self.pki.p("outsider.pem")), self.log_of(a))
        self.assertFalse(http_ok(a[2], "/readyz"))
        self.assertNotIn("watching node", self.log_of(a))

    def test_agent_certificate_from_an_unknown_ca_is_refused_by_the_aggregator(self):
        a = self.start_aggregator(self.link_args(ca="other-ca"))
        self.assertTrue(self.wait_log(a, "does not verify against --agents-tls-ca "
                                         + self.pki.p("other-ca.pem")), self.log_of(a))
        self.assertNotIn("watching node", self.log_of(a))

    def test_expired_and_missing_files_are_named(self):
        p = self.pki.p
        self.pki.leaf("aggregator", "link", "extendedKeyUsage=clientAuth\n", days="0",
                      out="expired")
        time.sleep(1.1)  # -days 0: notAfter is the second it was made
        r = subprocess.run(scaler_command(SERVER, free_port(), free_port(), role="aggregator",
                                          extra=["--agents", "127.0.0.1:1", "--kube-api", "none",
                                                 "--agents-tls-ca", p("link-ca.pem"),
                                                 "--agents-tls-cert", p("expired.pem"),
                                                 "--agents-tls-key", p("expired.key")]),
                           env=child_env(), capture_output=True, text=True, timeout=20)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("TLS client certificate %s expired on" % p("expired.pem"), r.stderr + r.stdout)
        r = subprocess.run(scaler_command(SERVER, free_port(), free_port(), role="agent",
                                          nvml_library=SIM,
                                          extra=["--kubelet-socket", "none",
                                                 "--tls-cert", p("agent.pem"),
                                                 "--tls-key", p("agent.key"),
                                                 "--tls-client-ca", p("nowhere-ca.pem")]),
                           env=child_env(scenario=self.sim.path), capture_output=True, text=True,
                           timeout=20)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("TLS client CA %s: no such file" % p("nowhere-ca.pem"), r.stderr + r.stdout)
        # An agent with TLS but no client CA would hand its pods to anyone.
        r = subprocess.run(scaler_command(SERVER, free_port(), free_port(), role="agent",
                                          nvml_library=SIM,
                                          extra=["--tls-cert", p("agent.pem"),
                                                 "--tls-key", p("agent.key")]),
                           env=child_env(scenario=self.sim.path), capture_output=True, text=True,
                           timeout=20)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--role agent with --tls-cert needs --tls-client-ca", r.stderr)

    def test_rotation_on_the_agent_and_the_aggregator_keeps_working(self):
        p = self.pki.p
        # The agent's server certificate: new key, same CA, swapped by rename.
        serial = self.pki.leaf("agent", "link", "subjectAltName=DNS:%s\n"
                               "extendedKeyUsage=serverAuth\n" % AGENT_NAME)

        def served():
            q = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % self.port,
                                "-alpn", "h2", "-cert", p("aggregator.pem"), "-key",
                                p("aggregator.key")], input="", capture_output=True, text=True,
                               timeout=20)
            return subprocess.run(["openssl", "x509", "-noout", "-serial"], input=q.stdout,
                                  capture_output=True, text=True, timeout=20).stdout.strip()
        self.assertTrue(wait_for(lambda: served() == serial, 10),
                        "the agent still serves the old certificate")
        rc, out = self.mtls_watch()
        self.assertEqual(rc, 0, out)
        self.assertIn(SECRET_POD, out)
        # The aggregator's client certificate, then a fresh connection (the
        # agent restarts): the re-dial presents the new one and streams again.
        self.pki.leaf("aggregator", "link", "extendedKeyUsage=clientAuth\n")
        self.assertTrue(self.wait_log(self.agg, "agents TLS reloaded from"), self.log_of(self.agg))
        before = self.log_of(self.agg).count("watching node gpu-node-1 over TLS")
        stop(self.agent, self.agent_log.name)
        self.start_agent()
        self.assertTrue(wait_for(lambda: self.log_of(self.agg).count(
            "watching node gpu-node-1 over TLS") > before, 15), self.log_of(self.agg))
        r = wait_for(lambda: (lambda x: x if x.get("metricValueFloat") == 73 else None)(
            self.poll(self.agg[1])), 10)
        self.assertIsNotNone(r, self.log_of(self.agg))


if __name__ == "__main__":
    unittest.main(verbosity=2)
