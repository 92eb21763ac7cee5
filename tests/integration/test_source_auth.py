#!/usr/bin/env python3
"""Authenticated scrapes through the real server: --source-auth profiles
picked by a trigger's sourceAuth, against real loopback HTTPS servers that
demand a bearer token (and follow its rotation) or a client certificate
(mTLS), each with its own CA. Also: a profile refused outside its
namespaces, an unknown profile, a 401 without credentials, a profile's
certificate over http, bad profiles and unreadable token files at start.
No token appears in any answer or in the scaler's log.

Runs inside its own network namespace (tests/integration/netns-run), like
test_demand.py, whose helpers it uses; every wait is bounded."""
import http.server
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from kgs_util import SOURCE_DIR
from test_demand import (CLIENT, SERVER, SIM, SLOW, StandaloneEngineCase, fixture, http_ok,
                         make_client_cert, make_pki, start_scaler, stop, wait_for)

TOKEN_A = "kgs-test-token-AAAA.eyJzdWIiOiJrZ3MifQ.sigA"
TOKEN_B = "kgs-test-token-BBBB.eyJzdWIiOiJrZ3MifQ.sigB"
WAITING = 7  # vllm.txt: vllm:num_requests_waiting 3 + 4
# Every engine's fixture in its exact exposition format, and its engine_queue
# (tests/fixtures/engines/README.md): vLLM 3 + 4, SGLang 9, TGI 4, Triton
# 5 + 1; the EPP at zero (4 at the gateway) and with the llm-d names and
# their mirrors (6 at the gateway + 4 servers x 2.5).
FORMATS = [("vllm.txt", "vllm", 7), ("sglang.txt", "sglang", 9), ("tgi.txt", "tgi", 4),
           ("triton.txt", "triton", 6), ("epp-zero.txt", "epp", 4), ("epp.txt", "epp", 16)]


class AuthServer:
    """A loopback HTTPS server answering GET /metrics with a vLLM scrape:
    with tokens, only to "Authorization: Bearer <one of tokens>" (else 401);
    with client_ca, only to clients with a certificate it signed (the
    handshake fails otherwise). Records every Authorization header seen."""

    def __init__(self, cert, key, tokens=None, client_ca=None, body=None):
        self.tokens = set(tokens or [])
        self.seen = []
        # path -> body; /metrics is the vLLM fixture, FORMATS each at /<file>
        self.pages = {"/metrics": (body or fixture("vllm.txt")).encode()}
        for name, _, _ in FORMATS:
            self.pages["/" + name] = fixture(name).encode()
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def do_GET(self):
                auth = self.headers.get("Authorization")
                with outer.lock:
                    outer.seen.append(auth)
                    ok = not outer.tokens or auth in {"Bearer " + t for t in outer.tokens}
                page = outer.pages.get(self.path)
                status, body = ((200, page) if ok and page is not None else
                                (404, b"not found\n") if ok else (401, b"Unauthorized\n"))
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        if client_ca:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(client_ca)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, host="localhost", scheme="https"):
        return "%s://%s:%d/metrics" % (scheme, host, self.port)

    def accept_only(self, *tokens):
        with self.lock:
            self.tokens = set(tokens)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class EngineServerRecording:
    """A plain-HTTP loopback server answering anything with 200 and recording
    every Authorization header it is sent."""

    def __init__(self):
        self.seen = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def do_GET(self):
                outer.seen.append(self.headers.get("Authorization"))
                body = fixture("vllm.txt").encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def kedaclient(cmd, addr, ns, md):
    """One kedaclient call (spec, poll, ...); its first JSON line."""
    p = subprocess.run([CLIENT, cmd, "-addr", addr, "-namespace", ns, "-max-time", "20s"] +
                       sum((["-metadata", "%s=%s" % kv] for kv in md.items()), []),
                       capture_output=True, text=True, timeout=30)
    return json.loads(p.stdout.splitlines()[0])


def error_text(r):
    """The message of a kedaclient answer's error ("" when it has none)."""
    e = r.get("error")
    return e.get("message", "") if isinstance(e, dict) else (e or "")


