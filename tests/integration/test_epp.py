#!/usr/bin/env python3
"""engine: epp through the real server: the inference gateway's endpoint
picker (EPP) as a demand source. HTTP servers answer with the EPP fixtures
in client_golang's exact format (tests/fixtures/engines/epp*.txt, values in
its README) or with texts built here; the scaler (standalone with
engineEndpoint, and the aggregator over a fake Kubernetes API with
podSelector selecting two EPP pods) is polled by grpc-go's kedaclient as KEDA
would (GetMetrics, IsActive).

Checked: scale from zero (no model server ready, 4 requests in the EPP's
flow-control queue: active, engine_queue 4); the llm-d scrape with the
deprecated mirrors counted once; the fallback to the Inference Extension's
old names; two EPP replicas: their queues summed, the pool gauges maxed;
errors naming the EPP's metrics.

Runs inside its own network namespace (tests/integration/netns-run), like
test_demand.py, whose helpers it uses; every wait is bounded."""
import os
import unittest

import test_demand as td  # as a module: its TestCases must not run here too
from test_demand import EngineServer, StandaloneEngineCase, fixture, free_port


def epp_text(flow, ready, queue, running, kv, pool="pool-a"):
    """One EPP replica's scrape, llm-d names only: a flow-control queue of
    `flow` requests and the pool's averages."""
    out = []

    def gauge(name, help_text, series):
        out.append("# HELP %s [ALPHA] %s\n# TYPE %s gauge\n" % (name, help_text, name))
        for labels, v in series:
            out.append("%s{%s} %s\n" % (name, labels, v))

    gauge("llm_d_epp_average_kv_cache_utilization",
          "The average kv cache utilization for an inference server pool.",
          [('name="%s"' % pool, kv)])
    gauge("llm_d_epp_average_queue_size",
          "The average number of requests pending in the model server queue.",
          [('name="%s"' % pool, queue)])
    gauge("llm_d_epp_average_running_requests",
          "The average number of running requests across model servers in the pool.",
          [('name="%s"' % pool, running)])
    if flow is not None:
        gauge("llm_d_epp_flow_control_queue_size",
              "Current number of requests actively held in the Flow Control queue.",
              [('fairness_id="default",inference_pool="%s",model_name="llama",priority="0",'
                'target_model_name="llama"' % pool, flow)])
    gauge("llm_d_epp_ready_endpoints",
          "The number of ready endpoints in the inference server pool.",
          [('name="%s"' % pool, ready)])
    return "".join(out)


class EppStandalone(StandaloneEngineCase):
    @staticmethod
    def value_is(v, active=None):
        return lambda r: ("error" not in r and abs(r["metricValueFloat"] - v) < 1e-6 and
                          (active is None or r["active"] == active))

    def test_scale_from_zero_then_the_llm_d_scrape(self):
        """epp-zero.txt: no model server ready, 4 requests at the gateway:
        engine_queue 4 and active (KEDA scales 0 -> 1). Then epp.txt, every
        family under both names: 6 at the gateway + 4 x 2.5 in the servers =
        16 (32 if the mirrors were added); running 24, KV 180 %."""
        self.engines.pages.set("/epp/metrics", fixture("epp-zero.txt"))
        url = self.engines.url("/epp/metrics")
        md = {"metricType": "engine_queue", "engine": "epp", "engineEndpoint": url,
              "targetValue": "4", "sourceInterval": "100ms"}
        r = self.poll_until(md, self.value_is(4))
        self.assertTrue(r["active"], r)
        self.assertEqual(r["targetSizeFloat"], 4)
        run = dict(md, metricType="engine_running", targetValue="8")
        r = self.poll_until(run, self.value_is(0))
        self.assertFalse(r["active"], r)  # nothing runs while no server is ready
        self.engines.pages.set("/epp/metrics", fixture("epp.txt"))
        r = self.poll_until(md, self.value_is(16))
        self.assertTrue(r["active"], r)
        self.poll_until(run, self.value_is(24, active=True))
        kv = dict(md, metricType="engine_kv_cache", targetValue="80")
        self.poll_until(kv, self.value_is(180))
        # model filters the gateway's queue (llama 5 of the 6), not the pool's
        self.poll_until(dict(md, model="llama"), self.value_is(15))
        # demand: max(16 / 4, 24 / 8, 180 / 90) = 4 -> 400 against 100
        comp = {"metricType": "demand", "engine": "epp", "engineEndpoint": url,
                "targetQueuePerReplica": "4", "targetRunningPerReplica": "8",
                "targetKvCache": "90", "sourceInterval": "100ms"}
        r = self.poll_until(comp, self.value_is(400, active=True))
        self.assertEqual(r["targetSizeFloat"], 100)

    def test_old_names_and_errors_name_the_epp_metrics(self):
        """epp-legacy.txt (the Inference Extension's names, no flow control,
        no running average): engine_queue 2 x 1.5 + 1 x 4 = 7; KV 120 %;
        engine_running is FAILED_PRECONDITION naming the gauges."""
        self.engines.pages.set("/legacy/metrics", fixture("epp-legacy.txt"))
        url = self.engines.url("/legacy/metrics")
        md = {"metricType": "engine_queue", "engine": "epp", "engineEndpoint": url,
              "targetValue": "4", "sourceInterval": "100ms"}
        self.poll_until(md, self.value_is(7, active=True))
        self.poll_until(dict(md, metricType="engine_kv_cache", targetValue="80"),
                        self.value_is(120))
        r = self.poll_until(dict(md, metricType="engine_running", targetValue="8"),
                            lambda r: "error" in r)
        self.assertEqual(r["error"]["code"], "FAILED_PRECONDITION", r)
        self.assertIn("llm_d_epp_average_running_requests", r["error"]["message"])
        self.assertIn("inference_pool_average_running_requests", r["error"]["message"])
        # a vLLM scrape read as an EPP: neither family, the EPP's names given
        self.engines.pages.set("/notepp/metrics", fixture("vllm.txt"))
        r = self.poll_until(dict(md, engineEndpoint=self.engines.url("/notepp/metrics")),
                            lambda r: "error" in r)
        self.assertEqual(r["error"]["code"], "FAILED_PRECONDITION", r)
        self.assertIn("does not export the flow-control queue (llm_d_epp_flow_control_queue_size",
                      r["error"]["message"])
        self.assertIn("is it epp", r["error"]["message"])
        # a NaN is no value, naming the metric
        self.engines.pages.set("/nan/metrics", "llm_d_epp_ready_endpoints{name=\"p\"} NaN\n")
        r = self.poll_until(dict(md, engineEndpoint=self.engines.url("/nan/metrics")),
                            lambda r: "error" in r)
        self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
        self.assertIn("llm_d_epp_ready_endpoints is nan", r["error"]["message"])

    def test_refusals_name_what_works(self):
        url = self.engines.url("/none")
        cases = [
            ({"metricType": "demand", "engine": "epp", "engineEndpoint": url},
             "demandModel queueing does not work with engine epp"),
            ({"metricType": "slo", "engine": "epp", "engineEndpoint": url,
              "ttftP90Target": "1s"}, "scrape the model servers for latency"),
            ({"metricType": "engine_prompt_tokens_rate", "engine": "epp",
              "engineEndpoint": url, "targetValue": "100"},
             "engine epp is read for its queues and pool gauges, not for token counters"),
            ({"metricType": "vllm_queue_depth", "engine": "epp", "engineEndpoint": url,
              "targetValue": "4"}, "use engine_queue, engine_running or engine_kv_cache"),
        ]
        for md, want in cases:
            r = self.poll(md)
            self.assertEqual(r["error"]["code"], "INVALID_ARGUMENT", (md, r))
            self.assertIn(want, r["error"]["message"])


