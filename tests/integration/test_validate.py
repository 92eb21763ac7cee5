#!/usr/bin/env python3
"""`keda-gpu-scaler validate`: every example in deploy/examples passes; the
problems in tests/fixtures/validate/bad.yaml are reported with their lines and
with the very message the server answers (checked against a running
standalone server with grpc-go); exit statuses; standard input.

Environment (CTest): KEDA_GPU_SCALER, NVML_SIM_LIBRARY, KGS_GO_CLIENT,
KGS_SOURCE_DIR.
"""
import glob
import json
import os
import signal
import subprocess
import tempfile
import unittest

from kgs_util import SOURCE_DIR, child_env, free_port, http_ok, md_args, scaler_command, wait_for

SERVER = os.environ["KEDA_GPU_SCALER"]
SIM = os.environ["NVML_SIM_LIBRARY"]
CLIENT = os.environ["KGS_GO_CLIENT"]
SRC = SOURCE_DIR
BAD = os.path.join(SRC, "tests", "fixtures", "validate", "bad.yaml")


def validate(*args, stdin=None):
    p = subprocess.run([SERVER, "validate"] + list(args), capture_output=True, text=True,
                       input=stdin, timeout=30, cwd=SRC)
    return p.returncode, p.stdout, p.stderr




class Validate(unittest.TestCase):
    def test_every_example_is_valid(self):
        files = sorted(glob.glob(os.path.join(SRC, "deploy", "examples", "*.yaml")))
        self.assertGreaterEqual(len(files), 7)
        rc, out, err = validate(*files)
        self.assertEqual((rc, out), (0, ""), err)
        # deploy/examples/mig.yaml has two triggers (memory per MIG instance, and demand)
        triggers = 0
        for path in files:
            with open(path) as f:
                triggers += f.read().count("\n    - type: external")
        self.assertGreater(triggers, len(files))
        self.assertIn("%d trigger(s) checked, 0 problem(s)" % triggers, err)

    def test_problems_are_reported_with_their_lines(self):
        rc, out, err = validate("tests/fixtures/validate/bad.yaml")
        self.assertEqual(rc, 1, err)
        lines = out.splitlines()
        self.assertEqual(len(lines), 5, out)
        # each line is the offending key's: here the typo's own line
        self.assertTrue(lines[0].startswith(
            "tests/fixtures/validate/bad.yaml:14: ScaledObject ml/typo trigger #0 (external): "
            'unknown metadata key "targetvalue": did you mean "targetValue"?'), lines[0])
        self.assertTrue(lines[1].startswith(
            "tests/fixtures/validate/bad.yaml:29: ScaledObject unquoted trigger #0 "
            "(external-push): metadata targetValue: 5 is a number in YAML"), lines[1])
        self.assertIn('quote it, targetValue: "5"', lines[1])
        self.assertIn(":31: ScaledObject unquoted trigger #1 (external): the trigger's "
                      "metricType Utilization", lines[2])
        self.assertIn(":57: ScaledJob jobs/ssrf trigger #0 (external): invalid demandEndpoint",
                      lines[3])
        # no scalerAddress: a problem, not a skip
        self.assertIn(":75: ScaledObject ml/noaddress trigger #0 (external): no scalerAddress",
                      lines[4])
        # what was skipped is named, with what counts as ours
        self.assertIn("1 external trigger(s) for other scalers skipped (scalerAddress "
                      "some-other-scaler.other.svc:9000; ours are keda-gpu-scaler*", err)
        # --all checks the other scaler's trigger too.
        rc, out, err = validate("--all", "tests/fixtures/validate/bad.yaml")
        self.assertEqual(len(out.splitlines()), 6, out)
        self.assertIn('unknown metadata key "anything"', out)
        # with fullnameOverride the service has another name: --scaler-address says so
        rc, out, err = validate("--scaler-address", "some-other-*",
                                "tests/fixtures/validate/bad.yaml")
        self.assertIn('unknown metadata key "anything"', out)
        self.assertNotIn("ml/typo", out)  # keda-gpu-scaler.* is not ours then
        self.assertIn("ours are some-other-*", err)
        self.assertEqual(validate("--all", "--scaler-address", "x", "a.yaml")[0], 2)

    def test_messages_are_the_servers(self):
        tmp = tempfile.TemporaryDirectory()
        scen = os.path.join(tmp.name, "s.json")
        with open(os.path.join(SRC, "sim", "scenarios", "idle-4xh100.json")) as f, \
                open(scen, "w") as g:
            g.write(f.read())
        port, probe = free_port(), free_port()
        p = subprocess.Popen(scaler_command(SERVER, port, probe, nvml_library=SIM,
                                            sample_interval=None),
                             env=child_env(scenario=scen),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: http_ok(probe, "/readyz"), 15, interval=0.1)
            cases = [
                ({"metricType": "gpu_utilization", "targetvalue": "60"},
                 "tests/fixtures/validate/bad.yaml"),
                ({"metricType": "queue_length", "targetValue": "1",
                  "demandEndpoint": "http://169.254.169.254/latest/meta-data",
                  "demandMetric": "q"}, "tests/fixtures/validate/bad.yaml"),
                ({"profile": "sm-active", "podSelector": "app=vllm-chat",
                  "podAggregation": "avg", "targetValue": "70"},
                 "--role standalone deploy/examples/vllm-gpu-activity.yaml"),
            ]
            for md, args in cases:
                r = subprocess.run([CLIENT, "spec", "-addr", "127.0.0.1:%d" % port,
                                    "-max-time", "10s"] + md_args(md),
                                   capture_output=True, text=True, timeout=20)
                got = json.loads(r.stdout.splitlines()[0])
                self.assertEqual(got["error"]["code"], "INVALID_ARGUMENT", got)
                rc, out, err = validate(*args.split())
                self.assertEqual(rc, 1, err)
                self.assertIn("): " + got["error"]["message"] + "\n", out,
                              "validate and the server disagree")
        finally:
            p.send_signal(signal.SIGTERM)
            p.wait(10)
            tmp.cleanup()

    def test_exit_statuses_and_stdin(self):
        rc, out, err = validate("tests/fixtures/validate/syntax.yaml")
        self.assertEqual(rc, 2)
        self.assertIn("syntax.yaml:4:5: YAML:", err)
        rc, out, err = validate("no/such/file.yaml")
        self.assertEqual(rc, 2)
        self.assertIn("no/such/file.yaml: No such file or directory", err)
        self.assertEqual(validate()[0], 2)
        self.assertEqual(validate("--role", "agent", "x.yaml")[0], 2)
        self.assertEqual(validate("--bogus", "x.yaml")[0], 2)
        rc, out, err = validate("--help")
        self.assertEqual(rc, 0)
        self.assertIn("Usage: keda-gpu-scaler validate", out)
        with open(BAD) as f:
            rc, out, err = validate("-", stdin=f.read())
        self.assertEqual(rc, 1)
        self.assertTrue(out.startswith("-:14: ScaledObject ml/typo"), out)
        # an empty input checks nothing: an error, not a pass
        for text in ("", "# only a comment\n"):
            rc, out, err = validate("-", stdin=text)
            self.assertEqual(rc, 2, err)
            self.assertIn("-: empty input: no YAML document", err)


    def test_passwords_in_urls_are_masked(self):
        """validate's lines go to CI logs: a password in a URL, ours or another
        scaler's, is masked there as in the server's answers."""
        doc = """apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: q, namespace: ml}
spec:
  scaleTargetRef: {name: q}
  triggers:
  - type: external
    metadata:
      scalerAddress: keda-gpu-scaler.keda-gpu-scaler.svc:6000
      metricType: queue_length
      targetValue: "5"
      redisAddress: redis://u:pw-Validate-S3cret@redis:6379
      redisListName: jobs
  - type: external
    metadata:
      scalerAddress: grpc://x:pw-Validate-S3cret@other.svc:9000
"""
        rc, out, err = validate("-", stdin=doc)
        self.assertEqual(rc, 1, err)
        self.assertNotIn("pw-Validate-S3cret", out + err)
        self.assertIn("redis://u:***@redis:6379", out)
        self.assertIn("grpc://x:***@other.svc:9000", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
