#!/usr/bin/env python3
"""The cold start made visible (issue 33), end to end: an aggregator reading
pods from the fake Kubernetes API, which walks them through their starts as
the scheduler and the kubelet write them (k8s.io/api core/v1 PodStatus at
Kubernetes v1.31; the kubelet's conditions in pkg/kubelet/status/generate.go):
Unschedulable, then scheduled once a node appears, the containers created,
running, Ready; an image pull failing (ErrImagePull, then ImagePullBackOff);
a crash loop; an OOM kill; a pod deleted while it waited for a node and one
deleted while it started. `/metrics` (checked by promtool when installed)
and `keda-gpu-scaler query` must give the stages and the failure reasons.

The aggregator has no agent (its GPU answers are UNAVAILABLE): the cold
starts come from the pods alone, at the trigger's evaluations, which
`query` makes.

Environment (CTest): KEDA_GPU_SCALER.
"""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from fake_kube_api import FakeKubeAPI
from kgs_util import child_env, free_port, http_get, http_ok, scaler_command, stop_process
from kgs_util import timeout_multiplier, wait_for

SERVER = os.environ["KEDA_GPU_SCALER"]
TOKEN = "cold-start-token"
MD = {"metricType": "gpu_utilization", "targetValue": "50", "podSelector": "app=vllm"}
SEL = 'pod_namespace="ml",pod_selector="app=vllm"'
MESSAGE = ("0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are "
           "available: 3 No preemption victims found for incoming pod.")


