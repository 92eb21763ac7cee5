"""Latency histograms as the serving engines export them, for the latency
(metricType slo) tests and fixtures: real metric names, label sets and
bucket bounds per engine (the upstream files are cited in
src/sources/engine_metrics.c and tests/fixtures/engines/README.md), with
observations a test adds.

    e = LatencyEngine("vllm", engines=2)
    e.observe("ttft", 0.3, n=40, engine=0)   # 40 requests at 0.3 s on engine 0
    text = e.text()                          # the /metrics page now

Buckets are cumulative and only grow (reset() is a restart), as a
Prometheus histogram's do.
"""
import bisect
import threading

from fake_engines import py_float, rust_num

# vllm-project/vllm vllm/v1/metrics/loggers.py (PrometheusStatLogger)
VLLM_TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
             7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]
VLLM_TPOT = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
             10.0, 20.0, 40.0, 80.0]
VLLM_REQUEST = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
                120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0]
# sgl-project/sglang python/sglang/srt/metrics/collector.py
SGLANG_TTFT = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400]
SGLANG_ITL = [0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060,
              0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000]
SGLANG_E2E = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 800]
SGLANG_QUEUE = [0.0, 0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40,
                50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200,
                1400, 1600, 1800, 2000, 2500, 3000]
# huggingface/text-generation-inference router/src/server.rs: the router's
# duration histograms use 35 geometric buckets, 0.0001 x 1.5^n for n = 1..35
TGI_DURATION = [0.0001 * 1.5 ** n for n in range(1, 36)]
# triton-inference-server/server docs/user_guide/metrics.md: the default
# buckets of nv_inference_first_response_histogram_ms
TRITON_TTFT_MS = [100, 500, 2000, 5000]

# signal -> (metric name, bounds), per engine. "tpot" is the per-request
# time per output token (vLLM >= 0.11, TGI), "itl" the per-token one.
FAMILIES = {
    "vllm": {
        "ttft": ("vllm:time_to_first_token_seconds", VLLM_TTFT),
        "tpot": ("vllm:request_time_per_output_token_seconds", VLLM_TPOT),
        "itl": ("vllm:inter_token_latency_seconds", VLLM_TPOT),
        "e2e": ("vllm:e2e_request_latency_seconds", VLLM_REQUEST),
        "queue": ("vllm:request_queue_time_seconds", VLLM_REQUEST),
    },
    "sglang": {
        "ttft": ("sglang:time_to_first_token_seconds", SGLANG_TTFT),
        "itl": ("sglang:inter_token_latency_seconds", SGLANG_ITL),
        "e2e": ("sglang:e2e_request_latency_seconds", SGLANG_E2E),
        "queue": ("sglang:queue_time_seconds", SGLANG_QUEUE),
    },
    "tgi": {
        "tpot": ("tgi_request_mean_time_per_token_duration", TGI_DURATION),
        "e2e": ("tgi_request_duration", TGI_DURATION),
        "queue": ("tgi_request_queue_duration", TGI_DURATION),
    },
    "triton": {
        "ttft": ("nv_inference_first_response_histogram_ms", TRITON_TTFT_MS),
    },
}


HELP = {
    "vllm:time_to_first_token_seconds": "Histogram of time to first token in seconds.",
    "vllm:inter_token_latency_seconds": "Histogram of inter-token latency in seconds.",
    "vllm:request_time_per_output_token_seconds":
        "Histogram of time_per_output_token_seconds per request.",
    "vllm:time_per_output_token_seconds": "Histogram of time per output token in seconds.",
    "vllm:e2e_request_latency_seconds": "Histogram of e2e request latency in seconds.",
    "vllm:request_queue_time_seconds": "Histogram of time spent in WAITING phase for request.",
    "sglang:time_to_first_token_seconds": "Histogram of time to first token in seconds.",
    "sglang:inter_token_latency_seconds": "Histogram of inter-token latency in seconds.",
    "sglang:time_per_output_token_seconds": "Histogram of time per output token in seconds.",
    "sglang:e2e_request_latency_seconds": "Histogram of End-to-end request latency in seconds",
    "sglang:queue_time_seconds": "Histogram of queueing time in seconds.",
    "nv_inference_first_response_histogram_ms":
        "Duration from request to first response in milliseconds",
}


