#!/usr/bin/env python3
"""A fake Kubernetes API server for pods, nodes and DRA ResourceSlices
(resource.k8s.io/v1): list (with paging), watch (a chunked stream of
events), field selectors where the real API has them (ResourceSlices:
spec.nodeName, spec.driver, metadata.name; any other label is a 400 as
there), 410 Gone after a simulated compaction, 403 for a resource the
test forbids (RBAC), and bearer-token checks, speaking the JSON shapes of
the real kube-apiserver.

As a library (tests):

    api = FakeKubeAPI(token="t1"); api.start()
    uid = api.add_pod("inference", "vllm-0", labels={"app": "vllm"})
    api.modify_pod(uid, phase="Running", node="gpu-1", pod_ip="10.244.0.5")
    api.set_pod_status(uid, {"phase": "Pending", "conditions": [...]}, node="gpu-1")
    api.delete_pod(uid); api.break_watches(); api.compact(); api.stop()
    sid = api.add_resource_slice("node-a-gpu", "gpu.nvidia.com", "node-a", node="node-a",
                                 devices=[("gpu-0", "GPU-..."), ("gpu-1-mig-9-4-4", "MIG-...")])
    api.forbid("ResourceSlice")   # lists and watches of it answer 403
    api.watch_mode = "gone_event"   # misbehaving watches, see WATCH_MODES
    api.list_mode = "endless_continue"  # every list page has a continue token

A watch that asks for bookmarks gets one every `bookmark_period` seconds
(60, as kube-apiserver sends them: kubernetes/kubernetes
staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go, defaultBookmarkFrequency =
time.Minute, "in addition to sending a bookmark right before watch deadline"), besides those
bookmark() sends.

Standalone: python3 fake_kube_api.py --port P --token T, with a control API
on the same port (no token needed): POST /_control/<op> with a JSON body,
op one of add, modify, delete, bookmark, break, compact, tokens, gone_mode,
watch_mode, list_mode.

Loopback only; plain HTTP (TLS is tested elsewhere). Every wait is bounded.
"""
import argparse
import json
import random
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


# Misbehaving watches (FakeKubeAPI.watch_mode), each whatever the
# resourceVersion asked for: "gone_event": 200, an ERROR event with code 410,
# the end; "gone_http": HTTP 410; "bookmark_close": 200, one BOOKMARK, the
# end; "silent": 200 and then nothing (the socket stays open until stop(),
# break_watches() or timeoutSeconds). "normal": the real API's behaviour.
WATCH_MODES = ("normal", "gone_event", "gone_http", "bookmark_close", "silent")
# "endless_continue": every list page is `limit` made-up items with a new
# continue token, so the chain never ends.
LIST_MODES = ("normal", "endless_continue")


