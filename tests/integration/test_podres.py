#!/usr/bin/env python3
"""The pod-resources client end to end: podres_tool (podres_client on an
event loop, printing each pod map as a JSON line) against fake-kubelet (a
grpc-go server of v1.PodResourcesLister/List on a unix socket, answering
from a state file the test rewrites).

Environment (set by CTest): PODRES_TOOL, FAKE_KUBELET, KGS_SOURCE_DIR.
Every socket lives in a temporary directory; every wait is bounded.
"""
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from kgs_util import timeout_multiplier

TOOL = os.environ.get("PODRES_TOOL", "")
KUBELET = os.environ.get("FAKE_KUBELET", "")
SLOW = timeout_multiplier()
INTERVAL_S = 0.2
BACKOFF_MAX_S = 10.0

UUID_A = "GPU-5c1d2e3f-0000-1111-2222-333344445555"
UUID_B = "GPU-9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff"
MIG_C = "MIG-1a2b3c4d-0000-1111-2222-333344445555"


def setUpModule():
    for name, path in (("PODRES_TOOL", TOOL), ("FAKE_KUBELET", KUBELET)):
        if not path or not os.access(path, os.X_OK):
            raise unittest.SkipTest("%s is not set or not executable (%r)" % (name, path))


def pod(ns, name, containers):
    return {"namespace": ns, "name": name, "containers": containers}


def ctr(name, *devices, cpu_ids=None):
    c = {"name": name, "devices": [{"resource_name": r, "device_ids": list(ids)}
                                   for r, ids in devices]}
    if cpu_ids:
        c["cpu_ids"] = cpu_ids
    return c


def holder(ns, name, container, resource="nvidia.com/gpu"):
    return {"namespace": ns, "pod": name, "container": container, "resource": resource}


CLUSTER = {"pods": [
    pod("ml", "vllm-0", [ctr("main", ("nvidia.com/gpu", [UUID_A]), cpu_ids=[2, 3])]),
    # time-slicing: two replicas of one GPU in two pods
    pod("ml", "tgi-0", [ctr("server", ("nvidia.com/gpu", [UUID_B + "::0"]))]),
    pod("dev", "notebook", [ctr("jupyter", ("nvidia.com/gpu", [UUID_B + "::1"]))]),
    pod("ml", "small", [ctr("main", ("nvidia.com/mig-3g.40gb", [MIG_C]))]),
    # not ours: another vendor's resource (even with a GPU-like id), CPU pinning
    pod("ml", "fpga", [ctr("main", ("example.com/fpga", ["GPU-not-a-gpu", "fpga0"]))]),
    pod("kube-system", "pinned", [ctr("c", cpu_ids=[0, 1])]),
]}

CLUSTER_DEVICES = {
    UUID_A: [holder("ml", "vllm-0", "main")],
    UUID_B: [holder("dev", "notebook", "jupyter"), holder("ml", "tgi-0", "server")],
    MIG_C: [holder("ml", "small", "main", "nvidia.com/mig-3g.40gb")],
}


class Kubelet:
    """fake-kubelet on a unix socket in `tmp`, answering from `tmp`/state.json."""

    def __init__(self, tmp):
        self.socket = os.path.join(tmp, "pod-resources", "kubelet.sock")
        os.makedirs(os.path.dirname(self.socket), exist_ok=True)
        self.state = os.path.join(tmp, "state.json")
        self.proc = None

    def write(self, state):
        # Atomic: a List never reads half a file.
        tmp = self.state + ".tmp"
        with open(tmp, "w") as f:
            json.dump(state, f)
        os.replace(tmp, self.state)

    def start(self):
        self.proc = subprocess.Popen([KUBELET, "-socket", self.socket, "-state", self.state],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # It prints "listening PATH" once serving; bound the wait.
        out = queue.Queue()
        threading.Thread(target=lambda: out.put(self.proc.stdout.readline()), daemon=True).start()
        try:
            line = out.get(timeout=10 * SLOW)
        except queue.Empty:
            line = ""
        if not line.startswith("listening"):
            self.kill()
            raise AssertionError("fake-kubelet did not start: %r" % line)

    def kill(self):
        """SIGKILL, like a crashed kubelet: the socket file stays behind."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait(timeout=10)
            self.proc.stdout.close()
            self.proc.stderr.close()
        self.proc = None


class Tool:
    """podres_tool; its stdout lines arrive parsed on a queue."""

    def __init__(self, socket_path):
        self.proc = subprocess.Popen(
            [TOOL, socket_path, "--interval-ms", str(int(INTERVAL_S * 1000)),
             "--max-seconds", str(int(100 * SLOW))],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.stderr = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put((time.monotonic(), json.loads(line)))
        self.lines.put((time.monotonic(), None))

    def wait_for(self, pred, timeout, what):
        """The first line (after those already consumed) that satisfies pred."""
        deadline = time.monotonic() + timeout * SLOW
        seen = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                at, obj = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if obj is None:
                raise AssertionError("podres_tool exited while waiting for %s; stderr: %s"
                                     % (what, "".join(self.stderr)))
            if pred(obj):
                return at, obj
            seen.append(obj)
        raise AssertionError("no %s within %.1f s; saw %s" % (what, timeout * SLOW, seen[-5:]))

    def stop(self):
        """SIGTERM: it must free everything and exit 0 (ASan checks for leaks)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=10 * SLOW)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            raise AssertionError("podres_tool ignored SIGTERM")
        self.proc.stdout.close()
        self.proc.stderr.close()
        return rc


