#!/usr/bin/env python3
"""Issue 16, demand sources: what a caller who can write ScaledObjects (or
reach the gRPC port) can make the scaler poll. Each probe runs a fresh
standalone scaler and grpc-go (kedaclient) as KEDA, with an honest caller
polling a GPU trigger meanwhile:

- 500 distinct triggers naming 500 unresolvable hosts: threads and fds stay
  bounded (the shared DNS pool), the honest caller keeps its answers;
- many distinct sources at sourceInterval 100ms: creations past
  --max-sources-per-namespace, --max-sources and --source-create-rate are
  RESOURCE_EXHAUSTED naming the flag (counted in limit_refusals_total), and
  the outbound connect rate stays within 10 x the live sources a second;
- an address outside --source-allow-cidrs / --source-allow-ports is refused
  with an error naming the address class and the flag, and never connected
  (a listener counts accepts).

Runs inside its own network namespace (tests/integration/netns-run) with
only loopback up: the unresolvable names and the refused addresses cannot
send traffic anywhere. Bounded: about 40 s.

Environment (CTest): KEDA_GPU_SCALER, NVML_SIM_LIBRARY, KGS_GO_CLIENT.
"""
import json
import os
import socket
import subprocess
import threading
import time
import unittest

from kgs_util import ProbedScaler, md_args, proc_status_kib

SERVER = os.environ["KEDA_GPU_SCALER"]
SIM = os.environ["NVML_SIM_LIBRARY"]
CLIENT = os.environ["KGS_GO_CLIENT"]
WRAPPER = os.environ.get("KGS_SERVER_WRAPPER", "").split()
SLOW = 5.0 if WRAPPER else 1.0
GPU_MD = {"metricType": "gpu_utilization", "targetValue": "50"}


class Server(ProbedScaler):
    def __init__(self, *args):
        super().__init__(SERVER, SIM, args, WRAPPER, SLOW)

    def pid(self):
        return self.proc.pid

    def fds(self):
        return len(os.listdir("/proc/%d/fd" % self.proc.pid))

    def threads(self):
        return proc_status_kib(self.proc.pid, "Threads")

    def poll(self, md, namespace="default", timeout="10s"):
        p = subprocess.run([CLIENT, "poll", "-addr", "127.0.0.1:%d" % self.port,
                            "-namespace", namespace, "-max-time", timeout] + md_args(md),
                           capture_output=True, text=True, timeout=60)
        return json.loads(p.stdout.splitlines()[0])

    def streams(self, md, vary, n, namespace="default", seconds=10):
        """n StreamIsActive streams on one connection, stream i's `vary` key
        with "{i}" replaced by 10+i: n distinct triggers, each subscribing
        its sources."""
        p = subprocess.run([CLIENT, "streams", "-addr", "127.0.0.1:%d" % self.port,
                            "-namespace", namespace, "-n", str(n), "-distinct", "-vary", vary,
                            "-timeout", "%ds" % seconds, "-max-time", "%ds" % (seconds + 20)] +
                           md_args(md), capture_output=True, text=True, timeout=seconds + 40)
        return json.loads(p.stdout.splitlines()[0]) if p.stdout.strip() else {"fatal": p.stderr}


