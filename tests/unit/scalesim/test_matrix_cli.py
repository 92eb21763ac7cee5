#!/usr/bin/env python3
"""`scalesim matrix` end to end on one small case (a 600 s Poisson trace, one
speed, cold start and KV size): the shape of its JSON, Markdown and text, the
same figures twice, and the usage errors, each naming the bad value and what
is valid.

Usage: test_matrix_cli.py PATH-TO-SCALESIM
"""
import json
import subprocess
import sys
import unittest

SCALESIM = sys.argv.pop(1) if len(sys.argv) > 1 else "scalesim"
ONE_CASE = ["matrix", "--traces", "poisson", "--speeds", "2", "--cold", "60", "--kv", "400000",
            "--syn-duration", "600"]


def run(args, timeout=120):
    return subprocess.run([SCALESIM] + args, capture_output=True, text=True, timeout=timeout)


class Matrix(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = run(ONE_CASE + ["--json", "-"])

    def test_json_has_one_case_with_the_frontier_and_both_policies(self):
        r = self.r
        self.assertEqual(r.returncode, 0, r.stderr)
        d = json.loads(r.stdout)
        self.assertEqual(sorted(d), ["cases", "config", "summary"])
        self.assertEqual(d["config"]["traces"], ["poisson"])
        self.assertEqual(d["config"]["ideal_sweep"]["util"], [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])
        self.assertEqual(d["config"]["ideal_sweep"]["hold_s"], [60, 300])
        self.assertEqual(d["config"]["synthetic"]["poisson"]["duration_s"], 600)
        self.assertEqual(len(d["cases"]), 1)
        c = d["cases"][0]
        self.assertEqual(c["case"], "poisson x2 cold 60s kv 400k")
        self.assertEqual((c["speed"], c["cold_start_s"], c["kv_tokens"]), (2, 60, 400000))
        self.assertGreater(c["requests"], 0)
        self.assertEqual(len(c["ideal"]), 14)
        self.assertTrue(any(x["pareto"] for x in c["ideal"]))
        self.assertAlmostEqual(c["ideal_best_over_slo"], min(x["over_slo"] for x in c["ideal"]))
        self.assertEqual(c["overloaded"], c["ideal_best_over_slo"] > 0.25)
        self.assertEqual([p["key"] for p in c["policies"]], ["ours", "composite"])
        for p in c["policies"]:
            for k in ("gpu_hours", "over_slo", "frontier_gpu_hours", "ratio", "below_frontier",
                      "cold_starts", "cancelled_starts", "hpa_syncs", "reversals", "max_step"):
                self.assertIn(k, p)
            self.assertGreater(p["hpa_syncs"], 0)
            self.assertAlmostEqual(p["ratio"], p["gpu_hours"] / p["frontier_gpu_hours"], places=3)
            self.assertTrue(0 <= p["over_slo"] <= 1)
        o, comp = c["policies"]
        loses = o["gpu_hours"] > comp["gpu_hours"] and o["over_slo"] > comp["over_slo"]
        self.assertEqual(c["ours_loses_to_composite"], loses)
        s = d["summary"]
        self.assertEqual((s["cases"], s["compared"]), (1, 1))
        self.assertEqual(s["ours_loses_to_composite"], int(loses))
        self.assertEqual([p["key"] for p in s["policies"]], ["ours", "composite"])
        self.assertEqual(s["policies"][0]["cancelled_starts"], o["cancelled_starts"])
        # the text table went to stderr, the summary and the time with it
        self.assertIn("poisson x2 cold 60s kv 400k", r.stderr)
        self.assertIn("summary: 1 cases", r.stderr)
        self.assertIn("16 simulations", r.stderr)

    def test_the_same_figures_twice_and_as_markdown(self):
        again = run(ONE_CASE + ["--json", "-"])
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(again.stdout, self.r.stdout)
        md = run(ONE_CASE + ["--policies", "o", "--markdown", "-"])
        self.assertEqual(md.returncode, 0, md.stderr)
        self.assertIn("| case | policy | GPU-h | > SLO |", md.stdout)
        self.assertIn("| poisson x2 cold 60s kv 400k | ideal |", md.stdout)
        self.assertIn("| | `ours` |", md.stdout)
        # bench/README.md's block: the summary, then every case folded
        self.assertLess(md.stdout.index("| `ours` | 1 |"), md.stdout.index("<details>"))
        self.assertTrue(md.stdout.rstrip().endswith("</details>"))
        self.assertNotIn("`composite`", md.stdout)

    def test_usage_errors_name_the_value_and_what_is_valid(self):
        cases = [
            (["matrix", "--traces", "azure"], 2, "--traces azure: unknown trace azure"),
            (["matrix", "--policies", "oi"], 2, "'i' is no KEDA policy (abcdeosl)"),
            (["matrix", "--cold", "0"], 2, "--cold 0: a cold start is 1..3600 seconds"),
            (["matrix", "--speeds", "fast"], 2, "--speeds fast: expected up to 8 numbers"),
            (["matrix", "--json", "-", "--markdown", "-"], 2, "both want stdout"),
            (["matrix", "--bogus", "1"], 2, "unknown argument --bogus"),
            (["matrix", "--traces", "conv", "--conv", "/nonexistent/conv.csv", "--speeds", "1",
              "--cold", "60", "--kv", "400000"], 1, "/nonexistent/conv.csv"),
        ]
        for args, status, msg in cases:
            r = run(args)
            self.assertEqual(r.returncode, status, (args, r.stderr))
            self.assertIn(msg, r.stderr, args)
        r = run(["matrix", "--traces", "conv", "--conv", "/nonexistent/conv.csv"])
        self.assertIn("give --conv PATH, or leave conv out of --traces", r.stderr)

    def test_help_documents_the_matrix(self):
        r = run(["matrix", "--help"])
        self.assertEqual(r.returncode, 0)
        self.assertIn("scalesim matrix", r.stdout)
        self.assertIn("--traces LIST", r.stdout)


if __name__ == "__main__":
    unittest.main()
