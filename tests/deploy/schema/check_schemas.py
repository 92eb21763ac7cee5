#!/usr/bin/env python3
"""Validates what we ship against the real schemas, not only our own checks.

Renders the Helm chart for every values combination tests/deploy/helm uses
(check_manifests.CHART_CASES, with the same Go render harness), and the
example ScaledObject its NOTES print, runs
`kubectl kustomize` on deploy/manifests/base and every overlay, reads
deploy/examples/*.yaml, and hands every object to validate.js (node):
built-in kinds, ServiceMonitor and Certificate against npm's kubernetes-models
(Kubernetes' OpenAPI schemas and the models generated from those CRDs), KEDA's
kinds against keda_schema.js (our table of the fields KEDA's CRDs accept; its
header says which KEDA it describes and how to update it).

Then a self-test. Negative: the same objects, each broken in one way the real
schemas refuse (a containerPort "x", a misspelt ScaledObject field, an
unquoted trigger metadata number, a ScaledJob without containers, an unknown
kind...), must each fail, naming the bad field. Positive: a shipped
ScaledObject and ScaledJob, given one at a time each field KEDA accepts that
we do not ship (scalingModifiers, fallback.behavior, rollout,
scalingStrategy...), must pass, so the table is not narrower than KEDA.

Needs node and the npm packages of tests/integration/js (`make js-deps`),
kubectl (Debian: kubernetes-client), python3-yaml.
"""
import argparse
import copy
import datetime
import glob
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "helm"))
import check_manifests  # noqa: E402  (the chart's values combinations)


def load_docs(text):
    return [d for d in yaml.safe_load_all(text) if d]


