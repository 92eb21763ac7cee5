#!/usr/bin/env python3
"""integration_kube_client: kube_client (through kube_watch_tool) against
fake_kube_api.py on loopback: initial paged list, add/modify/delete events,
a broken watch resumed without a relist, 410 Gone (as an ERROR event and as
HTTP 410) forcing a relist, and a rotated bearer token picked up on the next
reconnect; and a misbehaving API (issue 32): 410 to every watch, a watch that
sends one BOOKMARK and closes, a watch that goes silent, a continue chain
that never ends. Every wait is bounded."""
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_kube_api import FakeKubeAPI  # noqa: E402
from kgs_util import proc_status_kib, stop_process, timeout_multiplier  # noqa: E402

TOOL = os.environ.get("KUBE_WATCH_TOOL")
MULT = timeout_multiplier()
WAIT = 10.0 * MULT
# ASan's own memory (shadow, quarantine): RSS is not the client's there; the
# release build asserts it, every build asserts the rest.
SANITIZED = os.environ.get("KGS_SANITIZE", "") in ("ON", "1", "TRUE", "YES")


@unittest.skipUnless(TOOL and os.path.exists(TOOL), "KUBE_WATCH_TOOL not built")
class KubeClient(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.token_file = os.path.join(self.tmp.name, "token")
        self.write_token("token-1")
        self.api = FakeKubeAPI(token="token-1").start()
        self.proc = None
        self.lines = queue.Queue()
        self.last = None
        self.stderr_path = os.path.join(self.tmp.name, "stderr")

    def tearDown(self):
        try:
            if self.proc and self.proc.poll() is None:
                rc = stop_process(self.proc, WAIT)  # negative: the signal that ended it
                # 0 also proves (under ASan) that nothing leaked.
                self.assertEqual(rc, 0, self.stderr())
        finally:
            if self.proc and self.proc.stdout:
                self.proc.stdout.close()
            self.api.stop()
            self.tmp.cleanup()

    def write_token(self, tok):
        # Like the kubelet: write a new file and rename it over the old one.
        tmp = self.token_file + ".new"
        with open(tmp, "w") as f:
            f.write(tok + "\n")
        os.replace(tmp, self.token_file)

    def stderr(self):
        try:
            with open(self.stderr_path) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def start_tool(self, page_limit=500, extra=()):
        self.errf = open(self.stderr_path, "w")
        self.addCleanup(self.errf.close)
        self.proc = subprocess.Popen(
            [TOOL, "--api", self.api.url, "--token-file", self.token_file,
             "--page-limit", str(page_limit), "--backoff-ms", "50"] + list(extra),
            stdout=subprocess.PIPE, stderr=self.errf, text=True)

        def reader(out, q):
            for line in out:
                q.put(json.loads(line))
            q.put(None)
        threading.Thread(target=reader, args=(self.proc.stdout, self.lines), daemon=True).start()

    def wait_line(self, pred, what):
        deadline = time.monotonic() + WAIT
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.fail("timed out waiting for %s; last line %s; stderr:\n%s"
                          % (what, json.dumps(self.last), self.stderr()))
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                self.fail("tool exited waiting for %s; stderr:\n%s" % (what, self.stderr()))
            self.last = line
            if pred(line):
                return line

    def fresh_tick(self):
        """The first tick line printed from now on (older queued lines are dropped)."""
        while True:
            try:
                if self.lines.get_nowait() is None:
                    self.fail("tool exited; stderr:\n" + self.stderr())
            except queue.Empty:
                break
        return self.wait_line(lambda l: l["event"] == "tick", "a tick")

    @staticmethod
    def names(line):
        return sorted("%s/%s" % (p["namespace"], p["name"]) for p in line["pods"])

    @staticmethod
    def pod(line, ns, name):
        for p in line["pods"]:
            if p["namespace"] == ns and p["name"] == name:
                return p
        return None

    def sync_with(self, pods_before, page_limit=500):
        for ns, name in pods_before:
            self.api.add_pod(ns, name, labels={"app": name.split("-")[0]})
        self.start_tool(page_limit=page_limit)
        return self.wait_line(lambda l: l["event"] == "synced", "the first sync")

    def wait_watching(self, count=1):
        self.api.wait_for(lambda a: len([r for r in a.requests
                                         if r["kind"] == "watch" and r["status"] == 200])
                          >= count, timeout=WAIT)

    # ---- cases ----

    def test_initial_list_follows_continue_pages(self):
        before = [("inference", "vllm-%d" % i) for i in range(5)] + [("training", "job-0")]
        line = self.sync_with(before, page_limit=2)
        self.assertEqual(self.names(line), sorted("%s/%s" % p for p in before))
        self.assertTrue(line["synced"])
        self.assertEqual(line["stats"]["lists"], 1)
        self.assertEqual(line["stats"]["list_pages"], 3)
        lists = self.api.requests_of("list")
        self.assertEqual(len(lists), 3)
        self.assertNotIn("continue", lists[0]["query"])
        self.assertIn("continue", lists[1]["query"])
        self.assertEqual(lists[0]["token"], "token-1")
        self.assertEqual(line["rv"], str(self.api.rv))
        self.wait_watching()
        w = self.api.requests_of("watch")[0]["query"]
        self.assertEqual(w["resourceVersion"], line["rv"])
        self.assertEqual(w["allowWatchBookmarks"], "true")
        self.assertEqual(w["timeoutSeconds"], "300")
        p = self.pod(line, "inference", "vllm-0")
        self.assertEqual(p["labels"], {"app": "vllm"})
        self.assertEqual(p["phase"], "Pending")

    def test_add_modify_delete_events_reach_the_cache(self):
        self.sync_with([("inference", "vllm-0")])
        self.wait_watching()
        uid = self.api.add_pod("inference", "vllm-1", labels={"app": "vllm", "tier": "gpu"})
        line = self.wait_line(lambda l: self.pod(l, "inference", "vllm-1"), "ADDED vllm-1")
        self.assertEqual(line["event"], "change")
        self.assertEqual(self.pod(line, "inference", "vllm-1")["uid"], uid)
        self.api.modify_pod(uid, phase="Running", node="gpu-node-1", pod_ip="10.244.1.7")
        line = self.wait_line(
            lambda l: (self.pod(l, "inference", "vllm-1") or {}).get("phase") == "Running",
            "MODIFIED vllm-1")
        p = self.pod(line, "inference", "vllm-1")
        self.assertEqual((p["node"], p["pod_ip"]), ("gpu-node-1", "10.244.1.7"))
        self.assertEqual(p["labels"], {"app": "vllm", "tier": "gpu"})
        self.api.modify_pod(uid, deleting=True)
        self.wait_line(lambda l: (self.pod(l, "inference", "vllm-1") or {}).get("deleting"),
                       "deletionTimestamp on vllm-1")
        self.api.delete_pod(uid)
        line = self.wait_line(lambda l: not self.pod(l, "inference", "vllm-1"), "DELETED vllm-1")
        self.assertEqual(self.names(line), ["inference/vllm-0"])
        self.assertEqual(line["rv"], str(self.api.rv))
        self.assertEqual(line["stats"]["lists"], 1)

    def test_many_events_in_a_burst_split_across_chunks(self):
        self.sync_with([])
        self.wait_watching()
        for i in range(40):
            self.api.add_pod("burst", "p-%02d" % i, labels={"i": str(i)})
        line = self.wait_line(lambda l: len(l["pods"]) == 40, "40 pods")
        self.assertEqual(line["stats"]["failures"], 0, self.stderr())
        self.assertEqual(line["stats"]["lists"], 1)

    def test_broken_watch_resumes_from_last_rv_without_relist(self):
        self.sync_with([("inference", "vllm-0")])
        self.wait_watching()
        self.api.add_pod("inference", "vllm-1")
        line = self.wait_line(lambda l: self.pod(l, "inference", "vllm-1"), "vllm-1")
        rv = line["rv"]
        time.sleep(1.1)  # a watch that ends at once counts as failed; this one lived
        self.api.break_watches()
        self.wait_watching(2)
        second = self.api.requests_of("watch")[1]["query"]
        self.assertEqual(second["resourceVersion"], rv)
        # Changes while the watch is re-established are not lost.
        self.api.add_pod("inference", "vllm-2")
        line = self.wait_line(lambda l: self.pod(l, "inference", "vllm-2"), "vllm-2")
        self.assertEqual(line["stats"]["lists"], 1)
        self.assertEqual(len(self.api.requests_of("list")), 1)
        self.assertEqual(self.names(line), ["inference/vllm-0", "inference/vllm-1",
                                            "inference/vllm-2"])

    def test_bookmark_moves_the_resume_point(self):
        self.sync_with([("inference", "vllm-0")])
        self.wait_watching()
        time.sleep(1.1)
        # Other resources change: the RV moves on without a pod event, and only
        # a bookmark tells the client.
        self.api.advance_rv(5)
        self.api.bookmark()
        time.sleep(0.5)
        self.api.break_watches()
        self.wait_watching(2)
        self.assertEqual(self.api.requests_of("watch")[1]["query"]["resourceVersion"],
                         str(self.api.rv))

    def _gone_relists(self, mode):
        self.api.gone_mode = mode
        self.sync_with([("inference", "vllm-0"), ("inference", "vllm-1")])
        self.wait_watching()
        time.sleep(1.1)
        # While the client is cut off: a pod goes away, another arrives, and the
        # history is compacted, so only a relist can catch up.
        with self.api.cond:
            self.api.break_gen += 1
            self.api.cond.notify_all()
        victim = [u for u, p in self.api.pods.items() if p["metadata"]["name"] == "vllm-0"][0]
        self.api.delete_pod(victim)
        self.api.add_pod("inference", "vllm-2")
        self.api.compact()
        line = self.wait_line(lambda l: l["event"] == "synced" and l["stats"]["lists"] == 2,
                              "the relist after 410")
        self.assertEqual(self.names(line), ["inference/vllm-1", "inference/vllm-2"])
        self.assertGreaterEqual(line["stats"]["gone"], 1)
        self.assertEqual(line["rv"], str(self.api.rv))
        self.assertTrue(line["synced"])
        # And the watch resumes from the relist's RV.
        self.api.wait_for(lambda a: any(r["kind"] == "watch" and r["status"] == 200 and
                                        r["query"].get("resourceVersion") == line["rv"]
                                        for r in a.requests), timeout=WAIT)

    def test_410_error_event_forces_a_relist(self):
        self._gone_relists("event")

    def test_http_410_forces_a_relist(self):
        self._gone_relists("http")

    def test_rotated_token_is_used_on_the_next_reconnect(self):
        self.sync_with([("inference", "vllm-0")])
        self.wait_watching()
        time.sleep(1.1)
        # The old token stops working before the file is rewritten: 401, backoff.
        self.api.set_tokens("token-2")
        self.api.break_watches()
        self.api.wait_for(lambda a: any(r["status"] == 401 for r in a.requests), timeout=WAIT)
        self.write_token("token-2")
        self.api.wait_for(lambda a: any(r["kind"] == "watch" and r["status"] == 200 and
                                        r["token"] == "token-2" for r in a.requests),
                          timeout=WAIT)
        uid = self.api.add_pod("inference", "vllm-9")
        line = self.wait_line(lambda l: self.pod(l, "inference", "vllm-9"), "vllm-9")
        self.assertEqual(self.pod(line, "inference", "vllm-9")["uid"], uid)
        self.assertEqual(line["error"], "")  # cleared by the successful watch
        self.assertEqual(line["stats"]["lists"], 1)
        self.assertIn("HTTP 401", self.stderr())

    def test_api_down_at_start_then_up(self):
        # Tool first, API second: connection refused, backoff, then a sync.
        port = self.api.port
        self.api.stop()
        self.errf = open(self.stderr_path, "w")
        self.addCleanup(self.errf.close)
        self.proc = subprocess.Popen(
            [TOOL, "--api", "http://127.0.0.1:%d" % port, "--token-file", self.token_file,
             "--backoff-ms", "50"], stdout=subprocess.PIPE, stderr=self.errf, text=True)

        def reader(out, q):
            for line in out:
                q.put(json.loads(line))
            q.put(None)
        threading.Thread(target=reader, args=(self.proc.stdout, self.lines), daemon=True).start()
        time.sleep(0.5)
        self.api = FakeKubeAPI(token="token-1", port=port).start()
        self.api.add_pod("inference", "late")
        line = self.wait_line(lambda l: l["event"] == "synced", "a sync once the API is up")
        self.assertEqual(self.names(line), ["inference/late"])
        self.assertGreaterEqual(line["stats"]["failures"], 1)
        self.assertIn("Connection refused", self.stderr())

    def make_cert(self, san):
        cert = os.path.join(self.tmp.name, "cert.pem")
        key = os.path.join(self.tmp.name, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                        "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=kube-apiserver",
                        "-addext", "subjectAltName=" + san],
                       check=True, capture_output=True, timeout=WAIT * 3)
        return cert, key

    @unittest.skipUnless(shutil.which("openssl"), "openssl CLI not installed")
    def test_https_verifies_the_ip_in_the_certificate(self):
        cert, key = self.make_cert("IP:127.0.0.1")
        self.api.stop()
        self.api = FakeKubeAPI(token="token-1", tls=(cert, key)).start()
        self.api.add_pod("inference", "tls-pod")
        self.start_tool(extra=["--ca", cert])
        line = self.wait_line(lambda l: l["event"] == "synced", "a sync over HTTPS")
        self.assertEqual(self.names(line), ["inference/tls-pod"])
        self.wait_watching()

    @unittest.skipUnless(shutil.which("openssl"), "openssl CLI not installed")
    def test_https_refuses_a_certificate_for_another_ip(self):
        cert, key = self.make_cert("IP:127.0.0.2")
        self.api.stop()
        self.api = FakeKubeAPI(token="token-1", tls=(cert, key)).start()
        self.start_tool(extra=["--ca", cert])
        deadline = time.monotonic() + WAIT
        while "certificate verification" not in self.stderr():
            if time.monotonic() > deadline:
                self.fail("no verification failure; stderr:\n" + self.stderr())
            time.sleep(0.1)
        self.assertIn("IP address mismatch", self.stderr())
        self.assertEqual(self.api.requests, [])

    # ---- a misbehaving API (issue 32) ----

    def _loop_backs_off(self, mode, kind):
        """The API answers every watch as `mode` says; after 4 s of backoff
        growth (50 ms doubling to 4 s), count `kind` requests over 6 s.
        Before the backoff covered these paths: 693-3,180 a second."""
        self.api.add_pod("inference", "vllm-0")
        self.api.watch_mode = mode
        self.start_tool(extra=["--backoff-max-ms", "4000", "--seed", "7"])
        self.wait_line(lambda l: l["event"] == "synced", "the first sync")
        time.sleep(4.0)
        n0 = len(self.api.requests_of(kind))
        time.sleep(6.0)
        n1 = len(self.api.requests_of(kind))
        print("    %s: %d %s requests in the first 4 s, %d in the next 6 s"
              % (mode, n0, kind, n1 - n0), flush=True)
        # steady delays are 2-4 s; the bound is under 1 a second with room
        self.assertLessEqual(n1 - n0, 5, self.stderr())
        self.assertGreaterEqual(n1 - n0, 1, "the client stopped retrying")
        self.assertLessEqual(n0, 14, "the backoff did not grow in 4 s")
        return n1

    def test_410_event_loop_relists_with_backoff(self):
        self._loop_backs_off("gone_event", "list")
        self.assertIn("relisting in", self.stderr())

    def test_http_410_loop_relists_with_backoff(self):
        self._loop_backs_off("gone_http", "list")

    def test_bookmark_then_close_loop_rewatches_with_backoff(self):
        self._loop_backs_off("bookmark_close", "watch")
        self.assertIn("stream ended at once", self.stderr())
        # the watch resumes from the bookmark; no relist was needed
        self.assertEqual(len(self.api.requests_of("list")), 1)

    def test_silent_watch_reads_not_synced_within_the_idle_limit(self):
        self.api.add_pod("inference", "vllm-0")
        self.api.watch_mode = "silent"
        self.start_tool(extra=["--watch-idle-ms", "1500", "--tick-ms", "100"])
        self.wait_line(lambda l: l["event"] == "synced", "the first sync")
        self.wait_watching()
        t0 = time.monotonic()
        # The silent watch never tells of the new pod; and the relists fail
        # (403) until the test lifts it, so "not synced" lasts long enough to
        # be seen by a tick, however fast a relist would otherwise be.
        self.api.add_pod("inference", "vllm-1")
        self.api.forbid("Pod")
        line = self.wait_line(lambda l: l["event"] == "tick" and not l["synced"],
                              "not synced after a silent watch")
        took = time.monotonic() - t0
        print("    a silent watch read as not synced after %.2f s (limit 1.5 s)" % took,
              flush=True)
        self.assertLess(took, 1.5 + 1.5 * MULT)
        self.assertIn("nothing (no event, no bookmark) for 1500 ms", self.stderr())
        self.assertEqual(line["stats"]["idle_watches"], 1)
        self.assertNotEqual(line["error"], "")
        self.assertEqual(self.names(line), ["inference/vllm-0"])  # stale, and flagged so
        # Not synced until a relist succeeds: every line until then says so.
        time.sleep(1.0)
        self.api.forbid()
        self.api.watch_mode = "normal"
        seen_unsynced = 0
        while True:
            line = self.wait_line(lambda l: True, "the relist after the silent watch")
            if self.pod(line, "inference", "vllm-1"):
                break
            self.assertFalse(line["synced"], "a stale pod list read as synced: %s" % line)
            seen_unsynced += 1
        self.assertTrue(line["synced"])
        self.assertGreaterEqual(seen_unsynced, 5)  # the ticks of the second spent forbidden
        self.assertGreaterEqual(line["stats"]["lists"], 2)
        self.assertEqual(line["error"], "")

    def _endless_chain(self, extra, want):
        self.api.list_mode = "endless_continue"
        self.start_tool(page_limit=100, extra=["--backoff-max-ms", "1000", "--tick-ms", "250"]
                        + extra)
        deadline = time.monotonic() + WAIT
        peak = 0
        while want not in self.stderr():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.fail("no refusal naming the cap; stderr:\n" + self.stderr())
            peak = max(peak, proc_status_kib(self.proc.pid, "VmRSS"))
            time.sleep(0.05)
        end = time.monotonic() + 4.0
        while time.monotonic() < end:
            peak = max(peak, proc_status_kib(self.proc.pid, "VmRSS"))
            time.sleep(0.05)
        lists = len(self.api.requests_of("list"))
        line = self.fresh_tick()
        print("    endless continue chain: %d list requests, %d refused lists, peak RSS %d KiB"
              % (lists, line["stats"]["refused_lists"], peak), flush=True)
        self.assertFalse(line["synced"])
        self.assertGreaterEqual(line["stats"]["refused_lists"], 2)
        self.assertEqual(line["stats"]["lists"], 0)
        self.assertEqual(line["pods"], [])
        # every chain stops at the cap, and chains come after the backoff
        self.assertLessEqual(lists, (line["stats"]["refused_lists"] + 1) * 11)
        if not SANITIZED:
            # the cap holds 1,000 pods of 3,184 bytes; unbounded it grew 600 MiB in 8 s
            self.assertLess(peak, 48 * 1024, "peak RSS %d KiB" % peak)

    def test_endless_continue_chain_is_refused_at_the_item_cap(self):
        self._endless_chain(["--list-max-items", "1000"],
                            "refused: 1100 items after 11 pages, over the cap of 1000 items")

    def test_endless_continue_chain_is_refused_at_the_page_cap(self):
        self._endless_chain(["--list-max-pages", "11"],
                            "the continue chain goes on past 11 pages (1100 items)")


if __name__ == "__main__":
    unittest.main(verbosity=2)