def t(s):
    """2026-11-29T10:00:00Z plus s seconds, as the API writes a time."""
    return "2026-11-29T10:%02d:%02dZ" % (s // 60, s % 60)


def cond(typ, status, at, reason=None, message=None):
    c = {"type": typ, "status": status, "lastProbeTime": None, "lastTransitionTime": t(at)}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def unschedulable():
    return {"phase": "Pending", "qosClass": "Burstable",
            "conditions": [cond("PodScheduled", "False", 0, "Unschedulable", MESSAGE)]}


def scheduled(at, waiting="ContainerCreating", last=None, restarts=0, running_at=None):
    """Bound at `at`; its one container waiting for `waiting`, or running
    since running_at (then Ready False until the probe passes)."""
    state = ({"running": {"startedAt": t(running_at)}} if running_at is not None
             else {"waiting": {"reason": waiting}})
    cs = {"name": "vllm", "image": "vllm/vllm-openai:v0.6.3", "imageID": "", "ready": False,
          "restartCount": restarts, "started": running_at is not None, "state": state,
          "lastState": last or {}}
    return {"phase": "Running" if running_at is not None or restarts else "Pending",
            "qosClass": "Burstable", "hostIP": "10.0.1.9", "startTime": t(at),
            "conditions": [cond("PodReadyToStartContainers", "True", at + 1),
                           cond("Initialized", "True", at),
                           cond("Ready", "False", at, "ContainersNotReady",
                                "containers with unready status: [vllm]"),
                           cond("ContainersReady", "False", at, "ContainersNotReady",
                                "containers with unready status: [vllm]"),
                           cond("PodScheduled", "True", at)],
            "containerStatuses": [cs]}


def ready(at, running_at, ready_at):
    s = scheduled(at, running_at=running_at)
    s["podIP"] = "10.244.3.4"
    s["conditions"][2] = cond("Ready", "True", ready_at)
    s["conditions"][3] = cond("ContainersReady", "True", ready_at)
    s["containerStatuses"][0]["ready"] = True
    return s


class ColdStart(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.api = FakeKubeAPI(token=TOKEN)
        cls.api.start()
        token_file = os.path.join(cls.tmp, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN)
        cls.port, cls.probe, cls.metrics = free_port(), free_port(), free_port()
        cls.log = open(os.path.join(cls.tmp, "aggregator.log"), "w+")
        cls.agg = subprocess.Popen(
            scaler_command(SERVER, cls.port, cls.probe, metrics_port=cls.metrics,
                           role="aggregator",
                           extra=["--agents", "127.0.0.1:%d" % free_port(), "--kube-api",
                                  cls.api.url, "--kube-token-file", token_file]),
            env=child_env(), stdout=cls.log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: http_ok(cls.metrics, "/metrics"), 10 * timeout_multiplier()):
            raise AssertionError("aggregator did not serve /metrics:\n" + cls.output())

    @classmethod
    def tearDownClass(cls):
        stop_process(cls.agg)
        cls.log.close()
        cls.api.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def output(cls):
        cls.log.seek(0)
        return cls.log.read()[-4000:]

    def query(self):
        """One query round (it evaluates the trigger: a cold-start round)."""
        args = [SERVER, "query", "--address", "127.0.0.1:%d" % self.port, "--namespace", "ml"]
        for k, v in MD.items():
            args += ["--metadata", "%s=%s" % (k, v)]
        p = subprocess.run(args, capture_output=True, text=True, timeout=20)
        return p.stdout + p.stderr

    def metric(self, text, name, labels):
        m = re.search(r"^keda_gpu_scaler_%s\{%s\} (\S+)$" % (name, re.escape(labels)), text, re.M)
        return float(m.group(1)) if m else None

    def until(self, name, labels, want, timeout=10):
        """Queries (each a round, a second apart at most) until /metrics
        shows want; returns the exposition."""
        seen = {}

        def check():
            self.query()
            status, body = http_get(self.metrics, "/metrics")
            text = body.decode() if isinstance(body, bytes) else body
            seen["v"] = self.metric(text, name, labels)
            return text if seen["v"] == want else None
        text = wait_for(check, timeout * timeout_multiplier(), interval=0.3)
        self.assertIsNotNone(text, "%s{%s}: %r, want %r\n%s" % (name, labels, seen.get("v"),
                                                                   want, self.output()))
        return text

    def test_stages_and_failed_starts(self):
        api = self.api
        labels = {"app": "vllm"}
        # 1. waits for a node, which appears after 61 s; pulls 38 s; loads 29 s
        a = api.add_pod("ml", "vllm-a", labels=labels, phase="Pending")
        api.set_pod_status(a, unschedulable())
        self.until("cold_start_waiting_for_node", SEL, 1)
        out = self.query()
        self.assertIn("1 pod waiting for a node (%s)" % MESSAGE, out)
        api.set_pod_status(a, scheduled(61), node="gpu-node-4")
        self.until("cold_start_waiting_for_node", SEL, 0)
        api.set_pod_status(a, scheduled(61, running_at=99))
        api.set_pod_status(a, ready(61, 99, 128))
        text = self.until("cold_start_stage_seconds_count", SEL + ',stage="node"', 1)
        self.assertEqual(self.metric(text, "cold_start_stage_seconds_sum", SEL + ',stage="node"'),
                         61)
        self.assertEqual(self.metric(text, "cold_start_stage_seconds_sum",
                                     SEL + ',stage="image"'), 38)
        self.assertEqual(self.metric(text, "cold_start_stage_seconds_sum",
                                     SEL + ',stage="weights"'), 29)
        self.assertEqual(self.metric(text, "cold_start_stage_seconds_bucket",
                                     SEL + ',stage="node",le="90"'), 1)
        self.assertIn("cold start 128 s: node 61 s, image 38 s, weights 29 s, last 1 pod",
                      self.query())

        # 2. an image that cannot be pulled: ErrImagePull, then the back-off;
        # one failed start, named by the first reason seen
        b = api.add_pod("ml", "vllm-b", labels=labels, phase="Pending")
        api.set_pod_status(b, scheduled(2), node="gpu-node-1")
        api.set_pod_status(b, scheduled(2, waiting="ErrImagePull"))
        self.until("cold_start_failures_total", SEL + ',reason="ErrImagePull"', 1)
        api.set_pod_status(b, scheduled(2, waiting="ImagePullBackOff"))
        self.query()

        # 3. a crash loop, and 4. an OOM kill (then the loop it causes)
        c = api.add_pod("ml", "vllm-c", labels=labels, phase="Pending")
        api.set_pod_status(c, scheduled(3, running_at=20), node="gpu-node-1")
        api.set_pod_status(c, scheduled(3, waiting="CrashLoopBackOff", restarts=1, last={
            "terminated": {"exitCode": 1, "reason": "Error", "startedAt": t(20),
                           "finishedAt": t(50)}}))
        d = api.add_pod("ml", "vllm-d", labels=labels, phase="Pending")
        api.set_pod_status(d, scheduled(4, waiting="CrashLoopBackOff", restarts=1, last={
            "terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": t(30),
                           "finishedAt": t(90)}}), node="gpu-node-2")
        self.until("cold_start_failures_total", SEL + ',reason="CrashLoopBackOff"', 1)
        text = self.until("cold_start_failures_total", SEL + ',reason="OOMKilled"', 1)

        # 5. deleted while it waited for a node: the node never came
        e = api.add_pod("ml", "vllm-e", labels=labels, phase="Pending")
        api.set_pod_status(e, unschedulable())
        self.until("cold_start_waiting_for_node", SEL, 1)
        api.delete_pod(e)
        # 6. deleted while its container was created (scaled in): no failure
        f = api.add_pod("ml", "vllm-f", labels=labels, phase="Pending")
        api.set_pod_status(f, scheduled(5), node="gpu-node-3")
        self.query()
        api.delete_pod(f)
        text = self.until("cold_start_failures_total", SEL + ',reason="Unschedulable"', 1)
        for reason, want in [("ErrImagePull", 1), ("ImagePullBackOff", 0),
                             ("CrashLoopBackOff", 1), ("OOMKilled", 1), ("Unschedulable", 1),
                             ("other", 0)]:
            self.assertEqual(self.metric(text, "cold_start_failures_total",
                                         SEL + ',reason="%s"' % reason), want, reason)
        # the pods counted once: still one completed start
        self.assertEqual(self.metric(text, "cold_start_stage_seconds_count",
                                     SEL + ',stage="weights"'), 1)
        self.assertIn("cold start 128 s: node 61 s, image 38 s, weights 29 s, last 1 pod; 4 "
                      "failed starts: 1 Unschedulable (%s), 1 ErrImagePull, 1 CrashLoopBackOff, "
                      "1 OOMKilled" % MESSAGE, self.query())
        if shutil.which("promtool"):
            p = subprocess.run(["promtool", "check", "metrics"], input=text,
                               capture_output=True, text=True, timeout=20)
            self.assertEqual((p.returncode, p.stdout + p.stderr), (0, ""))


if __name__ == "__main__":
    unittest.main(verbosity=2)
