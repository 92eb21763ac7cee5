"""Fake serving engines for the integration tests: what vLLM, SGLang, TGI and
Triton serve on /metrics, in each engine's own exposition format (the
sources are listed in tests/fixtures/engines/README.md), with the gauges a
test sets and the cumulative completed-request and token counters growing
as requests complete, so that a test can drive the queueing model end to
end from what a real engine would show.

    e = FakeEngine("vllm", waiting=3, running=2)
    pages.set("/metrics", e.text, headers={"Content-Type": e.content_type})
    e.complete(10)              # ten requests finish now
    e.run(rate=20)              # and from now on 20 per second of wall time
    e.reset()                   # a restart: every counter back to 0
    e.lora = [(["a"], ["b"], 1764662400.0)]   # vLLM --enable-lora: lora_requests_info series

Counters only grow (except on reset()), as a Prometheus counter does.
Triton exports no token counters, so its fake has none either.
"""
import threading
import time

ENGINES = ("vllm", "sglang", "tgi", "triton")
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
TEXT = "text/plain; version=0.0.4; charset=utf-8"
CREATED = 1733068800.0  # the *_created samples of OpenMetrics: when the counters began


def py_float(v):
    """A number as prometheus_client writes it (floatToGoString): Python's
    repr, switched to Go's exponent form once the integer part has more than
    six digits (1733068800.0 -> 1.7330688e+09, 120000.0 stays)."""
    v = float(v)
    if v == float("inf"):
        return "+Inf"
    s = repr(v)
    dot = s.find(".")
    if v > 0 and dot > 6:
        mantissa = ("%s.%s%s" % (s[0], s[1:dot], s[dot + 1:])).rstrip("0.")
        return "%se+0%d" % (mantissa, dot - 1)
    return s


def rust_num(v):
    """A number as the Rust metrics-exporter-prometheus writes it: shortest
    form, no ".0" on whole numbers."""
    v = float(v)
    if v == float("inf"):
        return "+Inf"
    return str(int(v)) if v.is_integer() else repr(v)