def status_object(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class FakeKubeAPI:
    def __init__(self, token="token-1", host="127.0.0.1", port=0, seed=1, tls=None):
        self.cond = threading.Condition()
        self.rv = 1000
        self.pods = {}          # uid -> pod object
        self.history = []       # (rv, type, pod object copy)
        self.compacted_rv = 0   # a watch from an older RV gets 410
        self.tokens = {token} if token else set()
        self.requests = []      # dicts: kind, query, token, status
        self.break_gen = 0
        self.gone_mode = "event"  # "event": 200 + ERROR event 410; "http": HTTP 410
        self.watch_mode = "normal"  # see WATCH_MODES
        self.list_mode = "normal"   # see LIST_MODES
        self.bookmark_period = 60.0
        self.snapshots = {}     # continue token -> (rv, items, offset)
        self.forbidden = set()  # object kinds answered 403 (RBAC missing)
        self.stopping = False
        self.rng = random.Random(seed)
        self.host = host
        api = self

        class Handler(FakeKubeHandler):
            pass
        Handler.api = api
        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.scheme = "http"
        if tls:  # (cert, key): HTTPS with ALPN http/1.1, like kube-apiserver
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            ctx.set_alpn_protocols(["http/1.1"])
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
            self.scheme = "https"
        self.thread = None

    # ---- lifecycle ----
    @property
    def url(self):
        return "%s://%s:%d" % (self.scheme, self.host, self.port)

    def start(self):
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()

    # ---- state changes (each bumps the resourceVersion) ----
    def _bump(self, typ, pod):
        self.rv += 1
        if pod is not None:
            pod["metadata"]["resourceVersion"] = str(self.rv)
            self.history.append((self.rv, typ, json.loads(json.dumps(pod))))
        self.cond.notify_all()

    def add_pod(self, namespace, name, labels=None, node="", phase="Pending", pod_ip="",
                uid=None, ready=None, created=None, gpus="1", claims=0, started=None,
                gpu_resource="nvidia.com/gpu"):
        """ready: the Ready condition; None = True exactly when phase is Running.
        created: creationTimestamp as seconds since 1970 (default 2026-11-29T10:00:00Z).
        gpus: the container's nvidia.com/gpu limit and request (a quantity string; None
        for a pod asking for no GPU), under gpu_resource ("amd.com/gpu" for AMD's
        device plugin); claims: how many DRA resource claims it has.
        started: status.startTime as seconds since 1970; by default the moment it is
        Running (as the kubelet writes it), absent before."""
        uid = uid or str(uuid.UUID(int=self.rng.getrandbits(128)))
        pod = {
            "kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": name, "namespace": namespace, "uid": uid,
                         "resourceVersion": "0",
                         "creationTimestamp": (
                             time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created))
                             if created is not None else "2026-11-29T10:00:00Z"),
                         "labels": dict(labels or {}),
                         "managedFields": [{"manager": "kubectl", "operation": "Update"}]},
            "spec": {"containers": [{"name": "main", "image": "vllm/vllm-openai:v0.6.3",
                                     "resources": {"limits": {"cpu": "4"}}}]},
            "status": {"phase": phase, "qosClass": "Burstable"},
        }
        res = pod["spec"]["containers"][0]["resources"]
        if gpus is not None:
            res["limits"][gpu_resource] = gpus
            res["requests"] = {gpu_resource: gpus}
        if claims:
            pod["spec"]["resourceClaims"] = [
                {"name": "gpu-%d" % i, "resourceClaimTemplateName": "single-gpu"}
                for i in range(claims)]
            res["claims"] = [{"name": "gpu-%d" % i} for i in range(claims)]
        if started is None and phase == "Running":
            started = time.time()
        if started is not None:
            pod["status"]["startTime"] = time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                       time.gmtime(started))
        if node:
            pod["spec"]["nodeName"] = node
        if pod_ip:
            pod["status"]["podIP"] = pod_ip
            pod["status"]["podIPs"] = [{"ip": pod_ip}]
        if ready is None:
            ready = phase == "Running"
        pod["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "True" if ready else "False"}]
        with self.cond:
            self.pods[uid] = pod
            self._bump("ADDED", pod)
        return uid

    def add_filler_pods(self, count, nodes, gpu_every=10):
        """count Running pods of other tenants, for a cluster-sized pod list: namespaces
        team-0 .. team-39, four labels (app, app.kubernetes.io/name, pod-template-hash,
        tier), a pod IP, spread round-robin over nodes (a list of node names); one in
        gpu_every asks for one nvidia.com/gpu, the rest for none (0: none does).
        Returns the uids."""
        if not nodes:
            raise ValueError("add_filler_pods: nodes is empty: give the node names the "
                             "pods run on")
        uids = []
        for i in range(count):
            app = "svc-%d" % (i % 200)
            uids.append(self.add_pod(
                "team-%d" % (i % 40), "%s-7d9f8c6b5-f%05d" % (app, i),
                labels={"app": app, "app.kubernetes.io/name": app,
                        "pod-template-hash": "7d9f8c6b5", "tier": "filler"},
                node=nodes[i % len(nodes)], phase="Running",
                pod_ip="10.%d.%d.%d" % (128 + ((i >> 16) & 127), (i >> 8) & 255, i & 255),
                gpus="1" if gpu_every and i % gpu_every == 0 else None))
        return uids

    def modify_pod(self, uid, phase=None, node=None, pod_ip=None, labels=None, deleting=None,
                   ready=None):
        with self.cond:
            pod = self.pods[uid]
            if ready is not None:
                pod["status"]["conditions"] = [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Ready", "status": "True" if ready else "False"}]
            if phase is not None:
                pod["status"]["phase"] = phase
                if phase == "Running" and "startTime" not in pod["status"]:
                    pod["status"]["startTime"] = time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                               time.gmtime())
            if node is not None:
                pod["spec"]["nodeName"] = node
            if pod_ip is not None:
                pod["status"]["podIP"] = pod_ip
            if labels is not None:
                pod["metadata"]["labels"] = dict(labels)
            if deleting:
                pod["metadata"]["deletionTimestamp"] = "2026-11-29T11:00:30Z"
                pod["metadata"]["deletionGracePeriodSeconds"] = 30
            self._bump("MODIFIED", pod)

    def set_pod_status(self, uid, status, node=None):
        """Replaces the pod's whole status (a v1 PodStatus as the scheduler and
        the kubelet write it: conditions, containerStatuses, ...) and, given
        node, its spec.nodeName: a test walks a pod through its start."""
        with self.cond:
            pod = self.pods[uid]
            pod["status"] = json.loads(json.dumps(status))
            if node is not None:
                pod["spec"]["nodeName"] = node
            self._bump("MODIFIED", pod)

    def add_node(self, name, labels=None):
        """A Node object (cluster-scoped): what nodeSelector label selectors read."""
        uid = str(uuid.UUID(int=self.rng.getrandbits(128)))
        node = {
            "kind": "Node", "apiVersion": "v1",
            "metadata": {"name": name, "uid": uid, "resourceVersion": "0",
                         "creationTimestamp": "2026-11-29T09:00:00Z",
                         "labels": dict(labels or {})},
            "spec": {"podCIDR": "10.244.1.0/24"},
            "status": {"capacity": {"cpu": "64", "nvidia.com/gpu": "8"},
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "images": [{"names": ["vllm/vllm-openai:v0.6.3"],
                                   "sizeBytes": 9123456789}]},
        }
        with self.cond:
            self.pods[uid] = node
            self._bump("ADDED", node)
        return uid

    def relabel_node(self, uid, labels):
        with self.cond:
            node = self.pods[uid]
            node["metadata"]["labels"] = dict(labels)
            self._bump("MODIFIED", node)

    def add_resource_slice(self, name, driver, pool, node="", devices=(), generation=1):
        """A ResourceSlice as NVIDIA's DRA driver publishes it: devices are
        (name, uuid) pairs, uuid None for a device without one, or a dict: the
        device's attributes as another driver writes them. Returns its uid."""
        uid = str(uuid.UUID(int=self.rng.getrandbits(128)))
        sl = {"kind": "ResourceSlice", "apiVersion": "resource.k8s.io/v1",
              "metadata": {"name": name, "uid": uid, "resourceVersion": "0",
                           "creationTimestamp": "2026-11-29T09:00:00Z",
                           "generateName": node + "-" + driver + "-"},
              "spec": {"driver": driver,
                       "pool": {"name": pool, "generation": generation,
                                "resourceSliceCount": 1},
                       "devices": self._slice_devices(devices)}}
        if node:
            sl["spec"]["nodeName"] = node
        else:
            sl["spec"]["allNodes"] = True
        with self.cond:
            self.pods[uid] = sl
            self._bump("ADDED", sl)
        return uid

    @staticmethod
    def _slice_devices(devices):
        out = []
        for name, u in devices:
            if isinstance(u, dict):  # another driver's attributes, as they are
                out.append({"name": name, "attributes": u})
                continue
            attrs = {"type": {"string": "mig" if "-mig-" in name else "gpu"},
                     "productName": {"string": "NVIDIA H100 80GB HBM3"},
                     "driverVersion": {"version": "560.35.3"}}
            if u is not None:
                attrs["uuid"] = {"string": u}
            out.append({"name": name, "attributes": attrs,
                        "capacity": {"memory": {"value": "80Gi"}}})
        return out

    def modify_resource_slice(self, uid, devices, generation=None):
        with self.cond:
            sl = self.pods[uid]
            sl["spec"]["devices"] = self._slice_devices(devices)
            if generation is not None:
                sl["spec"]["pool"]["generation"] = generation
            self._bump("MODIFIED", sl)

    def forbid(self, *kinds):
        """Lists and watches of these object kinds answer 403, as without RBAC."""
        with self.cond:
            self.forbidden = set(kinds)

    def delete_pod(self, uid):
        with self.cond:
            pod = self.pods.pop(uid)
            self._bump("DELETED", pod)

    def advance_rv(self, n=1):
        """Other resources changed: the RV moves on, no pod event."""
        with self.cond:
            self.rv += n

    def bookmark(self):
        """Every open watch gets a BOOKMARK at the current resourceVersion."""
        with self.cond:
            self.history.append((self.rv, "BOOKMARK", None))
            self.cond.notify_all()

    def break_watches(self):
        """Every open watch is cut (connection closed without a final chunk)."""
        with self.cond:
            self.break_gen += 1
            self.cond.notify_all()

    def compact(self):
        """History up to now is gone: a watch or continue from an older RV gets 410."""
        with self.cond:
            self.compacted_rv = self.rv
            self.history = []

    def set_tokens(self, *tokens):
        with self.cond:
            self.tokens = set(tokens)

    # ---- observation ----
    def requests_of(self, kind):
        with self.cond:
            return [r for r in self.requests if r["kind"] == kind]

    def wait_for(self, pred, timeout=10.0):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not pred(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("fake kube API: condition not met in %.1fs" % timeout)
                self.cond.wait(min(left, 0.1))

    def _log(self, **kw):
        with self.cond:
            self.requests.append(kw)
            self.cond.notify_all()


class FakeKubeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    api = None  # set per server

    def log_message(self, fmt, *args):
        pass

    def _json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def do_POST(self):
        api = self.api
        parts = urlsplit(self.path)
        if not parts.path.startswith("/_control/"):
            return self._json(404, status_object(404, "NotFound", "not found"))
        op = parts.path[len("/_control/"):]
        n = int(self.headers.get("Content-Length") or 0)
        arg = json.loads(self.rfile.read(n) or b"{}")
        result = None
        if op == "add":
            result = api.add_pod(**arg)
        elif op == "modify":
            api.modify_pod(**arg)
        elif op == "delete":
            api.delete_pod(**arg)
        elif op == "bookmark":
            api.bookmark()
        elif op == "break":
            api.break_watches()
        elif op == "compact":
            api.compact()
        elif op == "tokens":
            api.set_tokens(*arg["tokens"])
        elif op == "gone_mode":
            api.gone_mode = arg["mode"]
        elif op == "watch_mode" and arg.get("mode") in WATCH_MODES:
            api.watch_mode = arg["mode"]
        elif op == "list_mode" and arg.get("mode") in LIST_MODES:
            api.list_mode = arg["mode"]
        else:
            return self._json(404, status_object(404, "NotFound", "unknown op " + op))
        self._json(200, {"result": result})

    def do_GET(self):
        api = self.api
        parts = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        auth = self.headers.get("Authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
        kind = "watch" if q.get("watch") in ("1", "true") else "list"
        kinds = {"/api/v1/pods": "Pod", "/api/v1/nodes": "Node",
                 "/apis/resource.k8s.io/v1/resourceslices": "ResourceSlice"}
        if parts.path not in kinds:
            api._log(kind="other", query=q, token=token, status=404, path=parts.path)
            return self._json(404, status_object(404, "NotFound", "the server could not find "
                                                 "the requested resource"))
        with api.cond:
            ok = token in api.tokens
        if not ok:
            api._log(kind=kind, query=q, token=token, status=401)
            return self._json(401, status_object(401, "Unauthorized", "Unauthorized"))
        obj_kind = kinds[parts.path]
        with api.cond:
            forbidden = obj_kind in api.forbidden
        if forbidden:
            api._log(kind=kind, query=q, token=token, status=403, obj=obj_kind)
            plural = parts.path.rsplit("/", 1)[1]
            group = "resource.k8s.io" if obj_kind == "ResourceSlice" else ""
            return self._json(403, status_object(
                403, "Forbidden", '%s is forbidden: User "system:serviceaccount:kgs:aggregator" '
                'cannot %s resource "%s" in API group "%s" at the cluster scope'
                % (plural, kind, plural, group)))
        sel = q.get("fieldSelector")
        if sel is not None:
            try:
                q["_fields"] = parse_field_selector(sel, obj_kind)
            except ValueError as e:
                api._log(kind=kind, query=q, token=token, status=400)
                return self._json(400, status_object(400, "BadRequest", str(e)))
        if kind == "watch":
            return self._watch(q, token, kinds[parts.path])
        return self._list(q, token, kinds[parts.path])

    def _endless_page(self, q, token, obj_kind, limit):
        """list_mode "endless_continue": limit made-up items and a continue token."""
        api = self.api
        with api.cond:
            n = api.endless_served = getattr(api, "endless_served", 0) + 1
            rv = api.rv
            api.requests.append(dict(kind="list", query=q, token=token, status=200,
                                     obj=obj_kind, endless=True))
            api.cond.notify_all()
        items = []
        for i in range(limit or 500):
            items.append({"kind": obj_kind, "apiVersion": "v1",
                          "metadata": {"name": "endless-%d-%d" % (n, i), "namespace": "flood",
                                       "uid": "00000000-0000-4000-8000-%012d" % (n * 100000 + i),
                                       "resourceVersion": str(rv),
                                       "labels": {"app": "flood"}},
                          "spec": {"nodeName": "node-a"}, "status": {"phase": "Running"}})
        meta = {"resourceVersion": str(rv), "continue": "endless-%d" % n,
                "remainingItemCount": 1000000}
        self._json(200, {"kind": obj_kind + "List", "apiVersion": "v1", "metadata": meta,
                         "items": items})

    def _list(self, q, token, obj_kind="Pod"):
        api = self.api
        limit = int(q.get("limit", "0") or 0)
        cont = q.get("continue")
        if api.list_mode == "endless_continue":
            return self._endless_page(q, token, obj_kind, limit)
        with api.cond:
            if cont:
                snap = api.snapshots.get(cont)
                if snap is None or snap[0] < api.compacted_rv:
                    api.requests.append(dict(kind="list", query=q, token=token, status=410))
                    api.cond.notify_all()
                    return self._json(410, status_object(
                        410, "Expired", "The provided continue parameter is too old to display "
                        "a consistent list result. You can start a new list without the continue "
                        "parameter."))
                rv, items, offset = snap
            else:
                rv = api.rv
                items = sorted((json.loads(json.dumps(p)) for p in api.pods.values()
                                if p.get("kind", "Pod") == obj_kind
                                and fields_match(p, q.get("_fields"))),
                               key=lambda p: (p["metadata"].get("namespace", ""),
                                              p["metadata"]["name"]))
                offset = 0
            page = items[offset:offset + limit] if limit else items[offset:]
            meta = {"resourceVersion": str(rv)}
            nxt = offset + len(page)
            if limit and nxt < len(items):
                token_c = "c%d-%d-%d" % (rv, nxt, api.rng.getrandbits(32))
                api.snapshots[token_c] = (rv, items, nxt)
                meta["continue"] = token_c
                meta["remainingItemCount"] = len(items) - nxt
            api.requests.append(dict(kind="list", query=q, token=token, status=200,
                                     obj=obj_kind))
            api.cond.notify_all()
        self._json(200, {"kind": obj_kind + "List",
                         "apiVersion": "resource.k8s.io/v1" if obj_kind == "ResourceSlice"
                         else "v1", "metadata": meta, "items": page})

    def _chunks(self, data):
        """Writes data as chunks of random sizes, so lines straddle chunks."""
        api = self.api
        pos = 0
        while pos < len(data):
            n = api.rng.randint(1, 300)
            piece = data[pos:pos + n]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            pos += n
        self.wfile.flush()

    def _watch(self, q, token, obj_kind="Pod"):
        api = self.api
        try:
            since = int(q.get("resourceVersion", "0") or 0)
        except ValueError:
            since = -1
        timeout_s = int(q.get("timeoutSeconds", "300") or 300)
        bookmarks = q.get("allowWatchBookmarks") == "true"
        if api.watch_mode != "normal":
            return self._misbehave(q, token, api.watch_mode, timeout_s)
        with api.cond:
            gone = since < api.compacted_rv
            if gone and api.gone_mode == "http":
                api.requests.append(dict(kind="watch", query=q, token=token, status=410))
                api.cond.notify_all()
                return self._json(410, status_object(
                    410, "Expired", "too old resource version: %d (%d)" % (since,
                                                                          api.compacted_rv)))
            api.requests.append(dict(kind="watch", query=q, token=token, status=200))
            api.cond.notify_all()
            gen = api.break_gen
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        if gone:
            ev = {"type": "ERROR", "object": status_object(
                410, "Expired", "too old resource version: %d (%d)" % (since, api.compacted_rv))}
            self._chunks(json.dumps(ev).encode() + b"\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        sent_upto = since
        # History entries are appended in RV order; bookmarks repeat the current RV,
        # so track an index once past `since`.
        with api.cond:
            idx = 0
            while idx < len(api.history) and api.history[idx][0] <= since:
                idx += 1
        deadline = time.monotonic() + timeout_s
        next_bookmark = time.monotonic() + api.bookmark_period
        try:
            while True:
                with api.cond:
                    while (idx >= len(api.history) and api.break_gen == gen
                           and not api.stopping and time.monotonic() < deadline
                           and not (bookmarks and time.monotonic() >= next_bookmark)):
                        api.cond.wait(min(0.2, max(0.0, deadline - time.monotonic())))
                    if api.break_gen != gen or api.stopping:
                        return  # cut: no terminal chunk
                    batch = api.history[idx:]
                    idx = len(api.history)
                    if bookmarks and time.monotonic() >= next_bookmark:
                        # the periodic bookmark, at the RV of everything in batch
                        batch = batch + [(api.rv, "BOOKMARK", None)]
                        next_bookmark = time.monotonic() + api.bookmark_period
                    ended = time.monotonic() >= deadline and not batch
                if ended:
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    return
                out = b""
                for rv, typ, pod in batch:
                    if typ == "BOOKMARK":
                        if not bookmarks:
                            continue
                        obj = {"kind": "Pod", "apiVersion": "v1",
                               "metadata": {"resourceVersion": str(rv),
                                            "creationTimestamp": None},
                               "spec": {"containers": None}, "status": {}}
                    else:
                        if rv <= sent_upto or pod.get("kind", "Pod") != obj_kind:
                            continue
                        if not fields_match(pod, q.get("_fields")):
                            continue
                        obj = pod
                        sent_upto = rv
                    out += json.dumps({"type": typ, "object": obj}).encode() + b"\n"
                if out:
                    self._chunks(out)
        except (BrokenPipeError, ConnectionResetError):
            return


    def _misbehave(self, q, token, mode, timeout_s):
        """A watch answered as WATCH_MODES says (not as the real API would)."""
        api = self.api
        with api.cond:
            api.requests.append(dict(kind="watch", query=q, token=token,
                                     status=410 if mode == "gone_http" else 200, mode=mode))
            api.cond.notify_all()
            gen = api.break_gen
            rv = api.rv
        if mode == "gone_http":
            return self._json(410, status_object(410, "Expired", "too old resource version"))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        try:
            if mode == "gone_event":
                ev = {"type": "ERROR", "object": status_object(
                    410, "Expired", "too old resource version: %s (%d)"
                    % (q.get("resourceVersion"), rv))}
                self._chunks(json.dumps(ev).encode() + b"\n")
            elif mode == "bookmark_close":
                ev = {"type": "BOOKMARK", "object": {
                    "kind": "Pod", "apiVersion": "v1",
                    "metadata": {"resourceVersion": str(rv), "creationTimestamp": None},
                    "spec": {"containers": None}, "status": {}}}
                self._chunks(json.dumps(ev).encode() + b"\n")
            elif mode == "silent":
                self.wfile.flush()
                deadline = time.monotonic() + timeout_s
                with api.cond:
                    while (api.break_gen == gen and not api.stopping
                           and time.monotonic() < deadline):
                        api.cond.wait(min(0.2, max(0.0, deadline - time.monotonic())))
                return  # cut, or the server stops: no terminal chunk
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return


# Field labels the real API accepts per kind (pods accept more; these are
# the ones our tests use). ResourceSlice: pkg/apis/resource's conversion.
FIELD_LABELS = {"ResourceSlice": {"metadata.name", "spec.nodeName", "spec.driver"},
                "Pod": {"metadata.name", "metadata.namespace", "spec.nodeName", "status.phase"},
                "Node": {"metadata.name"}}


def parse_field_selector(sel, obj_kind):
    """"a=b,c!=d" -> [(path, op, value)]; an unsupported label raises, as
    the API answers 400 'field label not supported'."""
    out = []
    for term in filter(None, sel.split(",")):
        if "!=" in term:
            k, v = term.split("!=", 1)
            op = "!="
        elif "==" in term:
            k, v = term.split("==", 1)
            op = "="
        elif "=" in term:
            k, v = term.split("=", 1)
            op = "="
        else:
            raise ValueError("invalid field selector: %r" % term)
        if k not in FIELD_LABELS.get(obj_kind, set()):
            raise ValueError('field label not supported: %s' % k)
        out.append((k, op, v))
    return out


def fields_match(obj, fields):
    for path, op, want in fields or ():
        cur = obj
        for part in path.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        got = cur if isinstance(cur, str) else ""
        if (got == want) != (op == "="):
            return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--token", default="token-1")
    args = ap.parse_args()
    api = FakeKubeAPI(token=args.token, port=args.port)
    print("fake kube API on %s" % api.url, flush=True)
    api.start()
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        api.stop()


if __name__ == "__main__":
    main()
