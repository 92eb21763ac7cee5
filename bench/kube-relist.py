#!/usr/bin/env python3
"""The aggregator's memory for a cluster's pods, and one 410 relist of them: a fake
Kubernetes API (tests/integration/fake_kube_api.py) serves PODS Running pods (four labels,
a pod IP, a GPU ask), an aggregator with no reachable agent lists them, then the fake's
history is compacted and the watch cut, so the aggregator relists after a 410. Prints
RSS after the first list, the peak (VmHWM) through the relist, and RSS after it.
Loopback only; asserts nothing.

  bench/kube-relist.py BUILD_DIR [PODS]   (default 50000)
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from fake_kube_api import FakeKubeAPI  # noqa: E402
from kgs_util import free_port  # noqa: E402
from kgs_util import proc_status_kib as status  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "bench"))
from figures import record  # noqa: E402

build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/release")
PODS = int(sys.argv[2]) if len(sys.argv) > 2 else 50000


def main():
    tmp = tempfile.TemporaryDirectory()
    api = FakeKubeAPI(token="bench")
    api.start()
    token = os.path.join(tmp.name, "token")
    with open(token, "w") as f:
        f.write("bench")
    for i in range(PODS):
        api.add_pod("team-%d" % (i % 40), "vllm-llama-%d-7d9f8c6b5-x%05d" % (i % 200, i),
                    labels={"app": "vllm-llama-%d" % (i % 200), "app.kubernetes.io/name": "vllm",
                            "pod-template-hash": "7d9f8c6b5", "tier": "inference"},
                    node="gpu-node-%05d" % (i // 5), phase="Running",
                    pod_ip="10.%d.%d.%d" % ((i >> 16) & 255, (i >> 8) & 255, i & 255))
    port, probe = free_port(), free_port()
    agg = subprocess.Popen([os.path.join(build, "src/server/keda-gpu-scaler"), "--role",
                            "aggregator", "--listen-address", "127.0.0.1", "--port", str(port),
                            "--probe-port", str(probe), "--metrics-port", "0", "--agents",
                            "127.0.0.1:1", "--kube-api", api.url, "--kube-token-file", token,
                            "--log-level", "warn"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        t0 = time.monotonic()
        api.wait_for(lambda a: len(a.requests_of("watch")) >= 1, timeout=240)
        listed_s = time.monotonic() - t0
        time.sleep(2)
        settled, pages = status(agg.pid, "VmRSS"), len(api.requests_of("list"))
        # The aggregator's resourceVersion is now too old: its next watch gets 410.
        api.advance_rv()
        api.compact()
        api.break_watches()
        api.wait_for(lambda a: len(a.requests_of("watch")) >= 2 and
                     len(a.requests_of("list")) >= 2 * pages, timeout=240)
        time.sleep(2)
        peak = status(agg.pid, "VmHWM")
        print("== aggregator: %d pods in %d pages (listed in %.1f s), one 410 relist"
              % (PODS, pages, listed_s))
        print("RSS after the first list      %6.1f MiB" % (settled / 1024))
        print("peak RSS through the relist   %6.1f MiB" % (peak / 1024))
        print("RSS after the relist          %6.1f MiB" % (status(agg.pid, "VmRSS") / 1024))
        record("aggregator: %d pods, relist peak RSS" % PODS, peak, "KiB")
    finally:
        agg.send_signal(signal.SIGTERM)
        try:
            agg.wait(10)
        except subprocess.TimeoutExpired:
            agg.kill()
        api.stop()
        tmp.cleanup()


if __name__ == "__main__":
    main()
