#!/usr/bin/env python3
"""Checks the Helm chart deploy/helm/keda-gpu-scaler and the kustomize
manifests deploy/manifests: what they render must be deployable and safe.

    check_manifests.py suite --render BIN --source-dir DIR [--project-version V]
        Everything CTest runs (test deploy_helm): the chart rendered by the Go
        harness (tests/deploy/helm/render) with default values, mode=standalone,
        TLS + cert-manager + ServiceMonitor + NetworkPolicy, and more; `kubectl
        kustomize` of base/ and overlays/standalone; yamllint on all of it and
        on the chart's values.yaml / Chart.yaml and the kustomize files; the
        manifests equal to the chart's defaults; values the chart must refuse;
        the harness failing on an unknown function; and a negative self-test
        proving every object check can fail. $KEDA_GPU_SCALER (the built
        server) lets it check every rendered flag against --help.

    check_manifests.py check FILE [--external-secret NAME]...
        The object checks alone on one multi-document YAML file ("-" = stdin).
        Exit status 1 with one line per problem.

Needs Python 3 with PyYAML (Debian: python3-yaml), yamllint (Debian: yamllint)
and kubectl (Debian: kubernetes-client) for kustomize.
"""

import argparse
import copy
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    sys.exit("check_manifests.py: needs PyYAML (apt-get install python3-yaml)")

HERE = os.path.dirname(os.path.abspath(__file__))
YAMLLINT_CONFIG = os.path.join(HERE, "yamllint.yaml")
# The chart's own example values files (values-amd.yaml), as the cases use them.
CHART_DIR_FOR_CASES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))),
                                   "deploy", "helm", "keda-gpu-scaler")