def write_atomically(path, text):
    """As the kubelet updates a projected token: a new file renamed over."""
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class SourceAuth(StandaloneEngineCase):
    """The scaler of StandaloneEngineCase, with three profiles; servers
    whose certificates come from a CA that --source-ca-file is not."""

    @classmethod
    def extra_scaler_args(cls):
        d = cls.tmp.name
        # Two CAs: the servers' certificates come from the first; the second
        # is --source-ca-file, so only a profile's ca-file can verify them.
        cls.ca, cls.srv_cert, cls.srv_key = make_pki(d)
        cls.cli_cert, cls.cli_key = make_client_cert(d)
        other = os.path.join(d, "other")
        os.mkdir(other)
        cls.other_ca, _, _ = make_pki(other)
        cls.token_file = os.path.join(d, "token")
        write_atomically(cls.token_file, TOKEN_A + "\n")
        cls.bearer = AuthServer(cls.srv_cert, cls.srv_key, tokens=[TOKEN_A])
        cls.mtls = AuthServer(cls.srv_cert, cls.srv_key, client_ca=cls.ca)
        cls.answers = []
        # Each credential is bound to where it may go: tok to the name
        # localhost only, mtls to localhost and 127.0.0.1, plain and plainok
        # to localhost, plainok over plain http too.
        profiles = ("tok:token-file=%s,ca-file=%s,namespaces=llm|chat,hosts=localhost;"
                    "mtls:ca-file=%s,cert-file=%s,key-file=%s,namespaces=*,hosts=localhost,"
                    "cidrs=127.0.0.1;"
                    "plain:token-file=%s,namespaces=llm,hosts=localhost;"
                    "plainok:token-file=%s,namespaces=llm,hosts=localhost,http=allow" %
                    (cls.token_file, cls.ca, cls.ca, cls.cli_cert, cls.cli_key, cls.token_file,
                     cls.token_file))
        return ["--source-ca-file", cls.other_ca, "--source-auth", profiles]

    @classmethod
    def tearDownClass(cls):
        cls.log.seek(0)
        text = cls.log.read()
        cls.bearer.close()
        cls.mtls.close()
        super().tearDownClass()
        for t in (TOKEN_A, TOKEN_B):
            if t in text or any(t in a for a in cls.answers):
                raise AssertionError("a bearer token appears in the log or an answer")

    def answered(self, text):
        self.answers.append(text)

    def poll(self, md, ns="llm"):
        return super().poll(md, ns)

    def poll_until(self, md, pred, ns="llm", timeout=8.0):
        return super().poll_until(md, pred, timeout=timeout, ns=ns)

    @staticmethod
    def trigger(url, auth=None, **kw):
        md = {"metricType": "engine_queue", "engine": "vllm", "vllmEndpoint": url,
              "targetValue": "5", "sourceInterval": "100ms"}
        if auth:
            md["sourceAuth"] = auth
        md.update(kw)
        return md

    @staticmethod
    def value(want):
        return lambda r: "error" not in r and r["metricValueFloat"] == want

    @staticmethod
    def error_with(text):
        return lambda r: text in error_text(r)

    def test_bearer_token_over_https_follows_rotation(self):
        """The token goes in Authorization: Bearer over TLS verified with the
        profile's CA (the server's --source-ca-file could not verify it).
        When the server stops accepting it the answer says the credentials
        were not accepted; once the file holds the new token (renamed over,
        as the kubelet does) scrapes succeed again within seconds."""
        md = self.trigger(self.bearer.url(), "tok", model="llama-3.1-8b")
        r = self.poll_until(md, self.value(WAITING))
        self.assertTrue(r["active"], r)
        self.assertIn("Bearer " + TOKEN_A, self.bearer.seen)
        self.bearer.accept_only(TOKEN_B)
        self.poll_until(md, self.error_with("credentials of sourceAuth tok were not accepted"))
        t0 = time.monotonic()
        write_atomically(self.token_file, TOKEN_B + "\n")
        self.poll_until(md, self.value(WAITING), timeout=10)
        took = time.monotonic() - t0
        self.assertIn("Bearer " + TOKEN_B, self.bearer.seen)
        # the file is looked at once a second, the source polls every 100 ms:
        # the rotated token is in use within about a second (docs say so)
        sys.stderr.write("rotation: new token in use %.2f s after the rename\n" % took)
        self.assertLess(took, 2.0 * SLOW)
        # the same trigger from another namespace the profile lists: its own source
        self.poll_until(md, self.value(WAITING), ns="chat")
        self.bearer.accept_only(TOKEN_A, TOKEN_B)
        write_atomically(self.token_file, TOKEN_A + "\n")

    def test_every_engine_format_over_bearer_and_mtls(self):
        """Each engine's fixture and the EPP's, served over HTTPS behind a
        bearer token and behind mTLS: the reading is the fixture's, and
        engine epp at zero replicas is active (KEDA wakes the pool)."""
        for server, auth in ((self.bearer, "tok"), (self.mtls, "mtls")):
            for name, engine, want in FORMATS:
                with self.subTest(fixture=name, auth=auth):
                    md = {"metricType": "engine_queue", "engine": engine,
                          "engineEndpoint": "https://localhost:%d/%s" % (server.port, name),
                          "targetValue": "4", "sourceInterval": "100ms", "sourceAuth": auth}
                    r = self.poll_until(md, self.value(want))
                    self.assertTrue(r["active"], r)

    def test_profile_outside_its_namespaces_is_refused(self):
        md = self.trigger(self.bearer.url(), "tok", model="llama-3.1-8b", targetValue="6")
        self.poll_until(md, self.error_with("sourceAuth tok may not be used from namespace "
                                            "team-b (--source-auth tok: namespaces=llm|chat)"),
                        ns="team-b")
        # and an allowed namespace reading the same URL does not lend it its source
        self.poll_until(md, self.value(WAITING), ns="llm")
        r = self.poll(md, ns="team-b")
        self.assertIn("may not be used from namespace team-b", error_text(r), r)

    def test_unknown_profile_names_the_ones_there_are(self):
        md = self.trigger(self.bearer.url(), "nope")
        self.poll_until(md, self.error_with(
            "sourceAuth nope: the server has no --source-auth profile of that name (it has: "
            "tok, mtls, plain, plainok)"))

    def test_no_credentials_says_how_to_give_them(self):
        """Without sourceAuth, the server's CA does not verify; with the right
        CA (a profile with only ca-file would do) the 401 says what to set."""
        md = self.trigger(self.mtls.url(), None, model="no-auth")
        self.poll_until(md, self.error_with("certificate verification"))
        tmp = tempfile.TemporaryDirectory()
        try:
            proc, port, probe, log = start_scaler(
                tmp.name, ["--nvml-library", SIM, "--source-ca-file", self.ca],
                {"NVML_SIM_SCENARIO": self.sim.path})
            try:
                self.assertTrue(wait_for(lambda: http_ok(probe, "/readyz"), 15 * SLOW))
                addr = self.addr
                self.addr = "127.0.0.1:%d" % port
                try:
                    self.poll_until(self.trigger(self.bearer.url(), None), self.error_with(
                        "HTTP 401 (want 200): the endpoint wants credentials; set sourceAuth"))
                finally:
                    self.addr = addr
            finally:
                stop(proc)
                log.close()
        finally:
            tmp.cleanup()

    def test_client_certificate_mtls(self):
        md = self.trigger(self.mtls.url(host="127.0.0.1"), "mtls", model="llama-3.1-8b")
        r = self.poll_until(md, self.value(WAITING))
        self.assertTrue(r["active"], r)
        # the bearer profile has no certificate: this server refuses the handshake
        md = self.trigger(self.mtls.url(), "tok", model="mtls-no-cert")
        self.poll_until(md, lambda r: "TLS" in error_text(r))

    def test_certificate_profile_over_http_is_refused(self):
        md = self.trigger("http://127.0.0.1:%d/metrics" % self.bearer.port, "mtls")
        self.poll_until(md, self.error_with("sourceAuth mtls has a client certificate, which "
                                            "needs https"))

    def test_token_over_plain_http_only_with_http_allow(self):
        """A bearer token over plain http crosses the network in clear: refused
        by default, naming what to add; a profile with http=allow (an EPP's
        metrics port is plain HTTP behind Kubernetes authentication) may.
        Here the server speaks TLS, so only that the profile is accepted for
        http is checked."""
        md = self.trigger("http://localhost:%d/metrics" % self.bearer.port, "plain")
        r = self.poll(md)
        self.assertIn("sourceAuth plain: http://localhost:%d is plain http, and the profile's "
                      "bearer token would cross the network in clear: use https" %
                      self.bearer.port, error_text(r))
        self.assertIn("or add http=allow to --source-auth plain", error_text(r))
        self.assertEqual(r["error"]["code"], "PERMISSION_DENIED", r)
        md = self.trigger("http://localhost:%d/metrics" % self.bearer.port, "plainok")
        r = self.poll_until(md, lambda r: "error" in r)
        self.assertNotIn("plain http", error_text(r))

    def test_token_never_reaches_a_url_outside_its_profile(self):
        """Issue 28: a trigger in a permitted namespace that named its own
        server received the profile's token (3 of 3 requests). Now GetMetricSpec
        and every other RPC refuse it by name before any request leaves: the
        collector (a loopback server that answers anyone and records every
        Authorization header) sees no request at all, over https at an
        address the profile does not list, nor over plain http at a host it
        does."""
        collector = AuthServer(self.srv_cert, self.srv_key)  # no token needed: it collects
        plain = EngineServerRecording()
        self.addCleanup(collector.close)
        self.addCleanup(plain.close)
        cases = [
            (collector.url(host="127.0.0.1"),
             "sourceAuth tok may not send its credential to https://127.0.0.1:%d: the address "
             "is not in the profile's cidrs (--source-auth tok: hosts=localhost, cidrs=none, "
             "pods=none)" % collector.port),
            ("http://localhost:%d/metrics" % plain.port,
             "sourceAuth tok has a ca-file, which needs https (an https:// URL, or engineScheme: "
             "https for podSelector pods); http://localhost:%d is http" % plain.port),
        ]
        for url, want in cases:
            with self.subTest(url=url):
                md = self.trigger(url, "tok", model="collect")
                spec = kedaclient("spec", self.addr, "llm", md)
                self.assertEqual(spec["error"]["code"], "PERMISSION_DENIED", spec)
                self.assertIn(want, error_text(spec))
                for _ in range(3):
                    r = self.poll(md)
                    self.assertIn(want, error_text(r))
                time.sleep(0.5 * SLOW)  # what a source would have polled meanwhile (100 ms)
        self.assertEqual(collector.seen, [])
        self.assertEqual(plain.seen, [])
        # a demandEndpoint is a destination like any other
        md = {"metricType": "queue_length", "demandEndpoint": collector.url(host="127.0.0.1"),
              "demandMetric": "q", "targetValue": "5", "sourceAuth": "tok"}
        self.assertIn("may not send its credential to https://127.0.0.1",
                      error_text(self.poll(md)))
        self.assertEqual(collector.seen, [])


