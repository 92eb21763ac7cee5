#!/usr/bin/env python3
"""The shipped pieces agree: every port an example in deploy/examples scrapes
is one the default egress NetworkPolicy lets the scaler reach.

The policies: the Helm chart rendered with its defaults (mode cluster, and
mode standalone) by `helm template` when helm is installed, else by the
render harness tests/deploy/helm builds (a stand-in for `helm template`);
and `kubectl kustomize` of deploy/manifests/base and
deploy/manifests/overlays/standalone. For each, the ports its egress rules
allow towards pods of any namespace (a rule whose `to` has a
namespaceSelector, or no `to`), for the pods KEDA talks to (aggregators or
standalone scalers).

The ports: per trigger of ours in deploy/examples, the engine's metrics port
(enginePort, else the engine's default, read from docs/configuration.md's
Serving engines table, which test_docs_configuration ties to the parser),
the port of each engine URL, of redisAddress (6379 unless given) and of
demandEndpoint (80 / 443 unless given).

    test_egress_ports.py --render BIN --source-dir DIR
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import unittest
from urllib.parse import urlsplit

import yaml

OPTS = None
SCALER_ADDRESS = re.compile(r"^keda-gpu-scaler[.:]")
ENGINE_URL_KEYS = ("vllmEndpoint", "tritonEndpoint", "engineEndpoint")
# engines a metricType implies when `engine` is not given (docs/configuration.md)
IMPLIED_ENGINE = {"vllm_queue_depth": "vllm", "vllm_kv_cache_usage": "vllm",
                  "vllm_lora_waiting_engines": "vllm", "triton_queue_wait_ms": "triton",
                  "triton_request_rate": "triton"}


def src(*parts):
    return os.path.join(OPTS.source_dir, *parts)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def engine_default_ports():
    """engine -> default port, from the Serving engines table."""
    text = read(src("docs", "configuration.md"))
    table = text.split("### Serving engines", 1)[1].split("\n\n", 2)[1]
    ports = {}
    for row in table.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        m = re.match(r"^`([a-z]+)`$", cells[0])
        if m and cells[-1].isdigit():  # not the header row
            ports[m.group(1)] = int(cells[-1])
    return ports


def profile_metric_types():
    """profile -> its metricType, from the Profiles table of the same page."""
    text = read(src("docs", "configuration.md"))
    section = text.split("\n## Profiles", 1)[1].split("\n## ", 1)[0]
    out, col = {}, None
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if col is None and "metricType" in cells:
            col = cells.index("metricType")
        m = re.match(r"^`([a-z0-9-]+)`", cells[0])
        if col is not None and m and len(cells) > col:
            out[m.group(1)] = cells[col].strip("`")
    return out


def url_port(url):
    u = urlsplit(url)
    return u.port or {"http": 80, "https": 443}[u.scheme]


def redis_port(addr):
    if "://" in addr:
        return urlsplit(addr).port or 6379
    m = re.search(r":(\d+)$", addr)
    return int(m.group(1)) if m else 6379


def scrape_ports(md, defaults, profiles):
    """[(port, what)] of one trigger's metadata."""
    out = []
    mtype = md.get("metricType") or profiles.get(md.get("profile", ""), "")
    engine = md.get("engine") or IMPLIED_ENGINE.get(mtype)
    for key in ENGINE_URL_KEYS:
        for url in filter(None, (u.strip() for u in md.get(key, "").split(","))):
            out.append((url_port(url), "%s %s" % (key, url)))
            engine = engine or {"vllmEndpoint": "vllm", "tritonEndpoint": "triton"}.get(key)
    if engine and "podSelector" in md and not any(k in md for k in ENGINE_URL_KEYS):
        if "enginePort" in md:
            out.append((int(md["enginePort"]), "enginePort %s" % md["enginePort"]))
        else:
            out.append((defaults[engine], "engine %s's default port" % engine))
    if "redisAddress" in md:
        out.append((redis_port(md["redisAddress"]), "redisAddress %s" % md["redisAddress"]))
    if "demandEndpoint" in md:
        out.append((url_port(md["demandEndpoint"]), "demandEndpoint %s" % md["demandEndpoint"]))
    return out


def example_triggers():
    """(file, object, trigger index, metadata) of each trigger of ours."""
    for path in sorted(glob.glob(src("deploy", "examples", "*.yaml"))):
        for doc in yaml.safe_load_all(read(path)):
            if not doc or doc.get("kind") not in ("ScaledObject", "ScaledJob"):
                continue
            for i, t in enumerate(doc["spec"].get("triggers") or []):
                md = t.get("metadata") or {}
                if t.get("type", "").startswith("external") and \
                        SCALER_ADDRESS.match(md.get("scalerAddress", "")):
                    yield os.path.relpath(path, OPTS.source_dir), doc["metadata"]["name"], i, md