WORKLOAD_KINDS = ("Deployment", "DaemonSet", "StatefulSet", "ReplicaSet")
POD_RESOURCES_DIR = "/var/lib/kubelet/pod-resources"
ALLOWED_RBAC_VERBS = {"get", "list", "watch"}
# Least privilege, exactly: (API group, resource) pairs the aggregators read.
# Pods and nodes (core group), and DRA ResourceSlices (resource.k8s.io) to
# map a claim's (driver, pool, device) to its GPU UUID. Nothing else:
# not resourceclaims, not deviceclasses, not any verb but get/list/watch.
ALLOWED_RBAC = {("", "pods"), ("", "nodes"), ("resource.k8s.io", "resourceslices")}
# sourceAuth.metricsReader's ClusterRole: what an endpoint behind Kubernetes
# authorization (an inference gateway EPP's metrics port) checks, exactly.
METRICS_READER_RULES = [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
# Labels only Helm adds; the kustomize manifests leave them out.
HELM_ONLY_LABELS = ("helm.sh/chart", "app.kubernetes.io/managed-by")


# ---------------------------------------------------------------- helpers

def load_docs(text):
    return [d for d in yaml.safe_load_all(text) if d is not None]


def ident(obj):
    md = obj.get("metadata") or {}
    ns = md.get("namespace")
    return "%s %s%s" % (obj.get("kind"), (ns + "/") if ns else "", md.get("name"))


def workloads(docs):
    return [d for d in docs if d.get("kind") in WORKLOAD_KINDS]


def pod_template(obj):
    return ((obj.get("spec") or {}).get("template")) or {}


def pod_labels(obj):
    return ((pod_template(obj).get("metadata")) or {}).get("labels") or {}


def pod_spec(obj):
    return pod_template(obj).get("spec") or {}


def containers(obj):
    spec = pod_spec(obj)
    return (spec.get("initContainers") or []) + (spec.get("containers") or [])


def ns_of(obj):
    return (obj.get("metadata") or {}).get("namespace")


def same_ns(a, b):
    na, nb = ns_of(a), ns_of(b)
    return na is None or nb is None or na == nb


def matches(selector, labels):
    """selector: a plain map (Service) or a LabelSelector with matchLabels
    (matchExpressions are not used by the chart and count as not matching)."""
    if selector is None:
        return False
    if "matchLabels" in selector or "matchExpressions" in selector:
        if selector.get("matchExpressions"):
            return False
        selector = selector.get("matchLabels") or {}
    if not selector:
        return False
    return all(labels.get(k) == v for k, v in selector.items())


def arg_value(args, flag):
    """The value of --flag in a container's args (--flag=V or --flag V)."""
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return str(args[i + 1])
        if a.startswith(flag + "="):
            return a[len(flag) + 1:]
    return None


def role_of(container):
    args = [str(a) for a in (container.get("args") or [])]
    return arg_value(args, "--role")


def image_tag_problem(image):
    if not image:
        return "no image"
    if "@" in image:
        return None  # pinned by digest
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return "image %s has no tag (means latest)" % image
    tag = last.rsplit(":", 1)[1]
    if tag == "":
        return "image %s has an empty tag" % image
    if tag == "latest":
        return "image %s uses the tag latest" % image
    return None


def port_numbers_and_names(container):
    names, numbers = set(), set()
    for p in container.get("ports") or []:
        if p.get("name"):
            names.add(p["name"])
        if p.get("containerPort") is not None:
            numbers.add(int(p["containerPort"]))
    return names, numbers


def port_exists(port, container):
    names, numbers = port_numbers_and_names(container)
    if isinstance(port, int):
        return port in numbers
    if isinstance(port, str) and port.isdigit():
        return int(port) in numbers
    return port in names


# ---------------------------------------------------------------- object checks

def check_objects(docs, external_secrets=()):
    """Every problem found in one rendered stream, as readable lines."""
    errs = []
    err = errs.append

    for d in docs:
        if not isinstance(d, dict):
            err("a document is not a mapping: %r" % (d,))
            continue
        for key in ("apiVersion", "kind"):
            if not isinstance(d.get(key), str) or not d.get(key):
                err("%s: no %s" % (ident(d), key))
        if not isinstance(d.get("metadata"), dict) or not d["metadata"].get("name"):
            err("%s: no metadata.name" % ident(d))
    docs = [d for d in docs if isinstance(d, dict) and isinstance(d.get("metadata"), dict)
            and d["metadata"].get("name")]

    seen = set()
    for d in docs:
        key = ident(d)
        if key in seen:
            err("%s: defined twice" % key)
        seen.add(key)

    secrets = set(external_secrets)
    configmaps = set()
    for d in docs:
        if d.get("kind") == "Secret":
            secrets.add(d["metadata"]["name"])
        elif d.get("kind") == "ConfigMap":
            configmaps.add(d["metadata"]["name"])
        elif d.get("kind") == "Certificate":  # cert-manager writes this Secret
            name = (d.get("spec") or {}).get("secretName")
            if name:
                secrets.add(name)
    service_accounts = {d["metadata"]["name"] for d in docs if d.get("kind") == "ServiceAccount"}
    services = [d for d in docs if d.get("kind") == "Service"]
    wls = workloads(docs)

    # Workloads and their pods.
    for w in wls:
        wid = ident(w)
        sel = (w.get("spec") or {}).get("selector")
        if not sel or not (sel.get("matchLabels") or sel.get("matchExpressions")):
            err("%s: no selector" % wid)
        elif not matches(sel, pod_labels(w)):
            err("%s: selector %s does not match its pod template labels %s"
                % (wid, sel.get("matchLabels"), pod_labels(w)))
        spec = pod_spec(w)
        for host in ("hostNetwork", "hostPID", "hostIPC"):
            if spec.get(host):
                # The one exception: an agent with shared-GPU attribution
                # (agent.gpuSharingAttribution), which reads the host's
                # /proc/<pid>/cgroup for NVML's host PIDs.
                if host == "hostPID" and any(role_of(c) == "agent" and
                                             "--proc-root=/proc" in (c.get("args") or [])
                                             for c in containers(w)):
                    continue
                err("%s: %s is true" % (wid, host))
        sa = spec.get("serviceAccountName")
        if sa and sa != "default" and sa not in service_accounts:
            err("%s: serviceAccountName %s is not defined in the output" % (wid, sa))
        volumes = {}
        for v in spec.get("volumes") or []:
            volumes[v.get("name")] = v
            if "secret" in v:
                name = v["secret"].get("secretName")
                if name not in secrets and not v["secret"].get("optional"):
                    err("%s: volume %s uses Secret %s, which is neither rendered nor declared user-provided"
                        % (wid, v.get("name"), name))
            if "configMap" in v:
                name = v["configMap"].get("name")
                if name not in configmaps and not v["configMap"].get("optional"):
                    err("%s: volume %s uses ConfigMap %s, which is not rendered" % (wid, v.get("name"), name))
            if "hostPath" in v:
                path = v["hostPath"].get("path")
                if path != POD_RESOURCES_DIR:
                    err("%s: hostPath volume %s (%s): only %s is expected" % (wid, v.get("name"), path,
                                                                          POD_RESOURCES_DIR))
        pod_sc = spec.get("securityContext") or {}
        for c in containers(w):
            cid = "%s container %s" % (wid, c.get("name"))
            problem = image_tag_problem(c.get("image"))
            if problem:
                err("%s: %s" % (cid, problem))
            # Volume mounts and env references.
            mounted_pod_resources_ro = False
            for m in c.get("volumeMounts") or []:
                if m.get("name") not in volumes:
                    err("%s: volumeMount %s refers to no volume of the pod" % (cid, m.get("name")))
                    continue
                v = volumes[m["name"]]
                if "hostPath" in v:
                    if not m.get("readOnly"):
                        err("%s: hostPath volume %s is mounted writable" % (cid, m["name"]))
                    elif v["hostPath"].get("path") == POD_RESOURCES_DIR:
                        mounted_pod_resources_ro = True
            for e in c.get("env") or []:
                vf = e.get("valueFrom") or {}
                if "secretKeyRef" in vf and vf["secretKeyRef"].get("name") not in secrets \
                        and not vf["secretKeyRef"].get("optional"):
                    err("%s: env %s refers to Secret %s, which is neither rendered nor declared user-provided"
                        % (cid, e.get("name"), vf["secretKeyRef"].get("name")))
                if "configMapKeyRef" in vf and vf["configMapKeyRef"].get("name") not in configmaps \
                        and not vf["configMapKeyRef"].get("optional"):
                    err("%s: env %s refers to ConfigMap %s, which is not rendered"
                        % (cid, e.get("name"), vf["configMapKeyRef"].get("name")))
            for ef in c.get("envFrom") or []:
                if "secretRef" in ef and ef["secretRef"].get("name") not in secrets:
                    err("%s: envFrom Secret %s is not defined" % (cid, ef["secretRef"].get("name")))
                if "configMapRef" in ef and ef["configMapRef"].get("name") not in configmaps:
                    err("%s: envFrom ConfigMap %s is not defined" % (cid, ef["configMapRef"].get("name")))
            # Probes.
            for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
                probe = c.get(probe_name)
                if not probe:
                    continue
                for kind in ("httpGet", "tcpSocket", "grpc"):
                    if kind in probe:
                        port = probe[kind].get("port")
                        if not port_exists(port, c):
                            err("%s: %s port %s is not a port of the container" % (cid, probe_name, port))
            # Security context (the container's overrides the pod's).
            sc = c.get("securityContext") or {}
            eff = dict(pod_sc)
            eff.update(sc)
            if eff.get("privileged"):
                err("%s: privileged" % cid)
            if eff.get("allowPrivilegeEscalation") is not False:
                err("%s: allowPrivilegeEscalation is not false" % cid)
            if eff.get("readOnlyRootFilesystem") is not True:
                err("%s: readOnlyRootFilesystem is not true" % cid)
            caps = eff.get("capabilities") or {}
            if "ALL" not in (caps.get("drop") or []):
                err("%s: capabilities do not drop ALL" % cid)
            if caps.get("add"):
                err("%s: capabilities add %s" % (cid, caps["add"]))
            seccomp = (eff.get("seccompProfile") or {}).get("type")
            if seccomp not in ("RuntimeDefault", "Localhost"):
                err("%s: no seccompProfile RuntimeDefault" % cid)
            # A mounted TLS key: keda-gpu-scaler refuses one every user can read,
            # and a non-root user must reach it through fsGroup.
            for v in (spec.get("volumes") or []):
                sec = v.get("secret")
                if not sec or not v.get("name", "").endswith("tls"):
                    continue
                mode = sec.get("defaultMode", 0o644)
                if mode & 0o004:
                    err("%s: TLS Secret volume mode %o is readable by every user (the server "
                        "refuses the key)" % (cid, mode))
                if eff.get("runAsUser") not in (0, None) and not (mode & 0o040 and
                                                                 pod_sc.get("fsGroup")):
                    err("%s: TLS Secret volume (mode %o) is not readable by uid %s (set fsGroup "
                        "and a group-readable defaultMode)" % (cid, mode, eff.get("runAsUser")))
            root = eff.get("runAsNonRoot") is not True or eff.get("runAsUser") in (0, None)
            if root:
                # The one exception: the agent, whose kubelet pod-resources
                # socket is root-owned 0755 (values.yaml agent.runAsRoot).
                if not (mounted_pod_resources_ro and role_of(c) == "agent"):
                    err("%s: not non-root (runAsNonRoot %s, runAsUser %s)"
                        % (cid, eff.get("runAsNonRoot"), eff.get("runAsUser")))
            # The scaler itself.
            if c.get("name") == "keda-gpu-scaler" or role_of(c):
                errs.extend(check_scaler_container(w, c, cid, services, wls))

    # Services.
    for s in services:
        sid = ident(s)
        sel = (s.get("spec") or {}).get("selector")
        if not sel:
            err("%s: no selector" % sid)
            continue
        targets = [w for w in wls if same_ns(w, s) and matches(sel, pod_labels(w))]
        if not targets:
            err("%s: selector %s matches no workload's pods" % (sid, sel))
            continue
        headless = (s.get("spec") or {}).get("clusterIP") == "None"
        for p in (s.get("spec") or {}).get("ports") or []:
            target = p.get("targetPort", p.get("port"))
            for w in targets:
                if not any(port_exists(target, c) for c in containers(w)):
                    err("%s: port %s targetPort %s is not a containerPort of %s"
                        % (sid, p.get("name"), target, ident(w)))
                if headless and isinstance(target, str) and not target.isdigit():
                    # A headless Service does not translate: clients dial
                    # the port number, which must be the container's.
                    nums = {cp.get("containerPort") for c in containers(w)
                            for cp in c.get("ports") or [] if cp.get("name") == target}
                    if nums and p.get("port") not in nums:
                        err("%s: headless, but port %s is %s while the container listens on %s"
                            % (sid, p.get("name"), p.get("port"), sorted(nums)))

    # RBAC.
    roles = {}
    for d in docs:
        if d.get("kind") == "ClusterRole" and d["metadata"]["name"].endswith("-metrics-reader"):
            # sourceAuth.metricsReader: get on /metrics and nothing else
            roles[(d["kind"], d["metadata"]["name"])] = d
            if d.get("rules") != METRICS_READER_RULES:
                err("%s: rules %s, expected exactly %s" % (ident(d), d.get("rules"),
                                                          METRICS_READER_RULES))
            continue
        if d.get("kind") in ("ClusterRole", "Role"):
            roles[(d["kind"], d["metadata"]["name"])] = d
            granted = set()
            for r in d.get("rules") or []:
                verbs = set(r.get("verbs") or [])
                if verbs != ALLOWED_RBAC_VERBS:
                    err("%s: verbs %s, expected exactly get, list, watch" % (ident(d), sorted(verbs)))
                pairs = {(g, res) for g in r.get("apiGroups") or [] for res in r.get("resources") or []}
                extra = pairs - ALLOWED_RBAC
                if extra:
                    err("%s: grants %s beyond pods, nodes and resource.k8s.io resourceslices"
                        % (ident(d), sorted("%s/%s" % (g or "core", res) for g, res in extra)))
                if r.get("nonResourceURLs") or r.get("resourceNames"):
                    err("%s: unexpected nonResourceURLs/resourceNames" % ident(d))
                granted |= pairs
            if granted != ALLOWED_RBAC:
                err("%s: grants %s; the aggregator needs exactly core pods and nodes, and "
                    "resource.k8s.io resourceslices"
                    % (ident(d), sorted("%s/%s" % (g or "core", res) for g, res in granted)))
    for d in docs:
        if d.get("kind") in ("ClusterRoleBinding", "RoleBinding"):
            ref = d.get("roleRef") or {}
            if (ref.get("kind"), ref.get("name")) not in roles:
                err("%s: roleRef %s %s is not defined in the output" % (ident(d), ref.get("kind"), ref.get("name")))
            for sub in d.get("subjects") or []:
                if sub.get("kind") == "ServiceAccount" and sub.get("name") not in service_accounts:
                    err("%s: subject ServiceAccount %s is not defined" % (ident(d), sub.get("name")))

    # Selector-bearing extras.
    for d in docs:
        kind = d.get("kind")
        if kind == "PodDisruptionBudget":
            sel = (d.get("spec") or {}).get("selector")
            if not any(same_ns(w, d) and matches(sel, pod_labels(w)) for w in wls):
                err("%s: selector matches no workload's pods" % ident(d))
        elif kind == "NetworkPolicy":
            spec = d.get("spec") or {}
            targets = [w for w in wls if same_ns(w, d) and matches(spec.get("podSelector"), pod_labels(w))]
            if not targets:
                err("%s: podSelector matches no workload's pods" % ident(d))
            # Both directions, always: a policy that leaves egress open lets a
            # compromised pod reach anything (issue 16).
            if sorted(spec.get("policyTypes") or []) != ["Egress", "Ingress"]:
                err("%s: policyTypes %s, expected Ingress and Egress" % (ident(d), spec.get("policyTypes")))
            if "egress" not in spec:
                err("%s: no egress rules (an empty list denies all)" % ident(d))
            for rule in spec.get("egress") or []:
                for peer in rule.get("to") or []:
                    if "podSelector" in peer and "namespaceSelector" not in peer:
                        dests = [w for w in wls if same_ns(w, d) and matches(peer["podSelector"], pod_labels(w))]
                        if not dests:
                            err("%s: egress to podSelector %s matches no workload's pods"
                                % (ident(d), peer["podSelector"]))
                        for p in rule.get("ports") or []:
                            for w in dests:
                                if not any(port_exists(p.get("port"), c) for c in containers(w)):
                                    err("%s: egress port %s is not a containerPort of %s"
                                        % (ident(d), p.get("port"), ident(w)))
            for rule in spec.get("ingress") or []:
                for p in rule.get("ports") or []:
                    for w in targets:
                        if not any(port_exists(p.get("port"), c) for c in containers(w)):
                            err("%s: port %s is not a containerPort of %s" % (ident(d), p.get("port"), ident(w)))
                for peer in rule.get("from") or []:
                    if "podSelector" in peer and "namespaceSelector" not in peer:
                        if not any(same_ns(w, d) and matches(peer["podSelector"], pod_labels(w)) for w in wls):
                            err("%s: ingress from podSelector %s matches no workload's pods"
                                % (ident(d), peer["podSelector"]))
        elif kind == "ServiceMonitor":
            spec = d.get("spec") or {}
            picked = [s for s in services if matches(spec.get("selector"),
                                                      (s.get("metadata") or {}).get("labels") or {})]
            if not picked:
                err("%s: selector matches no Service" % ident(d))
            for ep in spec.get("endpoints") or []:
                for s in picked:
                    if ep.get("port") not in {p.get("name") for p in (s.get("spec") or {}).get("ports") or []}:
                        err("%s: endpoint port %s is not a port of %s" % (ident(d), ep.get("port"), ident(s)))
    return errs


AGENTS_DNS_RE = re.compile(r"^([a-z0-9-]+)\.([a-z0-9-]+|\$\(POD_NAMESPACE\))\.svc(\.cluster\.local)?:([0-9]+)$")


def check_scaler_container(w, c, cid, services, wls):
    """What a keda-gpu-scaler container needs for its role."""
    errs = []
    args = [str(a) for a in (c.get("args") or [])]
    role = role_of(c)
    env = {e.get("name"): e for e in c.get("env") or []}
    if role not in ("standalone", "agent", "aggregator"):
        return ["%s: --role is %r, not standalone, agent or aggregator" % (cid, role)]
    for name, path in (("NODE_NAME", "spec.nodeName"), ("POD_NAME", "metadata.name"),
                       ("POD_NAMESPACE", "metadata.namespace")):
        ref = ((env.get(name) or {}).get("valueFrom") or {}).get("fieldRef") or {}
        if ref.get("fieldPath") != path:
            errs.append("%s: env %s does not come from the Downward API (%s)" % (cid, name, path))
    port = arg_value(args, "--port")
    if port is None or not port_exists(port, c):
        errs.append("%s: --port %s is not a containerPort" % (cid, port))
    for flag in ("--metrics-port", "--probe-port"):
        v = arg_value(args, flag)
        if v not in (None, "0") and not port_exists(v, c):
            errs.append("%s: %s %s is not a containerPort" % (cid, flag, v))
    spec = pod_spec(w)
    if role in ("standalone", "agent"):
        for name in ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"):
            if name not in env:
                errs.append("%s: no %s for the NVIDIA container runtime" % (cid, name))
        if "utility" not in str((env.get("NVIDIA_DRIVER_CAPABILITIES") or {}).get("value", "")).split(","):
            errs.append("%s: NVIDIA_DRIVER_CAPABILITIES lacks utility (NVML)" % cid)
    if role == "agent":
        sock = arg_value(args, "--kubelet-socket")
        mounts = [m for m in c.get("volumeMounts") or [] if m.get("readOnly")]
        if not sock or not any(sock.startswith(m.get("mountPath", "").rstrip("/") + "/") for m in mounts):
            errs.append("%s: --kubelet-socket %s is not under a read-only mount" % (cid, sock))
    if role == "aggregator":
        for name in ("NVIDIA_VISIBLE_DEVICES",):
            if name in env:
                errs.append("%s: the aggregator loads no NVML but sets %s" % (cid, name))
        if spec.get("automountServiceAccountToken") is False:
            errs.append("%s: the aggregator needs its service account token for the API" % cid)
        dns = arg_value(args, "--agents-dns")
        m = AGENTS_DNS_RE.match(dns or "")
        if not m:
            errs.append("%s: --agents-dns %r is not NAME.NAMESPACE.svc:PORT" % (cid, dns))
        else:
            name, ns, port = m.group(1), m.group(2), int(m.group(4))
            if ns == "$(POD_NAMESPACE)":
                ref = ((env.get("POD_NAMESPACE") or {}).get("valueFrom") or {}).get("fieldRef") or {}
                if ref.get("fieldPath") != "metadata.namespace":
                    errs.append("%s: --agents-dns uses $(POD_NAMESPACE), which is not the pod's namespace" % cid)
                ns = ns_of(w)
            svc = [s for s in services if s["metadata"]["name"] == name
                   and (ns is None or ns_of(s) in (None, ns))]
            if not svc:
                errs.append("%s: --agents-dns names Service %s in %s, which is not in the output" % (cid, name, ns))
            else:
                s = svc[0]
                if (s.get("spec") or {}).get("clusterIP") != "None":
                    errs.append("%s: --agents-dns Service %s is not headless" % (cid, name))
                agents = [a for a in wls if matches((s.get("spec") or {}).get("selector"), pod_labels(a))
                          and any(role_of(ac) == "agent" for ac in containers(a))]
                if not agents:
                    errs.append("%s: --agents-dns Service %s selects no agents" % (cid, name))
                for a in agents:
                    if not any(port in port_numbers_and_names(ac)[1] for ac in containers(a)):
                        errs.append("%s: --agents-dns port %d is not the agents' container port" % (cid, port))
    return errs


def check_flags_known(docs, help_text):
    """Every --flag the manifests pass exists in `keda-gpu-scaler --help`."""
    known = set(re.findall(r"(--[a-z][a-z0-9-]*)", help_text))
    errs = []
    for w in workloads(docs):
        for c in containers(w):
            if not role_of(c):
                continue
            for a in c.get("args") or []:
                a = str(a)
                if a.startswith("--"):
                    flag = a.split("=", 1)[0]
                    if flag not in known:
                        errs.append("%s container %s: flag %s is not in keda-gpu-scaler --help"
                                    % (ident(w), c.get("name"), flag))
    return errs


# ---------------------------------------------------------------- the values combinations

# Every values combination the chart is rendered with, here and by
# tests/deploy/schema (Kubernetes' and KEDA's own schemas): name, --set
# arguments, expectations, Secrets the user provides.
_ALL_ON = ["--set", "tls.certManager.enabled=true", "--set", "tls.certManager.issuerRef.name=ca-issuer",
           "--set", "tls.certManager.issuerRef.kind=ClusterIssuer", "--set", "tls.clientAuth=true",
           "--set", "metrics.serviceMonitor.enabled=true",
           "--set", "metrics.serviceMonitor.labels.release=kube-prometheus-stack",
           "--set", "networkPolicy.enabled=true"]
CHART_CASES = [
    {"name": "defaults", "args": [], "expect": lambda d: expect_cluster(d)},
    {"name": "mode=standalone", "args": ["--set", "mode=standalone"], "expect": lambda d: expect_standalone(d)},
    {"name": "TLS+cert-manager+ServiceMonitor+NetworkPolicy", "args": _ALL_ON,
     "expect": lambda d: expect_all_options(d)},
    {"name": "standalone with a user TLS Secret, ServiceMonitor, NetworkPolicy",
     "args": ["--set", "mode=standalone", "--set", "tls.secretName=my-scaler-tls",
              "--set", "metrics.serviceMonitor.enabled=true", "--set", "networkPolicy.enabled=true"],
     "expect": lambda d: expect_standalone_tls(d), "external_secrets": ["my-scaler-tls"]},
    {"name": "metrics and probes off, ClusterIP Service, hard anti-affinity, 3 replicas",
     "args": ["--set", "metrics.enabled=false", "--set", "probes.enabled=false",
              "--set", "service.headless=false", "--set", "service.port=7000",
              "--set", "aggregator.podAntiAffinity=hard", "--set", "aggregator.replicaCount=3",
              "--set", "image.tag=0.1.0-rc1", "--set", "agent.runAsRoot=false",
              "--set", "fullnameOverride=gpu-scaler"],
     "expect": lambda d: expect_minimal(d)},
    {"name": "agent.gpuSharingAttribution=true",
     "args": ["--set", "agent.gpuSharingAttribution=true"],
     "expect": lambda d: expect_sharing_attribution(d)},
    {"name": "agentTLS with cert-manager",
     "args": ["--set", "agentTLS.enabled=true", "--set", "agentTLS.certManager.enabled=true",
              "--set", "agentTLS.certManager.issuerRef.name=agents-ca",
              "--set", "agentTLS.certManager.issuerRef.kind=ClusterIssuer"],
     "expect": lambda d: expect_agent_tls(d, "keda-gpu-scaler-agent-tls",
                                          "keda-gpu-scaler-aggregator-client-tls", cert_manager=True)},
    {"name": "agentTLS with user Secrets, NetworkPolicy off",
     "args": ["--set", "agentTLS.enabled=true", "--set", "agentTLS.agentSecretName=my-agent-tls",
              "--set", "agentTLS.aggregatorSecretName=my-aggregator-tls",
              "--set", "networkPolicy.enabled=false"],
     "expect": lambda d: expect_agent_tls(d, "my-agent-tls", "my-aggregator-tls", cert_manager=False)
     + (["NetworkPolicy rendered though networkPolicy.enabled=false"] if by_kind(d, "NetworkPolicy") else []),
     "external_secrets": ["my-agent-tls", "my-aggregator-tls"]},
    {"name": "sourceAuth profiles and the metrics reader",
     "args": ["-f", os.path.join(HERE, "values-source-auth.yaml")],
     "expect": lambda d: expect_source_auth(d, "aggregator"),
     "external_secrets": ["vault-metrics-client"]},
    {"name": "sourceAuth profiles, standalone",
     "args": ["--set", "mode=standalone", "-f", os.path.join(HERE, "values-source-auth.yaml")],
     "expect": lambda d: expect_source_auth(d, "standalone"),
     "external_secrets": ["vault-metrics-client"]},
    {"name": "mTLS KEDA-scaler by default: cert-manager present, release in KEDA's namespace",
     "args": ["--namespace", "keda", "--api-versions", "cert-manager.io/v1"],
     "expect": lambda d: expect_keda_mtls(d, "aggregator")},
    {"name": "mTLS KEDA-scaler by default, standalone",
     "args": ["--namespace", "keda", "--api-versions", "cert-manager.io/v1/Certificate",
              "--set", "mode=standalone"],
     "expect": lambda d: expect_keda_mtls(d, "standalone")},
    {"name": "cert-manager present, release outside KEDA's namespace: no mTLS",
     "args": ["--api-versions", "cert-manager.io/v1"],
     "expect": lambda d: expect_no_keda_mtls(d)},
    {"name": "AMD nodes (values-amd.yaml)",
     "args": ["-f", os.path.join(CHART_DIR_FOR_CASES, "values-amd.yaml")],
     "expect": lambda d: expect_amd_nodes(d, "agent")},
    {"name": "AMD nodes, standalone",
     "args": ["--set", "mode=standalone", "-f", os.path.join(CHART_DIR_FOR_CASES, "values-amd.yaml")],
     "expect": lambda d: expect_amd_nodes(d, "standalone")},
    {"name": "probes.type=grpc, one aggregator, release name override",
     "args": ["--set", "probes.type=grpc", "--set", "aggregator.replicaCount=1",
              "--set", r"nodeSelector.node\.kubernetes\.io/instance-type=p5.48xlarge"],
     "expect": lambda d: expect_grpc_probes(d)},
]


# ---------------------------------------------------------------- the suite

class Suite:
    def __init__(self, opts):
        self.opts = opts
        self.failures = []
        self.passed = 0
        self.tmp = tempfile.mkdtemp(prefix="kgs-helm-check-")
        self.chart = os.path.join(opts.source_dir, "deploy", "helm", "keda-gpu-scaler")
        self.manifests = os.path.join(opts.source_dir, "deploy", "manifests")
        self.help_text = None
        server = os.environ.get("KEDA_GPU_SCALER")
        if server:
            self.help_text = subprocess.run([server, "--help"], capture_output=True, text=True).stdout

    def ok(self, name, errs):
        if errs:
            self.failures.append(name)
            print("FAIL %s" % name)
            for e in errs:
                print("     %s" % e)
        else:
            self.passed += 1
            print("ok   %s" % name)

    def render(self, args, notes=False):
        cmd = [self.opts.render, "--release", "keda-gpu-scaler", "--namespace", "keda-gpu-scaler"]
        cmd += args + (["--notes"] if notes else []) + [self.chart]
        return subprocess.run(cmd, capture_output=True, text=True)

    def yamllint(self, name, paths):
        r = subprocess.run(["yamllint", "-s", "-f", "parsable", "-c", YAMLLINT_CONFIG] + paths,
                           capture_output=True, text=True)
        self.ok("yamllint %s" % name, [] if r.returncode == 0 else (r.stdout + r.stderr).strip().splitlines())

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def checked_stream(self, name, text, external_secrets=()):
        """yamllint + object checks + flags on one rendered stream; its docs."""
        path = self.write(name.replace(" ", "_").replace("/", "_") + ".yaml", text)
        self.yamllint(name, [path])
        try:
            docs = load_docs(text)
        except yaml.YAMLError as e:
            self.ok("parse %s" % name, [str(e)])
            return []
        errs = check_objects(docs, external_secrets)
        if self.help_text:
            errs += check_flags_known(docs, self.help_text)
        self.ok("objects %s (%d objects)" % (name, len(docs)), errs)
        return docs

    # -- the chart

    def chart_case(self, name, args, expect, external_secrets=()):
        r = self.render(args)
        if r.returncode != 0:
            self.ok("render %s" % name, ["render failed: " + r.stderr.strip()])
            return []
        docs = self.checked_stream("chart " + name, r.stdout, external_secrets)
        self.ok("expectations chart %s" % name, expect(docs))
        n = self.render(args, notes=True)
        self.ok("NOTES chart %s" % name, check_notes(docs, n.stdout) if n.returncode == 0
                else ["NOTES failed: " + n.stderr.strip()])
        return docs

    def chart_refuses(self, name, args, want):
        r = self.render(args)
        errs = []
        if r.returncode == 0:
            errs.append("rendered, but should have been refused")
        elif want not in r.stderr:
            errs.append("refused without saying %r: %s" % (want, r.stderr.strip()))
        self.ok("chart refuses %s" % name, errs)

    def run(self):
        o = self.opts
        for tool in ("yamllint", "kubectl"):
            if not shutil.which(tool):
                pkg = {"yamllint": "yamllint", "kubectl": "kubernetes-client"}[tool]
                print("FAIL %s not found (apt-get install %s)" % (tool, pkg))
                return 1

        # Chart metadata and values, kustomize sources.
        kfiles = []
        for root, _, files in os.walk(self.manifests):
            kfiles += [os.path.join(root, f) for f in sorted(files) if f.endswith((".yaml", ".yml"))]
        self.yamllint("chart values.yaml, Chart.yaml and deploy/manifests",
                      [os.path.join(self.chart, "values.yaml"), os.path.join(self.chart, "Chart.yaml")] + kfiles)
        with open(os.path.join(self.chart, "Chart.yaml")) as f:
            meta = yaml.safe_load(f)
        with open(os.path.join(self.chart, "values.yaml")) as f:
            values = yaml.safe_load(f)
        errs = []
        app = str(meta.get("appVersion", ""))
        if o.project_version and app != o.project_version:
            errs.append("Chart.yaml appVersion %r is not the project version %r (the image tag the release "
                        "publishes)" % (app, o.project_version))
        tag = str((values.get("image") or {}).get("tag") or app)
        if tag in ("", "latest"):
            errs.append("default image tag %r" % tag)
        for key in ("repository", "tag", "pullPolicy"):
            if key not in (values.get("image") or {}):
                errs.append("values.yaml lacks image.%s (a Go chart key)" % key)
        for path in ("grpc.port", "metrics.enabled", "metrics.port", "probes.port", "probes.enabled",
                     "probes.type", "nodeSelector", "tolerations", "resources", "logLevel",
                     "healthCheckInterval", "serviceAccount.create", "service.type", "service.port",
                     "runtimeClassName", "affinity", "securityContext", "updateStrategy",
                     "terminationGracePeriodSeconds", "imagePullSecrets", "nameOverride",
                     "fullnameOverride", "podAnnotations", "tls.secretName", "tls.certManager.enabled",
                     "tls.certManager.issuerRef", "metrics.serviceMonitor.enabled", "networkPolicy.enabled",
                     "networkPolicy.extraEgress", "networkPolicy.sources.ports", "networkPolicy.kubeApi.cidrs",
                     "agentTLS.enabled", "agentTLS.agentSecretName", "agentTLS.aggregatorSecretName",
                     "agentTLS.certManager.issuerRef",
                     "mode"):
            node = values
            for part in path.split("."):
                if not isinstance(node, dict) or part not in node:
                    errs.append("values.yaml lacks %s" % path)
                    break
                node = node[part]
        self.ok("Chart.yaml and values.yaml keys", errs)

        docs_by_case = {}
        for case in CHART_CASES:
            docs_by_case[case["name"]] = self.chart_case(case["name"], case["args"], case["expect"],
                                                         case.get("external_secrets", ()))
        default_docs = docs_by_case["defaults"]
        standalone_docs = docs_by_case["mode=standalone"]
        self.chart_refuses("mode=bogus", ["--set", "mode=bogus"], "mode must be cluster or standalone")
        self.chart_refuses("gpuBackend=rocm", ["--set", "gpuBackend=rocm"],
                           "gpuBackend must be auto, nvml, amdsmi or amdgpu-sysfs")
        self.chart_refuses("cert-manager without an issuer", ["--set", "tls.certManager.enabled=true"],
                           "tls.certManager.issuerRef.name is required")
        self.chart_refuses("nvmlHostMounts.enabled", ["--set", "nvmlHostMounts.enabled=true"],
                           "nvmlHostMounts is not supported")
        self.chart_refuses("gRPC probes on a TLS port", ["--set", "probes.type=grpc", "--set", "tls.secretName=x"],
                           "cannot probe a TLS port")
        self.chart_refuses("agentTLS without Secrets or cert-manager", ["--set", "agentTLS.enabled=true"],
                           "agentTLS.enabled needs agentTLS.agentSecretName")
        self.chart_refuses("agentTLS cert-manager without an issuer",
                           ["--set", "agentTLS.enabled=true", "--set", "agentTLS.certManager.enabled=true"],
                           "agentTLS.certManager.issuerRef.name is required")
        self.chart_refuses("agentTLS in mode standalone",
                           ["--set", "mode=standalone", "--set", "agentTLS.enabled=true"],
                           "agentTLS is for mode cluster")
        self.chart_refuses("gRPC probes on the agents' TLS port",
                           ["--set", "probes.type=grpc", "--set", "agentTLS.enabled=true",
                            "--set", "agentTLS.agentSecretName=a", "--set", "agentTLS.aggregatorSecretName=b"],
                           "cannot probe the agents' TLS port")
        self.chart_refuses("tls.kedaClientAuth.enabled=true outside KEDA's namespace",
                           ["--set", "tls.kedaClientAuth.enabled=true"],
                           "tls.kedaClientAuth.enabled=true needs the release in KEDA's namespace")
        self.chart_refuses("tls.kedaClientAuth.enabled=true with a TLS Secret of one's own",
                           ["--namespace", "keda", "--set", "tls.kedaClientAuth.enabled=true",
                            "--set", "tls.secretName=mine"],
                           "leave tls.secretName and tls.certManager.enabled unset")
        self.chart_refuses("tls.kedaClientAuth.enabled=maybe", ["--set", "tls.kedaClientAuth.enabled=maybe"],
                           "tls.kedaClientAuth.enabled must be auto, true or false")
        nowhere = self.write("values-nowhere.yaml", "sourceAuth:\n  profiles:\n    - name: epp\n"
                             "      namespaces: [llm]\n      serviceAccountToken: {expirationSeconds: 3600}\n")
        self.chart_refuses("a sourceAuth token bound to nowhere", ["-f", nowhere],
                           "sourceAuth.profiles[0] (epp): where may its credential go?")
        self.chart_refuses("ServiceMonitor without metrics",
                           ["--set", "metrics.enabled=false", "--set", "metrics.serviceMonitor.enabled=true"],
                           "needs metrics.enabled")

        # Kustomize.
        for name, rel, chart_docs in (("base", "base", default_docs),
                                      ("overlays/standalone", "overlays/standalone", standalone_docs)):
            r = subprocess.run(["kubectl", "kustomize", os.path.join(self.manifests, rel)],
                               capture_output=True, text=True)
            if r.returncode != 0:
                self.ok("kustomize %s" % name, [r.stderr.strip()])
                continue
            docs = self.checked_stream("kustomize " + name, r.stdout)
            self.ok("kustomize %s equals the chart (%s)" % (name, "defaults" if rel == "base" else "mode=standalone"),
                    compare_to_chart(docs, chart_docs))

        self.harness_self_test()
        self.checks_self_test(default_docs, standalone_docs)

        print("%d passed, %d failed" % (self.passed, len(self.failures)))
        shutil.rmtree(self.tmp, ignore_errors=True)
        return 1 if self.failures else 0

    # -- the harness must fail loudly

    def harness_self_test(self):
        chart = os.path.join(self.tmp, "probe-chart")
        os.makedirs(os.path.join(chart, "templates"))
        with open(os.path.join(chart, "Chart.yaml"), "w") as f:
            f.write("apiVersion: v2\nname: probe\nversion: 1.0.0\nappVersion: \"9.9\"\n")
        with open(os.path.join(chart, "values.yaml"), "w") as f:
            f.write("a:\n  b: 1\n  list: [x]\nt: '{{ .Release.Name }}-{{ .Chart.AppVersion }}'\n")
        with open(os.path.join(chart, "templates", "_h.tpl"), "w") as f:
            f.write('{{- define "h" -}}h={{ . }}{{- end }}')
        with open(os.path.join(chart, "templates", "cm.yaml"), "w") as f:
            f.write("v: {{ .Values.a.b }}\nd: {{ index .Values \"k.e\" | default \"none\" }}\n"
                    "i: {{ include \"h\" .Values.a.b }}\nt: {{ tpl .Values.t . }}\n"
                    "y: {{ toYaml .Values.a | nindent 2 }}\n")
        with open(os.path.join(chart, "templates", "empty.yaml"), "w") as f:
            f.write("{{- if false }}\nx: 1\n{{- end }}\n")
        base = [self.opts.render, "--release", "rel"]
        r = subprocess.run(base + ["--set", "a.b=2", "--set", r"k\.e=dotted", chart], capture_output=True, text=True)
        errs = []
        want = "v: 2\nd: dotted\ni: h=2\nt: rel-9.9\ny: \n  b: 2\n  list:\n  - x\n"
        if r.returncode != 0 or "empty.yaml" in r.stdout or want not in r.stdout:
            errs.append("harness output unexpected (rc %d): %r %s" % (r.returncode, r.stdout, r.stderr))
        with open(os.path.join(chart, "templates", "bad.yaml"), "w") as f:
            f.write("x: {{ lookup \"v1\" \"Secret\" \"ns\" \"n\" }}\n")
        r = subprocess.run(base + [chart], capture_output=True, text=True)
        if r.returncode == 0 or "not defined" not in r.stderr:
            errs.append("harness accepted an unknown function (rc %d): %s" % (r.returncode, r.stderr))
        os.remove(os.path.join(chart, "templates", "bad.yaml"))
        with open(os.path.join(chart, "templates", "req.yaml"), "w") as f:
            f.write("x: {{ required \"need .Values.nope\" .Values.nope }}\n")
        r = subprocess.run(base + [chart], capture_output=True, text=True)
        if r.returncode == 0 or "need .Values.nope" not in r.stderr:
            errs.append("harness ignored a failing required (rc %d): %s" % (r.returncode, r.stderr))
        self.ok("render harness: values, --set, include, tpl, toYaml; fails on unknown functions and required", errs)

    # -- the checks must be able to fail

    def checks_self_test(self, default_docs, standalone_docs):
        if not default_docs:
            self.ok("negative self-test", ["no default render to mutate"])
            return

        def find(docs, kind, component=None):
            for d in docs:
                if d.get("kind") == kind and (component is None or (d["metadata"].get("labels") or {})
                                               .get("app.kubernetes.io/component") == component):
                    return d
            raise KeyError(kind)

        def ctr(docs, component):
            kind = "Deployment" if component == "aggregator" else "DaemonSet"
            return containers(find(docs, kind, component))[0]

        def svc_bad_target(docs):
            find(docs, "Service", "aggregator")["spec"]["ports"][0]["targetPort"] = "grcp"

        def svc_bad_number(docs):
            find(docs, "Service", "agent")["spec"]["ports"][0]["targetPort"] = 6001

        def svc_selects_nothing(docs):
            find(docs, "Service", "aggregator")["spec"]["selector"]["app.kubernetes.io/component"] = "aggregators"

        def workload_selector(docs):
            find(docs, "Deployment")["spec"]["selector"]["matchLabels"]["tier"] = "x"

        def privileged(docs):
            ctr(docs, "agent")["securityContext"]["privileged"] = True

        def root(docs):
            find(docs, "Deployment")["spec"]["template"]["spec"]["securityContext"]["runAsUser"] = 0

        def writable_root(docs):
            ctr(docs, "aggregator")["securityContext"]["readOnlyRootFilesystem"] = False

        def caps(docs):
            ctr(docs, "aggregator")["securityContext"]["capabilities"] = {"add": ["SYS_ADMIN"]}

        def latest(docs):
            ctr(docs, "agent")["image"] = "ghcr.io/keda-gpu-scaler/keda-gpu-scaler:latest"

        def no_tag(docs):
            ctr(docs, "aggregator")["image"] = "ghcr.io/keda-gpu-scaler/keda-gpu-scaler"

        def rbac_verb(docs):
            find(docs, "ClusterRole")["rules"][0]["verbs"].append("create")

        def rbac_secrets(docs):
            find(docs, "ClusterRole")["rules"][0]["resources"].append("secrets")

        def rbac_no_nodes(docs):
            find(docs, "ClusterRole")["rules"][0]["resources"].remove("nodes")

        def rbac_no_slices(docs):
            rules = find(docs, "ClusterRole")["rules"]
            rules[:] = [r for r in rules if "resource.k8s.io" not in (r.get("apiGroups") or [])]

        def rbac_claims(docs):
            for r in find(docs, "ClusterRole")["rules"]:
                if "resource.k8s.io" in (r.get("apiGroups") or []):
                    r["resources"].append("resourceclaims")

        def rbac_slices_core(docs):
            find(docs, "ClusterRole")["rules"][0]["resources"].append("resourceslices")

        def rbac_slices_any_group(docs):
            for r in find(docs, "ClusterRole")["rules"]:
                if "resource.k8s.io" in (r.get("apiGroups") or []):
                    r["apiGroups"] = ["*"]

        def missing_volume(docs):
            ctr(docs, "aggregator").setdefault("volumeMounts", []).append({"name": "tls", "mountPath": "/tls"})

        def missing_secret(docs):
            d = find(docs, "Deployment")
            d["spec"]["template"]["spec"].setdefault("volumes", []).append(
                {"name": "tls", "secret": {"secretName": "nowhere"}})

        def secret_env(docs):
            ctr(docs, "aggregator")["env"].append(
                {"name": "X", "valueFrom": {"secretKeyRef": {"name": "nowhere", "key": "k"}}})

        def configmap_env(docs):
            ctr(docs, "aggregator")["env"].append(
                {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "nowhere", "key": "k"}}})

        def probe_port(docs):
            ctr(docs, "aggregator")["readinessProbe"]["httpGet"]["port"] = "health"

        def agents_dns(docs):
            c = ctr(docs, "aggregator")
            c["args"] = [a.replace("keda-gpu-scaler-agents.", "keda-gpu-scaler-agent.") for a in c["args"]]

        def agents_dns_port(docs):
            c = ctr(docs, "aggregator")
            c["args"] = [a.replace("svc:6000", "svc:6001") for a in c["args"]]

        def agents_not_headless(docs):
            del find(docs, "Service", "agent")["spec"]["clusterIP"]

        def no_downward(docs):
            c = ctr(docs, "agent")
            c["env"] = [e for e in c["env"] if e["name"] != "NODE_NAME"]

        def no_nvidia_env(docs):
            c = ctr(docs, "agent")
            c["env"] = [e for e in c["env"] if e["name"] != "NVIDIA_DRIVER_CAPABILITIES"]

        def writable_hostpath(docs):
            ctr(docs, "agent")["volumeMounts"][0]["readOnly"] = False

        def other_hostpath(docs):
            find(docs, "DaemonSet")["spec"]["template"]["spec"]["volumes"][0]["hostPath"]["path"] = "/dev"

        def no_apiversion(docs):
            del find(docs, "PodDisruptionBudget")["apiVersion"]

        def no_name(docs):
            del find(docs, "ServiceAccount")["metadata"]["name"]

        def pdb_selector(docs):
            find(docs, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"]["x"] = "y"

        def binding_sa(docs):
            find(docs, "ClusterRoleBinding")["subjects"][0]["name"] = "someone"

        def unknown_sa(docs):
            find(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] = "someone"

        def host_network(docs):
            find(docs, "DaemonSet")["spec"]["template"]["spec"]["hostNetwork"] = True

        def host_pid(docs):
            # hostPID without --proc-root=/proc: nothing needs it.
            find(docs, "DaemonSet")["spec"]["template"]["spec"]["hostPID"] = True

        def root_standalone(docs):
            # Root is tolerated only for an agent with the pod-resources mount.
            find(docs, "DaemonSet")["spec"]["template"]["spec"]["securityContext"]["runAsUser"] = 0

        def np_ingress_only(docs):
            find(docs, "NetworkPolicy", "agent")["spec"]["policyTypes"] = ["Ingress"]

        def np_no_egress(docs):
            del find(docs, "NetworkPolicy", "agent")["spec"]["egress"]

        def np_egress_port(docs):
            for r in find(docs, "NetworkPolicy", "aggregator")["spec"]["egress"]:
                if any("podSelector" in t for t in r.get("to") or []):
                    r["ports"][0]["port"] = 6001

        cases = [
            ("NetworkPolicy without Egress", np_ingress_only, "expected Ingress and Egress"),
            ("NetworkPolicy without egress rules", np_no_egress, "no egress rules"),
            ("NetworkPolicy egress to the agents on a wrong port", np_egress_port,
             "egress port 6001 is not a containerPort"),
            ("Service targetPort that is no container port name", svc_bad_target, "targetPort grcp"),
            ("Service targetPort number that is no containerPort", svc_bad_number, "targetPort 6001"),
            ("Service selecting no pods", svc_selects_nothing, "matches no workload"),
            ("workload selector not matching its template", workload_selector, "does not match its pod template"),
            ("privileged container", privileged, "privileged"),
            ("aggregator as root", root, "not non-root"),
            ("writable root filesystem", writable_root, "readOnlyRootFilesystem"),
            ("capabilities added, ALL not dropped", caps, "do not drop ALL"),
            ("image tag latest", latest, "uses the tag latest"),
            ("image without a tag", no_tag, "has no tag"),
            ("RBAC verb create", rbac_verb, "expected exactly get, list, watch"),
            ("RBAC on secrets", rbac_secrets, "grants ['core/secrets'] beyond"),
            ("RBAC without nodes", rbac_no_nodes, "needs exactly core pods and nodes"),
            ("RBAC without resourceslices", rbac_no_slices, "needs exactly core pods and nodes"),
            ("RBAC on resourceclaims", rbac_claims, "grants ['resource.k8s.io/resourceclaims']"),
            ("RBAC resourceslices in the core group", rbac_slices_core, "core/resourceslices"),
            ("RBAC resourceslices in any group", rbac_slices_any_group, "*/resourceslices"),
            ("volumeMount without a volume", missing_volume, "refers to no volume"),
            ("volume of an unknown Secret", missing_secret, "Secret nowhere"),
            ("secretKeyRef to an unknown Secret", secret_env, "Secret nowhere"),
            ("configMapKeyRef to an unknown ConfigMap", configmap_env, "ConfigMap nowhere"),
            ("probe on a port the container lacks", probe_port, "readinessProbe port health"),
            ("--agents-dns naming a missing Service", agents_dns, "not in the output"),
            ("--agents-dns with the wrong port", agents_dns_port, "not the agents' container port"),
            ("--agents-dns Service not headless", agents_not_headless, "is not headless"),
            ("no Downward API NODE_NAME", no_downward, "NODE_NAME"),
            ("no NVIDIA_DRIVER_CAPABILITIES", no_nvidia_env, "NVIDIA_DRIVER_CAPABILITIES"),
            ("pod-resources mounted writable", writable_hostpath, "mounted writable"),
            ("another hostPath", other_hostpath, "only /var/lib/kubelet/pod-resources"),
            ("object without apiVersion", no_apiversion, "no apiVersion"),
            ("object without a name", no_name, "no metadata.name"),
            ("PodDisruptionBudget selecting nothing", pdb_selector, "matches no workload"),
            ("binding to a missing ServiceAccount", binding_sa, "subject ServiceAccount someone"),
            ("pod with an undefined ServiceAccount", unknown_sa, "serviceAccountName someone"),
            ("hostNetwork", host_network, "hostNetwork is true"),
            ("hostPID without sharing attribution", host_pid, "hostPID is true"),
        ]
        errs = []
        if check_objects(copy.deepcopy(default_docs)):
            errs.append("the unmodified default render does not pass")
        for name, mutate, want in cases:
            docs = copy.deepcopy(default_docs)
            mutate(docs)
            found = check_objects(docs)
            if not any(want in e for e in found):
                errs.append("%s: not caught (wanted %r, got %s)" % (name, want, found))
        if standalone_docs:
            docs = copy.deepcopy(standalone_docs)
            root_standalone(docs)
            if not any("not non-root" in e for e in check_objects(docs)):
                errs.append("standalone as root: not caught")
        else:
            errs.append("no standalone render to mutate")
        if self.help_text:
            docs = copy.deepcopy(default_docs)
            ctr(docs, "agent")["args"].append("--kubelet-sock=/x")
            if not any("--kubelet-sock is not in" in e for e in check_flags_known(docs, self.help_text)):
                errs.append("a misspelt flag (--kubelet-sock): not caught")
        # The command-line path, on a literal broken document.
        broken = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}
      containers:
        - name: web
          image: example/web:1.0
          ports: [{name: http, containerPort: 8080}]
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities: {drop: [ALL]}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: https}]
"""
        path = self.write("broken.yaml", broken)
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "check", path], capture_output=True, text=True)
        if r.returncode != 1 or "targetPort https" not in r.stdout:
            errs.append("`check` accepted a Service whose targetPort does not exist (rc %d): %s"
                        % (r.returncode, r.stdout + r.stderr))
        fixed = broken.replace("targetPort: https", "targetPort: http")
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "check", self.write("fixed.yaml", fixed)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            errs.append("`check` rejected the corrected document: %s" % (r.stdout + r.stderr))
        self.ok("negative self-test: %d broken variants each caught" % (len(cases) + 2), errs)


# ---------------------------------------------------------------- expectations per render

def by_kind(docs, kind):
    return [d for d in docs if d.get("kind") == kind]


def scaler_args(docs, role):
    out = []
    for w in workloads(docs):
        for c in containers(w):
            if role_of(c) == role:
                out.append((w, c, [str(a) for a in c.get("args") or []]))
    return out


def expect_common_cluster(docs):
    errs = []
    agents, aggs = scaler_args(docs, "agent"), scaler_args(docs, "aggregator")
    if len(agents) != 1 or agents[0][0]["kind"] != "DaemonSet":
        errs.append("expected one agent DaemonSet, got %s" % [ident(w) for w, _, _ in agents])
    if len(aggs) != 1 or aggs[0][0]["kind"] != "Deployment":
        errs.append("expected one aggregator Deployment, got %s" % [ident(w) for w, _, _ in aggs])
    if errs:
        return errs
    (agent, ac, aargs), agg = agents[0], aggs[0][0]
    spec = pod_spec(agent)
    if spec.get("nodeSelector") is None or "nvidia.com/gpu.present" not in spec.get("nodeSelector"):
        errs.append("agent nodeSelector lacks nvidia.com/gpu.present")
    if {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} not in (spec.get("tolerations") or []):
        errs.append("agent lacks the nvidia.com/gpu Exists NoSchedule toleration")
    if spec.get("runtimeClassName") != "nvidia":
        errs.append("agent runtimeClassName is %r, not nvidia" % spec.get("runtimeClassName"))
    if spec.get("automountServiceAccountToken") is not False:
        errs.append("agent mounts a service account token it does not need")
    if arg_value(aargs, "--probe-port") != "0" and (not ac.get("livenessProbe") or not ac.get("readinessProbe")):
        errs.append("agent lacks liveness/readiness probes")
    if not ac.get("resources"):
        errs.append("agent has no resources")
    gargs = [str(a) for a in (containers(agg)[0].get("args") or [])]
    agent_tls = arg_value(aargs, "--tls-cert") is not None
    if agent_tls != (arg_value(gargs, "--agents-tls-ca") is not None):
        errs.append("agents and aggregators disagree on TLS between them: agent %s, aggregator %s"
                    % ([a for a in aargs if a.startswith("--tls")],
                       [a for a in gargs if a.startswith("--agents-tls")]))
    if agent_tls and arg_value(aargs, "--tls-client-ca") is None:
        errs.append("agents serve TLS without --tls-client-ca: their Watch would take any client")
    aff = (pod_spec(agg).get("affinity") or {}).get("podAntiAffinity")
    if not aff:
        errs.append("aggregator has no pod anti-affinity")
    if not any(matches(p["spec"]["selector"], pod_labels(agg)) for p in by_kind(docs, "PodDisruptionBudget")) \
            and (agg["spec"].get("replicas") or 1) > 1:
        errs.append("no PodDisruptionBudget for the aggregators")
    keda = [s for s in by_kind(docs, "Service") if matches(s["spec"].get("selector"), pod_labels(agg))]
    if not keda:
        errs.append("no Service for KEDA in front of the aggregators")
    if not by_kind(docs, "ClusterRole") or not by_kind(docs, "ClusterRoleBinding"):
        errs.append("no ClusterRole/ClusterRoleBinding for the aggregators")
    for b in by_kind(docs, "ClusterRoleBinding"):
        if not any(s.get("name") == pod_spec(agg).get("serviceAccountName") for s in b.get("subjects") or []):
            errs.append("%s does not bind the aggregators' account" % ident(b))
    return errs


def expect_cluster(docs):
    errs = expect_common_cluster(docs)
    if errs:
        return errs
    (agg, gc, _), = scaler_args(docs, "aggregator")
    for w, _, args in scaler_args(docs, "agent"):
        if pod_spec(w).get("hostPID") or arg_value(args, "--proc-root"):
            errs.append("%s: hostPID / --proc-root by default (sharing attribution is opt-in)"
                        % ident(w))
    if agg["spec"].get("replicas") != 2:
        errs.append("aggregator replicas %s, not 2" % agg["spec"].get("replicas"))
    keda = [s for s in by_kind(docs, "Service") if s["metadata"]["name"] == "keda-gpu-scaler"]
    if not keda or keda[0]["spec"].get("clusterIP") != "None":
        errs.append("the KEDA Service keda-gpu-scaler is missing or not headless")
    for kind in ("Certificate", "ServiceMonitor"):
        if by_kind(docs, kind):
            errs.append("%s rendered though not enabled" % kind)
    # NetworkPolicy is on by default, both directions.
    errs += expect_network_policies(docs, cluster=True)
    return errs


def expect_standalone(docs):
    errs = []
    sa = scaler_args(docs, "standalone")
    if len(sa) != 1 or sa[0][0]["kind"] != "DaemonSet":
        errs.append("expected one standalone DaemonSet, got %s" % [ident(w) for w, _, _ in sa])
    for role in ("agent", "aggregator"):
        if scaler_args(docs, role):
            errs.append("mode standalone renders a %s" % role)
    for kind in ("ClusterRole", "ClusterRoleBinding", "PodDisruptionBudget"):
        if by_kind(docs, kind):
            errs.append("mode standalone renders a %s" % kind)
    if sa and not any(matches(s["spec"].get("selector"), pod_labels(sa[0][0])) for s in by_kind(docs, "Service")):
        errs.append("no Service for KEDA in front of the standalone scalers")
    if sa:
        spec = pod_spec(sa[0][0])
        if spec.get("automountServiceAccountToken") is not False:
            errs.append("standalone pods mount a token they do not need")
        if spec.get("runtimeClassName") != "nvidia":
            errs.append("standalone runtimeClassName is not nvidia")
    errs += expect_network_policies(docs, cluster=False)
    return errs


def expect_all_options(docs):
    errs = expect_common_cluster(docs)
    (agg, gc, gargs), = scaler_args(docs, "aggregator") or [(None, None, [])]
    for flag in ("--tls-cert", "--tls-key", "--tls-client-ca"):
        if arg_value(gargs, flag) is None:
            errs.append("aggregator lacks %s" % flag)
    certs = by_kind(docs, "Certificate")
    if len(certs) != 1:
        errs.append("expected one Certificate, got %d" % len(certs))
    else:
        c = certs[0]["spec"]
        if c.get("issuerRef", {}).get("name") != "ca-issuer" or c.get("issuerRef", {}).get("kind") != "ClusterIssuer":
            errs.append("Certificate issuerRef %s" % c.get("issuerRef"))
        if "keda-gpu-scaler.keda-gpu-scaler.svc" not in (c.get("dnsNames") or []):
            errs.append("Certificate lacks the Service's DNS name: %s" % c.get("dnsNames"))
        vols = [v for v in pod_spec(agg).get("volumes") or [] if "secret" in v] if agg else []
        if not any(v["secret"].get("secretName") == c.get("secretName") for v in vols):
            errs.append("the aggregators do not mount the Certificate's Secret %s" % c.get("secretName"))
    sms = by_kind(docs, "ServiceMonitor")
    if len(sms) != 1 or (sms[0]["metadata"].get("labels") or {}).get("release") != "kube-prometheus-stack":
        errs.append("expected one ServiceMonitor labelled release=kube-prometheus-stack")
    errs += expect_network_policies(docs, cluster=True)
    return errs


def expect_network_policies(docs, cluster):
    errs = []
    nps = by_kind(docs, "NetworkPolicy")
    keda_role = "aggregator" if cluster else "standalone"
    (kw, _, _), = scaler_args(docs, keda_role) or [(None, None, None)]
    if kw is None:
        return ["no %s to protect" % keda_role]

    def policy_for(w):
        return [n for n in nps if matches(n["spec"].get("podSelector"), pod_labels(w))]

    def rules(n, port):
        return [r for r in n["spec"].get("ingress") or [] if any(p.get("port") == port for p in r.get("ports") or [])]

    pol = policy_for(kw)
    if len(pol) != 1:
        return ["expected one NetworkPolicy for the %s pods, got %d" % (keda_role, len(pol))]
    if pol[0]["spec"].get("policyTypes") != ["Ingress", "Egress"]:
        errs.append("%s: policyTypes %s" % (ident(pol[0]), pol[0]["spec"].get("policyTypes")))
    egress = pol[0]["spec"].get("egress") or []

    def egress_ports(pred):
        return {p.get("port") for r in egress if pred(r) for p in r.get("ports") or []}
    if not {53} <= egress_ports(lambda r: not r.get("to")):
        errs.append("%s: no egress to DNS (port 53)" % ident(pol[0]))
    if not {8000, 6379} <= egress_ports(lambda r: any(t == {"namespaceSelector": {}} for t in r.get("to") or [])):
        errs.append("%s: no egress to the default engine/queue ports: %s" % (ident(pol[0]), egress))
    to_api = egress_ports(lambda r: any("ipBlock" in t for t in r.get("to") or []))
    if cluster and not {443, 6443} <= to_api:
        errs.append("%s: no egress to the Kubernetes API (443, 6443): %s" % (ident(pol[0]), egress))
    if not cluster and to_api:
        errs.append("%s: standalone scalers need no Kubernetes API, but egress allows %s" % (ident(pol[0]), to_api))
    if any(not r.get("ports") for r in egress):
        errs.append("%s: an egress rule without ports opens every port" % ident(pol[0]))
    grpc = rules(pol[0], "grpc")
    peers = [p for r in grpc for p in r.get("from") or []]
    if not peers or any(((p.get("namespaceSelector") or {}).get("matchLabels") or {})
                        .get("kubernetes.io/metadata.name") != "keda" for p in peers):
        errs.append("gRPC to the %s pods is not limited to KEDA's namespace: %s" % (keda_role, peers))
    met = [p for r in rules(pol[0], "metrics") for p in r.get("from") or []]
    if not met or any(((p.get("namespaceSelector") or {}).get("matchLabels") or {})
                      .get("kubernetes.io/metadata.name") != "monitoring" for p in met):
        errs.append("metrics of the %s pods are not limited to Prometheus' namespace: %s" % (keda_role, met))
    if cluster:
        (aw, _, _), = scaler_args(docs, "agent")
        apol = policy_for(aw)
        if len(apol) != 1:
            return errs + ["expected one NetworkPolicy for the agents, got %d" % len(apol)]
        peers = [p for r in rules(apol[0], "grpc") for p in r.get("from") or []]
        if not peers or any("namespaceSelector" in p or not matches(p.get("podSelector"), pod_labels(kw))
                            for p in peers):
            errs.append("the agents' gRPC port is not limited to the aggregators: %s" % peers)
        if apol[0]["spec"].get("egress") != [] or "Egress" not in (apol[0]["spec"].get("policyTypes") or []):
            errs.append("the agents may reach out (they need nothing): %s" % apol[0]["spec"].get("egress"))
        (_, ac, aargs), = scaler_args(docs, "agent")
        agent_port = int(arg_value(aargs, "--port"))
        if not any(matches((t.get("podSelector") or {}), pod_labels(aw)) and
                   any(p.get("port") in (agent_port, "grpc") for p in r.get("ports") or [])
                   for r in egress for t in r.get("to") or []):
            errs.append("the aggregators may not reach the agents' gRPC port: %s" % egress)
    return errs


def expect_source_auth(docs, role):
    """sourceAuth: --source-auth names both profiles with the mounted files;
    a projected token (audience, expiry) and the Secret (0440), read-only;
    the metrics-reader ClusterRole bound to the scaler's service account."""
    errs = []
    found = scaler_args(docs, role)
    if not found:
        return ["no %s scaler" % role]
    (w, c, args), = found
    d = "/var/run/secrets/kgs/source-auth"
    want = ("epp:token-file=%s/epp/token/token,namespaces=llm|chat,hosts=epp.llm.svc|*.gw.svc,"
            "pods=own-namespace,http=allow;"
            "vault:ca-file=%s/vault/tls/ca.crt,cert-file=%s/vault/tls/tls.crt,"
            "key-file=%s/vault/tls/tls.key,namespaces=*,cidrs=10.20.0.0/16" % (d, d, d, d))
    if arg_value(args, "--source-auth") != want:
        errs.append("--source-auth is %r, not %r" % (arg_value(args, "--source-auth"), want))
    vols = {v["name"]: v for v in pod_spec(w).get("volumes") or []}
    tok = (((vols.get("source-auth-0-token") or {}).get("projected") or {}).get("sources") or [{}])[0]
    if tok.get("serviceAccountToken") != {"path": "token", "expirationSeconds": 7200,
                                          "audience": "epp-metrics"}:
        errs.append("source-auth-0-token is not the projected token: %s" % vols.get("source-auth-0-token"))
    sec = (vols.get("source-auth-1-tls") or {}).get("secret") or {}
    if sec.get("secretName") != "vault-metrics-client" or sec.get("defaultMode") != 0o440:
        errs.append("source-auth-1-tls is not Secret vault-metrics-client at 0440: %s" % sec)
    mounts = {m["name"]: m for m in c.get("volumeMounts") or []}
    for name, path in (("source-auth-0-token", d + "/epp/token"), ("source-auth-1-tls", d + "/vault/tls")):
        m = mounts.get(name)
        if not m or m.get("mountPath") != path or not m.get("readOnly"):
            errs.append("%s not mounted read-only at %s: %s" % (name, path, m))
    readers = [r for r in by_kind(docs, "ClusterRole") if r["metadata"]["name"].endswith("-metrics-reader")]
    if len(readers) != 1:
        errs.append("%d metrics-reader ClusterRoles, want 1" % len(readers))
    else:
        name = readers[0]["metadata"]["name"]
        binds = [b for b in by_kind(docs, "ClusterRoleBinding") if (b.get("roleRef") or {}).get("name") == name]
        sa = pod_spec(w).get("serviceAccountName")
        if not binds or not any(s.get("name") == sa for s in binds[0].get("subjects") or []):
            errs.append("metrics-reader not bound to the scaler's service account %s: %s" % (sa, binds))
    return errs


