#!/usr/bin/env python3
"""keda-gpu-scaler --role agent end to end: the real server on the NVML
stand-in, a fake kubelet (grpc-go, pod-resources v1 on a unix socket), and
a Watch client decoding the NodeSnapshots the aggregator will receive.

Environment (CTest): KEDA_GPU_SCALER, NVML_SIM_LIBRARY, FAKE_KUBELET,
AGENT_WATCH_TOOL, KGS_SOURCE_DIR.
"""
import json
import os
import subprocess
import tempfile
import unittest

from kgs_sim import Sim, device
from kgs_util import child_env, free_port, http_ok, scaler_command, stop_process, wait_for

SERVER = os.environ["KEDA_GPU_SCALER"]
SIM = os.environ["NVML_SIM_LIBRARY"]
KUBELET = os.environ["FAKE_KUBELET"]
TOOL = os.environ["AGENT_WATCH_TOOL"]


class Agent(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.devs = [device(0), device(1)]
        self.sim = Sim({"devices": self.devs})
        self.addCleanup(self.sim.close)
        self.sock = os.path.join(self.tmp.name, "kubelet.sock")
        self.state = os.path.join(self.tmp.name, "state.json")
        self.write_state([("ml", "vllm-0", self.devs[0]["uuid"]),
                          ("other", "batch-7", self.devs[1]["uuid"] + "::1")])
        self.kubelet = subprocess.Popen([KUBELET, "-socket", self.sock, "-state", self.state],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(self.stop, self.kubelet)
        self.assertTrue(wait_for(lambda: os.path.exists(self.sock), 10), "fake kubelet did not start")
        self.port, self.probe = free_port(), free_port()
        self.log = open(os.path.join(self.tmp.name, "agent.log"), "w+")
        self.addCleanup(self.log.close)
        self.agent = subprocess.Popen(
            scaler_command(SERVER, self.port, self.probe, role="agent", nvml_library=SIM,
                           extra=["--kubelet-socket", self.sock, "--node-name", "gpu-node-1"]),
            env=child_env(scenario=self.sim.path), stdout=self.log, stderr=subprocess.STDOUT)
        self.addCleanup(self.stop, self.agent)
        self.assertTrue(wait_for(self.ready, 10), self.output())

    def write_state(self, holders):
        pods = {}
        for ns, pod, dev in holders:
            pods.setdefault((ns, pod), []).append(dev)
        doc = {"pods": [{"namespace": ns, "name": pod, "containers": [
            {"name": "main", "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": devs}]}]}
            for (ns, pod), devs in pods.items()]}
        tmp = self.state + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, self.state)

    def ready(self):
        return http_ok(self.probe, "/readyz")

    def output(self):
        self.log.seek(0)
        return self.log.read()[-3000:]

    @staticmethod
    def stop(p):
        stop_process(p, 5)

    def watch(self, count):
        p = subprocess.run([TOOL, "127.0.0.1:%d" % self.port, str(count)], capture_output=True,
                           text=True, timeout=30)
        lines = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
        self.assertEqual(p.returncode, 0, (lines, p.stderr, self.output()))
        return [l for l in lines if "node" in l]

    def test_watch_streams_snapshots_with_pod_attribution(self):
        def attributed():
            snaps = self.watch(1)
            return snaps if snaps[0]["pods_known"] and len(snaps[0]["pods"]) == 2 else None
        snaps = wait_for(attributed, 5)
        self.assertIsNotNone(snaps, self.output())
        s = snaps[0]
        self.assertEqual(s["node"], "gpu-node-1")
        self.assertEqual([g["uuid"] for g in s["gpus"]], [d["uuid"] for d in self.devs])
        holders = {(p["namespace"], p["pod"]): p["devices"] for p in s["pods"]}
        self.assertEqual(holders[("ml", "vllm-0")], [self.devs[0]["uuid"]])
        # time-slicing replica suffix stripped by the kubelet-side map
        self.assertEqual(holders[("other", "batch-7")], [self.devs[1]["uuid"]])
        # several snapshots in a row, sequence increasing
        snaps = self.watch(3)
        self.assertEqual(len(snaps), 3)
        self.assertLess(snaps[0]["seq"], snaps[2]["seq"])

    def test_kubelet_down_makes_attribution_unknown_not_empty(self):
        self.stop(self.kubelet)
        def unknown():
            s = self.watch(1)[0]
            return s if not s["pods_known"] else None
        s = wait_for(unknown, 5)
        self.assertIsNotNone(s, self.output())
        self.assertTrue(s["pods_error"])
        self.assertEqual(s["pods"], [])

    def test_agent_still_answers_keda_like_standalone(self):
        p = subprocess.run([SERVER, "query", "--address", "127.0.0.1:%d" % self.port,
                            "--metadata", "metricType=gpu_utilization", "--metadata",
                            "targetValue=50"], capture_output=True, text=True, timeout=20)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("value 30 ", p.stdout)  # 10 + 20


if __name__ == "__main__":
    unittest.main(verbosity=2)