class StartFailures(unittest.TestCase):
    def run_server(self, *args):
        p = subprocess.run([SERVER, "--port", "0", "--probe-port", "0", "--metrics-port", "0",
                            "--nvml-library", SIM] + list(args),
                           capture_output=True, text=True, timeout=30 * SLOW,
                           env=dict(os.environ, NVML_SIM_SCENARIO=os.path.join(
                               SOURCE_DIR, "sim", "scenarios", "idle-4xh100.json")))
        return p.returncode, p.stdout + p.stderr

    def test_bad_profile_text(self):
        rc, out = self.run_server("--source-auth", "epp:token-file=relative,namespaces=llm")
        self.assertNotEqual(rc, 0)
        self.assertIn("--source-auth: profile epp: token-file \"relative\" is not an absolute "
                      "path", out)

    def test_profile_without_destination_says_what_to_add(self):
        """A token bound to nowhere went to any URL before; now the server
        refuses to start with it and says what to add."""
        rc, out = self.run_server("--source-auth", "epp:token-file=/t,namespaces=llm")
        self.assertNotEqual(rc, 0)
        self.assertIn("--source-auth: profile epp: where may its token go? A credential is bound "
                      "to destinations: add hosts=NAME|*.SUFFIX", out)

    def test_unreadable_token_file(self):
        rc, out = self.run_server("--source-auth",
                                  "epp:token-file=/nonexistent/kgs/token,namespaces=llm,hosts=epp.llm.svc")
        self.assertNotEqual(rc, 0)
        self.assertIn("sourceAuth epp: token file /nonexistent/kgs/token: No such file", out)

    def test_token_file_that_is_not_a_token(self):
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("secret-part\r\nX-Injected: 1\n")
        try:
            rc, out = self.run_server("--source-auth",
                                      "epp:token-file=%s,namespaces=llm,hosts=epp.llm.svc" % f.name)
        finally:
            os.unlink(f.name)
        self.assertNotEqual(rc, 0)
        self.assertIn("is 0x0d: a bearer token is printable ASCII", out)
        self.assertNotIn("secret-part", out)


if __name__ == "__main__":
    unittest.main()