def expect_keda_mtls(docs, role):
    """tls.kedaClientAuth on (the default where cert-manager is present and
    the release is in KEDA's namespace): the link's own CA (a self-signed
    Issuer, a CA Certificate, its Issuer), the scaler's server certificate
    and KEDA's client certificate from it, the scaler requiring client
    certificates of that CA, and a ClusterTriggerAuthentication giving KEDA
    caCert, tlsClientCert and tlsClientKey from the client Secret."""
    errs = []
    found = scaler_args(docs, role)
    if not found:
        return ["no %s scaler" % role]
    (w, c, args), = found
    mount = "/etc/keda-gpu-scaler/tls"
    for flag, want in (("--tls-cert", mount + "/tls.crt"), ("--tls-key", mount + "/tls.key"),
                       ("--tls-client-ca", mount + "/ca.crt")):
        if arg_value(args, flag) != want:
            errs.append("%s is %r, not %r" % (flag, arg_value(args, flag), want))
    issuers = {i["metadata"]["name"]: i["spec"] for i in by_kind(docs, "Issuer")}
    if issuers.get("keda-gpu-scaler-selfsigned") != {"selfSigned": {}}:
        errs.append("no self-signed Issuer keda-gpu-scaler-selfsigned: %s" % issuers)
    if issuers.get("keda-gpu-scaler-ca") != {"ca": {"secretName": "keda-gpu-scaler-ca"}}:
        errs.append("no CA Issuer keda-gpu-scaler-ca on Secret keda-gpu-scaler-ca: %s" % issuers)
    certs = {x["metadata"]["name"]: x["spec"] for x in by_kind(docs, "Certificate")}
    ca = certs.get("keda-gpu-scaler-ca") or {}
    if not ca.get("isCA") or ca.get("issuerRef", {}).get("name") != "keda-gpu-scaler-selfsigned":
        errs.append("the CA Certificate is not a CA from the self-signed Issuer: %s" % ca)
    for name, secret, usage in (("keda-gpu-scaler", "keda-gpu-scaler-tls", "server auth"),
                                ("keda-gpu-scaler-keda-client", "keda-gpu-scaler-keda-client-tls",
                                 "client auth")):
        x = certs.get(name) or {}
        if x.get("secretName") != secret or usage not in (x.get("usages") or []) or \
                x.get("issuerRef", {}).get("name") != "keda-gpu-scaler-ca":
            errs.append("Certificate %s is not %s into %s from keda-gpu-scaler-ca: %s" % (name, usage, secret, x))
    if "keda-gpu-scaler.keda.svc" not in (certs.get("keda-gpu-scaler") or {}).get("dnsNames", []):
        errs.append("the server certificate lacks keda-gpu-scaler.keda.svc")
    vols = {v["name"]: v for v in pod_spec(w).get("volumes") or []}
    if (vols.get("tls", {}).get("secret") or {}).get("secretName") != "keda-gpu-scaler-tls":
        errs.append("the scaler does not mount Secret keda-gpu-scaler-tls: %s" % vols.get("tls"))
    ctas = by_kind(docs, "ClusterTriggerAuthentication")
    want = [{"parameter": p, "name": "keda-gpu-scaler-keda-client-tls", "key": k}
            for p, k in (("caCert", "ca.crt"), ("tlsClientCert", "tls.crt"), ("tlsClientKey", "tls.key"))]
    if len(ctas) != 1 or ctas[0]["metadata"]["name"] != "keda-gpu-scaler" or \
            ctas[0]["spec"].get("secretTargetRef") != want or "namespace" in ctas[0]["metadata"]:
        errs.append("ClusterTriggerAuthentication keda-gpu-scaler (cluster-scoped) with %s: %s" % (want, ctas))
    return errs