class FakeEngine:
    def __init__(self, engine, model="llama", waiting=0, running=0, kv=0.0, prompt_len=500,
                 gen_len=200, openmetrics=False, completed=0):
        if engine not in ENGINES:
            raise ValueError("engine %r: one of %s" % (engine, ", ".join(ENGINES)))
        if openmetrics and engine not in ("vllm", "sglang"):
            raise ValueError("%s serves only the text format" % engine)
        self.engine, self.model = engine, model
        self.waiting, self.running, self.kv = waiting, running, kv
        self.prompt_len, self.gen_len = prompt_len, gen_len
        self.openmetrics = openmetrics
        self.lock = threading.Lock()
        self.rate = 0.0
        # vLLM with --enable-lora: the vllm:lora_requests_info series, as
        # [(running adapter names, waiting adapter names, Unix time set)];
        # None: LoRA off (no such metric).
        self.lora = None
        self.max_lora = 4
        # process_start_time_seconds as prometheus_client's ProcessCollector
        # writes it (prometheus/client_python, prometheus_client/
        # process_collector.py at 038b5bd: a gauge, no labels, /proc/self/stat's
        # start ticks / SC_CLK_TCK + btime; PROCESS_COLLECTOR is registered in
        # the default REGISTRY at import, before the engine's own families);
        # None: not exported, as with /proc unreadable or multiprocess mode
        self.start_time = None
        self.reset()
        if completed:
            self.complete(completed)

    @property
    def content_type(self):
        return OPENMETRICS if self.openmetrics else TEXT

    def reset(self):
        """A restarted engine: every counter starts again from 0."""
        with self.lock:
            self.done = 0  # requests completed by complete()
            self.prompt = 0
            self.gen = 0
            self.lengths = {}  # (prompt_len, gen_len) -> requests, for TGI's histograms
            self.t0 = time.monotonic()

    def complete(self, n=1, prompt_len=None, gen_len=None):
        """n requests finish now, each with prompt_len prompt tokens and
        gen_len generated tokens (the engine's defaults when None)."""
        p = self.prompt_len if prompt_len is None else prompt_len
        g = self.gen_len if gen_len is None else gen_len
        with self.lock:
            self.done += n
            self.prompt += n * p
            self.gen += n * g
            self.lengths[(p, g)] = self.lengths.get((p, g), 0) + n

    def run(self, rate):
        """From now on, requests also complete at `rate` per second of wall
        time (default lengths); run(0) stops them."""
        with self.lock:
            self._fold()
            self.rate = float(rate)

    def _fold(self):
        """Moves the completions run() produced so far into the counters."""
        now = time.monotonic()
        n = int((now - self.t0) * self.rate)
        if n:
            self.done += n
            self.prompt += n * self.prompt_len
            self.gen += n * self.gen_len
            key = (self.prompt_len, self.gen_len)
            self.lengths[key] = self.lengths.get(key, 0) + n
            self.t0 += n / self.rate
        elif self.rate == 0:
            self.t0 = now

    def counters(self):
        """(completed, prompt tokens, generated tokens) as the engine shows them now."""
        with self.lock:
            self._fold()
            return self.done, self.prompt, self.gen

    def text(self):
        with self.lock:
            self._fold()
            return getattr(self, "_" + self.engine)()

    # ---- the formats -------------------------------------------------------------------

    def _counter(self, name, help_, series, fmt=py_float):
        """A prometheus_client Counter `name` (without _total) with series
        [(labels, value)]: text 0.0.4 or OpenMetrics."""
        out = []
        family = name if self.openmetrics else name + "_total"
        out.append("# HELP %s %s" % (family, help_))
        out.append("# TYPE %s counter" % family)
        for labels, v in series:
            out.append("%s_total{%s} %s" % (name, labels, fmt(v)))
            if self.openmetrics:
                out.append("%s_created{%s} %s" % (name, labels, py_float(CREATED)))
        return out

    def _gauge(self, name, help_, labels, v):
        return ["# HELP %s %s" % (name, help_), "# TYPE %s gauge" % name,
                "%s{%s} %s" % (name, labels, py_float(v))]

    def _end(self, lines):
        if self.openmetrics:
            lines.append("# EOF")
        return "\n".join(lines) + "\n"

    def _vllm(self):
        # vllm/v1/metrics/loggers.py: labels engine, model_name; one success
        # series per finished_reason (here 90 % stop, the rest length).
        lab = 'engine="0",model_name="%s"' % self.model
        stop = self.done - self.done // 10
        out = []
        if self.start_time is not None:
            out += ["# HELP process_start_time_seconds Start time of the process since unix "
                    "epoch in seconds.", "# TYPE process_start_time_seconds gauge",
                    "process_start_time_seconds %s" % py_float(self.start_time)]
        out += self._gauge("vllm:num_requests_running",
                           "Number of requests in model execution batches.", lab, self.running)
        out += self._gauge("vllm:num_requests_waiting",
                           "Number of requests waiting to be processed.", lab, self.waiting)
        out += self._gauge("vllm:kv_cache_usage_perc",
                           "KV-cache usage. 1 means 100 percent usage.", lab, self.kv)
        out += self._counter("vllm:prompt_tokens", "Number of prefill tokens processed.",
                             [(lab, self.prompt)])
        out += self._counter("vllm:generation_tokens", "Number of generation tokens processed.",
                             [(lab, self.gen)])
        out += self._counter("vllm:request_success", "Count of successfully processed requests.",
                             [('engine="0",finished_reason="stop",model_name="%s"' % self.model,
                               stop),
                              ('engine="0",finished_reason="length",model_name="%s"' % self.model,
                               self.done - stop)])
        if self.lora is not None:
            # vllm/v1/metrics/loggers.py: labels max_lora, running_lora_adapters,
            # waiting_lora_adapters (sorted by prometheus_client), names joined
            # by ",", the value set_to_current_time(); every state seen stays.
            out += ["# HELP vllm:lora_requests_info Running stats on lora requests.",
                    "# TYPE vllm:lora_requests_info gauge"]
            for running, waiting, at in self.lora:
                out.append('vllm:lora_requests_info{max_lora="%d",running_lora_adapters="%s",'
                           'waiting_lora_adapters="%s"} %s'
                           % (self.max_lora, ",".join(running), ",".join(waiting), py_float(at)))
        return self._end(out)

    def _sglang(self):
        # python/sglang/srt/metrics/collector.py: scheduler gauges and the
        # tokenizer's counters, labels sorted by prometheus_client.
        lab = 'engine_type="unified",model_name="%s",pp_rank="0",tp_rank="0"' % self.model
        out = []
        out += self._gauge("sglang:num_running_reqs", "The number of running requests.", lab,
                           self.running)
        out += self._gauge("sglang:token_usage", "The token usage.", lab, self.kv)
        out += self._gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.",
                           lab, self.waiting)
        out += self._counter("sglang:prompt_tokens", "Number of prefill tokens processed.",
                             [(lab, self.prompt)])
        out += self._counter("sglang:generation_tokens", "Number of generation tokens processed.",
                             [(lab, self.gen)])
        out += self._counter("sglang:num_requests", "Number of requests processed.",
                             [(lab, self.done)])
        return self._end(out)

    def _tgi_histogram(self, name, help_, bounds, pick):
        """A TGI router histogram over the completed requests' lengths."""
        out = ["# HELP %s %s" % (name, help_), "# TYPE %s histogram" % name]
        obs = [(pick(k), n) for k, n in self.lengths.items()]
        for le in bounds:
            c = sum(n for v, n in obs if v <= le)
            out.append('%s_bucket{le="%s"} %d' % (name, rust_num(le), c))
        out.append('%s_bucket{le="+Inf"} %d' % (name, self.done))
        out.append("%s_sum %s" % (name, rust_num(sum(v * n for v, n in obs))))
        out.append("%s_count %d" % (name, self.done))
        return out

    def _tgi(self):
        # router/src/server.rs: unlabelled series, Rust numbers, the token
        # histograms' 100 buckets of max_input_tokens / 100 and
        # max_total_tokens / 100 (here 4000 and 8000). Every request the
        # fake completes passed validation, so the input-length count equals
        # the successes.
        out = ["# HELP tgi_request_count Total number of requests",
               "# TYPE tgi_request_count counter", "tgi_request_count %d" % self.done,
               "# HELP tgi_request_success Number of successful requests",
               "# TYPE tgi_request_success counter", "tgi_request_success %d" % self.done,
               "# HELP tgi_queue_size Current queue size", "# TYPE tgi_queue_size gauge",
               "tgi_queue_size %s" % rust_num(self.waiting),
               "# HELP tgi_batch_current_size Current batch size",
               "# TYPE tgi_batch_current_size gauge",
               "tgi_batch_current_size %s" % rust_num(self.running)]
        out += self._tgi_histogram("tgi_request_input_length", "Input token length per request",
                                   [40.0 * (x + 1) for x in range(100)], lambda k: k[0])
        out += self._tgi_histogram("tgi_request_generated_tokens", "Generated tokens per request",
                                   [80.0 * (x + 1) for x in range(100)], lambda k: k[1])
        return self._end(out)

    def _triton(self):
        # Triton core (docs/user_guide/metrics.md): integer counters per
        # model and version; no token counters.
        lab = 'model="%s",version="1"' % self.model
        return self._end([
            "# HELP nv_inference_request_success Number of successful inference requests, "
            "all batch sizes",
            "# TYPE nv_inference_request_success counter",
            "nv_inference_request_success{%s} %d" % (lab, self.done),
            "# HELP nv_inference_queue_duration_us Cumulative inference queuing duration in "
            "microseconds (includes cached requests)",
            "# TYPE nv_inference_queue_duration_us counter",
            "nv_inference_queue_duration_us{%s} %d" % (lab, self.done * 1000),
            "# HELP nv_inference_pending_request_count Instantaneous number of pending requests "
            "awaiting execution per-model.",
            "# TYPE nv_inference_pending_request_count gauge",
            "nv_inference_pending_request_count{%s} %d" % (lab, self.waiting)])
