#!/usr/bin/env python3
"""An aggregator whose agents do not fit under its descriptor limit says so
at start, naming the count and the limit to raise, and keeps its KEDA
connection cap below what the agents leave (bench/README.md, "Descriptor
arithmetic for an operator's fleet").

2,000 agents on loopback ports nobody listens on, under
`prlimit --nofile=2200:2200`: 2,000 + the 256 kept for everything else is
more than 2,200, so the agent pool logs one ERROR, and `--max-connections`
1,024 is lowered to what 200 descriptors allow (100: half of them kept).

Environment (CTest): KEDA_GPU_SCALER.
"""
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from kgs_util import child_env, free_port, scaler_command, stop_process

SERVER = os.environ["KEDA_GPU_SCALER"]
AGENTS = 2000
NOFILE = 2200


class AgentDescriptors(unittest.TestCase):
    def setUp(self):
        if not shutil.which("prlimit"):
            self.skipTest("prlimit (util-linux) is not installed")
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def run_aggregator(self, agents, seconds=3.0):
        # Ports 1..AGENTS on 127.0.0.2: refused at once, retried with backoff.
        addrs = ",".join("127.0.0.2:%d" % (1 + i) for i in range(agents))
        log = os.path.join(self.tmp.name, "log")
        with open(log, "w") as out:
            p = subprocess.Popen(["prlimit", "--nofile=%d:%d" % (NOFILE, NOFILE), "--"] +
                                 scaler_command(SERVER, free_port(), free_port(), role="aggregator",
                                                extra=["--agents", addrs, "--kube-api", "none"]),
                                 env=child_env(), stdout=out, stderr=subprocess.STDOUT)
            time.sleep(seconds)
            stop_process(p, 10)
        with open(log, errors="replace") as f:
            return f.read()

    def test_agents_past_the_limit_are_said_once_with_the_limit_to_raise(self):
        text = self.run_aggregator(AGENTS)
        need = [l for l in text.splitlines() if "agents need one connection each" in l]
        self.assertEqual(len(need), 1, text[-3000:])
        self.assertIn("2000 agents need one connection each: 2256 descriptors", need[0])
        self.assertIn("RLIMIT_NOFILE is 2200", need[0])
        self.assertIn("LimitNOFILE", need[0])
        cap = [l for l in text.splitlines() if "--max-connections 1024 is more than" in l]
        self.assertEqual(len(cap), 1, text[-3000:])
        self.assertIn("and 2000 for the agents --agents names", cap[0])
        self.assertIn("serving at most 100 gRPC connections", cap[0])

    def test_agents_that_fit_are_not_warned_about(self):
        text = self.run_aggregator(100, seconds=2.0)
        self.assertNotIn("agents need one connection each", text)
        self.assertNotIn("is more than the descriptor limit allows", text)


if __name__ == "__main__":
    unittest.main()