def expect_no_keda_mtls(docs):
    """cert-manager present but the release outside KEDA's namespace (KEDA
    could not read the client Secret): no mTLS objects, no TLS flags."""
    errs = []
    for kind in ("Issuer", "Certificate", "ClusterTriggerAuthentication"):
        if by_kind(docs, kind):
            errs.append("%s rendered though the release is not in KEDA's namespace" % kind)
    (w, c, args), = scaler_args(docs, "aggregator") or [(None, None, [])]
    if arg_value(args, "--tls-cert") is not None or arg_value(args, "--tls-client-ca") is not None:
        errs.append("the aggregator has TLS flags: %s" % args)
    return errs


def expect_agent_tls(docs, agent_secret, agg_secret, cert_manager):
    """agentTLS: agents serve TLS requiring the aggregators' client
    certificates; aggregators dial with theirs and check the agents' name;
    both Secrets mounted 0440; with cert-manager, two Certificates."""
    errs = expect_common_cluster(docs)
    (aw, ac, aargs), = scaler_args(docs, "agent") or [(None, None, [])]
    (gw, gc, gargs), = scaler_args(docs, "aggregator") or [(None, None, [])]
    if aw is None or gw is None:
        return errs + ["no agent or no aggregator"]
    mount = "/etc/keda-gpu-scaler/agent-tls"
    want_agent = {"--tls-cert": mount + "/tls.crt", "--tls-key": mount + "/tls.key",
                  "--tls-client-ca": mount + "/ca.crt"}
    want_agg = {"--agents-tls-ca": mount + "/ca.crt", "--agents-tls-cert": mount + "/tls.crt",
                "--agents-tls-key": mount + "/tls.key",
                "--agents-tls-server-name": "keda-gpu-scaler-agents.keda-gpu-scaler.svc"}
    for flag, v in want_agent.items():
        if arg_value(aargs, flag) != v:
            errs.append("agent %s is %r, not %r" % (flag, arg_value(aargs, flag), v))
    for flag, v in want_agg.items():
        if arg_value(gargs, flag) != v:
            errs.append("aggregator %s is %r, not %r" % (flag, arg_value(gargs, flag), v))
    if arg_value(gargs, "--tls-cert") is not None:
        errs.append("agentTLS turned on the KEDA-facing TLS too: %s" % gargs)
    for w, c, secret in ((aw, ac, agent_secret), (gw, gc, agg_secret)):
        vols = {v["name"]: v for v in pod_spec(w).get("volumes") or []}
        v = vols.get("agent-tls")
        if not v or (v.get("secret") or {}).get("secretName") != secret:
            errs.append("%s: no agent-tls volume of Secret %s: %s" % (ident(w), secret, vols))
        elif v["secret"].get("defaultMode") != 0o440:
            errs.append("%s: agent-tls mounted with mode %o, not 0440" % (ident(w), v["secret"].get("defaultMode")))
        if not any(m.get("name") == "agent-tls" and m.get("mountPath") == mount and m.get("readOnly")
                   for m in c.get("volumeMounts") or []):
            errs.append("%s: agent-tls not mounted read-only at %s" % (ident(w), mount))
    certs = {c["spec"]["secretName"]: c["spec"] for c in by_kind(docs, "Certificate")}
    if not cert_manager:
        if certs:
            errs.append("Certificates rendered for user Secrets: %s" % sorted(certs))
        return errs
    a, g = certs.get(agent_secret), certs.get(agg_secret)
    if not a or "server auth" not in a.get("usages", []) or \
            want_agg["--agents-tls-server-name"] not in (a.get("dnsNames") or []):
        errs.append("no agent Certificate for server auth on %s: %s" % (want_agg["--agents-tls-server-name"], a))
    if not g or g.get("usages") != ["digital signature", "client auth"]:
        errs.append("no aggregator Certificate for client auth only: %s" % g)
    for c in (a, g):
        if c and (c.get("issuerRef") or {}).get("name") != "agents-ca":
            errs.append("Certificate issuerRef %s" % c.get("issuerRef"))
    return errs


