#!/usr/bin/env python3
"""`scalesim recommend` end to end: the real binary on a short synthetic
trace (its text, its JSON on stdout with the text on stderr), and the usage
errors, each naming the bad value and what is valid.

Usage: test_recommend_cli.py PATH-TO-SCALESIM
"""
import json
import subprocess
import sys
import unittest

SCALESIM = sys.argv.pop(1) if len(sys.argv) > 1 else "scalesim"
TRACE = ["--synthetic", "onoff", "--syn-rate", "20", "--syn-on", "60", "--syn-off", "120",
         "--syn-duration", "900", "--tail", "300"]


def run(args, timeout=120):
    return subprocess.run([SCALESIM] + args, capture_output=True, text=True, timeout=timeout)


class Recommend(unittest.TestCase):
    def test_json_on_stdout_matches_the_rule_and_the_text_goes_to_stderr(self):
        r = run(["recommend"] + TRACE + ["--cold-start", "60", "--json", "-"])
        self.assertEqual(r.returncode, 0, r.stderr)
        d = json.loads(r.stdout)
        self.assertEqual(sorted(d), ["defaults", "floor", "grid", "online_ideal", "recommended",
                                     "rule", "scaled_object", "stages", "trace"])
        self.assertAlmostEqual(d["trace"]["cold_start_s"], 60)
        grid = d["grid"]
        self.assertEqual(len(grid), 36)
        best = min(x["over_slo"] for x in grid)
        limit = best + max(d["rule"]["tolerance_abs"], d["rule"]["tolerance_rel"] * best)
        self.assertAlmostEqual(d["rule"]["limit_over_slo"], limit, places=5)
        within = [x for x in grid if x["over_slo"] <= d["rule"]["limit_over_slo"]]
        rec = d["recommended"]
        self.assertIn(rec, grid)
        self.assertEqual(rec["gpu_hours"], min(x["gpu_hours"] for x in within))
        # the stability figures of every setting; the online ideal has no HPA
        for x in grid:
            self.assertGreaterEqual(x["cancelled_starts"], 0)
            self.assertIsInstance(x["reversals"], int)
        self.assertIsNone(d["online_ideal"]["reversals"])
        self.assertIsNone(d["online_ideal"]["max_step"])
        so = d["scaled_object"]
        self.assertEqual(so["minReplicaCount"], 0)
        self.assertEqual(so["stabilizationWindowSeconds"], rec["stabilization_window_s"])
        self.assertEqual(so["metadata"]["metricType"], "demand")
        self.assertEqual("targetUtilization" in so["metadata"], rec["target_utilization"] != 0)
        self.assertEqual("drainSeconds" in so["metadata"], rec["drain_s"] != 10)
        # which stage to attack: the recommended setting as given, then one
        # change each, the stage times as simulated
        st = d["stages"]
        self.assertEqual([x["change"] for x in st],
                         ["as_given", "warm_pool_1", "warm_pool_2", "image_halved",
                          "weights_halved", "node_linger_600"])
        self.assertEqual(st[0]["gpu_hours"], rec["gpu_hours"])
        self.assertEqual(st[0]["over_slo"], rec["over_slo"])
        self.assertEqual([x["warm_pool"] for x in st], [0, 1, 2, 0, 0, 0])
        self.assertAlmostEqual(st[3]["image_s"], st[0]["image_s"] / 2, places=3)
        self.assertAlmostEqual(st[4]["weights_s"], st[0]["weights_s"] / 2, places=3)
        self.assertEqual(st[5]["node_linger_s"], 600)
        for x in st:
            self.assertGreater(x["gpu_hours"], 0)
            self.assertTrue(0 <= x["over_slo"] <= 1)
        # the text went to stderr, snippet included
        self.assertIn("recommended", r.stderr)
        self.assertIn("stabilizationWindowSeconds: %d\n" % rec["stabilization_window_s"],
                      r.stderr)
        # and the stage table after it, one row per change
        table = r.stderr[r.stderr.index("which stage to attack"):]
        for row in ["as recommended above", "warm pool of 1 node", "warm pool of 2 nodes",
                    "image stage halved", "weights stage halved", "nodes linger 600 s"]:
            self.assertIn(row, table)
        self.assertIn("%.2f" % st[1]["gpu_hours"], table)

    def test_usage_errors_name_the_value_and_the_range(self):
        cases = [
            (["recommend"] + TRACE + ["--cold-start", "0"],
             "--cold-start 0: needs a number in [1, 3600]"),
            (["recommend"] + TRACE + ["--cold-start", "4000"], "--cold-start 4000"),
            (["recommend"] + TRACE + ["--cold-start", "soon"], "--cold-start soon"),
            (["recommend"] + TRACE, "--cold-start S is required"),
            (["recommend"] + TRACE + ["--cold-start", "60", "--sweep", "x.svg"],
             "--sweep does not apply"),
            (TRACE + ["--cold-start", "60"], "--cold-start is a flag of scalesim recommend"),
        ]
        for args, msg in cases:
            r = run(args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(msg, r.stderr, args)
            self.assertEqual(r.stdout, "", args)

    def test_help_documents_recommend(self):
        r = run(["recommend", "--help"])
        self.assertEqual(r.returncode, 0)
        self.assertIn("scalesim recommend", r.stdout)
        self.assertIn("--cold-start S", r.stdout)


if __name__ == "__main__":
    unittest.main()
