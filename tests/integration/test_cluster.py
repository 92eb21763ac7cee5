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
import select
import subprocess
import tempfile
import time
import unittest

from fake_kube_api import FakeKubeAPI
from kgs_sim import Sim, device
from kgs_util import Streaming as KedaStream
from kgs_util import child_env, free_port, http_ok, scaler_command, stop_process, wait_for

SERVER = os.environ["KEDA_GPU_SCALER"]
SIM = os.environ["NVML_SIM_LIBRARY"]
KUBELET = os.environ["FAKE_KUBELET"]
CLIENT = os.environ["KGS_GO_CLIENT"]
TOKEN = "e2e-token"
# KGS_SERVER_WRAPPER runs every agent and aggregator under a tool (valgrind):
# each must then exit 0 at SIGTERM, i.e. memcheck found no error and no leak.
WRAPPER = os.environ.get("KGS_SERVER_WRAPPER", "").split()
SLOW = 5.0 if WRAPPER else 1.0
EXITS = []  # (what, exit status) of every stopped wrapped process


def stop(p, what=None):
    stop_process(p, 5 * SLOW)
    if what is not None:
        EXITS.append((what, p.returncode))


def Streaming(addr, sub, *args, md=None, namespace="ml", max_time=60):
    """A kedaclient run in namespace whose JSON lines are read as they arrive."""
    return KedaStream(CLIENT, sub, addr, "-namespace", namespace, *args, md=md, max_time=max_time)


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
        self.start_kubelet()
        self.port, self.probe = free_port(), free_port()
        self.log = open(os.path.join(self.tmp, "agent.log"), "w+")
        self.start_agent()

    def start_kubelet(self):
        """(Re)starts the fake kubelet on the same socket path and state file."""
        self.kubelet = subprocess.Popen([KUBELET, "-socket", self.sock, "-state", self.state],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        # It prints "listening PATH" once serving (a stale socket file may still be there).
        ready, _, _ = select.select([self.kubelet.stdout], [], [], 10)
        line = self.kubelet.stdout.readline() if ready else b""
        self.kubelet.stdout.close()  # nothing else is printed
        if not line.startswith(b"listening"):
            raise AssertionError("fake kubelet of %s did not start" % self.name)

    def start_agent(self):
        self.agent = subprocess.Popen(
            WRAPPER + scaler_command(SERVER, self.port, self.probe, role="agent", nvml_library=SIM,
                                     extra=["--kubelet-socket", self.sock,
                                            "--node-name", self.name]),
            env=child_env(scenario=self.sim.path), stdout=self.log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: http_ok(self.probe, "/readyz"), 10 * SLOW):
            raise AssertionError("agent %s not ready" % self.name)

    def set_pods(self, holders):
        """holders: [(namespace, pod, device index within this node)]; plus
        self.raw_ids: {(namespace, pod): [device id as the kubelet reports it]}."""
        pods = {}
        for ns, pod, i in holders:
            pods.setdefault((ns, pod), []).append(self.devs[i]["uuid"])
        for key, ids in getattr(self, "raw_ids", {}).items():
            pods.setdefault(key, []).extend(ids)
        doc = {"pods": [{"namespace": ns, "name": pod, "containers": [
            {"name": "main", "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": ids}]}]}
            for (ns, pod), ids in pods.items()]}
        tmp = self.state + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, self.state)

    def close(self):
        stop(self.agent, self.log.name)
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
        cls.token_file = token_file
        agents = ",".join("127.0.0.1:%d" % n.port for n in cls.nodes)
        cls.aggs = [cls.start_aggregator(["--agents", agents]) for _ in range(2)]
        for p, port, probe, log in cls.aggs:
            if not wait_for(lambda: http_ok(probe, "/readyz"), 15 * SLOW):
                log.seek(0)
                raise AssertionError("aggregator not ready:\n" + log.read()[-3000:])

    @classmethod
    def start_aggregator(cls, agent_args, port=None):
        """Starts an aggregator replica: (process, port, probe port, log file)."""
        port, probe = port or free_port(), free_port()
        log = open(os.path.join(cls.tmp.name, "agg-%d.log" % port), "w+")
        p = subprocess.Popen(
            WRAPPER + scaler_command(SERVER, port, probe, role="aggregator",
                                     extra=list(agent_args) +
                                     ["--kube-api", cls.api.url, "--kube-token-file",
                                      cls.token_file, "--log-level", "debug"]),
            env=child_env(), stdout=log, stderr=subprocess.STDOUT)
        return p, port, probe, log

    @classmethod
    def tearDownClass(cls):
        for p, _, _, log in cls.aggs:
            stop(p, log.name)
            log.close()
        for n in cls.nodes:
            n.close()
        cls.api.stop()
        bad = []
        # The service-account token must never reach a log, even at debug level.
        for name in os.listdir(cls.tmp.name):
            if name.startswith("agg-") and name.endswith(".log"):
                with open(os.path.join(cls.tmp.name, name)) as f:
                    if TOKEN in f.read():
                        bad.append("%s contains the bearer token" % name)
        for what, code in EXITS if WRAPPER else []:
            if code != 0:
                with open(what) as f:
                    bad.append("%s exited %s under %s:\n%s" % (what, code, WRAPPER[0],
                                                               f.read()[-4000:]))
        cls.tmp.cleanup()
        if bad:
            raise AssertionError("\n".join(bad))

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
        r = self.settle(md, 190, 10)  # 60 + 40 + 90, not the trainer's 20 + 80
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

    def test_aggregator_restart_while_keda_streams(self):
        """A rolling restart of one aggregator: KEDA's stream to it ends with
        status OK (KEDA re-dials in 2 s, counting no error), and the
        replacement on the same address answers the same as before."""
        md = {"metricType": "gpu_utilization", "targetValue": "50", "podSelector": "app=vllm",
              "activationThreshold": "10"}
        self.settle(md, 190, 10)
        i = 1
        p, port, probe, log = self.aggs[i]
        addr = "127.0.0.1:%d" % port
        s = Streaming(addr, "stream", "-count", "0", "-timeout", "60s", md=md)
        try:
            t, first = s.next(10 * SLOW)
            self.assertIs(first.get("result"), True, first)
            stop(p, log.name)
            while True:
                t, m = s.next(10 * SLOW)
                if "end" in m:
                    break
            self.assertEqual(m["end"]["reason"], "server", m)
            self.assertEqual(m["end"]["code"], "OK", m)
        finally:
            s.close()
        log.close()
        agents = ",".join("127.0.0.1:%d" % n.port for n in self.nodes)
        self.aggs[i] = self.start_aggregator(["--agents", agents], port=port)
        p, port, probe, log = self.aggs[i]
        self.assertTrue(wait_for(lambda: http_ok(probe, "/readyz"), 15 * SLOW),
                        "the restarted aggregator did not become ready")
        r = wait_for(lambda: (lambda x: x if x.get("metricValueFloat") == 190 else None)(
            self.poll(md, addr=addr)[0]), 15 * SLOW)
        self.assertIsNotNone(r, "the restarted aggregator does not give the same answer")
        s = Streaming(addr, "stream", "-count", "1", "-timeout", "30s", md=md)
        try:
            t, first = s.next(10 * SLOW)
            self.assertIs(first.get("result"), True, first)
        finally:
            s.close()

    def test_pod_churn_is_followed(self):
        md = {"metricType": "gpu_utilization", "targetValue": "50", "podSelector": "app=trainer"}
        uid, node, dev = self.pods["train-b"]
        # train-b is being deleted: it no longer counts, at once.
        self.api.modify_pod(uid, deleting=True)
        self.settle(md, 20, 10)
        # Its replacement lands on the same GPU: kubelet and API both say so.
        self.api.delete_pod(uid)
        new = self.api.add_pod("ml", "train-b2", labels={"app": "trainer"},
                               node=self.nodes[node].name, phase="Running")
        self.pods["train-b2"] = (new, node, dev)
        del self.pods["train-b"]
        self.nodes[node].set_pods([("ml", p, d) for p, (_, n, d) in self.pods.items() if n == node])
        self.settle(md, 100, 10)

    def test_round_robin_over_both_replicas_gets_one_answer(self):
        # KEDA's grpc-go ClientConn with round_robin over the aggregator Service's
        # endpoints: every call may land on either replica; each must be asked,
        # and all must answer the same.
        md = {"metricType": "gpu_utilization", "targetValue": "50", "podSelector": "app=vllm"}
        self.settle(md, 190, 10)
        for m, want in [(md, "190"), (dict(md, aggregation="max"), "90"),
                        (dict(md, podSelector="app=trainer", podAggregation="max"), "100")]:
            addr = ",".join("127.0.0.1:%d" % a[1] for a in self.aggs)
            p = subprocess.run([CLIENT, "rr", "-addr", addr, "-namespace", "ml", "-count", "40",
                                "-max-time", "20s"] +
                               sum((["-metadata", "%s=%s" % kv] for kv in m.items()), []),
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
            r = json.loads(p.stdout.splitlines()[0])
            self.assertEqual(r["answers"], {want: 40}, r)
            self.assertEqual(sorted(r["peers"]), sorted(addr.split(",")), r)
            for n in r["peers"].values():
                self.assertGreaterEqual(n, 10, r)  # round robin: about half each

    def test_node_label_selector_follows_the_nodes_labels(self):
        # Node objects in the API: the aggregator starts watching them only now,
        # at the first trigger with a label nodeSelector.
        uids = {}
        for name, pool in [("node-a", "a100"), ("node-b", "h100"), ("node-c", "a100")]:
            uids[name] = self.api.add_node(name, labels={"pool": pool, "kubernetes.io/os": "linux"})
        for uid in uids.values():
            self.addCleanup(self.api.delete_pod, uid)
        md = {"metricType": "gpu_utilization", "targetValue": "50", "nodeSelector": "pool=a100"}
        self.settle(md, 170, 10)  # node-a 60 + 20, node-c 90
        self.settle(dict(md, nodeSelector="pool in (h100),kubernetes.io/os=linux"), 120, 5)
        # node-c is relabelled: it leaves the a100 pool at once.
        self.api.relabel_node(uids["node-c"], {"pool": "h100"})
        self.settle(md, 80, 5)
        # A matching node with no agent is a gap: UNAVAILABLE, unless partialData ignore.
        uids["node-z"] = self.api.add_node("node-z", labels={"pool": "a100"})
        errs = self.errors(md, 5)
        for r in errs:
            self.assertEqual(r["error"]["code"], "UNAVAILABLE")
            self.assertIn("node node-z: matches nodeSelector but no agent", r["error"]["message"])
        self.settle(dict(md, partialData="ignore"), 80, 5)
        # No node in the pool at all (an emptied autoscaling pool): a known 0, inactive.
        r = self.settle(dict(md, nodeSelector="pool=tpu"), 0, 5)
        self.assertFalse(r["active"])

    # ---- helpers for the cases below: extra pods of their own workloads ----

    def sync_kubelet(self, node):
        """Node `node`'s fake kubelet holds exactly the pods self.pods puts there."""
        self.nodes[node].set_pods([("ml", p, d) for p, (_, n, d) in self.pods.items()
                                   if n == node])

    def add_pod(self, name, labels, node, dev):
        """A Running pod in ml on node `node`, holding its GPU `dev` (API and kubelet);
        removed again (API, kubelet states) when the test ends."""
        uid = self.api.add_pod("ml", name, labels=labels, node=self.nodes[node].name,
                               phase="Running")
        self.pods[name] = (uid, node, dev)
        self.sync_kubelet(node)
        self.addCleanup(self.remove_pod, name)
        return uid

    def remove_pod(self, name):
        entry = self.pods.pop(name, None)
        if entry and entry[0] in self.api.pods:
            self.api.delete_pod(entry[0])
        for i in range(len(self.nodes)):
            self.sync_kubelet(i)

    def settle(self, md, want, timeout, addrs=None):
        """Polls every replica until each answers metricValueFloat == want; then
        they must agree on everything. Returns the answer (or fails with the last)."""
        last = []

        def check():
            last[:] = self.poll(md, addr=addrs)
            return all(r.get("metricValueFloat") == want and "error" not in r for r in last)
        ok = wait_for(check, timeout * SLOW, interval=0.05)
        self.assertTrue(ok, "wanted %s within %.1f s, last answers: %s" % (want, timeout, last))
        norm = [{k: v for k, v in r.items() if k != "ms"} for r in last]
        for r in norm[1:]:
            self.assertEqual(norm[0], r)
        return last[0]

    def errors(self, md, timeout, addrs=None):
        """Polls until every replica answers an error; returns the answers."""
        last = []

        def check():
            last[:] = self.poll(md, addr=addrs)
            return all("error" in r for r in last)
        self.assertTrue(wait_for(check, timeout * SLOW, interval=0.05),
                        "no error within %.1f s, last answers: %s" % (timeout, last))
        return last

    # ---- 1. StreamIsActive through an aggregator, with pod churn ----

    def test_stream_is_active_follows_pod_churn(self):
        md = {"metricType": "gpu_utilization", "targetValue": "50",
              "podSelector": "app=e2e-stream", "activationThreshold": "30"}
        s = Streaming("127.0.0.1:%d" % self.aggs[0][1], "stream", "-count", "0",
                      "-timeout", "20s", md=md)
        self.addCleanup(s.close)
        _, m = s.next(5)
        self.assertIs(m.get("result"), False, m)  # no such pod yet: 0, known, inactive
        # A pod of the workload starts on node-a, GPU 0 (60 %): the API says so first,
        # then the kubelet attributes the GPU to it.
        uid = self.api.add_pod("ml", "stream-0", labels={"app": "e2e-stream"},
                               node=self.nodes[0].name, phase="Running")
        self.pods["stream-0"] = (uid, 0, 0)
        self.addCleanup(self.remove_pod, "stream-0")
        time.sleep(0.3)
        t0 = time.monotonic()
        self.sync_kubelet(0)
        t, m = s.until(True, t0 + 2.5)
        self.assertLess(t - t0, 2.0, "true after %.3f s: %s" % (t - t0, s.seen))
        # It is being deleted: no longer counts, false is pushed.
        t0 = time.monotonic()
        self.api.modify_pod(uid, deleting=True)
        t, m = s.until(False, t0 + 2.5)
        self.assertLess(t - t0, 2.0, "false after %.3f s: %s" % (t - t0, s.seen))
        # Only changes (and heartbeats while true) were pushed: never an end.
        self.assertTrue(all("result" in x for x in s.seen), s.seen)

    # ---- 2. a pod moving nodes ----

    def test_pod_moving_nodes_is_followed(self):
        md = {"metricType": "gpu_utilization", "targetValue": "50",
              "podSelector": "app=e2e-mover"}
        uid = self.add_pod("mover-0", {"app": "e2e-mover"}, 0, 1)  # node-a GPU 1: 20 %
        self.settle(md, 20, 5)
        # Rescheduled StatefulSet-style (same name, new uid) onto node-b GPU 1 (80 %).
        # node-a's kubelet still lists the old one for a while: it must not matter.
        self.api.delete_pod(uid)
        new = self.api.add_pod("ml", "mover-0", labels={"app": "e2e-mover"},
                               node=self.nodes[1].name, phase="Running")
        self.pods["mover-0"] = (new, 1, 1)
        self.sync_kubelet(1)
        self.settle(md, 80, 5)
        self.sync_kubelet(0)  # node-a's kubelet forgets it too
        time.sleep(0.5)
        self.settle(md, 80, 2)
        # The other tenants are untouched by the move.
        self.settle(dict(md, podSelector="app=vllm"), 190, 5)

    # ---- 3. --agents-dns ----

    def test_agents_dns_finds_the_agent_behind_a_name(self):
        # localhost may resolve to ::1 as well as 127.0.0.1 (not on every host): the agent
        # listens on 127.0.0.1 only, so that entry would fail and be retried.
        node = self.nodes[2]
        p, port, probe, log = self.start_aggregator(["--agents-dns", "localhost:%d" % node.port])

        def close():
            stop(p)
            log.close()
        self.addCleanup(close)

        def tail():
            log.seek(0)
            return log.read()[-3000:]
        self.assertTrue(wait_for(lambda: http_ok(probe, "/readyz"), 10),
                        "aggregator with --agents-dns not ready:\n" + tail())
        addr = "127.0.0.1:%d" % port
        md = {"metricType": "gpu_utilization", "targetValue": "50", "aggregation": "max"}
        self.settle(md, 90, 5, addrs=addr)
        # Only node-c's one GPU is behind the name: the sum is 90, not all nodes' 290.
        self.assertEqual(self.poll(dict(md, aggregation="sum"), addr=addr)[0]
                         .get("metricValueFloat"), 90, tail())
        self.assertEqual(self.poll(dict(md, aggregation="min"), addr=addr)[0]
                         .get("metricValueFloat"), 90, tail())
        # Pods on nodes this aggregator has no agent for are a gap, not 0.
        pods = dict(md, podSelector="app=vllm", aggregation="sum")
        r = self.poll(pods, addr=addr)[0]
        self.assertEqual(r.get("error", {}).get("code"), "UNAVAILABLE", r)
        self.assertIn("node-a", r["error"]["message"])
        # (node-c's agent may not have asked its kubelet yet right after setUpClass)
        self.settle(dict(pods, partialData="ignore"), 90, 5, addrs=addr)

    # ---- 4. kubelet restart on one node ----

    def test_kubelet_restart_on_one_node(self):
        md = {"metricType": "gpu_utilization", "targetValue": "50", "podSelector": "app=vllm"}
        node = self.nodes[1]
        self.settle(md, 190, 10)

        def restart_if_down():
            if node.kubelet.poll() is not None:
                node.start_kubelet()
        self.addCleanup(restart_if_down)
        stop(node.kubelet)
        for r in self.errors(md, 5):
            self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
            self.assertIn("node-b", r["error"]["message"])
            self.assertIn("vllm-b", r["error"]["message"])
        # The other nodes' pods still count with partialData ignore: 60 + 90.
        self.settle(dict(md, partialData="ignore"), 150, 5)
        # The node's GPUs themselves are still known: the all-nodes question answers.
        self.settle({"metricType": "gpu_utilization", "targetValue": "50",
                     "aggregation": "sum"}, 290, 5)
        time.sleep(1.0)  # an outage of ~1.5 s: the agent's re-dial backoff grows meanwhile
        t0 = time.monotonic()
        node.start_kubelet()
        self.settle(md, 190, 5)
        self.assertLess(time.monotonic() - t0, 5.0)
        # A crash this time (SIGKILL: the socket file stays behind, refusing connections),
        # then the kubelet comes back and replaces it.
        node.kubelet.kill()
        node.kubelet.wait(5)
        self.assertTrue(os.path.exists(node.sock))
        for r in self.errors(md, 5):
            self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
            self.assertIn("node-b", r["error"]["message"])
        t0 = time.monotonic()
        node.start_kubelet()
        self.settle(md, 190, 5)
        self.assertLess(time.monotonic() - t0, 5.0)

    # ---- 5. the API watch broken ----

    def test_api_watch_broken_changes_are_still_followed(self):
        md = {"metricType": "gpu_utilization", "targetValue": "50",
              "podSelector": "app=e2e-watched"}
        uid = self.add_pod("watch-0", {"app": "e2e-unwatched"}, 2, 0)  # node-c GPU 0: 90 %
        self.settle(dict(md, podSelector="app=e2e-unwatched"), 90, 5)
        self.settle(md, 0, 2)
        watches = len(self.api.requests_of("watch"))
        lists = len(self.api.requests_of("list"))
        # The watch is cut, and the pod moves into scope before it is re-established.
        self.api.break_watches()
        self.api.modify_pod(uid, labels={"app": "e2e-watched"})
        self.settle(md, 90, 5)
        self.assertGreaterEqual(len(self.api.requests_of("watch")), watches + 2)
        # Cut again once the watches are back; then the pod goes away.
        self.api.wait_for(lambda a: len(a.requests_of("watch")) >= watches + 2, 5)
        self.api.break_watches()
        time.sleep(1.0)
        self.api.modify_pod(uid, deleting=True)
        self.settle(md, 0, 5)
        # Resumed from the resourceVersion it had: no relist was needed.
        self.assertEqual(len(self.api.requests_of("list")), lists)


    # ---- 6. pods that ask for GPUs and have none attributed ----

    def test_gpu_asking_pod_with_no_device_is_a_gap_naming_it(self):
        md = {"metricType": "gpu_utilization", "targetValue": "50", "podSelector": "app=e2e-ask"}
        self.add_pod("ask-ok", {"app": "e2e-ask"}, 1, 1)  # node-b GPU 1: 80 %
        self.settle(md, 80, 5)
        # A router asking for no GPU, then a pod asking for one that the kubelet never
        # attributed (started a minute ago): the router is no gap, the other one is.
        # (Watch events arrive in order: once the second is seen, so is the first.)
        router = self.api.add_pod("ml", "ask-router", labels={"app": "e2e-ask"},
                                  node="node-a", phase="Running", gpus=None,
                                  started=time.time() - 60)
        self.addCleanup(self.api.delete_pod, router)
        lost = self.api.add_pod("ml", "ask-lost", labels={"app": "e2e-ask"}, node="node-a",
                                phase="Running", started=time.time() - 60)
        for r in self.errors(md, 5):
            self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
            self.assertIn("node node-a (pod ml/ask-lost): asks for 1 nvidia.com/gpu, but the "
                          "node's kubelet attributes no device to it", r["error"]["message"])
            self.assertNotIn("more pod", r["error"]["message"])  # the router is no gap
        self.settle(dict(md, partialData="ignore"), 80, 5)
        self.api.delete_pod(lost)
        self.settle(md, 80, 5)
        # A DRA pod (a resource claim) with nothing attributed is a gap too.
        claim = self.api.add_pod("ml", "ask-dra", labels={"app": "e2e-ask"}, node="node-b",
                                 phase="Running", gpus=None, claims=1,
                                 started=time.time() - 60)
        self.addCleanup(self.api.delete_pod, claim)
        for r in self.errors(md, 5):
            self.assertIn("(pod ml/ask-dra): asks for 1 resource claim (DRA)",
                          r["error"]["message"])

    def test_gpu_asking_pod_that_just_started_is_starting_then_a_gap(self):
        md = {"metricType": "gpu_utilization", "targetValue": "50",
              "podSelector": "app=e2e-new"}
        self.add_pod("new-ok", {"app": "e2e-new"}, 1, 1)  # node-b GPU 1: 80 %
        self.settle(md, 80, 5)
        # Just started (startTime now, the kubelet's clock): the agent's latest
        # attribution may predate it, so for stale_after past its start (0.6 s here:
        # 3 x the 200 ms interval) it is starting, not a gap. It stays unattributed,
        # so it then becomes one.
        t0 = time.time()
        uid = self.api.add_pod("ml", "new-late", labels={"app": "e2e-new"}, node="node-a",
                               phase="Running", started=t0)
        self.addCleanup(self.api.delete_pod, uid)
        self.settle(md, 80, 2)
        errs = self.errors(md, 8)
        waited = time.time() - t0
        self.assertIn("(pod ml/new-late): asks for 1 nvidia.com/gpu", errs[0]["error"]["message"])
        # startTime has whole seconds: the window closes 0.6 to 1.6 s after t0 (without
        # one the gap would show as soon as the watch delivers the pod, ~0.1 s).
        self.assertGreaterEqual(waited, 0.55, "a gap after %.2f s: no starting window" % waited)
        # Attributed at last: it counts (node-a GPU 0: 60 %).
        self.pods["new-late"] = (uid, 0, 0)
        self.addCleanup(self.pods.pop, "new-late", None)
        self.sync_kubelet(0)
        self.settle(md, 140, 5)
        self.pods.pop("new-late")
        self.sync_kubelet(0)

    def test_device_ids_the_agent_cannot_read_make_a_gap_not_a_zero(self):
        """A device plugin whose ids are not GPU-/MIG- UUIDs (GKE's registers
        "nvidia0", the device file's name): the pod is named, never read as 0."""
        md = {"metricType": "gpu_utilization", "targetValue": "50",
              "podSelector": "app=e2e-gke"}
        node = self.nodes[2]
        uid = self.api.add_pod("ml", "gke-0", labels={"app": "e2e-gke"}, node=node.name,
                               phase="Running", started=time.time() - 60)
        self.addCleanup(self.api.delete_pod, uid)
        node.raw_ids = {("ml", "gke-0"): ["nvidia0"]}

        def clear():
            node.raw_ids = {}
            self.sync_kubelet(2)
        self.addCleanup(clear)
        self.sync_kubelet(2)
        for r in self.errors(md, 5):
            self.assertIn("node node-c (pod ml/gke-0): asks for 1 nvidia.com/gpu",
                          r["error"]["message"])
            self.assertIn("GPU-<uuid> and MIG-<uuid>", r["error"]["message"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