def expect_standalone_tls(docs):
    errs = expect_standalone(docs)
    sa = scaler_args(docs, "standalone")
    if sa:
        w, c, args = sa[0]
        if arg_value(args, "--tls-cert") is None or arg_value(args, "--tls-client-ca") is not None:
            errs.append("standalone TLS flags: %s" % args)
        if not any((v.get("secret") or {}).get("secretName") == "my-scaler-tls" for v in pod_spec(w).get("volumes") or []):
            errs.append("standalone pods do not mount my-scaler-tls")
    if by_kind(docs, "Certificate"):
        errs.append("a Certificate rendered though cert-manager is off")
    errs += expect_network_policies(docs, cluster=False)
    return errs


def expect_minimal(docs):
    errs = expect_common_cluster(docs)
    for w, c, args in scaler_args(docs, "agent") + scaler_args(docs, "aggregator"):
        if arg_value(args, "--metrics-port") != "0" or arg_value(args, "--probe-port") != "0":
            errs.append("%s: metrics/probes not disabled: %s" % (ident(w), args))
        if c.get("livenessProbe") or c.get("readinessProbe"):
            errs.append("%s: probes rendered though disabled" % ident(w))
        if not c.get("image", "").endswith(":0.1.0-rc1"):
            errs.append("%s: image.tag not used: %s" % (ident(w), c.get("image")))
        if w["metadata"]["name"].startswith("keda-gpu-scaler"):
            errs.append("%s: fullnameOverride not used" % ident(w))
    (agent, _, _), = scaler_args(docs, "agent") or [(None, None, None)]
    if agent and pod_spec(agent)["securityContext"].get("runAsUser") != 65532:
        errs.append("agent.runAsRoot=false still runs the agent as %s" % pod_spec(agent)["securityContext"])
    (agg, _, _), = scaler_args(docs, "aggregator") or [(None, None, None)]
    if agg:
        if agg["spec"].get("replicas") != 3:
            errs.append("aggregator.replicaCount=3 not used")
        if "requiredDuringSchedulingIgnoredDuringExecution" not in pod_spec(agg)["affinity"]["podAntiAffinity"]:
            errs.append("podAntiAffinity=hard not used")
    keda = [s for s in by_kind(docs, "Service") if s["metadata"]["name"] == "gpu-scaler"]
    if not keda or keda[0]["spec"].get("clusterIP") == "None" or keda[0]["spec"]["ports"][0]["port"] != 7000:
        errs.append("service.headless=false/service.port=7000 not used: %s" % keda)
    for s in by_kind(docs, "Service"):
        if any(p.get("name") == "metrics" for p in s["spec"]["ports"]):
            errs.append("%s: metrics port though metrics are disabled" % ident(s))
    return errs


