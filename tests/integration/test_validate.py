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
    @staticmethod
    def spec(port, md):
        """GetMetricSpec through grpc-go: the first line of the client's JSON."""
        r = subprocess.run([CLIENT, "spec", "-addr", "127.0.0.1:%d" % port, "-max-time", "10s"]
                           + md_args(md), capture_output=True, text=True, timeout=20)
        return json.loads(r.stdout.splitlines()[0])

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
                got = self.spec(port, md)
                self.assertEqual(got["error"]["code"], "INVALID_ARGUMENT", got)
                rc, out, err = validate(*args.split())
                self.assertEqual(rc, 1, err)
                self.assertIn("): " + got["error"]["message"] + "\n", out,
                              "validate and the server disagree")
            # Every problem, whole, through KEDA's own client library (grpc-go):
            # the one message is validate's lines, numbered, the last to its end.
            md = {"metricType": "kv_cache_usage", "targetValue": "0",
                  "pollIntervalSeconds": "0", "colour": "blue"}
            got = self.spec(port, md)
            self.assertEqual(got["error"]["code"], "INVALID_ARGUMENT", got)
            doc = ("apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\n"
                   "metadata: {name: q, namespace: ml}\nspec:\n  scaleTargetRef: {name: q}\n"
                   "  triggers:\n  - type: external\n    metadata:\n"
                   "      scalerAddress: keda-gpu-scaler.keda-gpu-scaler.svc:6000\n" +
                   "".join('      %s: "%s"\n' % kv for kv in md.items()))
            rc, out, err = validate("-", stdin=doc)
            self.assertEqual(rc, 1, err)
            msgs = [l.split("(external): ", 1)[1] for l in out.splitlines()]
            self.assertEqual(len(msgs), 4, out)
            want = "4 problems: " + "; ".join("%d) %s" % (i + 1, m) for i, m in enumerate(msgs))
            self.assertEqual(got["error"]["message"], want)
            self.assertGreater(len(want), 1000)  # issue 27 saw them cut at ~480 bytes
            self.assertTrue(want.endswith('invalid pollIntervalSeconds "0": must be a whole '
                                          'number of seconds from 1 to 86400'), want)
        finally:
            p.send_signal(signal.SIGTERM)
            p.wait(10)
            tmp.cleanup()

    def test_every_problem_of_a_trigger_is_a_line(self):
        """An unquoted targetValue no longer hides the unknown metricType: each
        problem is a line of its own, on the line of the key it names, whole."""
        rc, out, err = validate("tests/fixtures/validate/problems.yaml")
        self.assertEqual(rc, 1, err)
        lines = out.splitlines()
        head = "tests/fixtures/validate/problems.yaml:%d: ScaledObject ml/llama trigger #%d (%s): "
        want = [
            (17, 0, "external", 'metadata targetValue: 70 is a number in YAML'),
            (18, 0, "external", 'unknown metadata key "pollInterval": did you mean '
                                '"pollIntervalSeconds"?'),
            (15, 0, "external", 'invalid metricType "kv_cache_usage": that is vLLM\'s metric '
                                'vllm:kv_cache_usage_perc; did you mean metricType: '
                                'engine_kv_cache with engine: vllm? It must be one of '),
            (25, 1, "external-push", 'invalid targetQueuePerReplica "lots"'),
            (28, 1, "external-push", "redisStreamMeasure is set with redisListName: it applies "
                                     "to streams"),
            (29, 1, "external-push", 'invalid sourceInterval "1h": must be from 100ms to 1m'),
        ]
        self.assertEqual(len(lines), len(want), out)
        for got, (line, idx, typ, text) in zip(lines, want):
            self.assertTrue(got.startswith(head % (line, idx, typ) + text), got)
        # whole: the metric type list to its last name, and the note after it
        self.assertTrue(lines[2].endswith(", vllm_lora_waiting_engines (the keys that depend on "
                                          "metricType are checked once it is valid)"), lines[2])
        self.assertGreater(len(lines[2]), 600)
        self.assertIn("6 problem(s), 0 warning(s)", err)

    def test_what_cannot_wake_from_zero_is_a_warning(self):
        """minReplicaCount 0 (KEDA's default) or idleReplicaCount 0, and no trigger
        with a signal that exists at zero: each of ours says what to add.
        Warnings exit 0; --strict makes them fail."""
        rc, out, err = validate("tests/fixtures/validate/wake.yaml")
        self.assertEqual(rc, 0, out + err)
        lines = out.splitlines()
        named = [l.split(" trigger #")[0].split("ScaledObject ml/")[-1].split("ScaledJob ml/")[-1]
                 for l in lines]
        self.assertEqual(named, ["warn-engine-pods", "warn-engine-url", "warn-latency",
                                 "warn-gpu-and-cpu", "warn-idle", "warn-job"], out)
        for l in lines:
            self.assertIn("): warning: ", l)
            self.assertIn("add a signal that exists at zero", l)
            self.assertIn("redisAddress", l)
            self.assertIn("or set minReplicaCount: 1", l)
        self.assertIn("minReplicaCount is 0 (KEDA's default) and no trigger of this ScaledObject "
                      "can wake it from zero: this one reads vllm engine metrics from "
                      "podSelector's pods, which do not exist while no replica runs", lines[0])
        self.assertIn("from vllmEndpoint, which does not answer", lines[1])
        self.assertIn("reads latency, which is observed only while replicas serve", lines[2])
        self.assertIn("reads GPU metrics, which read 0 while no pod runs", lines[3])
        self.assertIn("idleReplicaCount is 0", lines[4])
        self.assertIn("no trigger of this ScaledJob can start a Job", lines[5])
        self.assertIn("0 problem(s), 6 warning(s)", err)
        rc, out2, err = validate("--strict", "tests/fixtures/validate/wake.yaml")
        self.assertEqual((rc, out2), (1, out), err)
        # the shipped examples wake (or keep a replica): no warning there
        files = sorted(glob.glob(os.path.join(SRC, "deploy", "examples", "*.yaml")))
        rc, out, err = validate("--strict", *files)
        self.assertEqual((rc, out), (0, ""), err)

    def test_standalone_demand_says_what_it_cannot_see(self):
        doc = """apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: q, namespace: ml}
spec:
  scaleTargetRef: {name: q}
  triggers:
  - type: external-push
    metadata:
      scalerAddress: keda-gpu-scaler.keda-gpu-scaler.svc:6000
      metricType: demand
      engine: vllm
      vllmEndpoint: http://llama.ml.svc:8000/metrics
      redisAddress: redis.queues.svc:6379
      redisListName: llama-requests
"""
        rc, out, err = validate("--role", "standalone", "-", stdin=doc)
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(out.splitlines()), 1, out)
        self.assertIn("-:9: ScaledObject ml/q trigger #0 (external-push): warning: in the "
                      "standalone role the scaler sees no pods: the queueing model", out)
        self.assertIn("counts the replicas it asked for as starting until their engines answer",
                      out)
        self.assertIn("a Service URL shows one replica a poll", out)
        self.assertIn("the aggregator role with podSelector sees the pods themselves", out)
        self.assertEqual(validate("--role", "standalone", "--strict", "-", stdin=doc)[0], 1)
        # the aggregator role sees the pods; the composite model counts no replicas
        self.assertEqual(validate("-", stdin=doc)[:2], (0, ""))
        composite = doc + "      targetQueuePerReplica: \"5\"\n"
        self.assertEqual(validate("--role", "standalone", "-", stdin=composite)[:2], (0, ""))

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


    def test_who_may_claim_what(self):
        """A trigger's namespace other than its ScaledObject's is a problem
        unless --allow-cross-namespace allows the pair, as on the server;
        with --source-auth, a URL outside the profile's destinations is one
        too, and sourceAuth never goes with another namespace's pods."""
        doc = """apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: peek, namespace: attacker}
spec:
  scaleTargetRef: {name: peek}
  minReplicaCount: 1
  triggers:
    - type: external
      metadata:
        scalerAddress: keda-gpu-scaler.keda-gpu-scaler.svc:6000
        metricType: gpu_utilization
        targetValue: "50"
        podSelector: team=finance
        namespace: victim
    - type: external
      metadata:
        scalerAddress: keda-gpu-scaler.keda-gpu-scaler.svc:6000
        metricType: engine_queue
        engine: vllm
        vllmEndpoint: https://collector.attacker.example/metrics
        sourceAuth: epp
        targetValue: "5"
"""
        rc, out, err = validate("-", stdin=doc)
        self.assertEqual(rc, 1, err)
        self.assertEqual(out.splitlines(), [
            "-:14: ScaledObject attacker/peek trigger #0 (external): namespace victim: triggers "
            "of namespace attacker may select pods of their own namespace only; the operator "
            "allows another with --allow-cross-namespace=attacker:victim on the server"], out)
        profiles = "epp:token-file=/t,namespaces=attacker,hosts=epp.llm.svc"
        rc, out, err = validate("--allow-cross-namespace", "attacker:victim", "--source-auth",
                                profiles, "-", stdin=doc)
        self.assertEqual(rc, 1, err)
        self.assertEqual(out.splitlines(), [
            "-:21: ScaledObject attacker/peek trigger #1 (external): sourceAuth epp may not send "
            "its credential to https://collector.attacker.example:443: the host is not in the "
            "profile's hosts (--source-auth epp: hosts=epp.llm.svc, cidrs=none, pods=none)"], out)
        rc, out, err = validate("--allow-cross-namespace", "attacker:victim", "--source-auth",
                                profiles.replace("epp.llm.svc", "collector.attacker.example"),
                                "-", stdin=doc)
        self.assertEqual((rc, out), (0, ""), err)
        rc, out, err = validate("--allow-cross-namespace", "nope", "-", stdin=doc)
        self.assertEqual(rc, 2)
        self.assertIn("--allow-cross-namespace: \"nope\" is not SRC:DST", err)

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