class EppAggregator(unittest.TestCase):
    """podSelector selects the EPP pods: every Ready EPP replica is scraped
    at its IP and port 9090 (enginePort here: the test's free port)."""
    setUp = td.DemandAggregator.setUp
    tearDown = td.DemandAggregator.tearDown
    start_aggregator = td.DemandAggregator.start_aggregator

    def test_two_epp_replicas_sum_queues_and_max_pool_gauges(self):
        """Replica 0 holds 3 requests, replica 1 holds 2; both see the same 4
        servers (one saw them a refresh later: 2.5 vs 2 queued). Queue: 3 + 2
        + max(10, 8) = 15; running max(24, 20) = 24."""
        api = self.api
        port = free_port("127.0.0.41")
        texts = (epp_text(3, 4, 2.5, 6, 0.45), epp_text(2, 4, 2, 5, 0.4))
        for i, (ip, text) in enumerate(zip(("127.0.0.41", "127.0.0.42"), texts)):
            srv = EngineServer(ip, port)
            srv.pages.set("/metrics", text)
            self.servers.append(srv)
            api.add_pod("ml", "llama-epp-%d" % i, labels={"app": "llama-epp"}, phase="Running",
                        pod_ip=ip, node="n1")
        addr = self.start_aggregator()
        d = td.Demand()
        md = {"metricType": "engine_queue", "engine": "epp", "targetValue": "4",
              "podSelector": "app=llama-epp", "namespace": "ml", "enginePort": str(port),
              "sourceInterval": "100ms"}
        r = d.poll_until(md, lambda r: "error" not in r, timeout=10, addr=addr)
        self.assertEqual(r["metricValueFloat"], 15, r)
        self.assertTrue(r["active"], r)
        r = d.poll_until(dict(md, metricType="engine_running", targetValue="8"),
                         lambda r: "error" not in r, timeout=10, addr=addr)
        self.assertEqual(r["metricValueFloat"], 24, r)
        # The pool at zero: no server ready, the gateway replicas hold 4 + 1.
        self.servers[0].pages.set("/metrics", epp_text(4, 0, 1, 0.5, 0.2))
        self.servers[1].pages.set("/metrics", epp_text(1, 0, 1, 0.5, 0.2))
        r = d.poll_until(md, lambda r: "error" not in r and r["metricValueFloat"] == 5,
                         timeout=10, addr=addr)
        self.assertTrue(r["active"], r)
        # Idle: the flow-control series are gone (none queued): a known 0.
        for srv in self.servers:
            srv.pages.set("/metrics", epp_text(None, 0, 0, 0, 0))
        r = d.poll_until(md, lambda r: "error" not in r and r["metricValueFloat"] == 0,
                         timeout=10, addr=addr)
        self.assertFalse(r["active"], r)


if __name__ == "__main__":
    if os.environ.get("KGS_IN_NETNS") != "1":
        raise SystemExit("run through tests/integration/netns-run (its own network namespace)")
    unittest.main(verbosity=2)
