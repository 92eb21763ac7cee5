#!/usr/bin/env python3
"""Cluster mode end to end: 3 agents (each its own simulated node and fake
kubelet), 2 aggregator replicas subscribed to all of them, a fake Kubernetes
API with the pods, and grpc-go (KEDA's client) with round_robin over both
aggregators. Everything on loopback and unix sockets in a temp dir.

Environment (CTest): KEDA_GPU_SCALER, NVML_SIM_LIBRARY, FAKE_KUBELET,
KGS_GO_CLIENT, KGS_SOURCE_DIR.
"""
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request

from fake_kube_api import FakeKubeAPI
from kgs_sim import Sim, device

SERVER = os.environ["KEDA_GPU_SCALER"]
SIM = os.environ["NVML_SIM_LIBRARY"]
KUBELET = os.environ["FAKE_KUBELET"]
CLIENT = os.environ["KGS_GO_CLIENT"]
TOKEN = "e2e-token"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(fn, timeout, interval=0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(interval)
    return None


def http_ok(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=1) as r:
            return r.status == 200
    except Exception:
        return False


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


class Node:
    """One GPU node: a simulated NVML, a fake kubelet and an agent."""

    def __init__(self, tmp, name, first, utils):
        self.name = name
        self.tmp = os.path.join(tmp, name)
        os.makedirs(self.tmp)
        self.devs = [device(first + i, gpu_util=u) for i, u in enumerate(utils)]
        self.sim = Sim({"devices": self.devs})
        self.sock = os.path.join(self.tmp, "kubelet.sock")
        self.state = os.path.join(self.tmp, "state.json")
        self.set_pods([])
        self.kubelet = subprocess.Popen([KUBELET, "-socket", self.sock, "-state", self.state],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: os.path.exists(self.sock), 10)
        self.port, self.probe = free_port(), free_port()
        self.log = open(os.path.join(self.tmp, "agent.log"), "w+")
        self.start_agent()

    def start_agent(self):
        self.agent = subprocess.Popen(
            [SERVER, "--role", "agent", "--listen-address", "127.0.0.1", "--port", str(self.port),
             "--probe-port", str(self.probe), "--metrics-port", "0", "--nvml-library", SIM,
             "--sample-interval", "200ms", "--kubelet-socket", self.sock, "--node-name", self.name],
            env={"PATH": "/usr/bin:/bin", "NVML_SIM_SCENARIO": self.sim.path,
                 **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}},
            stdout=self.log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: http_ok(self.probe, "/readyz"), 10):
            raise AssertionError("agent %s not ready" % self.name)

    def set_pods(self, holders):
        """holders: [(namespace, pod, device index within this node)]"""
        pods = {}
        for ns, pod, i in holders:
            pods.setdefault((ns, pod), []).append(self.devs[i]["uuid"])
        doc = {"pods": [{"namespace": ns, "name": pod, "containers": [
            {"name": "main", "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": ids}]}]}
            for (ns, pod), ids in pods.items()]}
        tmp = self.state + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, self.state)

    def close(self):
        stop(self.agent)
        stop(self.kubelet)
        self.sim.close()
        self.log.close()


