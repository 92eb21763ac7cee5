#!/usr/bin/env python3
"""Token rates and vLLM LoRA awareness through the real server: fake engines
(fake_engines.py) whose prompt and generation token counters advance between
scrapes, read as engine_prompt_tokens_rate, engine_generation_tokens_rate
and demand's targetPromptTokensPerReplica / targetGenerationTokensPerReplica
(tokens/s over windowSeconds, summed over engines, unknown until two polls,
restarts handled); vllm_lora_waiting_engines with loraAdapter over fakes and
the vllm-lora.txt fixture in vLLM's exact format.

Runs inside its own network namespace (tests/integration/netns-run), like
test_demand.py, whose helpers it uses; every wait is bounded."""
import time
import unittest

from fake_engines import FakeEngine
from test_demand import StandaloneEngineCase, fixture


class TokenRates(StandaloneEngineCase):
    def near(self, want, tol):
        return lambda r: "error" not in r and abs(r["metricValueFloat"] - want) <= tol

    def serve(self, path, e):
        self.engines.pages.set(path, e.text, headers={"Content-Type": e.content_type})
        return self.engines.url(path)

    # ---- token rates -------------------------------------------------------------------

    def test_token_rates_summed_over_engines(self):
        """Engine a: 20 requests/s of 500 prompt + 200 generated tokens = 10000
        and 4000 tokens/s; engine b: 10/s of 300 + 100 = 3000 and 1000. Sums:
        13000 prompt/s, 5000 generated/s. Over a 2 s window a pod's increase
        is a whole number of requests: +-1 request is +-250 (a) + 150 (b)
        prompt tokens/s, the tolerance below."""
        a = FakeEngine("vllm", running=2, prompt_len=500, gen_len=200)
        b = FakeEngine("vllm", running=1, prompt_len=300, gen_len=100)
        urls = ",".join([self.serve("/tok/a", a), self.serve("/tok/b", b)])
        a.run(20)
        b.run(10)
        try:
            base = {"engine": "vllm", "vllmEndpoint": urls, "windowSeconds": "2",
                    "sourceInterval": "100ms"}
            prompt = dict(base, metricType="engine_prompt_tokens_rate", targetValue="4000")
            gen = dict(base, metricType="engine_generation_tokens_rate", targetValue="2000")
            r = self.poll_until(prompt, self.near(13000, 800))
            self.assertTrue(r["active"], r)
            self.assertEqual(r["targetSizeFloat"], 4000)
            self.poll_until(gen, self.near(5000, 300))
            # Back-to-back calls all see the window's rate (never 0 between calls).
            for _ in range(5):
                r = self.poll(prompt)
                self.assertLess(abs(r["metricValueFloat"] - 13000), 800, r)
            # demand: max(13000 / 4000, 5000 / 2500) = 3.25 -> 325 against 100.
            comp = dict(base, metricType="demand", targetPromptTokensPerReplica="4000",
                        targetGenerationTokensPerReplica="2500")
            r = self.poll_until(comp, self.near(325, 20))
            self.assertEqual(r["targetSizeFloat"], 100)
            self.assertTrue(r["active"])
            # Idle: the counters stop, the rate falls to a known 0 and the trigger
            # (nothing running) goes inactive.
            a.run(0)
            b.run(0)
            a.running = b.running = 0
            r = self.poll_until(prompt, self.near(0, 1e-9))
            self.assertFalse(r["active"], r)
        finally:
            a.run(0)
            b.run(0)

    def test_unknown_until_the_window_holds_two_polls(self):
        """With sourceInterval 5s the second poll comes 5 s after the first:
        until then the rate is UNAVAILABLE (KEDA's fallback), never 0."""
        e = FakeEngine("sglang", running=1, prompt_len=400, gen_len=100)
        url = self.serve("/tok/slow", e)
        e.run(10)
        try:
            md = {"metricType": "engine_generation_tokens_rate", "engine": "sglang",
                  "engineEndpoint": url, "targetValue": "100", "sourceInterval": "5s",
                  "windowSeconds": "30"}
            r = self.poll_until(md, lambda r: "error" in r and
                                "collecting a second poll" in r["error"]["message"], timeout=3)
            self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
            self.assertIn(url.split("//")[1].split("/")[0], r["error"]["message"])
            # 10 requests/s x 100 tokens = 1000 tokens/s once two polls are in.
            self.poll_until(md, self.near(1000, 120), timeout=12)
        finally:
            e.run(0)

    def test_restart_never_gives_a_negative_rate(self):
        """TGI (histogram _sums): a restart drops the counters to 0; the window
        starts again after the drop: no negative rate, and the rate returns."""
        e = FakeEngine("tgi", running=1, prompt_len=100, gen_len=50)
        url = self.serve("/tok/tgi", e)
        e.run(20)  # 2000 prompt tokens/s
        try:
            md = {"metricType": "engine_prompt_tokens_rate", "engine": "tgi",
                  "engineEndpoint": url, "targetValue": "1000", "windowSeconds": "2",
                  "sourceInterval": "100ms"}
            self.poll_until(md, self.near(2000, 150))
            e.reset()
            for _ in range(15):
                r = self.poll(md)
                if "error" not in r:
                    self.assertGreaterEqual(r["metricValueFloat"], 0, r)
                else:
                    self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
                time.sleep(0.05)
            self.poll_until(md, self.near(2000, 150))
        finally:
            e.run(0)

    def test_token_rate_config_errors_name_the_value(self):
        r = self.poll({"metricType": "engine_prompt_tokens_rate", "engine": "triton",
                       "tritonEndpoint": self.engines.url("/none"), "targetValue": "10"})
        self.assertEqual(r["error"]["code"], "INVALID_ARGUMENT", r)
        self.assertIn("Triton exports no prompt or generation token counters",
                      r["error"]["message"])
        r = self.poll({"metricType": "demand", "engine": "vllm",
                       "vllmEndpoint": self.engines.url("/none"),
                       "targetPromptTokensPerReplica": "-5"})
        self.assertEqual(r["error"]["code"], "INVALID_ARGUMENT", r)
        self.assertIn("targetPromptTokensPerReplica \"-5\"", r["error"]["message"])

    # ---- LoRA --------------------------------------------------------------------------

    def test_lora_fixture_in_vllms_format(self):
        """tests/fixtures/engines/vllm-lora.txt: the newest series lists
        sql-lora waiting and running (6 waiting, 4 running): 1 engine, active;
        sql-lora-v2 is only in an older series: 0, inactive; chat-lora only
        runs: 0, active."""
        self.engines.pages.set("/lora/fx", fixture("vllm-lora.txt"))
        base = {"metricType": "vllm_lora_waiting_engines", "targetValue": "0.5",
                "vllmEndpoint": self.engines.url("/lora/fx")}
        r = self.poll_until(dict(base, loraAdapter="sql-lora"), self.near(1, 1e-9))
        self.assertTrue(r["active"], r)
        self.assertEqual(r["targetSizeFloat"], 0.5)
        r = self.poll_until(dict(base, loraAdapter="sql-lora-v2"), self.near(0, 1e-9))
        self.assertFalse(r["active"], r)
        r = self.poll_until(dict(base, loraAdapter="chat-lora"), self.near(0, 1e-9))
        self.assertTrue(r["active"], r)

    def test_lora_waiting_engines_follow_the_newest_series_and_the_gauges(self):
        a = FakeEngine("vllm", waiting=3, running=1)
        b = FakeEngine("vllm", waiting=2, running=1)
        a.lora = [([], [], 1764662400.0), (["chat-lora"], ["sql-lora"], 1764662460.5)]
        b.lora = [([], ["sql-lora"], 1764662400.0), (["sql-lora"], ["chat-lora"], 1764662459.0)]
        urls = ",".join([self.serve("/lora/a", a), self.serve("/lora/b", b)])
        md = {"metricType": "vllm_lora_waiting_engines", "loraAdapter": "sql-lora",
              "targetValue": "0.5", "vllmEndpoint": urls, "sourceInterval": "100ms"}
        r = self.poll_until(md, self.near(1, 1e-9))  # a only: b's newest series waits chat-lora
        self.assertTrue(r["active"], r)
        b.lora.append(([], ["chat-lora", "sql-lora"], 1764662470.0))
        self.poll_until(md, self.near(2, 1e-9))
        # a's queue drains: its series still lists sql-lora (vLLM stopped
        # stepping), the gauge overrules it.
        a.waiting = 0
        self.poll_until(md, self.near(1, 1e-9))
        # nothing of sql-lora waits or runs anywhere: 0 and inactive, although
        # both engines still run other requests.
        b.waiting = 0
        r = self.poll_until(md, self.near(0, 1e-9))
        self.assertFalse(r["active"], r)
        # LoRA off (no series) on an engine with requests waiting: not known.
        c = FakeEngine("vllm", waiting=4, running=0)
        md["vllmEndpoint"] = urls + "," + self.serve("/lora/c", c)
        r = self.poll_until(md, lambda r: "error" in r)
        self.assertEqual(r["error"]["code"], "FAILED_PRECONDITION", r)
        self.assertIn("vllm:lora_requests_info", r["error"]["message"])
        self.assertIn("--enable-lora", r["error"]["message"])
        # ... and known (0) once it is idle.
        c.waiting = 0
        self.poll_until(md, self.near(0, 1e-9))

    def test_lora_config_errors_name_the_value(self):
        url = self.engines.url("/none")
        r = self.poll({"metricType": "vllm_lora_waiting_engines", "targetValue": "1",
                       "vllmEndpoint": url})
        self.assertEqual(r["error"]["code"], "INVALID_ARGUMENT", r)
        self.assertIn("needs loraAdapter", r["error"]["message"])
        r = self.poll({"metricType": "vllm_lora_waiting_engines", "targetValue": "1",
                       "vllmEndpoint": url, "loraAdapter": "a,b"})
        self.assertEqual(r["error"]["code"], "INVALID_ARGUMENT", r)
        self.assertIn("invalid loraAdapter \"a,b\"", r["error"]["message"])
        r = self.poll({"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
                       "vllmEndpoint": url, "loraAdapter": "sql-lora"})
        self.assertEqual(r["error"]["code"], "INVALID_ARGUMENT", r)
        self.assertIn("loraAdapter is set, but metricType is engine_queue",
                      r["error"]["message"])


if __name__ == "__main__":
    unittest.main()