class LatencyEngine:
    def __init__(self, engine, model="llama", engines=1, waiting=0, running=0,
                 start_time=None, legacy_tpot=False, both_tpot=False):
        self.engine, self.model, self.engines = engine, model, engines
        self.waiting, self.running = waiting, running
        self.start_time = start_time  # process_start_time_seconds, or None
        self.legacy_tpot = legacy_tpot  # vLLM / SGLang: the older per-token name only
        self.both_tpot = both_tpot  # vLLM 0.10.2-0.11: both per-token names, the same buckets
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with self.lock:
            # (signal, engine index) -> [per-bucket counts (not cumulative), +Inf extra, sum]
            self.h = {}

    def observe(self, signal, value, n=1, engine=0):
        """n observations of value (seconds; Triton's are stored in ms)."""
        name, bounds = FAMILIES[self.engine][signal]
        v = value * 1000.0 if self.engine == "triton" else value
        with self.lock:
            b = self.h.setdefault((signal, engine), [[0] * len(bounds), 0, 0.0])
            i = bisect.bisect_left(bounds, v)
            if i < len(bounds):
                b[0][i] += n
            else:
                b[1] += n
            b[2] += v * n

    def _labels(self, e, le=None, signal=None):
        if self.engine == "sglang" and signal == "queue":
            # newer SGLang: create_queue_time_histogram(), labelled by dp_rank only
            parts = ['dp_rank="%d"' % e] + (['le="%s"' % le] if le is not None else [])
            return "{%s}" % ",".join(parts)
        if self.engine == "vllm":
            parts = ['engine="%d"' % e]
            if le is not None:
                parts.append('le="%s"' % le)
            parts.append('model_name="%s"' % self.model)
        elif self.engine == "sglang":
            parts = ['engine_type="unified"']
            if le is not None:
                parts.append('le="%s"' % le)
            parts += ['model_name="%s"' % self.model, 'pp_rank="0"', 'tp_rank="%d"' % e]
        elif self.engine == "triton":
            parts = []
            if le is not None:
                parts.append('le="%s"' % le)
            parts += ['model="%s"' % self.model, 'version="1"']
        else:  # TGI: no labels
            parts = ['le="%s"' % le] if le is not None else []
        return "{%s}" % ",".join(parts) if parts else ""

    def text(self):
        # metrics-exporter-prometheus (TGI) and prometheus-cpp (Triton) print 600, not 600.0
        num = rust_num if self.engine in ("tgi", "triton") else py_float
        out = []
        if self.start_time is not None and self.engine in ("vllm", "sglang"):
            out += ["# HELP process_start_time_seconds Start time of the process since unix "
                    "epoch in seconds.",
                    "# TYPE process_start_time_seconds gauge",
                    "process_start_time_seconds %s" % py_float(self.start_time)]
        gauges = {
            "vllm": ("vllm:num_requests_waiting", "vllm:num_requests_running"),
            "sglang": ("sglang:num_queue_reqs", "sglang:num_running_reqs"),
            "tgi": ("tgi_queue_size", "tgi_batch_current_size"),
            "triton": ("nv_inference_pending_request_count", None),
        }[self.engine]
        for g, v in zip(gauges, (self.waiting, self.running)):
            if g is None:
                continue
            out += ["# TYPE %s gauge" % g]
            for e in range(self.engines):
                share = v // self.engines + (1 if e < v % self.engines else 0)
                out.append("%s%s %s" % (g, self._labels(e), num(share)))
        with self.lock:
            fams = list(FAMILIES[self.engine].items())
            if self.both_tpot and "itl" in FAMILIES[self.engine]:
                name, bounds = FAMILIES[self.engine]["itl"]
                fams.append(("itl", (name.replace("inter_token_latency", "time_per_output_token"),
                                     bounds)))
            for signal, (name, bounds) in fams:
                if signal == "itl" and self.legacy_tpot:
                    name = name.replace("inter_token_latency", "time_per_output_token")
                series = [e for e in range(self.engines) if (signal, e) in self.h]
                if self.engine == "tgi" and not series:
                    continue  # metrics-exporter-prometheus shows a histogram after its first record
                if not series:
                    series = list(range(self.engines))
                if HELP.get(name):
                    out.append("# HELP %s %s" % (name, HELP[name]))
                out.append("# TYPE %s histogram" % name)
                for e in series:
                    counts, over, total = self.h.get((signal, e), [[0] * len(bounds), 0, 0.0])
                    cum = 0
                    for le, c in zip(bounds, counts):
                        cum += c
                        out.append("%s_bucket%s %s" % (name, self._labels(e, num(le), signal),
                                                       num(cum)))
                    out.append("%s_bucket%s %s" % (name, self._labels(e, "+Inf", signal),
                                                   num(cum + over)))
                    out.append("%s_count%s %s" % (name, self._labels(e, None, signal),
                                                  num(cum + over)))
                    out.append("%s_sum%s %s" % (name, self._labels(e, None, signal), num(total)))
        return "\n".join(out) + "\n"


def fixtures():
    """The latency fixtures of tests/fixtures/engines/ (see its README):
    name -> text."""
    v = LatencyEngine("vllm", model="llama-3.1-8b", engines=2, waiting=7, running=5,
                      start_time=1733068800.0, both_tpot=True)
    v.observe("ttft", 0.3, 30, 0), v.observe("ttft", 0.6, 6, 0), v.observe("ttft", 0.9, 4, 0)
    v.observe("ttft", 0.3, 50, 1), v.observe("ttft", 0.6, 6, 1), v.observe("ttft", 0.9, 4, 1)
    v.observe("itl", 0.04, 100, 0), v.observe("itl", 0.06, 100, 1)
    v.observe("tpot", 0.04, 40, 0), v.observe("tpot", 0.06, 60, 1)
    v.observe("e2e", 2.25, 40, 0), v.observe("e2e", 4.0, 60, 1)
    v.observe("queue", 0.125, 90, 0), v.observe("queue", 0.375, 10, 0)
    s = LatencyEngine("sglang", model="qwen2.5-7b-instruct", engines=1, waiting=9, running=3,
                      start_time=1733068800.0)
    s.observe("ttft", 0.5, 18), s.observe("ttft", 1.5, 2)
    s.observe("itl", 0.012, 900), s.observe("itl", 0.05, 100)
    s.observe("e2e", 3.0, 20)
    s.observe("queue", 0.02, 19), s.observe("queue", 2.5, 1)
    t = LatencyEngine("tgi", waiting=4, running=2)
    t.observe("tpot", 0.03, 20), t.observe("e2e", 5.0, 20), t.observe("queue", 0.1, 20)
    tr = LatencyEngine("triton", model="llama3_trtllm", waiting=5)
    tr.observe("ttft", 0.3, 60), tr.observe("ttft", 1.0, 30), tr.observe("ttft", 3.0, 10)
    return {"vllm-latency.txt": v.text(), "sglang-latency.txt": s.text(),
            "tgi-latency.txt": t.text(), "triton-latency.txt": tr.text()}


if __name__ == "__main__":
    import os
    import sys
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    for name, text in fixtures().items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