def expect_sharing_attribution(docs):
    errs = expect_common_cluster(docs)
    (agent, _, args), = scaler_args(docs, "agent") or [(None, None, None)]
    if not agent or pod_spec(agent).get("hostPID") is not True:
        errs.append("agent.gpuSharingAttribution=true: the agent is not in the host PID namespace")
    elif arg_value(args, "--proc-root") != "/proc":
        errs.append("agent.gpuSharingAttribution=true: no --proc-root=/proc: %s" % args)
    for w, _, _ in scaler_args(docs, "aggregator"):
        if pod_spec(w).get("hostPID"):
            errs.append("%s: hostPID on the aggregator" % ident(w))
    return errs


def expect_amd_nodes(docs, role):
    """values-amd.yaml: the node pods go to AMD nodes, read the GPUs with the
    amdgpu sysfs reader, run without the NVIDIA runtime or any privilege,
    and (the agent) see the host's processes for per-process use. The
    NVIDIA defaults expect_common_cluster checks are replaced, not kept."""
    errs = []
    found = scaler_args(docs, role)
    if not found:
        return ["no %s scaler" % role]
    (w, c, args), = found
    spec = pod_spec(w)
    if arg_value(args, "--gpu-backend") != "amdgpu-sysfs":
        errs.append("%s: no --gpu-backend=amdgpu-sysfs: %s" % (ident(w), args))
    if spec.get("nodeSelector") != {"feature.node.kubernetes.io/amd-gpu": "true"}:
        errs.append("%s: nodeSelector is %s, not the AMD GPU label" % (ident(w), spec.get("nodeSelector")))
    if spec.get("runtimeClassName"):
        errs.append("%s: runtimeClassName %s on an AMD node" % (ident(w), spec["runtimeClassName"]))
    if role == "agent" and (spec.get("hostPID") is not True or arg_value(args, "--proc-root") != "/proc"):
        errs.append("%s: per-process use needs hostPID and --proc-root=/proc" % ident(w))
    tol = spec.get("tolerations") or []
    if any(t.get("key") == "nvidia.com/gpu" for t in tol) or not any(t.get("key") == "amd.com/gpu" for t in tol):
        errs.append("%s: tolerations %s are not the AMD ones" % (ident(w), tol))
    sc = c.get("securityContext") or {}
    if sc.get("privileged") or (sc.get("capabilities") or {}).get("add"):
        errs.append("%s: privilege on an AMD node: %s" % (ident(w), sc))
    if any(v.get("hostPath", {}).get("path", "").startswith("/dev") for v in spec.get("volumes") or []):
        errs.append("%s: device nodes mounted" % ident(w))
    for other in ("aggregator",) if role == "agent" else ():
        for ow, oc, oargs in scaler_args(docs, other):
            if arg_value(oargs, "--gpu-backend") is not None:
                errs.append("%s: --gpu-backend on the %s" % (ident(ow), other))
    return errs