class Cluster(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.api = FakeKubeAPI(token=TOKEN)
        cls.api.start()
        token_file = os.path.join(cls.tmp.name, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN)
        # node-a: 2 GPUs, node-b: 2 GPUs, node-c: 1 GPU
        cls.nodes = [Node(cls.tmp.name, "node-a", 0, [60, 20]),
                     Node(cls.tmp.name, "node-b", 2, [40, 80]),
                     Node(cls.tmp.name, "node-c", 4, [90])]
        # Our workload (ml/app=vllm): one pod per GPU 0 of a and b, one on c.
        # Another tenant (ml/app=trainer) on a's and b's second GPUs.
        cls.pods = {}
        for ns, name, labels, node, dev in [
                ("ml", "vllm-a", {"app": "vllm"}, 0, 0), ("ml", "vllm-b", {"app": "vllm"}, 1, 0),
                ("ml", "vllm-c", {"app": "vllm"}, 2, 0), ("ml", "train-a", {"app": "trainer"}, 0, 1),
                ("ml", "train-b", {"app": "trainer"}, 1, 1)]:
            uid = cls.api.add_pod(ns, name, labels=labels, node=cls.nodes[node].name,
                                  phase="Running")
            cls.pods[name] = (uid, node, dev)
        for i, n in enumerate(cls.nodes):
            n.set_pods([("ml", p, dev) for p, (_, node, dev) in cls.pods.items() if node == i])
        agents = ",".join("127.0.0.1:%d" % n.port for n in cls.nodes)
        cls.aggs = []
        for _ in range(2):
            port, probe = free_port(), free_port()
            log = open(os.path.join(cls.tmp.name, "agg-%d.log" % port), "w+")
            p = subprocess.Popen(
                [SERVER, "--role", "aggregator", "--listen-address", "127.0.0.1", "--port",
                 str(port), "--probe-port", str(probe), "--metrics-port", "0", "--agents", agents,
                 "--kube-api", cls.api.url, "--kube-token-file", token_file,
                 "--sample-interval", "200ms"],
                env={"PATH": "/usr/bin:/bin",
                     **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}},
                stdout=log, stderr=subprocess.STDOUT)
            cls.aggs.append((p, port, probe, log))
        for p, port, probe, log in cls.aggs:
            if not wait_for(lambda: http_ok(probe, "/readyz"), 15):
                log.seek(0)
                raise AssertionError("aggregator not ready:\n" + log.read()[-3000:])

    @classmethod
    def tearDownClass(cls):
        for p, _, _, log in cls.aggs:
            stop(p)
            log.close()
        for n in cls.nodes:
            n.close()
        cls.api.stop()
        cls.tmp.cleanup()

    def poll(self, md, addr=None, namespace="ml"):
        addr = addr or ",".join("127.0.0.1:%d" % a[1] for a in self.aggs)
        results = []
        for a in ([addr] if "," not in addr else addr.split(",")):
            p = subprocess.run([CLIENT, "poll", "-addr", a, "-namespace", namespace, "-max-time",
                                "20s"] + sum((["-metadata", "%s=%s" % kv] for kv in md.items()), []),
                               capture_output=True, text=True, timeout=30)
            results.append(json.loads(p.stdout.splitlines()[0]))
        return results

    def both(self, md):
        """The same question to each aggregator replica: the answers must agree."""
        a, b = self.poll(md)
        self.assertEqual({k: v for k, v in a.items() if k != "ms"},
                         {k: v for k, v in b.items() if k != "ms"})
        return a

    def test_workload_total_counts_only_its_own_pods_across_nodes(self):
        md = {"metricType": "gpu_utilization", "targetValue": "50", "podSelector": "app=vllm"}
        r = wait_for(lambda: (lambda x: x if x.get("metricValueFloat") == 190 else None)(self.both(md)), 10)
        self.assertIsNotNone(r, self.both(md))  # 60 + 40 + 90, not the trainer's 20 + 80
        self.assertEqual(r["targetSize"], 50)
        self.assertTrue(r["active"])
        md["podSelector"] = "app=trainer"
        self.assertEqual(self.both(md)["metricValueFloat"], 100)

    def test_default_namespace_is_the_scaled_objects(self):
        md = {"metricType": "gpu_utilization", "targetValue": "50", "podSelector": "app=vllm"}
        r = self.poll(md, namespace="default")[0]
        self.assertEqual(r["metricValueFloat"], 0)  # no such pods in "default": 0, known
        self.assertFalse(r["active"])

    def test_all_nodes_without_a_selector(self):
        md = {"metricType": "gpu_utilization", "targetValue": "50", "aggregation": "max"}
        self.assertEqual(self.both(md)["metricValueFloat"], 90)

    def test_lost_agent_makes_its_pods_unavailable_then_recovers(self):
        md = {"metricType": "gpu_utilization", "targetValue": "50", "podSelector": "app=vllm"}
        node = self.nodes[2]
        stop(node.agent)
        def unavailable():
            r = self.poll(md)[0]
            return r if "error" in r else None
        r = wait_for(unavailable, 10)
        self.assertIsNotNone(r, "the answer never noticed the lost agent")
        self.assertEqual(r["error"]["code"], "UNAVAILABLE")
        self.assertIn("node-c", r["error"]["message"])
        ignore = dict(md, partialData="ignore")
        self.assertEqual(self.poll(ignore)[0]["metricValueFloat"], 100)  # 60 + 40
        node.start_agent()
        r = wait_for(lambda: (lambda x: x if x.get("metricValueFloat") == 190 else None)(self.poll(md)[0]), 15)
        self.assertIsNotNone(r, "did not recover after the agent restarted")

    def test_pod_churn_is_followed(self):
        md = {"metricType": "gpu_utilization", "targetValue": "50", "podSelector": "app=trainer"}
        uid, node, dev = self.pods["train-b"]
        # train-b is being deleted: it no longer counts, at once.
        self.api.modify_pod(uid, deleting=True)
        r = wait_for(lambda: (lambda x: x if x.get("metricValueFloat") == 20 else None)(self.both(md)), 10)
        self.assertIsNotNone(r, self.both(md))
        # Its replacement lands on the same GPU: kubelet and API both say so.
        self.api.delete_pod(uid)
        new = self.api.add_pod("ml", "train-b2", labels={"app": "trainer"},
                               node=self.nodes[node].name, phase="Running")
        self.pods["train-b2"] = (new, node, dev)
        del self.pods["train-b"]
        self.nodes[node].set_pods([("ml", p, d) for p, (_, n, d) in self.pods.items() if n == node])
        r = wait_for(lambda: (lambda x: x if x.get("metricValueFloat") == 100 else None)(self.both(md)), 10)
        self.assertIsNotNone(r, self.both(md))

if __name__ == "__main__":
    unittest.main(verbosity=2)