def notes_example(text):
    """The YAML example in the chart's NOTES: from a line "apiVersion: ..." to
    the next blank line; None when there is none."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("apiVersion:"):
            end = next((k for k in range(i, len(lines)) if not lines[k].strip()), len(lines))
            return "\n".join(lines[i:end]) + "\n"
    return None


def json_default(o):
    # Timestamps YAML parsed into datetimes go back as the API reads them.
    if isinstance(o, (datetime.date, datetime.datetime)):
        return o.isoformat()
    raise TypeError("not JSON: %r" % (o,))


class Run:
    def __init__(self, opts):
        self.opts = opts
        self.src = opts.source_dir
        self.tmp = tempfile.mkdtemp(prefix="kgs-schema-")
        self.failures = []

    def fail(self, what):
        self.failures.append(what)
        print("FAIL %s" % what)

    def render(self, args):
        chart = os.path.join(self.src, "deploy", "helm", "keda-gpu-scaler")
        cmd = [self.opts.render, "--release", "keda-gpu-scaler", "--namespace", "keda-gpu-scaler"]
        return subprocess.run(cmd + args + [chart], capture_output=True, text=True, timeout=120)

    def collect(self):
        """Every object we ship, as (source, doc)."""
        items = []
        for case in check_manifests.CHART_CASES:
            r = self.render(case["args"])
            if r.returncode != 0:
                self.fail("render chart %s: %s" % (case["name"], r.stderr.strip()))
                continue
            items += [("chart " + case["name"], d) for d in load_docs(r.stdout)]
            n = self.render(case["args"] + ["--notes"])
            if n.returncode != 0:
                self.fail("render NOTES %s: %s" % (case["name"], n.stderr.strip()))
                continue
            block = notes_example(n.stdout)
            if block is None:
                self.fail("NOTES %s: no example ScaledObject (a line \"apiVersion: ...\" up to a blank "
                          "line) to validate" % case["name"])
                continue
            items += [("NOTES " + case["name"], d) for d in load_docs(block)]
        manifests = os.path.join(self.src, "deploy", "manifests")
        overlays = sorted(os.path.dirname(p) for p in
                          glob.glob(os.path.join(manifests, "overlays", "*", "kustomization.yaml")))
        for d in [os.path.join(manifests, "base")] + overlays:
            rel = os.path.relpath(d, self.src)
            r = subprocess.run(["kubectl", "kustomize", d], capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                self.fail("kubectl kustomize %s: %s" % (rel, r.stderr.strip()))
                continue
            items += [("kustomize " + rel, doc) for doc in load_docs(r.stdout)]
        examples = sorted(glob.glob(os.path.join(self.src, "deploy", "examples", "*.yaml")))
        if not examples:
            self.fail("no deploy/examples/*.yaml")
        for path in examples:
            with open(path) as f:
                items += [(os.path.relpath(path, self.src), doc) for doc in load_docs(f.read())]
        return items

    def validate(self, name, items):
        """Runs validate.js; (returncode, stdout)."""
        path = os.path.join(self.tmp, name + ".json")
        with open(path, "w") as f:
            json.dump({"docs": [{"source": s, "doc": d} for s, d in items]}, f, default=json_default)
        r = subprocess.run([self.opts.node, os.path.join(HERE, "validate.js"), "--node-modules",
                            self.opts.node_modules, path], capture_output=True, text=True, timeout=120)
        return r.returncode, r.stdout + r.stderr

    def run(self):
        for tool, pkg in (("kubectl", "kubernetes-client"), (self.opts.node, "nodejs")):
            if not shutil.which(tool):
                self.fail("%s not found (apt-get install %s)" % (tool, pkg))
                return 1
        if not os.path.isdir(os.path.join(self.opts.node_modules, "kubernetes-models")):
            self.fail("%s has no kubernetes-models: run `make js-deps` (npm ci --prefix "
                      "tests/integration/js)" % self.opts.node_modules)
            return 1
        items = self.collect()
        kinds = sorted({"%s %s" % (d.get("apiVersion"), d.get("kind")) for _, d in items})
        print("%d objects of %d kinds: %s" % (len(items), len(kinds), ", ".join(kinds)))
        rc, out = self.validate("shipped", items)
        print(out.rstrip())
        if rc != 0:
            self.fail("the objects above do not all pass the real schemas")
        for want in ("keda.sh/v1alpha1 ScaledObject", "keda.sh/v1alpha1 ScaledJob",
                     "monitoring.coreos.com/v1 ServiceMonitor", "cert-manager.io/v1 Certificate"):
            if want not in kinds:
                self.fail("no %s among the objects: the negative self-test below would test nothing" % want)
        self.self_test(items)
        self.accept_test(items)
        shutil.rmtree(self.tmp, ignore_errors=True)
        print("%s" % ("FAILED: " + "; ".join(self.failures) if self.failures else "all valid"))
        return 1 if self.failures else 0

    # -- each check must be able to fail

    def self_test(self, items):
        def first(kind, pred=lambda d: True):
            return first_of(items, kind, pred)

        def containers(d):
            spec = d["spec"]["template"]["spec"] if "template" in d["spec"] else d["spec"]["jobTargetRef"]["template"]["spec"]
            return spec["containers"]

        cases = []

        s, d = first("Deployment", lambda d: any(c.get("ports") for c in containers(d)))
        next(c for c in containers(d) if c.get("ports"))["ports"][0]["containerPort"] = "x"
        cases.append(("containerPort \"x\"", s, d, "containerPort: must be integer"))

        s, d = first("Deployment", lambda d: any(c.get("readinessProbe", {}).get("httpGet") for c in containers(d)))
        probe = next(c for c in containers(d) if c.get("readinessProbe", {}).get("httpGet"))["readinessProbe"]
        probe["httpGet"]["prot"] = probe["httpGet"].pop("port")
        cases.append(("a readinessProbe with httpGet.prot", s, d,
                      "/readinessProbe/httpGet: unknown field \"prot\""))

        s, d = first("Deployment")
        d["spec"]["replica"] = 2
        cases.append(("Deployment spec.replica", s, d, "/spec: unknown field \"replica\""))

        s, d = first("DaemonSet")
        d["metadata"]["label"] = {"app": "x"}
        cases.append(("DaemonSet metadata.label", s, d, "/metadata: unknown field \"label\""))

        s, d = first("DaemonSet")
        d["spec"]["template"]["spec"]["restartPolicy"] = 7
        cases.append(("restartPolicy 7", s, d, "restartPolicy: must be string"))

        s, d = first("Service")
        del d["spec"]["ports"][0]["port"]
        cases.append(("Service port without a number", s, d, "/spec/ports/0: must have required property port"))

        s, d = first("ScaledObject")
        d["spec"]["pollingIntreval"] = 5
        cases.append(("ScaledObject with a misspelt field", s, d, "(pollingIntreval)"))

        s, d = first("ScaledObject")
        d["spec"]["triggers"][0]["metadata"]["targetValue"] = 1
        cases.append(("ScaledObject trigger metadata number", s, d,
                      "/spec/triggers/0/metadata/targetValue: must be string"))

        s, d = first("ScaledObject")
        d["spec"]["maxReplicaCount"] = "8"
        cases.append(("ScaledObject maxReplicaCount \"8\"", s, d, "/spec/maxReplicaCount: must be integer"))

        s, d = first("ScaledObject")
        d["spec"]["fallback"] = {"failureThreshold": 3, "replicas": 1, "behavior": "sometimes"}
        cases.append(("ScaledObject fallback.behavior out of the enum", s, d,
                      "must be equal to one of the allowed values"))

        s, d = first("ScaledObject")
        del d["spec"]["scaleTargetRef"]
        cases.append(("ScaledObject without scaleTargetRef", s, d, "must have required property 'scaleTargetRef'"))

        s, d = first("ScaledObject")
        d["metadata"]["labels"] = {"app": 1}
        cases.append(("ScaledObject label value 1", s, d, "/metadata/labels/app: must be string"))

        s, d = first("ScaledJob")
        del d["spec"]["jobTargetRef"]["template"]["spec"]["containers"]
        cases.append(("ScaledJob without containers", s, d, "/template/spec: must have required property containers"))

        s, d = first("ScaledJob")
        d["spec"]["jobTargetRef"]["template"]["spec"]["containers"][0]["resource"] = {}
        cases.append(("ScaledJob container.resource", s, d,
                      "/template/spec/containers/0: unknown field \"resource\""))

        s, d = first("ScaledObject")
        d["metadata"]["annotation"] = {"a": "b"}
        cases.append(("ScaledObject metadata.annotation", s, d, "/metadata: unknown field \"annotation\""))

        s, d = first("ScaledJob")
        d["spec"]["jobTargetRef"]["parallelism"] = "2"
        cases.append(("ScaledJob jobTargetRef.parallelism \"2\"", s, d, "/parallelism: must be integer"))

        s, d = first("ServiceMonitor")
        d["spec"]["endpoints"] = {"port": "metrics"}
        cases.append(("ServiceMonitor endpoints not a list", s, d, "/spec/endpoints: must be array"))

        s, d = first("ServiceMonitor")
        d["spec"]["endpoints"][0]["intervall"] = "30s"
        cases.append(("ServiceMonitor endpoint intervall", s, d,
                      "/spec/endpoints/0: unknown field \"intervall\""))

        s, d = first("Certificate")
        d["spec"]["dnsNames"] = "keda-gpu-scaler"
        cases.append(("Certificate dnsNames a string", s, d, "/spec/dnsNames: must be array"))

        s, d = first("Deployment")
        d["apiVersion"] = "example.com/v1"
        cases.append(("an unknown kind", s, d, "no schema for example.com/v1 Deployment"))

        # keda_schema.js beyond what the cases above reach: allowed values,
        # ranges, required fields of nested objects, int32, quantities.
        s, d = first("ScaledObject")
        d["spec"]["triggers"][0]["metricType"] = "Average"
        cases.append(("ScaledObject trigger metricType \"Average\"", s, d,
                      "/spec/triggers/0/metricType: must be equal to one of the allowed values "
                      "(AverageValue, Value, Utilization), not \"Average\""))

        s, d = first("ScaledObject")
        d["spec"]["triggers"][0]["authenticationRef"] = {"kind": "TriggerAuthentication"}
        cases.append(("ScaledObject authenticationRef without name", s, d,
                      "/spec/triggers/0/authenticationRef: must have required property 'name'"))

        s, d = first("ScaledObject")
        d["spec"]["pollingInterval"] = 2 ** 31
        cases.append(("ScaledObject pollingInterval 2^31", s, d,
                      "/spec/pollingInterval: must match format \"int32\", not 2147483648"))

        s, d = first("ScaledObject")
        put(d, "spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds", 3601)
        cases.append(("ScaledObject stabilizationWindowSeconds 3601", s, d,
                      "/scaleDown/stabilizationWindowSeconds: must be <= 3600, not 3601"))

        s, d = first("ScaledObject")
        put(d, "spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleUp.tolerance", "5%")
        cases.append(("ScaledObject HPA tolerance \"5%\"", s, d,
                      "/scaleUp/tolerance: must be an integer or a quantity string"))

        s, d = first("ScaledObject")
        put(d, "spec.advanced.scalingModifiers", {"formula": "a + b", "metricType": "Utilization"})
        cases.append(("ScaledObject scalingModifiers.metricType Utilization", s, d,
                      "/spec/advanced/scalingModifiers/metricType: must be equal to one of the allowed values"))

        s, d = first("ScaledJob")
        d["spec"]["scalingStrategy"] = {"strategy": "fast"}
        cases.append(("ScaledJob scalingStrategy.strategy \"fast\"", s, d,
                      "/spec/scalingStrategy/strategy: must be equal to one of the allowed values "
                      "(default, custom, accurate, eager)"))

        s, d = first("ScaledJob")
        d["spec"]["rollout"] = {"strategy": "gradual", "propagation": "foreground"}
        cases.append(("ScaledJob rollout.propagation", s, d, "(propagation)"))

        s, d = first("ScaledJob")
        del d["spec"]["jobTargetRef"]["template"]
        cases.append(("ScaledJob jobTargetRef without template", s, d,
                      "/spec/jobTargetRef: must have required property template (batch/v1 JobSpec)"))

        for label, s, d, want in cases:
            rc, out = self.validate("self-test", [("self-test " + s, d)])
            if rc != 1 or want not in out:
                self.fail("self-test %s: wanted exit 1 and %r, got %d:\n%s" % (label, want, rc, out))
            else:
                print("ok   self-test %s is refused (%s)" % (label, want))


    # -- the table is not narrower than KEDA

    def accept_test(self, items):
        """Each field KEDA's CRDs accept that we do not ship, set on a shipped
        ScaledObject or ScaledJob, one object per field, must pass."""
        hpa_rules = {"stabilizationWindowSeconds": 300, "selectPolicy": "Max", "tolerance": "0.05",
                     "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15},
                                  {"type": "Pods", "value": 4, "periodSeconds": 60}]}
        so = [
            ("spec.initialCooldownPeriod", 60),
            ("spec.cooldownPeriod", 300),
            ("spec.idleReplicaCount", 0),
            ("spec.minReplicaCount", 1),
            ("spec.maxReplicaCount", 2147483647),
            ("spec.pollingInterval", 15),
            ("spec.scaleTargetRef.apiVersion", "apps/v1"),
            ("spec.scaleTargetRef.kind", "StatefulSet"),
            ("spec.scaleTargetRef.envSourceContainerName", "server"),
            ("spec.fallback", {"failureThreshold": 3, "replicas": 2}),
        ] + [("spec.fallback", {"failureThreshold": 3, "replicas": 2, "behavior": b})
             for b in ("static", "currentReplicas", "currentReplicasIfHigher", "currentReplicasIfLower")] + [
            ("spec.advanced.restoreToOriginalReplicaCount", True),
            ("spec.advanced.scalingModifiers", {"formula": "(a + b) / 2", "target": "2",
                                                "activationTarget": "1", "metricType": "AverageValue"}),
            ("spec.advanced.scalingModifiers.metricType", "Value"),
            ("spec.advanced.horizontalPodAutoscalerConfig.name", "keda-hpa-custom"),
            ("spec.advanced.horizontalPodAutoscalerConfig.behavior",
             {"scaleUp": hpa_rules, "scaleDown": dict(hpa_rules, selectPolicy="Disabled", tolerance=0)}),
            ("spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleUp.selectPolicy", "Min"),
            ("spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleUp.tolerance", "100m"),
            ("spec.triggers.0.name", "queue"),
            ("spec.triggers.0.useCachedMetrics", True),
            ("spec.triggers.0.metricType", "Value"),
            ("spec.triggers.0.metricType", "AverageValue"),
            ("spec.triggers.0.metricType", "Utilization"),
            ("spec.triggers.0.authenticationRef", {"name": "creds"}),
            ("spec.triggers.0.authenticationRef", {"name": "creds", "kind": "ClusterTriggerAuthentication"}),
            ("spec.triggers.0.authenticationRef", {"name": "creds", "kind": "TriggerAuthentication"}),
        ]
        sj = [
            ("spec.rollout", {"strategy": "gradual", "propagationPolicy": "foreground"}),
            ("spec.rollout", {"strategy": "default", "propagationPolicy": "background"}),
            ("spec.rolloutStrategy", "gradual"),
            ("spec.scalingStrategy", {"strategy": "custom", "customScalingQueueLengthDeduction": 1,
                                      "customScalingRunningJobPercentage": "0.5"}),
            ("spec.scalingStrategy", {"strategy": "accurate", "pendingPodConditions": ["Ready", "PodScheduled"]}),
            ("spec.scalingStrategy.strategy", "eager"),
            ("spec.scalingStrategy.strategy", "default"),
        ] + [("spec.scalingStrategy.multipleScalersCalculation", m) for m in ("max", "min", "avg", "sum")] + [
            ("spec.envSourceContainerName", "trainer"),
            ("spec.successfulJobsHistoryLimit", 5),
            ("spec.failedJobsHistoryLimit", 5),
            ("spec.minReplicaCount", 0),
            ("spec.maxReplicaCount", 10),
            ("spec.pollingInterval", 30),
            ("spec.jobTargetRef.backoffLimit", 6),
            ("spec.jobTargetRef.activeDeadlineSeconds", 600),
            ("spec.jobTargetRef.ttlSecondsAfterFinished", 3600),
            ("spec.triggers.0.name", "queue"),
            ("spec.triggers.0.useCachedMetrics", False),
            ("spec.triggers.0.authenticationRef", {"name": "creds", "kind": "ClusterTriggerAuthentication"}),
        ]
        docs = []
        for kind, fields in (("ScaledObject", so), ("ScaledJob", sj)):
            for path, value in fields:
                s, d = first_of(items, kind)
                put(d, path, value)
                docs.append(("accept %s %s=%s" % (kind, path, json.dumps(value)), d))
        rc, out = self.validate("accept", docs)
        lines = out.splitlines()
        for label, _ in docs:
            if any(line.startswith("ok   %s: " % label) for line in lines):
                continue
            # Its FAIL line and the indented errors after it.
            at = next((i for i, line in enumerate(lines) if line.startswith("FAIL %s: " % label)), None)
            why = "no result for it" if at is None else "\n".join(
                [lines[at]] + [line for line in itertools.takewhile(lambda x: x.startswith(" "), lines[at + 1:])])
            self.fail("self-test: %s, which KEDA accepts, is refused:\n%s" % (label, why))
        if rc != 0:
            self.fail("self-test: validate.js exited %d on fields KEDA accepts" % rc)
        else:
            print("ok   self-test: %d fields KEDA accepts, one object each, all pass" % len(docs))


def first_of(items, kind, pred=lambda d: True):
    """A deep copy of the first shipped object of kind (matching pred), with its source."""
    for s, d in items:
        if d.get("kind") == kind and pred(d):
            return s, copy.deepcopy(d)
    raise AssertionError("no %s to break" % kind)


def put(doc, path, value):
    """Sets doc's field at a dotted path ("spec.triggers.0.name"), making the
    objects on the way."""
    keys = path.split(".")
    for k in keys[:-1]:
        doc = doc[int(k)] if isinstance(doc, list) else doc.setdefault(k, {})
    if isinstance(doc, list):
        doc[int(keys[-1])] = value
    else:
        doc[keys[-1]] = value


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--render", required=True, help="the Go render harness (tests/deploy/helm/render)")
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--node", default="node")
    ap.add_argument("--node-modules", required=True, help="tests/integration/js/node_modules")
    return Run(ap.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())