def expect_grpc_probes(docs):
    errs = expect_common_cluster(docs)
    for w, c, args in scaler_args(docs, "agent") + scaler_args(docs, "aggregator"):
        if "grpc" not in (c.get("readinessProbe") or {}):
            errs.append("%s: readiness is not a gRPC probe" % ident(w))
        if "httpGet" not in (c.get("livenessProbe") or {}):
            errs.append("%s: liveness should stay /healthz" % ident(w))
    if by_kind(docs, "PodDisruptionBudget"):
        errs.append("a PodDisruptionBudget with one replica would block every drain")
    (agent, _, _), = scaler_args(docs, "agent") or [(None, None, None)]
    if agent and pod_spec(agent)["nodeSelector"].get("node.kubernetes.io/instance-type") != "p5.48xlarge":
        errs.append("--set with an escaped dot did not reach nodeSelector: %s" % pod_spec(agent)["nodeSelector"])
    return errs


def check_notes(docs, notes):
    """NOTES must give the scalerAddress of the Service in front of the pods KEDA talks to."""
    errs = []
    keda_pods = [w for w, _, _ in scaler_args(docs, "aggregator")] or [w for w, _, _ in scaler_args(docs, "standalone")]
    svcs = [s for s in by_kind(docs, "Service") if any(matches(s["spec"].get("selector"), pod_labels(w))
                                                       for w in keda_pods)]
    if not svcs:
        return ["no Service in front of the pods KEDA talks to"]
    s = svcs[0]
    grpc = [p for p in s["spec"]["ports"] if p.get("name") == "grpc"][0]
    port = grpc["port"]
    if s["spec"].get("clusterIP") == "None":
        # Headless: KEDA dials the container port itself.
        port = [cp["containerPort"] for w in keda_pods for c in containers(w) for cp in c.get("ports") or []
                if cp.get("name") == grpc.get("targetPort")][0]
    addr = "%s.%s.svc.cluster.local:%s" % (s["metadata"]["name"], s["metadata"]["namespace"], port)
    if "scalerAddress: " + addr not in notes:
        errs.append("NOTES does not give scalerAddress: %s:\n%s" % (addr, notes))
    return errs


