#!/usr/bin/env python3
"""Real engines as they ship (issue 31), end to end: the fixtures of
tests/fixtures/engines/versions/ (each written from the engine's source at
the release its header names) served over HTTP on loopback, the scaler
(standalone, explicit engine URLs), grpc-go's kedaclient calling GetMetrics /
IsActive as KEDA does, and `keda-gpu-scaler query` for what Explain says.
Each outcome is a value or an error naming what is missing and what provides
it; docs/configuration.md ("What each engine exports, release by release")
is the reference.

Runs inside the network namespace the demand tests use (netns-run).

Environment (CTest): KEDA_GPU_SCALER, NVML_SIM_LIBRARY, KGS_GO_CLIENT,
KGS_SOURCE_DIR.
"""
import os
import subprocess
import unittest

from latency_hist import LatencyEngine
from test_demand import SERVER, StandaloneEngineCase

VERSIONS = os.path.join(os.environ["KGS_SOURCE_DIR"], "tests", "fixtures", "engines", "versions")


def fixture(name):
    with open(os.path.join(VERSIONS, name)) as f:
        return f.read()


class EngineVersions(StandaloneEngineCase):
    def serve(self, path, name):
        self.engines.pages.set(path, fixture(name))
        return self.engines.url(path)

    def error_of(self, md):
        r = self.poll_until(md, lambda r: "error" in r)
        return r["error"]["code"], r["error"]["message"]

    def query(self, md):
        q = subprocess.run([SERVER, "query", "--address", self.addr] +
                           sum((["--metadata", "%s=%s" % kv] for kv in md.items()), []),
                           capture_output=True, text=True, timeout=30)
        return q.stdout + q.stderr

    def test_triton_default_config_and_ttft_is_an_error_naming_the_flag(self):
        url = self.serve("/triton25", "triton-25-default.txt")
        md = {"metricType": "slo", "engine": "triton", "tritonEndpoint": url,
              "ttftP90Target": "500ms", "sourceInterval": "200ms"}
        code, msg = self.error_of(md)
        self.assertEqual(code, "FAILED_PRECONDITION", msg)
        self.assertIn("nv_inference_first_response_histogram_ms", msg)
        self.assertIn("--metrics-config histogram_latencies=true", msg)
        # the same server with the flag: a value
        url = self.serve("/triton25h", "triton-25-histograms.txt")
        md["tritonEndpoint"] = url
        r = self.poll_until(md, lambda r: "error" not in r)
        self.assertIn("metricValueFloat", r)

    def test_vllm_0_4_and_queue_time_is_an_error_naming_the_histogram(self):
        url = self.serve("/vllm04", "vllm-0.4.txt")
        md = {"metricType": "slo", "engine": "vllm", "vllmEndpoint": url,
              "queueTimeP90Target": "500ms", "sourceInterval": "200ms"}
        code, msg = self.error_of(md)
        self.assertEqual(code, "FAILED_PRECONDITION", msg)
        self.assertIn("vllm:request_queue_time_seconds", msg)
        self.assertIn("added in vLLM 0.6.4", msg)
        # a version gap is not a wrong URL: Triton before 23.09
        url = self.serve("/triton21", "triton-21.txt")
        code, msg = self.error_of({"metricType": "engine_queue", "engine": "triton",
                                   "tritonEndpoint": url, "targetValue": "5",
                                   "sourceInterval": "200ms"})
        self.assertEqual(code, "FAILED_PRECONDITION", msg)
        self.assertIn("it was added in Triton 23.09", msg)
        self.assertNotIn("is the URL its metrics endpoint", msg)

    def test_a_fresh_tgi_pod_beside_a_busy_one_reads_the_busy_queue(self):
        busy = self.serve("/tgi/busy", "tgi-3.3-busy.txt")
        fresh = self.serve("/tgi/fresh", "tgi-3.3-fresh.txt")
        md = {"metricType": "engine_queue", "engine": "tgi", "engineEndpoint": busy + "," + fresh,
              "targetValue": "4", "sourceInterval": "200ms"}
        r = self.poll_until(md, lambda r: "error" not in r and r["metricValueFloat"] == 9)
        self.assertTrue(r["active"], r)
        out = self.query(md)
        self.assertIn("read as the engine's zero", out)
        self.assertIn("tgi_queue_size", out)

    def test_sglang_without_a_completion_counter_is_bounded_and_names_the_prior(self):
        url = self.serve("/sglang03", "sglang-0.3.txt")
        md = {"metricType": "demand", "engine": "sglang", "engineEndpoint": url,
              "sourceInterval": "200ms"}
        r = self.poll_until(md, lambda r: "error" not in r)
        # one pod, capacity a prior: at most 8 replicas (QUEUE_MODEL_PRIOR_MAX_REPLICAS)
        self.assertGreater(r["metricValueFloat"], 100, r)
        self.assertLessEqual(r["metricValueFloat"], 800, r)
        out = self.query(md)
        self.assertIn("no completed-request counter", out)
        self.assertIn("prior", out)

    def test_one_slow_request_scales_nothing_up_for_any_tpot_or_itl_target(self):
        keys = ("tpotP50Target", "tpotP90Target", "tpotP99Target", "itlP90Target",
                "itlP99Target")
        for i, key in enumerate(keys):
            pod = LatencyEngine("vllm", model="llama")
            self.engines.pages.set("/slow/%d" % i, pod.text)
            md = {"metricType": "slo", "engine": "vllm", "vllmEndpoint":
                  self.engines.url("/slow/%d" % i), key: "50ms", "windowSeconds": "30",
                  "sourceInterval": "200ms"}
            self.poll_until(md, lambda r: "error" not in r)
            # one request of 300 tokens at 0.2 s a token: one per-request
            # observation, 300 per-token ones, one end-to-end
            pod.observe("tpot", 0.2, 1)
            pod.observe("itl", 0.2, 300)
            pod.observe("e2e", 60.0, 1)
            r = self.poll_until(md, lambda r: "error" not in r and r["active"])
            self.assertEqual(r["metricValueFloat"], 100, (key, r))  # 1 ready: held

if __name__ == "__main__":
    unittest.main()
