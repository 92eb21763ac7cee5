#!/usr/bin/env python3
"""One node, two vendors, end to end: `--gpu-backend nvml+amdgpu-sysfs` reads
the NVML stand-in's four H100s (sim/scenarios/idle-4xh100.json) and the fake
amdgpu sysfs tree's two AMD GPUs (tests/fixtures/amdgpu: card1 an MI300X-like
GPU at 0000:19:00.0 with 20 GiB of VRAM used, card0 a Radeon at 0000:c1:00.0
with 1 GiB) as one node.

gpu-metrics lists all six, the NVIDIA GPUs at NVML's indexes and the AMD ones
after them, each with its vendor. An agent in the same mode, a fake kubelet
holding one pod on an H100 (nvidia.com/gpu, a UUID) and one on the MI300X
(amd.com/gpu, a PCI address), one aggregator and grpc-go as KEDA: each
workload gets its own GPU's value, and a workload over both pods their sum.

Environment (CTest): KEDA_GPU_SCALER, GPU_METRICS, NVML_SIM_LIBRARY,
FAKE_KUBELET, KGS_GO_CLIENT, KGS_SOURCE_DIR.
"""
import json
import os
import select
import subprocess
import tempfile
import unittest

from fake_kube_api import FakeKubeAPI
from kgs_util import child_env, free_port, http_ok, scaler_command, stop_process, wait_for

SERVER = os.environ["KEDA_GPU_SCALER"]
GPU_METRICS = os.environ["GPU_METRICS"]
SIM = os.environ["NVML_SIM_LIBRARY"]
KUBELET = os.environ["FAKE_KUBELET"]
CLIENT = os.environ["KGS_GO_CLIENT"]
SOURCE_DIR = os.environ["KGS_SOURCE_DIR"]
FIXTURE = os.path.join(SOURCE_DIR, "tests", "fixtures", "amdgpu")
SCENARIO = os.path.join(SOURCE_DIR, "sim", "scenarios", "idle-4xh100.json")
TOKEN = "mixed-token"
NODE = "node-mixed"
H100 = "GPU-9e4a0b71-2d6c-4f85-b3a2-6c1e7d9f0b54"  # the scenario's second H100
H100_USED_MIB = 4718592 / 1048576  # its memory_used_bytes
MI300X = "0000:19:00.0"
MIXED = ["--gpu-backend", "nvml+amdgpu-sysfs", "--nvml-library", SIM,
         "--sys-root", os.path.join(FIXTURE, "sys"), "--proc-root", os.path.join(FIXTURE, "proc")]