def is_map(obj):
    return "devices" in obj


def is_error(obj):
    return "error" in obj


class PodResources(unittest.TestCase):
    def setUp(self):
        # Short and private: a unix socket path is limited to 107 bytes.
        self.tmp = tempfile.mkdtemp(prefix="kgs-podres-")
        self.kubelet = Kubelet(self.tmp)
        self.kubelet.write(CLUSTER)
        self.tool = None

    def tearDown(self):
        rc = self.tool.stop() if self.tool else 0
        self.kubelet.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.assertEqual(rc, 0, "podres_tool exit status; stderr: %s"
                         % ("".join(self.tool.stderr) if self.tool else ""))

    def start(self):
        self.kubelet.start()
        self.tool = Tool(self.kubelet.socket)

    def test_attributes_gpus_mig_and_time_sliced_replicas_and_ignores_other_resources(self):
        self.start()
        _, m = self.tool.wait_for(is_map, 5, "a pod map")
        self.assertEqual(m["devices"], CLUSTER_DEVICES)
        self.assertFalse(m["stale"])

    def test_a_state_change_shows_up_within_two_intervals(self):
        self.start()
        self.tool.wait_for(is_map, 5, "a first pod map")
        moved = json.loads(json.dumps(CLUSTER))
        moved["pods"][0]["name"] = "vllm-1"  # the GPU went to another pod
        written = time.monotonic()
        self.kubelet.write(moved)
        at, m = self.tool.wait_for(
            lambda o: is_map(o) and o["devices"].get(UUID_A) == [holder("ml", "vllm-1", "main")],
            5, "the new holder of " + UUID_A)
        self.assertLess(at - written, (2 * INTERVAL_S + 0.3) * SLOW)
        self.assertEqual(len(m["devices"]), 3)

    def test_a_restarted_kubelet_is_reported_then_recovered(self):
        self.start()
        self.tool.wait_for(is_map, 5, "a first pod map")
        self.kubelet.kill()
        self.assertTrue(os.path.exists(self.kubelet.socket))  # a crash leaves the file behind
        _, e = self.tool.wait_for(is_error, 3, "an error after the kubelet died")
        self.assertTrue(e["stale"])
        self.assertIn(self.kubelet.socket, e["error"])
        # It keeps re-dialling (with backoff) and reporting while it is gone.
        _, e2 = self.tool.wait_for(is_error, 3, "a second error")
        self.assertGreaterEqual(e2["failures"], 2)

        # The new kubelet replaces the socket file with a new one.
        self.kubelet.start()
        restarted = time.monotonic()
        at, m = self.tool.wait_for(is_map, BACKOFF_MAX_S + 3, "a pod map after the restart")
        self.assertEqual(m["devices"], CLUSTER_DEVICES)
        self.assertFalse(m["stale"])
        self.assertLess(at - restarted, (BACKOFF_MAX_S + 1) * SLOW)

    def test_a_kubelet_that_appears_late_is_picked_up(self):
        self.tool = Tool(self.kubelet.socket)
        _, e = self.tool.wait_for(is_error, 3, "an error while no kubelet listens")
        self.assertIn("No such file or directory", e["error"])
        self.kubelet.start()
        _, m = self.tool.wait_for(is_map, BACKOFF_MAX_S + 3, "a pod map once the kubelet is up")
        self.assertEqual(m["devices"], CLUSTER_DEVICES)

    def test_an_error_status_is_reported_and_polling_recovers(self):
        self.start()
        self.tool.wait_for(is_map, 5, "a first pod map")
        self.kubelet.write(dict(CLUSTER, fail="PERMISSION_DENIED"))
        _, e = self.tool.wait_for(is_error, 3, "the PERMISSION_DENIED error")
        self.assertIn("PERMISSION_DENIED", e["error"])
        self.assertTrue(e["stale"])
        self.kubelet.write(dict(CLUSTER, fail="UNAVAILABLE"))
        _, e = self.tool.wait_for(lambda o: is_error(o) and "UNAVAILABLE" in o["error"], 3,
                                  "the UNAVAILABLE error")
        self.kubelet.write(CLUSTER)
        _, m = self.tool.wait_for(is_map, BACKOFF_MAX_S + 3, "a pod map after the errors")
        self.assertEqual(m["devices"], CLUSTER_DEVICES)

    def test_a_hung_kubelet_hits_the_two_second_deadline(self):
        self.start()
        self.tool.wait_for(is_map, 5, "a first pod map")
        self.kubelet.write(dict(CLUSTER, delay_ms=60000))
        slowed = time.monotonic()
        at, e = self.tool.wait_for(is_error, 5, "a deadline error")
        self.assertIn("DEADLINE_EXCEEDED", e["error"])
        self.assertGreater(at - slowed, 1.5)
        self.kubelet.write(CLUSTER)
        _, m = self.tool.wait_for(is_map, BACKOFF_MAX_S + 3, "a pod map once it answers again")
        self.assertEqual(m["devices"], CLUSTER_DEVICES)


if __name__ == "__main__":
    unittest.main(verbosity=2)