class Honest:
    """KEDA's polling in the background: kedaclient load -c 1 for `seconds`."""

    def __init__(self, test, server, seconds):
        self.proc = subprocess.Popen(
            [CLIENT, "load", "-addr", "127.0.0.1:%d" % server.port, "-c", "1",
             "-duration", "%ds" % seconds, "-max-time", "%ds" % (seconds + 30)] +
            md_args(GPU_MD), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        test.addCleanup(self.stop)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()

    def result(self):
        out, err = self.proc.communicate(timeout=60)
        return json.loads(out.splitlines()[0]) if out.strip() else {"fatal": err}


class Listener:
    """A loopback listener that counts the connections it accepts (and
    closes them at once): what the scaler connected to."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(512)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
            c.close()

    def count(self):
        with self.lock:
            return self.accepted

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def engine_md(url, interval="100ms"):
    return {"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
            "engineEndpoint": url, "sourceInterval": interval, "sourceTimeout": "100ms"}


class HostileSources(unittest.TestCase):
    def server(self, *args):
        s = Server(*args)
        self.addCleanup(s.close)
        return s

    def test_unresolvable_names_cost_bounded_threads_and_fds(self):
        """500 triggers naming 500 hosts that do not resolve: a thread and an
        eventfd per name before; now the DNS pool's 4 threads and 1 eventfd."""
        s = self.server("--max-sources", "1000", "--max-sources-per-namespace", "1000",
                        "--source-create-rate", "100000,100000")
        threads0, fds0 = s.threads(), s.fds()
        honest = Honest(self, s, 8)
        md = engine_md("http://h{i}.no-such-zone.invalid:8000/metrics", "1s")
        r = s.streams(md, "engineEndpoint", 500, seconds=6)
        self.assertEqual(r.get("opened"), 500, r)
        sources = s.metric("sources")
        self.assertGreaterEqual(sources or 0, 500, "the 500 sources were not all created")
        threads, fds = s.threads(), s.fds()
        print("500 unresolvable names: threads %d -> %d, fds %d -> %d" %
              (threads0, threads, fds0, fds))
        self.assertLessEqual(threads - threads0, 4, "threads %d -> %d" % (threads0, threads))
        self.assertLessEqual(fds - fds0, 8, "fds %d -> %d" % (fds0, fds))
        res = honest.result()
        print("honest caller during the flood: %s" % res)
        self.assertEqual(res.get("errors", 0), 0, res)
        self.assertGreater(res.get("calls", 0), 0, res)
        # A source of such a name answers UNAVAILABLE naming the resolution.
        one = dict(md, engineEndpoint="http://h10.no-such-zone.invalid:8000/metrics")
        got = s.poll(one)
        self.assertEqual(got["error"]["code"], "UNAVAILABLE", got)
        self.assertIn("h10.no-such-zone.invalid", got["error"]["message"])

    def test_source_caps_refuse_with_resource_exhausted_and_bound_connects(self):
        eng = Listener()
        self.addCleanup(eng.close)
        s = self.server("--max-sources", "20", "--max-sources-per-namespace", "10",
                        "--source-create-rate", "1000,1000")
        base = "http://127.0.0.1:%d/m?o={i}" % eng.port
        md = engine_md(base)
        for ns in ("team-a", "team-b", "team-c"):
            # distinct URLs per namespace: a URL already polled is shared, not created
            nsmd = engine_md(base.replace("{i}", ns + "-{i}"))
            r = s.streams(nsmd, "engineEndpoint", 15, namespace=ns, seconds=2)
            self.assertEqual(r.get("opened"), 15, r)
        self.assertEqual(s.metric("sources"), 20)
        # team-a is full: its namespace's cap.
        got = s.poll(dict(md, engineEndpoint=base.replace("{i}", "new-a")), namespace="team-a")
        self.assertEqual(got["error"]["code"], "RESOURCE_EXHAUSTED", got)
        self.assertIn("--max-sources-per-namespace", got["error"]["message"])
        self.assertIn("team-a", got["error"]["message"])
        # team-c got none (a and b took all 20): the global cap.
        got = s.poll(dict(md, engineEndpoint=base.replace("{i}", "new-c")), namespace="team-c")
        self.assertEqual(got["error"]["code"], "RESOURCE_EXHAUSTED", got)
        self.assertIn("--max-sources)", got["error"]["message"])
        self.assertGreater(s.metric("limit_refusals_total", '{limit="max-sources"}') or 0, 0)
        self.assertGreater(
            s.metric("limit_refusals_total", '{limit="max-sources-per-namespace"}') or 0, 0)
        # 20 sources at 100 ms: at most 200 connects a second (with slack for timing).
        c0, t0 = eng.count(), time.monotonic()
        time.sleep(2)
        rate = (eng.count() - c0) / (time.monotonic() - t0)
        print("20 sources at sourceInterval 100ms: %.0f connects/s" % rate)
        self.assertLessEqual(rate, 20 * 10 * 1.3)
        # An honest GPU trigger is still answered.
        self.assertNotIn("error", s.poll(GPU_MD))

    def test_source_creation_rate_is_limited(self):
        eng = Listener()
        self.addCleanup(eng.close)
        s = self.server("--source-create-rate", "0.1,5")
        base = "http://127.0.0.1:%d/m?o={i}" % eng.port
        t0 = time.monotonic()
        r = s.streams(engine_md(base), "engineEndpoint", 40, seconds=2)
        self.assertEqual(r.get("opened"), 40, r)
        created = s.metric("sources")
        elapsed = time.monotonic() - t0
        self.assertLessEqual(created, 5 + 0.1 * elapsed + 1, "%s sources in %.1f s" %
                             (created, elapsed))
        got = s.poll(engine_md(base.replace("{i}", "late")))
        self.assertEqual(got["error"]["code"], "RESOURCE_EXHAUSTED", got)
        self.assertIn("--source-create-rate", got["error"]["message"])
        self.assertGreater(
            s.metric("limit_refusals_total", '{limit="source-create-rate"}') or 0, 0)

    def refused_by_egress(self, *flags):
        """A server with these allow-list flags polls a listener on
        loopback; returns (listener, server, the trigger's first error that
        is not "waiting")."""
        eng = Listener()
        self.addCleanup(eng.close)
        s = self.server(*flags)
        url = "http://127.0.0.1:%d/metrics" % eng.port
        got = None
        deadline = time.monotonic() + 5 * SLOW
        while time.monotonic() < deadline:
            got = s.poll(engine_md(url))
            if "error" in got and "waiting" not in got["error"]["message"]:
                break
            time.sleep(0.1)
        self.assertEqual(got["error"]["code"], "UNAVAILABLE", got)
        time.sleep(0.5)  # a connect the guard missed would have landed by now
        return eng, s, got["error"]["message"]

    def test_address_outside_the_allow_list_is_never_connected(self):
        eng, s, msg = self.refused_by_egress("--source-allow-cidrs", "10.0.0.0/8,fd00::/8")
        self.assertIn("127.0.0.1:%d (loopback) is not in --source-allow-cidrs" % eng.port, msg)
        self.assertEqual(eng.count(), 0, "the refused address was connected to")
        self.assertGreater(s.metric("source_egress_refusals_total") or 0, 0)

    def test_port_outside_the_allow_list_is_never_connected(self):
        eng, _, msg = self.refused_by_egress("--source-allow-cidrs", "127.0.0.0/8",
                                             "--source-allow-ports", "1-1023")
        self.assertIn("port %d is not in --source-allow-ports" % eng.port, msg)
        self.assertEqual(eng.count(), 0, "the refused port was connected to")

if __name__ == "__main__":
    unittest.main(verbosity=2)