class MixedNodeCLI(unittest.TestCase):
    def test_gpu_metrics_lists_both_vendors_in_one_node(self):
        r = subprocess.run([GPU_METRICS, "--format", "json"] + MIXED,
                           env=child_env(scenario=SCENARIO), capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        devs = doc["devices"]
        self.assertEqual([d["vendor"] for d in devs], ["nvidia"] * 4 + ["amd"] * 2, devs)
        self.assertEqual([d["index"] for d in devs], [0, 1, 2, 3, 4, 5])
        self.assertEqual(devs[1]["uuid"], H100)
        self.assertIn(MI300X, [d.get("pci_bus_id") or d["uuid"] for d in devs[4:]])
        # the driver line is NVIDIA's (the sysfs reader reports no version of its own)
        self.assertTrue(doc["driver_version"].startswith("560.35.03"), doc["driver_version"])

    def test_an_unknown_pair_is_refused_by_name(self):
        r = subprocess.run([GPU_METRICS, "--gpu-backend", "amdsmi+nvml"], env=child_env(),
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("nvml+amdsmi or nvml+amdgpu-sysfs", r.stderr)


class MixedNodeCluster(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        t = cls.tmp.name
        cls.api = FakeKubeAPI(token=TOKEN).start()
        token_file = os.path.join(t, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN)
        cls.sock = os.path.join(t, "kubelet.sock")
        cls.state = os.path.join(t, "state.json")
        with open(cls.state, "w") as f:
            json.dump({"pods": [
                {"namespace": "ml", "name": "vllm-nv", "containers": [
                    {"name": "main", "devices": [{"resource_name": "nvidia.com/gpu",
                                                  "device_ids": [H100]}]}]},
                {"namespace": "ml", "name": "vllm-amd", "containers": [
                    {"name": "main", "devices": [{"resource_name": "amd.com/gpu",
                                                  "device_ids": [MI300X]}]}]},
            ]}, f)
        cls.kubelet = subprocess.Popen([KUBELET, "-socket", cls.sock, "-state", cls.state],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        ready, _, _ = select.select([cls.kubelet.stdout], [], [], 10)
        line = cls.kubelet.stdout.readline() if ready else b""
        cls.kubelet.stdout.close()
        if not line.startswith(b"listening"):
            raise AssertionError("fake kubelet did not start")
        cls.agent_port, cls.agent_probe = free_port(), free_port()
        cls.agent_log = open(os.path.join(t, "agent.log"), "w+")
        cls.agent = subprocess.Popen(
            scaler_command(SERVER, cls.agent_port, cls.agent_probe, role="agent",
                           extra=MIXED + ["--kubelet-socket", cls.sock, "--node-name", NODE]),
            env=child_env(scenario=SCENARIO), stdout=cls.agent_log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: http_ok(cls.agent_probe, "/readyz"), 10):
            cls.agent_log.seek(0)
            raise AssertionError("agent not ready:\n" + cls.agent_log.read()[-3000:])
        cls.api.add_pod("ml", "vllm-nv", labels={"app": "vllm", "gpu": "nvidia"}, node=NODE,
                        phase="Running", gpus="1")
        cls.api.add_pod("ml", "vllm-amd", labels={"app": "vllm", "gpu": "amd"}, node=NODE,
                        phase="Running", gpus="1", gpu_resource="amd.com/gpu")
        cls.port, cls.probe = free_port(), free_port()
        cls.log = open(os.path.join(t, "aggregator.log"), "w+")
        cls.agg = subprocess.Popen(
            scaler_command(SERVER, cls.port, cls.probe, role="aggregator",
                           extra=["--agents", "127.0.0.1:%d" % cls.agent_port,
                                  "--kube-api", cls.api.url,
                                  "--kube-token-file", token_file]),
            env=child_env(), stdout=cls.log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: http_ok(cls.probe, "/readyz"), 15):
            cls.log.seek(0)
            raise AssertionError("aggregator not ready:\n" + cls.log.read()[-3000:])

    @classmethod
    def tearDownClass(cls):
        stop_process(cls.agg, 5)
        stop_process(cls.agent, 5)
        stop_process(cls.kubelet, 5)
        cls.log.close()
        cls.agent_log.close()
        cls.api.stop()
        cls.tmp.cleanup()

    def poll(self, md):
        p = subprocess.run([CLIENT, "poll", "-addr", "127.0.0.1:%d" % self.port, "-namespace",
                            "ml", "-max-time", "20s"] +
                           sum((["-metadata", "%s=%s" % kv] for kv in md.items()), []),
                           capture_output=True, text=True, timeout=30)
        return json.loads(p.stdout.splitlines()[0])

    def settle(self, md, want):
        last = {}

        def check():
            last.clear()
            last.update(self.poll(md))
            return "error" not in last and abs(last.get("metricValueFloat", -1) - want) < 1e-6
        self.assertTrue(wait_for(check, 10, interval=0.05), "wanted %s, last answer %s" % (want, last))

    def test_the_agent_logs_the_mixed_backend(self):
        self.agent_log.seek(0)
        self.assertIn("mixed: nvml", self.agent_log.read())

    def test_each_vendors_pod_gets_its_own_gpu_and_a_workload_over_both_the_sum(self):
        md = {"metricType": "memory_used_mib", "targetValue": "1024", "podAggregation": "sum"}
        self.settle(dict(md, podSelector="app=vllm,gpu=nvidia"), H100_USED_MIB)
        self.settle(dict(md, podSelector="app=vllm,gpu=amd"), 20 * 1024)
        self.settle(dict(md, podSelector="app=vllm"), 20 * 1024 + H100_USED_MIB)


if __name__ == "__main__":
    unittest.main()
