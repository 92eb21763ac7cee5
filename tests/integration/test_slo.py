#!/usr/bin/env python3
"""Latency objectives end to end (metricType slo, and latency targets on
demand): real HTTP servers serving vLLM's latency histograms
(latency_hist.LatencyEngine, the real bucket layouts) that change between
scrapes, the scaler (standalone, explicit engine URLs), and grpc-go's
kedaclient calling GetMetrics / IsActive as KEDA does. Values are computed
by hand in each case (docs/configuration.md, "Latency objectives").

Runs inside the network namespace the demand tests use (netns-run).

Environment (CTest): KEDA_GPU_SCALER, NVML_SIM_LIBRARY, KGS_GO_CLIENT,
KGS_SOURCE_DIR.
"""
import time
import unittest

from latency_hist import LatencyEngine
from test_demand import StandaloneEngineCase

WINDOW = 4  # windowSeconds: short, so the window slides within the test


class Slo(StandaloneEngineCase):
    @staticmethod
    def value_is(v, active=None):
        return lambda r: ("error" not in r and abs(r["metricValueFloat"] - v) < 1e-3 and
                          (active is None or r["active"] == active))

    def serve(self, name, n):
        """n vLLM pods (one engine each) at /<name>/<i>, their URLs."""
        pods = [LatencyEngine("vllm", model="llama") for _ in range(n)]
        for i, e in enumerate(pods):
            self.engines.pages.set("/%s/%d" % (name, i), e.text)
        return pods, ",".join(self.engines.url("/%s/%d" % (name, i)) for i in range(n))

    def test_p90_ttft_scales_and_comes_back_when_the_window_slides(self):
        pods, urls = self.serve("ttft", 2)
        md = {"metricType": "slo", "engine": "vllm", "vllmEndpoint": urls,
              "ttftP90Target": "500ms", "windowSeconds": str(WINDOW), "sourceInterval": "200ms"}
        # no request yet: latency unknown; idle -> 0 and not active
        r = self.poll_until(md, self.value_is(0, active=False))
        self.assertEqual(r["targetSizeFloat"], 100)
        # requests in flight but none observed in the window: hold the 2 ready replicas
        pods[0].running = 2
        self.poll_until(md, self.value_is(200, active=True))
        # pod 0: 30 x 0.3 s, 6 x 0.6, 4 x 0.9; pod 1: 50 x 0.3, 6 x 0.6, 4 x 0.9.
        # Merged buckets le=0.5: 80, 0.75: 92, 1.0: 100 -> p90 = 0.5 + 0.25 x 10/12
        # = 0.70833 s; / 0.5 = 1.41667; x 2 ready = 2.8333 -> 283.33
        for e, fast in ((pods[0], 30), (pods[1], 50)):
            e.observe("ttft", 0.3, fast)
            e.observe("ttft", 0.6, 6)
            e.observe("ttft", 0.9, 4)
        r = self.poll_until(md, self.value_is(200 * (0.5 + 0.25 * 10 / 12) / 0.5, active=True))
        # the window slides past them: unknown again, busy -> hold 200
        r = self.poll_until(md, self.value_is(200, active=True), timeout=WINDOW + 6)
        # fast requests now: 100 x 0.05 s per pod -> p90 = 0.04 + 0.02 x 180/200 = 0.058;
        # ratio 0.116 x 2 = 0.232, clamped to 2 / sloMaxStep 2 = 1 replica -> 100
        pods[0].running = 0
        for e in pods:
            e.observe("ttft", 0.05, 100)
        self.poll_until(md, self.value_is(100, active=True))
        # and once they slide out too, idle: 0, not active
        self.poll_until(md, self.value_is(0, active=False), timeout=WINDOW + 6)

    def test_one_slow_request_scales_nothing_and_a_restart_counts_as_new(self):
        pods, urls = self.serve("few", 1)
        md = {"metricType": "slo", "engine": "vllm", "vllmEndpoint": urls,
              "ttftP90Target": "500ms", "windowSeconds": str(WINDOW), "sourceInterval": "200ms"}
        self.poll_until(md, self.value_is(0, active=False))
        # 18 fast and 1 slow: 19 < the 20 a p90 needs -> not judged -> ratio 0:
        # 1 ready / 2 -> at least 1 replica while requests are seen -> 100
        pods[0].observe("ttft", 0.1, 18)
        pods[0].observe("ttft", 30.0, 1)
        self.poll_until(md, self.value_is(100, active=True))
        # a restart: the counters start again below what was seen; what the pod
        # reports now is new: 40 requests at 1.2 s (with or without the 19 before
        # still in the window, the p90 lies in (1.0, 2.5]: a ratio above 2),
        # clamped to 1 x sloMaxStep 2 -> 200
        time.sleep(0.5)
        pods[0].reset()
        pods[0].observe("ttft", 1.2, 40)
        self.poll_until(md, self.value_is(200, active=True), timeout=WINDOW + 6)

    def test_latency_on_demand_the_larger_need_wins(self):
        pods, urls = self.serve("dem", 2)
        md = {"metricType": "demand", "engine": "vllm", "vllmEndpoint": urls,
              "targetQueuePerReplica": "5", "tpotP90Target": "50ms",
              "windowSeconds": str(WINDOW), "sourceInterval": "200ms"}
        # queue 4 + 6 = 10 / 5 = 2 replicas -> 200; no latency observed yet
        pods[0].waiting, pods[1].waiting = 4, 6
        self.poll_until(md, self.value_is(200))
        # TPOT 100 x 0.04 on pod 0, 100 x 0.06 on pod 1: merged p90 =
        # 0.05 + 0.025 x 80/100 = 0.07 -> 1.4 x 2 engines = 2.8 -> 280 wins
        pods[0].observe("tpot", 0.04, 100)
        pods[1].observe("tpot", 0.06, 100)
        self.poll_until(md, self.value_is(280, active=True))

    def test_targets_an_engine_cannot_report_are_refused(self):
        self.engines.pages.set("/tgi/0", LatencyEngine("tgi").text)
        r = self.poll({"metricType": "slo", "engine": "tgi",
                       "engineEndpoint": self.engines.url("/tgi/0"), "ttftP90Target": "1s"})
        self.assertIn("error", r, r)
        self.assertEqual(r["error"]["code"], "INVALID_ARGUMENT", r)
        self.assertIn("ttftP90Target", r["error"]["message"])
        self.assertIn("TGI exports no time to first token histogram", r["error"]["message"])


if __name__ == "__main__":
    unittest.main()
