#!/usr/bin/env python3
"""DRA end to end: GPUs handed out by resource claims (Kubernetes Dynamic
Resource Allocation) instead of the device plugin. Two agents (simulated
nodes, fake kubelets that report ContainerResources.dynamic_resources with
the kubelet's field numbers), one aggregator, a fake Kubernetes API serving
the pods and NVIDIA-style ResourceSlices (gpu.nvidia.com: "gpu-N" and
"gpu-N-mig-..." devices with a "uuid" attribute), grpc-go as KEDA's client.

The cluster: node-a has two whole GPUs, node-b one A100-like GPU split into
two MIG instances. vllm-a's claim (GPU 0) is shared by two of its
containers, vllm-b has GPU 1, vllm-c and vllm-d one MIG instance each. The
same pods on the same devices through the device plugin must give the same
totals; a claim no ResourceSlice explains is UNAVAILABLE naming the pod
(skipped with partialData: ignore), never 0.

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
TOKEN = "dra-token"
DRIVER = "gpu.nvidia.com"
GiB = 1 << 30


def mig_gpu(i):
    d = device(i, memory_used_bytes=0)
    d["name"] = "NVIDIA A100-SXM4-80GB"
    d["mig"] = {"enabled": True, "instances": [
        {"uuid": "MIG-4e8a2c61-0f3d-5b97-a6e1-8c2d4f9b0a5%d" % k, "profile": "3g.40gb",
         "gpu_instance_id": 1 + k, "compute_instance_id": 0,
         "memory_total_bytes": 40 * GiB,
         "values": {"memory_used_bytes": (6 + 4 * k) * GiB, "sm_active": 30.0 + k}}
        for k in range(2)]}
    return d


class Node:
    """A simulated GPU node: NVML stand-in, fake kubelet, agent. `names`
    maps a DRA device name to the UUID NVML reports for it."""

    def __init__(self, tmp, name, devs, names, index_ids):
        self.name, self.devs, self.names, self.index_ids = name, devs, names, index_ids
        self.tmp = os.path.join(tmp, name)
        os.makedirs(self.tmp)
        self.sim = Sim({"devices": devs})
        self.sock = os.path.join(self.tmp, "kubelet.sock")
        self.state = os.path.join(self.tmp, "state.json")
        self.write_state([])
        self.kubelet = subprocess.Popen([KUBELET, "-socket", self.sock, "-state", self.state],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        ready, _, _ = select.select([self.kubelet.stdout], [], [], 10)
        line = self.kubelet.stdout.readline() if ready else b""
        self.kubelet.stdout.close()
        if not line.startswith(b"listening"):
            raise AssertionError("fake kubelet of %s did not start" % name)
        self.port, self.probe = free_port(), free_port()
        self.log = open(os.path.join(self.tmp, "agent.log"), "w+")
        self.agent = subprocess.Popen(
            scaler_command(SERVER, self.port, self.probe, role="agent", nvml_library=SIM,
                           extra=["--kubelet-socket", self.sock, "--node-name", name]),
            env=child_env(scenario=self.sim.path), stdout=self.log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: http_ok(self.probe, "/readyz"), 10):
            raise AssertionError("agent %s not ready" % name)

    def write_state(self, pods):
        tmp = self.state + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"pods": pods}, f)
        os.replace(tmp, self.state)

    def set_pods(self, holders, dra, index_ids=False):
        """holders: [(pod, container, [device names])]. dra: report them as
        claims (driver, pool = node, device name); else as the device
        plugin's nvidia.com/gpu ids: the UUIDs, or with index_ids the NVML
        indexes other plugins register ("0", and "<gpu>:<mig>")."""
        pods = {}
        for pod, ctr, names in holders:
            if dra:
                claim = {"claim_name": pod + "-gpus", "claim_namespace": "ml",
                         "claim_resources": [
                             {"driver_name": DRIVER, "pool_name": self.name, "device_name": n,
                              "cdi_devices": ["k8s.%s/claim=%s" % (DRIVER, n)]} for n in names]}
                c = {"name": ctr, "devices": [], "dynamic_resources": [claim]}
            else:
                ids = [self.index_ids[n] if index_ids else self.names[n] for n in names]
                c = {"name": ctr, "devices": [{"resource_name": "nvidia.com/gpu",
                                               "device_ids": ids}]}
            pods.setdefault(pod, []).append(c)
        self.write_state([{"namespace": "ml", "name": p, "containers": cs}
                          for p, cs in pods.items()])

    def slice_devices(self):
        return sorted(self.names.items())

    def close(self):
        stop_process(self.agent, 5)
        stop_process(self.kubelet, 5)
        self.sim.close()
        self.log.close()


class DRA(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.api = FakeKubeAPI(token=TOKEN).start()
        token_file = os.path.join(cls.tmp.name, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN)
        a = [device(0, gpu_util=60, memory_used_bytes=3 * GiB),
             device(1, gpu_util=20, memory_used_bytes=5 * GiB)]
        b = [mig_gpu(2)]
        migs = b[0]["mig"]["instances"]
        cls.nodes = [
            Node(cls.tmp.name, "node-a", a, {"gpu-0": a[0]["uuid"], "gpu-1": a[1]["uuid"]},
                 {"gpu-0": "0", "gpu-1": "1", "gpu-7": "7"}),
            Node(cls.tmp.name, "node-b", b, {"gpu-0": b[0]["uuid"],
                                             "gpu-0-mig-9-0-4": migs[0]["uuid"],
                                             "gpu-0-mig-9-4-4": migs[1]["uuid"]},
                 {"gpu-0": "0", "gpu-0-mig-9-0-4": "0:0", "gpu-0-mig-9-4-4": "0:1"})]
        cls.slices = {}
        for n in cls.nodes:
            cls.slices[n.name] = cls.api.add_resource_slice(
                n.name + "-" + DRIVER + "-x7k2p", DRIVER, n.name, node=n.name,
                devices=n.slice_devices())
        # A NIC driver's slice on node-a: listed, no GPU uuid.
        cls.api.add_resource_slice("node-a-dra.net-q8z1", "dra.net", "node-a", node="node-a",
                                   devices=[("eth1", None)])
        # Pods of a DRA cluster ask through a resource claim, not a limit.
        # vllm-e exists only in the test that gives it a claim nothing
        # resolves: elsewhere a claim-asking pod with no device is a gap.
        for pod in ["vllm-a", "vllm-b", "vllm-c", "vllm-d"]:
            cls.api.add_pod("ml", pod, labels={"app": "vllm"},
                            node="node-b" if pod in ("vllm-c", "vllm-d") else "node-a",
                            phase="Running", gpus=None, claims=1)
        agents = ",".join("127.0.0.1:%d" % n.port for n in cls.nodes)
        cls.port, cls.probe = free_port(), free_port()
        cls.log = open(os.path.join(cls.tmp.name, "aggregator.log"), "w+")
        cls.agg = subprocess.Popen(
            scaler_command(SERVER, cls.port, cls.probe, role="aggregator",
                           extra=["--agents", agents, "--kube-api", cls.api.url,
                                  "--kube-token-file", token_file, "--log-level", "debug"]),
            env=child_env(), stdout=cls.log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: http_ok(cls.probe, "/readyz"), 15):
            cls.log.seek(0)
            raise AssertionError("aggregator not ready:\n" + cls.log.read()[-3000:])

    @classmethod
    def tearDownClass(cls):
        stop_process(cls.agg, 5)
        cls.log.close()
        for n in cls.nodes:
            n.close()
        cls.api.stop()
        cls.tmp.cleanup()

    def setUp(self):
        self.assign(dra=True)

    def assign(self, dra, extra_a=(), index_ids=False, b_gpu="gpu-1"):
        a, b = self.nodes
        a.set_pods([("vllm-a", "main", ["gpu-0"]), ("vllm-a", "sidecar", ["gpu-0"]),
                    ("vllm-b", "main", [b_gpu])] + list(extra_a), dra, index_ids)
        b.set_pods([("vllm-c", "main", ["gpu-0-mig-9-0-4"]),
                    ("vllm-d", "main", ["gpu-0-mig-9-4-4"])], dra, index_ids)

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
            return last.get("metricValueFloat") == want and "error" not in last
        self.assertTrue(wait_for(check, timeout, interval=0.05),
                        "wanted %s, last answer %s" % (want, last))
        return dict(last)

    def error(self, md, needle, timeout=10):
        last = {}

        def check():
            last.clear()
            last.update(self.poll(md))
            return "error" in last and needle in last["error"]["message"]
        self.assertTrue(wait_for(check, timeout, interval=0.05),
                        "wanted an error with %r, last answer %s" % (needle, last))
        return dict(last)

    # Memory exists per GPU and per MIG instance: vllm-a 3 GiB (its shared
    # claim counted once), vllm-b 5, vllm-c 6, vllm-d 10.
    MEM = {"metricType": "memory_used_mib", "targetValue": "1024", "podSelector": "app=vllm",
           "podAggregation": "sum"}
    MEM_TOTAL = (3 + 5 + 6 + 10) * 1024

    def test_claims_give_the_device_plugin_totals(self):
        answers = {}
        for dra in (False, True):
            self.assign(dra)
            for name, md in [("mem", self.MEM),
                             ("mem-max", dict(self.MEM, aggregation="max")),
                             ("sm", dict(self.MEM, metricType="sm_active",
                                         podSelector="app=vllm"))]:
                if name == "mem":
                    r = self.settle(md, self.MEM_TOTAL)
                else:
                    r = self.poll(md)
                answers.setdefault(name, []).append(
                    {k: v for k, v in r.items() if k != "ms"})
        for name, (plugin, dra) in answers.items():
            self.assertEqual(plugin, dra, name)
        self.assertEqual(answers["mem-max"][1]["metricValueFloat"], 10 * 1024)
        # The aggregator watched ResourceSlices: one cluster-wide list, no
        # per-node field selector.
        lists = [r for r in self.api.requests_of("list") if "fieldSelector" in r["query"]]
        self.assertEqual(lists, [])

    def test_index_ids_give_the_device_plugin_totals(self):
        """A device plugin that registers NVML indexes ("0", and "0:1" for a
        MIG instance) instead of UUIDs: the agent translates them through
        its snapshot, and the totals are the UUID node's."""
        answers = []
        for index_ids in (False, True):
            self.assign(False, index_ids=index_ids)
            self.settle(self.MEM, self.MEM_TOTAL)
            answers.append([{k: v for k, v in self.poll(md).items() if k != "ms"}
                            for md in (dict(self.MEM, aggregation="max"),
                                       dict(self.MEM, metricType="sm_active"))])
        self.assertEqual(answers[0], answers[1])
        # An index no GPU of the node has: vllm-b holds nothing there, and
        # asked for a GPU: a gap naming it, never a 0 for its share.
        self.assign(False, index_ids=True, b_gpu="gpu-7")
        r = self.error(self.MEM, "ml/vllm-b")
        self.assertEqual(r["error"]["code"], "UNAVAILABLE")
        self.settle(dict(self.MEM, partialData="ignore"), (3 + 6 + 10) * 1024)

    def test_unresolvable_claim_is_unavailable_naming_the_pod(self):
        uid = self.api.add_pod("ml", "vllm-e", labels={"app": "vllm"}, node="node-a",
                               phase="Running", gpus=None, claims=1)
        self.addCleanup(self.api.delete_pod, uid)
        self.assign(True, extra_a=[("vllm-e", "main", ["gpu-9"])])
        r = self.error(self.MEM, "DRA device gpu.nvidia.com/node-a/gpu-9")
        self.assertEqual(r["error"]["code"], "UNAVAILABLE")
        self.assertIn("node node-a (pod ml/vllm-e): DRA device gpu.nvidia.com/node-a/gpu-9 "
                      "(container main) is not resolved to a GPU UUID", r["error"]["message"])
        self.settle(dict(self.MEM, partialData="ignore"), self.MEM_TOTAL)

    def test_claims_follow_the_resource_slices(self):
        md = self.MEM
        self.settle(md, self.MEM_TOTAL)
        # node-b's driver withdraws its slice (restart): its claims are
        # unknown, not 0; once republished they count again.
        sid = self.slices.pop("node-b")
        self.api.delete_pod(sid)
        r = self.error(md, "vllm-c")
        self.assertIn("gpu.nvidia.com/node-b/gpu-0-mig-9-0-4", r["error"]["message"])
        self.settle(dict(md, partialData="ignore"), (3 + 5) * 1024)
        b = self.nodes[1]
        self.slices["node-b"] = self.api.add_resource_slice(
            "node-b-" + DRIVER + "-r2d2", DRIVER, "node-b", node="node-b",
            devices=b.slice_devices(), generation=2)
        self.settle(md, self.MEM_TOTAL)

    def test_slice_watch_relists_after_410_gone(self):
        """The API compacted past the slice watch's resourceVersion: the
        aggregator relists the slices and sees a change made meanwhile."""
        self.settle(self.MEM, self.MEM_TOTAL)
        def slice_lists():
            return len([r for r in self.api.requests_of("list")
                        if r.get("obj") == "ResourceSlice" and r["status"] == 200])
        lists = slice_lists()
        self.api.advance_rv(5)  # past every watch's resourceVersion, no event
        self.api.compact()
        self.api.break_watches()
        self.assertTrue(wait_for(lambda: slice_lists() > lists, 10),
                        "the slices were not relisted after 410")
        sid = self.slices.pop("node-b")
        self.api.delete_pod(sid)
        r = self.error(self.MEM, "vllm-c")
        self.assertEqual(r["error"]["code"], "UNAVAILABLE")
        b = self.nodes[1]
        self.slices["node-b"] = self.api.add_resource_slice(
            "node-b-" + DRIVER + "-c3po", DRIVER, "node-b", node="node-b",
            devices=b.slice_devices(), generation=3)
        self.settle(self.MEM, self.MEM_TOTAL)

    def test_slices_the_api_refuses_are_named_in_the_gap(self):
        """An aggregator without RBAC on resourceslices: its DRA pods are
        UNAVAILABLE with the API's 403, the device-plugin world unaffected."""
        self.api.forbid("ResourceSlice")
        port, probe = free_port(), free_port()
        token_file = os.path.join(self.tmp.name, "token")
        agents = ",".join("127.0.0.1:%d" % n.port for n in self.nodes)
        with open(os.path.join(self.tmp.name, "agg-403.log"), "w+") as log:
            p = subprocess.Popen(
                scaler_command(SERVER, port, probe, role="aggregator",
                               extra=["--agents", agents, "--kube-api", self.api.url,
                                      "--kube-token-file", token_file]),
                env=child_env(), stdout=log, stderr=subprocess.STDOUT)
            try:
                self.assertTrue(wait_for(lambda: http_ok(probe, "/readyz"), 15))
                saved, self.port = self.port, port
                try:
                    r = self.error(self.MEM, "HTTP 403")
                    self.assertEqual(r["error"]["code"], "UNAVAILABLE")
                    self.assertIn("(pod ml/vllm-a): DRA device gpu.nvidia.com/node-a/gpu-0",
                                  r["error"]["message"])
                    self.assertIn("ResourceSlices not listed: list resourceslices",
                                  r["error"]["message"])
                    self.assign(False)  # the device plugin needs no slices
                    self.settle(self.MEM, self.MEM_TOTAL)
                finally:
                    self.port = saved
            finally:
                self.api.forbid()
                stop_process(p, 5)

if __name__ == "__main__":
    unittest.main()
