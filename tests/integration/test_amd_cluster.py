#!/usr/bin/env python3
"""An AMD cluster end to end, both readers and two aggregator replicas.

node-s: an agent on the amdgpu sysfs reader (tests/fixtures/amdgpu: card1 an
MI300X-like GPU at 0000:19:00.0 with 20 GiB of VRAM used, card0 a Radeon at
0000:c1:00.0 with 1 GiB); its fake kubelet gives pod a-plugin the MI300X
through AMD's device plugin (amd.com/gpu, a PCI address) and pod a-dra the
Radeon through AMD's DRA driver (gpu.amd.com, a ResourceSlice naming the
address).

node-m: an agent on amd-smi, ROCm's library replaced by the stand-in
(libamdsmi-sim.so under the name libamd_smi.so, scenario
sim/amdsmi/scenarios/amd-mi300x-8.json: GPU 0 at 0000:0c:00.0 with 20,480
MiB used); its kubelet gives pod b-plugin that GPU.

Two aggregators subscribe to both agents and watch one fake Kubernetes API;
grpc-go, as KEDA, asks each: both answer the workload's sum (41,984 MiB)
and each pod's own GPU, the same.

Environment (CTest): KEDA_GPU_SCALER, FAKE_KUBELET, KGS_GO_CLIENT,
KGS_SOURCE_DIR, KGS_BUILD_DIR.
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
SOURCE_DIR = os.environ["KGS_SOURCE_DIR"]
BUILD_DIR = os.environ["KGS_BUILD_DIR"]
FIXTURE = os.path.join(SOURCE_DIR, "tests", "fixtures", "amdgpu")
AMDSMI_SIM = os.path.join(BUILD_DIR, "sim", "amdsmi", "libamdsmi-sim.so")
SCENARIO = os.path.join(SOURCE_DIR, "sim", "amdsmi", "scenarios", "amd-mi300x-8.json")
TOKEN = "amd-cluster"
DRIVER = "gpu.amd.com"


class AMDCluster(unittest.TestCase):
    @classmethod
    def kubelet(cls, name, pods):
        sock = os.path.join(cls.tmp.name, name + ".sock")
        state = os.path.join(cls.tmp.name, name + ".json")
        with open(state, "w") as f:
            json.dump({"pods": pods}, f)
        p = subprocess.Popen([KUBELET, "-socket", sock, "-state", state],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        ready, _, _ = select.select([p.stdout], [], [], 10)
        line = p.stdout.readline() if ready else b""
        p.stdout.close()
        if not line.startswith(b"listening"):
            raise AssertionError("fake kubelet %s did not start" % name)
        cls.procs.append(p)
        return sock

    @classmethod
    def start(cls, name, args, env, role, probe_path="/readyz", timeout=15):
        port, probe = free_port(), free_port()
        log = open(os.path.join(cls.tmp.name, name + ".log"), "w+")
        p = subprocess.Popen(scaler_command(SERVER, port, probe, role=role, extra=args), env=env,
                             stdout=log, stderr=subprocess.STDOUT)
        cls.procs.append(p)
        cls.logs.append(log)
        if not wait_for(lambda: http_ok(probe, probe_path), timeout):
            log.seek(0)
            raise AssertionError("%s not ready:\n%s" % (name, log.read()[-3000:]))
        return port

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.procs, cls.logs = [], []
        try:
            cls.setup_cluster()
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def setup_cluster(cls):
        t = cls.tmp.name
        cls.api = FakeKubeAPI(token=TOKEN).start()
        token_file = os.path.join(t, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN)
        claim = {"claim_name": "a-dra-gpus", "claim_namespace": "ml",
                 "claim_resources": [{"driver_name": DRIVER, "pool_name": "node-s",
                                      "device_name": "gpu-0-128",
                                      "cdi_devices": ["k8s.%s/claim=gpu-0-128" % DRIVER]}]}
        sock_s = cls.kubelet("node-s", [
            {"namespace": "ml", "name": "a-plugin", "containers": [
                {"name": "main", "devices": [{"resource_name": "amd.com/gpu",
                                              "device_ids": ["0000:19:00.0"]}]}]},
            {"namespace": "ml", "name": "a-dra", "containers": [
                {"name": "main", "devices": [], "dynamic_resources": [claim]}]}])
        sock_m = cls.kubelet("node-m", [
            {"namespace": "ml", "name": "b-plugin", "containers": [
                {"name": "main", "devices": [{"resource_name": "amd.com/gpu",
                                              "device_ids": ["0000:0c:00.0"]}]}]}])
        agent_s = cls.start("agent-s", ["--gpu-backend", "amdgpu-sysfs",
                                        "--sys-root", os.path.join(FIXTURE, "sys"),
                                        "--proc-root", os.path.join(FIXTURE, "proc"),
                                        "--kubelet-socket", sock_s, "--node-name", "node-s"],
                            child_env(), "agent")
        # amd-smi is found by its name, as on a node: the stand-in under it.
        lib_dir = os.path.join(t, "rocm-lib")
        os.makedirs(lib_dir)
        os.symlink(AMDSMI_SIM, os.path.join(lib_dir, "libamd_smi.so"))
        cls.agent_m_log_index = len(cls.logs)
        agent_m = cls.start("agent-m", ["--gpu-backend", "auto", "--kubelet-socket", sock_m,
                                        "--node-name", "node-m"],
                            child_env(LD_LIBRARY_PATH=lib_dir, AMDSMI_SIM_SCENARIO=SCENARIO),
                            "agent")
        cls.api.add_resource_slice("node-s-" + DRIVER + "-x1", DRIVER, "node-s", node="node-s",
                                   devices=[("gpu-0-128", {"type": {"string": "amdgpu"},
                                                           "pciAddr": {"string": "0000:c1:00.0"}})])
        for name, node, extra in (("a-plugin", "node-s", {"gpus": "1", "gpu_resource": "amd.com/gpu"}),
                                  ("a-dra", "node-s", {"gpus": None, "claims": 1}),
                                  ("b-plugin", "node-m", {"gpus": "1", "gpu_resource": "amd.com/gpu"})):
            cls.api.add_pod("ml", name, labels={"app": "llm", "pod": name}, node=node,
                            phase="Running", **extra)
        agents = "127.0.0.1:%d,127.0.0.1:%d" % (agent_s, agent_m)
        cls.replicas = [cls.start("aggregator-%d" % i,
                                  ["--agents", agents, "--kube-api", cls.api.url,
                                   "--kube-token-file", token_file],
                                  child_env(), "aggregator") for i in range(2)]

    @classmethod
    def tearDownClass(cls):
        for p in reversed(cls.procs):
            stop_process(p, 5)
        for log in cls.logs:
            log.close()
        if getattr(cls, "api", None):
            cls.api.stop()
        cls.tmp.cleanup()

    def poll(self, port, md):
        p = subprocess.run([CLIENT, "poll", "-addr", "127.0.0.1:%d" % port, "-namespace", "ml",
                            "-max-time", "20s"] +
                           sum((["-metadata", "%s=%s" % kv] for kv in md.items()), []),
                           capture_output=True, text=True, timeout=30)
        return json.loads(p.stdout.splitlines()[0])

    def settle_everywhere(self, md, want):
        """Every replica answers want (MiB), without an error."""
        for port in self.replicas:
            last = {}

            def check():
                last.clear()
                last.update(self.poll(port, md))
                return "error" not in last and last.get("metricValueFloat") == want
            self.assertTrue(wait_for(check, 15, interval=0.05),
                            "replica :%d wanted %s, last answer %s" % (port, want, last))

    MEM = {"metricType": "memory_used_mib", "targetValue": "1024", "podAggregation": "sum"}

    def test_the_amd_smi_agent_chose_amd_smi(self):
        log = self.logs[self.agent_m_log_index]
        log.seek(0)
        self.assertIn("amdsmi:", log.read())

    def test_every_replica_answers_each_pod_and_the_workload_alike(self):
        self.settle_everywhere(dict(self.MEM, podSelector="pod=a-plugin"), 20 * 1024)
        self.settle_everywhere(dict(self.MEM, podSelector="pod=a-dra"), 1024)
        self.settle_everywhere(dict(self.MEM, podSelector="pod=b-plugin"), 20480)
        self.settle_everywhere(dict(self.MEM, podSelector="app=llm"), 20 * 1024 + 1024 + 20480)


if __name__ == "__main__":
    unittest.main()
