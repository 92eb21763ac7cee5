#!/usr/bin/env python3
"""`make run`'s LLM story, end to end and non-interactively: scripts/run-demo
with KGS_DEMO_CYCLES=1 starts the scaler on the simulated node and
tools/llm-fleet-sim, which must take the fleet 0 -> N -> 0 (N >= 2) within
3 minutes, printing one line per change with the columns its header
promises; and a taken simulator port names the variable that moves it.
Time runs 12x faster here than in the interactive demo's 6x (one cycle in
about a minute)."""
import os
import re
import socket
import subprocess
import tempfile
import time
import unittest

SOURCE = os.environ["KGS_SOURCE_DIR"]
BUILD = os.environ["KGS_BUILD_DIR"]
DEMO = os.path.join(SOURCE, "scripts", "run-demo")
# The demo writes its log and node file to KGS_DEMO_DIR: this test and its
# neighbour run at once on one build tree and must not share them.
DEMO_DIR = tempfile.TemporaryDirectory(prefix="kgs-demo-")
os.environ["KGS_DEMO_DIR"] = DEMO_DIR.name
SLOW = float(os.environ.get("KGS_TEST_TIMEOUT_MULTIPLIER", "1") or 1)

HEADER = re.compile(r"^\s+time\s+queue\s+wait\s+run\s+repl\s+ready\s+start\s+active\s+value\s+"
                    r"gpu%\s+decision\s+the scaler's Explain$")
ROW = re.compile(r"^\s*(?P<t>\d+\.\d)s\s+(?P<queue>\d+)\s+(?P<wait>\d+)\s+(?P<run>\d+)\s+"
                 r"(?P<repl>\d+)\s+(?P<ready>\d+)\s+(?P<start>\d+)\s+(?P<active>true|false|-)\s+"
                 r"(?P<value>\d+\.\d|-)\s+(?P<gpu>\d+|-)\s+(?P<decision>\S.*)$")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_run(n):
    """A base port p with p..p+n-1 all free (now)."""
    for _ in range(200):
        base = free_port()
        if base + n > 65535:
            continue
        socks = []
        try:
            for i in range(n):
                s = socket.socket()
                s.bind(("127.0.0.1", base + i))
                socks.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise AssertionError("no %d consecutive free ports" % n)


def demo_env(**extra):
    env = dict(os.environ)
    env.update({"KGS_DEMO_PORT": str(free_port()), "KGS_DEMO_PROBE_PORT": str(free_port()),
                "KGS_DEMO_METRICS_PORT": str(free_port()),
                "KGS_DEMO_ENGINE_PORT": str(free_run(9)),
                "KGS_DEMO_GATEWAY_PORT": str(free_port())})
    env.update(extra)
    return env


class LlmStory(unittest.TestCase):
    def test_one_cycle_wakes_sizes_and_returns_to_zero_within_4_minutes(self):
        # The queueing model walks a small fall down one replica per 15 s of
        # real time (rule 5), which the demo's 12x clock does not compress:
        # 0 -> 4 -> 0 took 125 s alone here, and over 170 s once beside a
        # full make test.
        env = demo_env(KGS_DEMO_CYCLES="1", KGS_DEMO_TIME_SCALE="12",
                       KGS_DEMO_MAX_SECONDS=str(int(230 * SLOW)))
        t0 = time.monotonic()
        p = subprocess.run([DEMO, BUILD], capture_output=True, text=True, cwd=SOURCE, env=env,
                           timeout=260 * SLOW)
        took = time.monotonic() - t0
        out = p.stdout
        self.assertEqual(p.returncode, 0, out[-4000:] + p.stderr[-4000:])
        self.assertLess(took, 240 * SLOW, "one cycle took %.0f s" % took)
        # the banner: what is simulated, the compression against a real cold start
        self.assertIn("Time runs 12x faster than a real fleet", out)
        self.assertIn("cold start takes 8 s here for 90 s", out)
        self.assertIn("90.65 s", out)
        self.assertIn("demandMetric: llm_d_epp_flow_control_queue_size", out)
        lines = out.splitlines()
        headers = [l for l in lines if l.lstrip().startswith("time ")]
        self.assertTrue(headers, out[-3000:])
        for h in headers:
            self.assertRegex(h, HEADER)
        first = lines.index(headers[0])
        rows = []
        for l in lines[first:]:
            if not l.strip() or l in headers or l.startswith("cycle ") or \
                    l.startswith("server log:"):
                continue
            m = ROW.match(l)
            self.assertIsNotNone(m, "a line without the promised columns: %r" % l)
            rows.append(m)
        # one line per change: no two consecutive rows alike but for the time
        for a, b in zip(rows, rows[1:]):
            self.assertNotEqual(a.group(0)[a.end("t") + 1:], b.group(0)[b.end("t") + 1:])
        repl = [int(r.group("repl")) for r in rows]
        self.assertEqual(repl[0], 0, rows[0].group(0))
        peak = max(repl)
        self.assertGreaterEqual(peak, 2, repl)
        self.assertEqual(repl[-1], 0, rows[-1].group(0))
        woke = next(r for r in rows if int(r.group("repl")) > 0)
        self.assertIn("0 -> 1", woke.group("decision"))
        self.assertGreater(int(woke.group("queue")), 0, "woke with nothing queued")
        self.assertTrue(any("HPA sync" in r.group("decision") and "->" in r.group("decision")
                            for r in rows), "the HPA never sized the fleet")
        self.assertTrue(any("Ready after" in r.group("decision") for r in rows))
        self.assertIn("cooldownPeriod", rows[-1].group("decision"))
        # the scaler's Explain is on the lines once it answered
        self.assertTrue(any("lambda_rps=" in r.group("decision") and "backlog=" in
                            r.group("decision") for r in rows))
        m = re.search(r"^cycle 1 done: 0 -> (\d+) -> 0 replicas in (\d+) s here", out, re.M)
        self.assertIsNotNone(m, out[-2000:])
        self.assertEqual(int(m.group(1)), peak)
        # GPU utilisation is 0 while the first requests queue, and only then rises
        wait0 = [r for r in rows if int(r.group("ready")) == 0 and int(r.group("queue")) > 0
                 and r.group("gpu") != "-"]
        self.assertTrue(wait0 and all(r.group("gpu") == "0" for r in wait0), wait0)

    def test_a_taken_simulator_port_names_the_variable_that_moves_it(self):
        for var in ("KGS_DEMO_ENGINE_PORT", "KGS_DEMO_GATEWAY_PORT"):
            env = demo_env()
            with socket.socket() as taken:
                port = int(env[var]) + (3 if var == "KGS_DEMO_ENGINE_PORT" else 0)
                taken.bind(("127.0.0.1", port))
                taken.listen()
                p = subprocess.run([DEMO, BUILD], capture_output=True, text=True, cwd=SOURCE,
                                   env=env, timeout=30 * SLOW)
            self.assertEqual(p.returncode, 1, p.stdout[-2000:] + p.stderr)
            self.assertIn("the fleet simulator could not listen on 127.0.0.1:%d" % port, p.stderr)
            self.assertIn("Address already in use", p.stderr)
            self.assertRegex(p.stderr, r"make run %s=\d+" % var)


if __name__ == "__main__":
    unittest.main(verbosity=2)
