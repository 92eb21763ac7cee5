#!/usr/bin/env python3
"""AMD pod attribution end to end: an agent reading the fake amdgpu sysfs
tree (tests/fixtures/amdgpu: card1 an MI300X-like GPU at 0000:19:00.0 with
20 GiB of VRAM used and a unique_id, card0 a Radeon at 0000:c1:00.0 with
1 GiB and none), a fake kubelet, one aggregator, a fake Kubernetes API,
grpc-go as KEDA's client.

AMD's device plugin registers "amd.com/gpu" with PCI addresses as device
ids (ROCm/k8s-device-plugin internal/pkg/amdgpu/amdgpu.go GetAMDGPUs), and
AMD's DRA driver (gpu.amd.com) publishes devices whose "pciAddr" /
"resource.kubernetes.io/pciBusID" attribute is the address
(ROCm/k8s-gpu-dra-driver cmd/gpu-kubeletplugin/deviceinfo.go): both reach
the GPU by its address. A partition is a gap naming it, never the GPU's
whole value.

Environment (CTest): KEDA_GPU_SCALER, FAKE_KUBELET, KGS_GO_CLIENT,
KGS_SOURCE_DIR.
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
KUBELET = os.environ["FAKE_KUBELET"]
CLIENT = os.environ["KGS_GO_CLIENT"]
FIXTURE = os.path.join(os.environ["KGS_SOURCE_DIR"], "tests", "fixtures", "amdgpu")
TOKEN = "amd-token"
NODE = "node-m"
DRIVER = "gpu.amd.com"

# What AMD's DRA driver publishes for the Radeon (older attribute names) and
# for a CPX partition of the MI300X.
SLICE_DEVICES = [
    ("gpu-0-128", {"type": {"string": "amdgpu"},
                   "pciAddr": {"string": "0000:c1:00.0"},
                   "partitionProfile": {"string": ""}}),
    ("gpu-9-200", {"type": {"string": "amdgpu-partition"},
                   "parentPciAddr": {"string": "0000:19:00.0"},
                   "partitionProfile": {"string": "cpx_nps4"}}),
]


class AMDAttribution(unittest.TestCase):
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
        cls.set_pods([])
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
                           extra=["--gpu-backend", "amdgpu-sysfs",
                                  "--sys-root", os.path.join(FIXTURE, "sys"),
                                  "--proc-root", os.path.join(FIXTURE, "proc"),
                                  "--kubelet-socket", cls.sock, "--node-name", NODE]),
            env=child_env(), stdout=cls.agent_log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: http_ok(cls.agent_probe, "/readyz"), 10):
            cls.agent_log.seek(0)
            raise AssertionError("agent not ready:\n" + cls.agent_log.read()[-3000:])
        cls.api.add_resource_slice(NODE + "-" + DRIVER + "-k2q9d", DRIVER, NODE, node=NODE,
                                   devices=SLICE_DEVICES)
        cls.api.add_pod("ml", "vllm-plugin", labels={"app": "vllm"}, node=NODE,
                        phase="Running", gpus="1", gpu_resource="amd.com/gpu")
        cls.api.add_pod("ml", "vllm-dra", labels={"app": "vllm"}, node=NODE,
                        phase="Running", gpus=None, claims=1)
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

    @classmethod
    def set_pods(cls, pods):
        tmp = cls.state + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"pods": pods}, f)
        os.replace(tmp, cls.state)

    def assign(self, plugin_id, dra_device, resource="amd.com/gpu"):
        """vllm-plugin holds plugin_id under resource; vllm-dra a claim for
        dra_device from AMD's DRA driver."""
        claim = {"claim_name": "vllm-dra-gpus", "claim_namespace": "ml",
                 "claim_resources": [{"driver_name": DRIVER, "pool_name": NODE,
                                      "device_name": dra_device,
                                      "cdi_devices": ["k8s.%s/claim=%s" % (DRIVER, dra_device)]}]}
        self.set_pods([
            {"namespace": "ml", "name": "vllm-plugin", "containers": [
                {"name": "main", "devices": [{"resource_name": resource,
                                              "device_ids": [plugin_id]}]}]},
            {"namespace": "ml", "name": "vllm-dra", "containers": [
                {"name": "main", "devices": [], "dynamic_resources": [claim]}]},
        ])

    def poll(self, md):
        p = subprocess.run([CLIENT, "poll", "-addr", "127.0.0.1:%d" % self.port, "-namespace",
                            "ml", "-max-time", "20s"] +
                           sum((["-metadata", "%s=%s" % kv] for kv in md.items()), []),
                           capture_output=True, text=True, timeout=30)
        return json.loads(p.stdout.splitlines()[0])

    def settle(self, md, check_fn, what, timeout=10):
        last = {}

        def check():
            last.clear()
            last.update(self.poll(md))
            return check_fn(last)
        self.assertTrue(wait_for(check, timeout, interval=0.05),
                        "wanted %s, last answer %s" % (what, last))
        return dict(last)

    MEM = {"metricType": "memory_used_mib", "targetValue": "1024", "podSelector": "app=vllm",
           "podAggregation": "sum"}

    def test_plugin_and_dra_devices_are_attributed_by_pci_address(self):
        # The MI300X through the device plugin (20 GiB), the Radeon through
        # a DRA claim (1 GiB, and no unique_id to name it by).
        self.assign("0000:19:00.0", "gpu-0-128")
        self.settle(self.MEM, lambda r: r.get("metricValueFloat") == 21 * 1024
                    and "error" not in r, 21 * 1024)
        r = self.poll(dict(self.MEM, aggregation="max"))
        self.assertEqual(r.get("metricValueFloat"), 20 * 1024, r)
        # The aggregator knows the GPUs are AMD's (the vendor crosses the
        # wire): an NVIDIA-only metric gets the AMD hint, not NVML's.
        want = "NVIDIA GPM metrics, which an AMD GPU"
        r = self.settle(dict(self.MEM, metricType="sm_active"),
                        lambda r: "error" in r and want in r["error"]["message"],
                        "an error with %r" % want)
        self.assertIn("(AMD reader ", r["error"]["message"])

    def test_a_partition_is_a_gap_never_the_whole_gpu(self):
        self.assign("0000:19:00.0", "gpu-9-200")
        want = ("(pod ml/vllm-dra): device amdgpu-partition:0000:19:00.0/cpx_nps4 is a "
                "partition of an AMD GPU")
        r = self.settle(self.MEM, lambda r: "error" in r and want in r["error"]["message"],
                        "an error with %r" % want)
        self.assertEqual(r["error"]["code"], "UNAVAILABLE")
        # The plugin's partition id alike; partialData ignore leaves the pod out.
        self.assign("amdgpu_xcp_3", "gpu-0-128")
        r = self.settle(self.MEM, lambda r: "error" in r and "amdgpu_xcp_3" in r["error"]["message"],
                        "an error naming amdgpu_xcp_3")
        self.settle(dict(self.MEM, partialData="ignore"),
                    lambda r: r.get("metricValueFloat") == 1024 and "error" not in r, 1024)
        # The mixed naming strategy: under amd.com/cpx_nps4 the GPU's own
        # address is its first partition, not the GPU.
        self.assign("0000:19:00.0", "gpu-0-128", resource="amd.com/cpx_nps4")
        want = "(pod ml/vllm-plugin): device amdgpu-partition:0000:19:00.0/cpx_nps4 is a partition"
        r = self.settle(self.MEM, lambda r: "error" in r and want in r["error"]["message"],
                        "an error with %r" % want)
        self.assertEqual(r["error"]["code"], "UNAVAILABLE")


if __name__ == "__main__":
    unittest.main()