def pod_egress_ports(policy):
    """Ports a NetworkPolicy's egress rules allow towards pods of other
    namespaces (where engines and queues run): rules with a
    namespaceSelector, or with no `to` at all."""
    ports = set()
    for rule in policy["spec"].get("egress") or []:
        to = rule.get("to")
        if to and not any("namespaceSelector" in p for p in to):
            continue
        for p in rule.get("ports") or []:
            if isinstance(p.get("port"), int):
                ports.add(p["port"])
    return ports


def scaler_policies(text):
    """The egress policies of the pods KEDA talks to, in a rendered stream."""
    out = []
    for doc in yaml.safe_load_all(text):
        if doc and doc.get("kind") == "NetworkPolicy":
            labels = doc["spec"]["podSelector"].get("matchLabels", {})
            if labels.get("app.kubernetes.io/component") in ("aggregator", "standalone"):
                out.append(doc)
    return out


def render_chart(values):
    chart = src("deploy", "helm", "keda-gpu-scaler")
    sets = sum((["--set", v] for v in values), [])
    if shutil.which("helm"):
        cmd = ["helm", "template", "keda-gpu-scaler", chart, "--namespace", "keda-gpu-scaler"] + sets
    else:
        cmd = [OPTS.render, "--release", "keda-gpu-scaler", "--namespace", "keda-gpu-scaler"] + \
            sets + [chart]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError("%s: %s" % (" ".join(cmd), r.stderr))
    return r.stdout


def kustomize(path):
    r = subprocess.run(["kubectl", "kustomize", src(*path.split("/"))], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        raise AssertionError("kubectl kustomize %s: %s" % (path, r.stderr))
    return r.stdout


def disagreements(policies, triggers, defaults, profiles):
    """One line per example port a policy does not allow."""
    out = []
    for name, policy in policies:
        allowed = pod_egress_ports(policy)
        for path, obj, i, md in triggers:
            for port, what in scrape_ports(md, defaults, profiles):
                if port not in allowed:
                    out.append("%s: %s trigger #%d scrapes port %d (%s), which the egress "
                               "policy of %s does not allow (it allows %s)"
                               % (path, obj, i, port, what, name, sorted(allowed)))
    return out


class EgressPorts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.defaults = engine_default_ports()
        cls.profiles = profile_metric_types()
        cls.triggers = list(example_triggers())
        cls.policies = []
        for name, text in (("the chart's defaults", render_chart([])),
                           ("the chart with mode=standalone", render_chart(["mode=standalone"])),
                           ("deploy/manifests/base", kustomize("deploy/manifests/base")),
                           ("deploy/manifests/overlays/standalone",
                            kustomize("deploy/manifests/overlays/standalone"))):
            pols = scaler_policies(text)
            if len(pols) != 1:
                raise AssertionError("%s: %d egress policies for the scaler pods, want 1"
                                     % (name, len(pols)))
            cls.policies.append((name, pols[0]))

    def test_the_engine_table_has_every_engine(self):
        self.assertEqual(self.defaults, {"vllm": 8000, "triton": 8002, "tgi": 80,
                                         "sglang": 30000, "epp": 9090})

    def test_every_example_port_is_allowed(self):
        ports = [p for t in self.triggers for p in scrape_ports(t[3], self.defaults,
                                                                 self.profiles)]
        self.assertGreaterEqual(len(self.triggers), 8)
        self.assertGreaterEqual(len(ports), 8)  # the examples do scrape
        problems = disagreements(self.policies, self.triggers, self.defaults, self.profiles)
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_every_engine_default_port_is_allowed(self):
        """A podSelector trigger of any engine works with the defaults."""
        for name, policy in self.policies:
            missing = {e: p for e, p in self.defaults.items() if p not in pod_egress_ports(policy)}
            self.assertEqual(missing, {}, name)

    def test_the_check_can_fail(self):
        """Without port 80 in the policy, tgi.yaml's enginePort is named."""
        name, policy = self.policies[0]
        bad = yaml.safe_load(yaml.safe_dump(policy))
        for rule in bad["spec"]["egress"]:
            rule["ports"] = [p for p in rule.get("ports") or [] if p.get("port") != 80]
        problems = disagreements([("a policy without 80", bad)], self.triggers, self.defaults,
                                 self.profiles)
        self.assertTrue(any("deploy/examples/tgi.yaml: tgi-mistral trigger #0 scrapes port 80 "
                            "(enginePort 80)" in p for p in problems), problems)
        self.assertEqual(scrape_ports({"metricType": "engine_queue", "engine": "sglang",
                                       "podSelector": "app=x"}, self.defaults, self.profiles),
                         [(30000, "engine sglang's default port")])
        self.assertEqual(scrape_ports({"redisAddress": "rediss://r:6380",
                                       "demandEndpoint": "https://gw/metrics"},
                                      self.defaults, self.profiles),
                         [(6380, "redisAddress rediss://r:6380"),
                          (443, "demandEndpoint https://gw/metrics")])


def main():
    global OPTS
    ap = argparse.ArgumentParser()
    ap.add_argument("--render", required=True)
    ap.add_argument("--source-dir", required=True)
    OPTS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