def normalise(obj):
    obj = copy.deepcopy(obj)
    for m in (obj.get("metadata"), pod_template(obj).get("metadata") if obj.get("spec") else None):
        if isinstance(m, dict) and isinstance(m.get("labels"), dict):
            for k in HELM_ONLY_LABELS:
                m["labels"].pop(k, None)
    return obj


def compare_to_chart(kdocs, cdocs):
    """kustomize output == the chart's render, but for Helm's labels and the Namespace object."""
    errs = []
    k = {ident(d): normalise(d) for d in kdocs if d.get("kind") != "Namespace"}
    c = {ident(d): normalise(d) for d in cdocs}
    for key in sorted(set(k) | set(c)):
        if key not in k:
            errs.append("%s: in the chart, not in the manifests" % key)
        elif key not in c:
            errs.append("%s: in the manifests, not in the chart" % key)
        elif k[key] != c[key]:
            a = yaml.safe_dump(k[key], sort_keys=True).splitlines()
            b = yaml.safe_dump(c[key], sort_keys=True).splitlines()

            diff = "\n".join(difflib.unified_diff(b, a, "chart", "manifests", lineterm="", n=1))
            errs.append("%s differs:\n%s" % (key, diff))
    if not any(d.get("kind") == "Namespace" for d in kdocs):
        errs.append("the manifests create no Namespace")
    return errs


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("suite")
    s.add_argument("--render", required=True, help="the Go render harness")
    s.add_argument("--source-dir", required=True)
    s.add_argument("--project-version", default="")
    c = sub.add_parser("check")
    c.add_argument("file")
    c.add_argument("--external-secret", action="append", default=[],
                   help="a Secret the user provides (named by a values key)")
    opts = ap.parse_args()
    if opts.cmd == "check":
        text = sys.stdin.read() if opts.file == "-" else open(opts.file).read()
        errs = check_objects(load_docs(text), opts.external_secret)
        for e in errs:
            print(e)
        return 1 if errs else 0
    return Suite(opts).run()


if __name__ == "__main__":
    sys.exit(main())
