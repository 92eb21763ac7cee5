#!/usr/bin/env python3
"""Shared GPUs end to end: two pods time-slice one GPU (the fake kubelet
hands out GPU-<uuid>::0 and ::1), the NVML stand-in lists their processes
with per-process utilisation and memory, the real agent reads a fake /proc
tree (--proc-root) to find each process's pod, and the real aggregator
gives each pod its own share, which sums to the GPU's utilisation instead
of counting the GPU once per pod. Loopback and unix sockets only.

Environment (CTest): KEDA_GPU_SCALER, NVML_SIM_LIBRARY, FAKE_KUBELET,
KGS_GO_CLIENT.
"""
import json
import os
import select
import subprocess
import tempfile
import unittest

from fake_kube_api import FakeKubeAPI
from kgs_sim import Sim, device
from kgs_util import child_env, free_port, http_ok, scaler_command, stop_process, wait_for

SERVER = os.environ["KEDA_GPU_SCALER"]
SIM = os.environ["NVML_SIM_LIBRARY"]
KUBELET = os.environ["FAKE_KUBELET"]
CLIENT = os.environ["KGS_GO_CLIENT"]
TOKEN = "sharing-token"
GIB = 1 << 30
CID = "0123456789abcdef" * 4


class Sharing(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        cls.api = FakeKubeAPI(token=TOKEN)
        cls.api.start()
        token_file = os.path.join(d, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN)
        uid_a = cls.api.add_pod("ml", "vllm-a", labels={"app": "vllm"}, node="node-a",
                                phase="Running")
        uid_b = cls.api.add_pod("ml", "vllm-b", labels={"app": "vllm"}, node="node-a",
                                phase="Running")
        # The GPU is 60 % busy: 35 from vllm-a's process, 25 from vllm-b's;
        # a host process (the MPS daemon, say) holds a context and is idle.
        dev = device(0, gpu_util=60)
        dev["processes"] = [
            {"pid": 4001, "sm_util": 35, "mem_util": 7, "used_memory_bytes": 2 * GIB},
            {"pid": 4002, "sm_util": 25, "mem_util": 3, "used_memory_bytes": 1 * GIB},
            {"pid": 4003, "used_memory_bytes": 64 << 20},
        ]
        cls.uuid = dev["uuid"]
        cls.sim = Sim({"devices": [dev]})
        # /proc/<pid>/cgroup as nodes write it: vllm-a under the systemd
        # driver (cgroup v2, relative to the agent's cgroup namespace),
        # vllm-b under cgroupfs (cgroup v1 lines), the host process in a
        # system slice.
        proc = os.path.join(d, "proc")
        cgroups = {
            4001: "0::/../../kubepods-burstable-pod%s.slice/cri-containerd-%s.scope\n"
                  % (uid_a.replace("-", "_"), CID),
            4002: "12:memory:/kubepods/burstable/pod%s/%s\n1:name=systemd:/kubepods/burstable/"
                  "pod%s/%s\n0::/\n" % (uid_b, CID, uid_b, CID),
            4003: "0::/system.slice/nvidia-mps.service\n",
        }
        for pid, text in cgroups.items():
            os.makedirs(os.path.join(proc, str(pid)))
            with open(os.path.join(proc, str(pid), "cgroup"), "w") as f:
                f.write(text)
        # The fake kubelet: time-slicing replicas ::0 and ::1 of the one GPU.
        sock = os.path.join(d, "kubelet.sock")
        state = os.path.join(d, "state.json")
        with open(state, "w") as f:
            json.dump({"pods": [
                {"namespace": "ml", "name": name, "containers": [
                    {"name": "main", "devices": [{"resource_name": "nvidia.com/gpu",
                                                  "device_ids": [cls.uuid + "::%d" % k]}]}]}
                for k, name in enumerate(["vllm-a", "vllm-b"])]}, f)
        cls.kubelet = subprocess.Popen([KUBELET, "-socket", sock, "-state", state],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        ready, _, _ = select.select([cls.kubelet.stdout], [], [], 10)
        line = cls.kubelet.stdout.readline() if ready else b""
        cls.kubelet.stdout.close()
        if not line.startswith(b"listening"):
            raise AssertionError("fake kubelet did not start")
        cls.agent_port, agent_probe = free_port(), free_port()
        cls.agent_log = open(os.path.join(d, "agent.log"), "w+")
        cls.agent = subprocess.Popen(
            scaler_command(SERVER, cls.agent_port, agent_probe, role="agent", nvml_library=SIM,
                           extra=["--kubelet-socket", sock, "--node-name", "node-a",
                                  "--proc-root", proc]),
            env=child_env(scenario=cls.sim.path), stdout=cls.agent_log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: http_ok(agent_probe, "/readyz"), 10):
            raise AssertionError("agent not ready")
        cls.port, probe = free_port(), free_port()
        cls.agg_log = open(os.path.join(d, "agg.log"), "w+")
        cls.agg = subprocess.Popen(
            scaler_command(SERVER, cls.port, probe, role="aggregator",
                           extra=["--agents", "127.0.0.1:%d" % cls.agent_port, "--kube-api",
                                  cls.api.url, "--kube-token-file", token_file]),
            env=child_env(), stdout=cls.agg_log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: http_ok(probe, "/readyz"), 15):
            cls.agg_log.seek(0)
            raise AssertionError("aggregator not ready:\n" + cls.agg_log.read()[-3000:])

    @classmethod
    def tearDownClass(cls):
        stop_process(cls.agg, 5)
        stop_process(cls.agent, 5)
        stop_process(cls.kubelet, 5)
        cls.api.stop()
        cls.sim.close()
        cls.agg_log.close()
        cls.agent_log.close()
        cls.tmp.cleanup()

    def poll(self, md):
        p = subprocess.run([CLIENT, "poll", "-addr", "127.0.0.1:%d" % self.port, "-namespace",
                            "ml", "-max-time", "20s"] +
                           sum((["-metadata", "%s=%s" % kv] for kv in md.items()), []),
                           capture_output=True, text=True, timeout=30)
        return json.loads(p.stdout.splitlines()[0])

    def settle(self, md, want, timeout=10):
        last = {}

        def check():
            last.clear()
            last.update(self.poll(md))
            return "error" not in last and abs(last.get("metricValueFloat", -1) - want) < 1e-6
        ok = wait_for(check, timeout, interval=0.1)
        self.assertTrue(ok, "wanted %s within %d s, last answer: %s" % (want, timeout, last))
        return last

    def test_each_pod_gets_its_own_share_which_sums_to_the_gpus(self):
        md = {"metricType": "gpu_utilization", "targetValue": "50", "podSelector": "app=vllm"}
        self.settle(md, 60)  # 35 + 25 = the GPU's 60 (gpuSharing auto)
        self.settle(dict(md, aggregation="max"), 35)  # vllm-a's own share
        self.settle(dict(md, aggregation="min"), 25)  # vllm-b's
        # whole: each pod is given the whole GPU, so the GPU counts twice.
        self.settle(dict(md, gpuSharing="whole"), 120)

    def test_memory_share_is_each_pods_processes(self):
        md = {"metricType": "memory_used_mib", "targetValue": "1024", "podSelector": "app=vllm",
              "gpuSharing": "share"}
        self.settle(md, 3072)  # 2 GiB + 1 GiB; not the host process's 64 MiB

    def test_share_of_a_whole_gpu_metric_is_refused_naming_it(self):
        md = {"metricType": "temperature", "targetValue": "80", "podSelector": "app=vllm",
              "gpuSharing": "share"}
        r = self.poll(md)
        self.assertIn("error", r)
        self.assertEqual(r["error"]["code"], "INVALID_ARGUMENT")
        self.assertIn("metricType temperature", r["error"]["message"])
        self.assertIn("whole GPU only", r["error"]["message"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
