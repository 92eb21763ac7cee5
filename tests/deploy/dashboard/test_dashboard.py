#!/usr/bin/env python3
"""deploy/dashboards/keda-gpu-scaler.json against the real server.

The Go system's dashboard queried counters that were never incremented and a
gauge name that never existed, so its panels were empty and nobody noticed.
This test keeps ours honest:

  (a) the JSON is a valid dashboard: uid, title, schemaVersion, the
      DS_PROMETHEUS input, unique panel ids, every panel and target on the
      ${datasource} variable, every $variable defined, no overlapping panels;
  (b) every `expr` and templating query is parsed enough to find every metric
      name in it; a name outside keda_gpu_scaler_*, or an unknown function,
      is an error;
  (c) the real keda-gpu-scaler runs on the simulated NVML (GPM, NVLink, MIG,
      a demand source, RPCs), and an aggregator on the fake Kubernetes API
      with a pod whose start completed (the cold-start series exist only
      there), and every metric the dashboard queries must be in their
      /metrics; counters may only be read through rate/irate/increase,
      and rate/irate/increase only of counters and histogram series;
  (d) a bogus metric injected into a copy of the dashboard is reported.

Environment: KEDA_GPU_SCALER, NVML_SIM_LIBRARY (set by CTest),
KGS_SOURCE_DIR (the repository; default: derived from this file).
"""
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration"))
from kgs_util import SOURCE_DIR, child_env, free_port, http_get  # noqa: E402
from kgs_util import scaler_command, stop_process, timeout_multiplier  # noqa: E402
from latency_hist import LatencyEngine  # noqa: E402
from fake_kube_api import FakeKubeAPI  # noqa: E402
from test_cold_start import ready as pod_ready  # noqa: E402

DASHBOARD = os.path.join(SOURCE_DIR, "deploy", "dashboards", "keda-gpu-scaler.json")
SERVER = os.environ.get("KEDA_GPU_SCALER")
SIM = os.environ.get("NVML_SIM_LIBRARY")
SLOW = timeout_multiplier()
if os.environ.get("KGS_SANITIZE") not in (None, "", "OFF", "0", "NO", "FALSE"):
    SLOW = max(SLOW, 3.0)

PREFIX = "keda_gpu_scaler_"
METRIC_RE = re.compile(r"^keda_gpu_scaler_[a-z0-9_:]+$")
DS = {"type": "prometheus", "uid": "${datasource}"}

def engine_server(text):
    """A loopback HTTP server answering every GET with text() (an engine's
    /metrics page), on a thread of its own."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):
            pass

        def do_GET(self):
            body = text().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


# ---- PromQL, enough of it -----------------------------------------------------------------

PROMQL_FUNCTIONS = set("""
abs absent absent_over_time acos acosh asin asinh atan atanh avg_over_time ceil changes clamp
clamp_max clamp_min cos cosh count_over_time day_of_month day_of_week day_of_year days_in_month
deg delta deriv double_exponential_smoothing exp floor histogram_avg histogram_count
histogram_fraction histogram_quantile histogram_stddev histogram_stdvar histogram_sum
holt_winters hour idelta increase info irate label_join label_replace last_over_time ln log10
log2 mad_over_time max_over_time min_over_time minute month pi predict_linear present_over_time
quantile_over_time rad rate resets round scalar sgn sin sinh sort sort_by_label
sort_by_label_desc sort_desc sqrt stddev_over_time stdvar_over_time sum_over_time tan tanh time
timestamp vector year
sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio
start end
""".split())
PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and",
                   "or", "unless", "offset", "atan2", "inf", "nan"}
# Grafana's variable functions for the Prometheus data source.
GRAFANA_VAR_FUNCTIONS = {"label_values", "label_names", "metrics", "query_result"}
GRAFANA_BUILTIN_VARS = {"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s",
                        "__range_ms", "__from", "__to", "__dashboard", "__org", "__user",
                        "__name", "__all"}
COUNTER_FUNCTIONS = {"rate", "irate", "increase", "resets"}

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_COMMENT = re.compile(r"#[^\n]*")
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\[\]]*\]")
_VARIABLE = re.compile(r"\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\[\[[^\]]*\]\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_NUMBER = re.compile(r"(?<![A-Za-z0-9_:.])(?:0[xX][0-9a-fA-F]+|(?:\d+(?:\.\d*)?|\.\d+)"
                     r"(?:[eE][+-]?\d+)?(?:(?:ms|[smhdwy])(?:\d+(?:ms|[smhdwy]))*)?)")
_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


def variables_used(expr):
    """Names of the Grafana variables an expression uses."""
    out = set()
    for m in _VARIABLE.finditer(expr):
        v = m.group(0)
        if v.startswith("${"):
            v = v[2:-1].split(":")[0].split(".")[0]
        elif v.startswith("[["):
            v = v[2:-2].split(":")[0]
        else:
            v = v[1:]
        out.add(v)
    return out


def parse_promql(expr, grafana_functions=False):
    """(metric names, problems, [(function, metric)] applied directly) of one expression."""
    problems = []
    if "__name__" in expr:
        problems.append("uses __name__ (name metrics directly, so they can be checked): %r" % expr)
    s = _STRING.sub(" ", expr)
    s = _COMMENT.sub(" ", s)
    if "{" in _MATCHERS.sub(" ", s) or "}" in _MATCHERS.sub(" ", s):
        problems.append("unbalanced or nested braces: %r" % expr)
    s = _MATCHERS.sub(" ", s)
    s = _RANGE.sub(" ", s)
    s = _VARIABLE.sub(" ", s)
    s = _GROUPING.sub(" ", s)
    s = _NUMBER.sub(" ", s)
    metrics, applied = set(), []
    stack = []  # function names of the open parentheses
    pos = 0
    last_function = None
    while pos < len(s):
        c = s[pos]
        if c == "(":
            stack.append(last_function)
            last_function = None
            pos += 1
            continue
        if c == ")":
            if stack:
                stack.pop()
            else:
                problems.append("unbalanced parentheses: %r" % expr)
            pos += 1
            continue
        m = _IDENT.match(s, pos)
        if not m:
            if not c.isspace():
                last_function = None
            pos += 1
            continue
        word = m.group(0)
        pos = m.end()
        rest = s[pos:].lstrip()
        if rest.startswith("("):
            known = word in PROMQL_FUNCTIONS or (grafana_functions and word in GRAFANA_VAR_FUNCTIONS)
            if not known:
                problems.append("unknown function %r in %r" % (word, expr))
            last_function = word
            continue
        last_function = None
        if word.lower() in PROMQL_KEYWORDS:
            continue
        if not METRIC_RE.match(word):
            problems.append("metric %r is not one of keda-gpu-scaler's (%s*) in %r"
                            % (word, PREFIX, expr))
            continue
        metrics.add(word)
        applied.append((stack[-1] if stack else None, word))
    if stack:
        problems.append("unbalanced parentheses: %r" % expr)
    return metrics, problems, applied


def templating_expr(query):
    """The PromQL inside a Grafana Prometheus variable query, or None."""
    q = query.strip()
    m = re.match(r"^label_values\s*\((.*)\)\s*$", q, re.S)
    if m:
        inner = m.group(1).strip()
        # label_values(EXPR, label) or label_values(label): the last argument is a label.
        depth, cut = 0, None
        for i, ch in enumerate(inner):
            if ch in "({[":
                depth += 1
            elif ch in ")}]":
                depth -= 1
            elif ch == "," and depth == 0:
                cut = i
        return inner[:cut].strip() if cut is not None else None
    m = re.match(r"^query_result\s*\((.*)\)\s*$", q, re.S)
    if m:
        return m.group(1)
    return None


# ---- the dashboard ------------------------------------------------------------------------

def all_panels(dash):
    for p in dash.get("panels", []):
        yield p
        for q in p.get("panels", []) or []:
            yield q


def exprs(dash):
    """(where, expr, is_templating) for every query in the dashboard."""
    out = []
    for p in all_panels(dash):
        for t in p.get("targets", []) or []:
            if "expr" in t:
                out.append(("panel %s %r target %s" % (p.get("id"), p.get("title"), t.get("refId")),
                            t["expr"], False))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        qs = q.get("query", "") if isinstance(q, dict) else (q or "")
        out.append(("variable %s" % v.get("name"), qs, True))
        if v.get("definition") and v["definition"] != qs:
            out.append(("variable %s (definition)" % v.get("name"), v["definition"], True))
    return out


def check_dashboard(dash):
    """(problems, {metric: [where]}, [(where, function, metric)]) of a dashboard."""
    problems = []
    need = lambda cond, msg: cond or problems.append(msg)
    need(isinstance(dash.get("uid"), str) and re.match(r"^[A-Za-z0-9_-]{1,40}$", dash["uid"]),
         "uid missing or not a valid Grafana uid")
    need(isinstance(dash.get("title"), str) and dash["title"].strip(), "title missing")
    need(dash.get("schemaVersion") == 39, "schemaVersion is %r, not 39" % dash.get("schemaVersion"))
    inputs = dash.get("__inputs", [])
    need(any(i.get("name") == "DS_PROMETHEUS" and i.get("type") == "datasource"
             and i.get("pluginId") == "prometheus" for i in inputs),
         "__inputs lacks a prometheus datasource DS_PROMETHEUS")

    variables = {}
    for v in dash.get("templating", {}).get("list", []):
        name = v.get("name")
        need(name and name not in variables, "templating variable %r missing or repeated" % name)
        variables[name] = v
    dsvar = variables.get("datasource")
    need(dsvar is not None and dsvar.get("type") == "datasource" and dsvar.get("query") == "prometheus",
         "no `datasource` variable of type datasource for prometheus")
    if dsvar is not None:
        need("${DS_PROMETHEUS}" in json.dumps(dsvar.get("current", {})),
             "the datasource variable does not default to ${DS_PROMETHEUS}")
    for name in ("node", "gpu"):
        need(name in variables, "templating variable %r missing" % name)
    for name, v in variables.items():
        if v.get("type") == "query":
            need(v.get("datasource") == DS, "variable %s: datasource %r is not ${datasource}"
                 % (name, v.get("datasource")))

    panels = list(all_panels(dash))
    need(panels, "no panels")
    ids = [p.get("id") for p in panels]
    need(all(isinstance(i, int) for i in ids), "a panel without an integer id")
    dup = sorted({i for i in ids if ids.count(i) > 1}, key=str)
    need(not dup, "panel ids repeated: %s" % dup)
    rects = []
    for p in panels:
        where = "panel %s %r" % (p.get("id"), p.get("title"))
        need(p.get("type") and p.get("title"), "%s: type or title missing" % where)
        gp = p.get("gridPos") or {}
        ok = all(isinstance(gp.get(k), int) for k in "hwxy") and gp["w"] > 0 and gp["h"] > 0 \
            and gp["x"] >= 0 and gp["x"] + gp["w"] <= 24
        need(ok, "%s: bad gridPos %r" % (where, gp))
        if ok:
            for other, og in rects:
                if gp["x"] < og["x"] + og["w"] and og["x"] < gp["x"] + gp["w"] and \
                   gp["y"] < og["y"] + og["h"] and og["y"] < gp["y"] + gp["h"]:
                    problems.append("%s overlaps %s" % (where, other))
            rects.append((where, gp))
        if p.get("type") == "row":
            need(not p.get("targets"), "%s: a row with queries" % where)
            continue
        need(p.get("datasource") == DS, "%s: datasource %r is not ${datasource}"
             % (where, p.get("datasource")))
        targets = p.get("targets") or []
        need(targets, "%s: no queries" % where)
        refs = [t.get("refId") for t in targets]
        need(len(set(refs)) == len(refs), "%s: refIds repeated" % where)
        for t in targets:
            need("datasource" not in t or t["datasource"] == DS,
                 "%s target %s: datasource %r is not ${datasource}" % (where, t.get("refId"),
                                                                       t.get("datasource")))
            need(isinstance(t.get("expr"), str) and t["expr"].strip(),
                 "%s target %s: no expr" % (where, t.get("refId")))

    used, applied = {}, []
    for where, expr, is_var in exprs(dash):
        for v in variables_used(expr):
            need(v in variables or v in GRAFANA_BUILTIN_VARS,
                 "%s: variable $%s is not defined" % (where, v))
        if is_var:
            inner = templating_expr(expr)
            if inner is None:
                problems.append("%s: %r is not label_values(METRIC..., label) or query_result(...)"
                                % (where, expr))
                continue
            names, probs, app = parse_promql(inner)
            need(names, "%s: %r references no metric" % (where, expr))
        else:
            names, probs, app = parse_promql(expr)
            need(names, "%s: %r references no metric" % (where, expr))
        problems.extend("%s: %s" % (where, pr) for pr in probs)
        for n in names:
            used.setdefault(n, []).append(where)
        applied.extend((where, f, n) for f, n in app)
    return problems, used, applied


# ---- the scrape ---------------------------------------------------------------------------

def parse_exposition(text):
    """({sample name: [values]}, {family: type})."""
    samples, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) >= 4:
                types[parts[2]] = parts[3]
            continue
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?\s+(\S+)", line)
        if m:
            samples.setdefault(m.group(1), []).append((m.group(2) or "", m.group(3)))
    return samples, types


def family_of(name, types):
    """(family, type) a sample name belongs to."""
    if name in types:
        return name, types[name]
    for suf in ("_bucket", "_sum", "_count"):
        if name.endswith(suf) and types.get(name[:-len(suf)]) == "histogram":
            return name[:-len(suf)], "histogram"
    return None, None


def check_against_scrape(used, applied, samples, types):
    """Problems of the dashboard's metrics against one exposition."""
    problems = []
    for name in sorted(used):
        if name in samples:
            continue
        where = "; ".join(sorted(set(used[name]))[:3])
        if types.get(name) == "histogram":
            problems.append("%s is a histogram family: query %s_bucket, _sum or _count (%s)"
                            % (name, name, where))
        else:
            problems.append("%s is not exported by keda-gpu-scaler (used in %s)" % (name, where))
    for where, fn, name in applied:
        fam, typ = family_of(name, types)
        if typ is None:
            continue  # reported above
        counterish = typ == "counter" or (typ == "histogram" and name != fam)
        if fn in COUNTER_FUNCTIONS and not counterish:
            problems.append("%s: %s() of %s, a %s" % (where, fn, name, typ))
        if typ == "counter" and fn not in COUNTER_FUNCTIONS:
            problems.append("%s: counter %s read without rate/irate/increase" % (where, name))
        if typ == "histogram" and name.endswith("_bucket") and fn not in COUNTER_FUNCTIONS:
            problems.append("%s: %s read without rate/increase" % (where, name))
    return problems


def promtool_check(named_exprs):
    """promtool's own PromQL parser over every expression (variables filled in): the problems,
    or None without promtool."""
    import shutil
    tool = shutil.which("promtool")
    if not tool:
        return None
    rules = []
    for i, (where, expr) in enumerate(named_exprs):
        e = re.sub(r"\$__(rate_interval|interval|range)\b|\$\{__(rate_interval|interval|range)\}",
                   "1m", expr)
        e = _VARIABLE.sub(".*", e)
        rules.append({"record": "dashboard:expr_%d" % i, "expr": e})
    with tempfile.TemporaryDirectory(prefix="kgs-dash-promtool-") as d:
        path = os.path.join(d, "rules.yml")
        with open(path, "w") as f:
            json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)  # JSON is YAML
        r = subprocess.run([tool, "check", "rules", path], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
    if r.returncode == 0:
        return []
    # promtool names the rule (dashboard:expr_N); say which query that is.
    where = {"dashboard:expr_%d" % i: w for i, (w, _) in enumerate(named_exprs)}
    return [r.stdout.strip()] + ["%s is %s" % (k, w) for k, w in where.items()
                                 if re.search(re.escape(k) + r"\b", r.stdout)]


def scenario(path):
    """Two H100s (GPM, NVLink), a MIG-enabled GPU with GPM (Hopper MIG) and a MIG-disabled A100."""
    scen = os.path.join(SOURCE_DIR, "sim", "scenarios")
    with open(os.path.join(scen, "idle-4xh100.json")) as f:
        h100 = json.load(f)
    with open(os.path.join(scen, "mig-a100.json")) as f:
        a100 = json.load(f)
    devices = copy.deepcopy(h100["devices"][:2])
    devices[0]["values"].update({"gpu_util": 37, "mem_util": 12, "sm_active": 41.5,
                                 "sm_occupancy": 22.0, "dram_bw_util": 18.0,
                                 "nvlink_tx_kib_per_s": 204800, "nvlink_rx_kib_per_s": 102400})
    for d in copy.deepcopy(a100["devices"]):
        if d.get("mig", {}).get("enabled"):
            d["gpm_supported"] = True  # GPM on MIG instances: the mig_* GPM gauges
        devices.append(d)
    for i, d in enumerate(devices):  # the PCI bus ids must stay distinct
        d["pci_bus_id"] = "00000000:%02X:00.0" % (0x10 + i)
    out = dict(h100, devices=devices)
    with open(path, "w") as f:
        json.dump(out, f)
    return out


class Static(unittest.TestCase):
    """(a), (b) and the extractor itself: no server needed."""

    @classmethod
    def setUpClass(cls):
        with open(DASHBOARD) as f:
            cls.dash = json.load(f)

    def test_dashboard_is_valid(self):
        problems, used, _ = check_dashboard(self.dash)
        self.assertEqual(problems, [], "\n".join(problems))
        self.assertGreater(len(used), 20, sorted(used))

    def test_promtool_parses_every_expression(self):
        named = []
        for where, expr, is_var in exprs(self.dash):
            named.append((where, templating_expr(expr) if is_var else expr))
        problems = promtool_check(named)
        if problems is None:
            self.skipTest("promtool not installed")
        self.assertEqual(problems, [], "\n".join(problems))
        self.assertTrue(promtool_check([("broken", "sum(rate(keda_gpu_scaler_x_total[1m])")]))

    def test_every_templating_query_names_a_metric(self):
        names = [v["name"] for v in self.dash["templating"]["list"] if v.get("type") == "query"]
        self.assertTrue({"node", "gpu"} <= set(names), names)
        for where, expr, is_var in exprs(self.dash):
            if is_var:
                inner = templating_expr(expr)
                self.assertIsNotNone(inner, where)
                self.assertTrue(parse_promql(inner)[0], "%s: %s" % (where, expr))

    def test_the_sections_are_there(self):
        rows = [p["title"] for p in self.dash["panels"] if p["type"] == "row"]
        for want in ("Fleet", "Per node", "Scaling signals", "Scaler health", "RPC latency",
                     "Cold starts"):
            self.assertTrue(any(r.startswith(want) for r in rows), (want, rows))

    def test_extractor(self):
        cases = [
            ('histogram_quantile(0.99, sum by (method, le) (rate(keda_gpu_scaler_x_bucket'
             '{method=~"IsActive|Get.*", job=~"$job"}[$__rate_interval])))',
             {"keda_gpu_scaler_x_bucket"}, 0),
            ("keda_gpu_scaler_a / on (job, instance) group_left (version) keda_gpu_scaler_b",
             {"keda_gpu_scaler_a", "keda_gpu_scaler_b"}, 0),
            ("sum(rate(keda_gpu_scaler_c_total[5m] offset 1h30m)) by (node) * 1e3 > bool 0.5",
             {"keda_gpu_scaler_c_total"}, 0),
            ('label_replace(keda_gpu_scaler_d{a="x,y(z)"}, "dst", "$1", "src", "(.*)")',
             {"keda_gpu_scaler_d"}, 0),
            ("keda_gpu_scaler_e and keda_gpu_scaler_f unless keda_gpu_scaler_g or vector(0)",
             {"keda_gpu_scaler_e", "keda_gpu_scaler_f", "keda_gpu_scaler_g"}, 0),
            ("avg_over_time(keda_gpu_scaler_h[10m:1m]) - Inf", {"keda_gpu_scaler_h"}, 0),
            ("up", set(), 1),                                       # a foreign metric
            ("rate(node_cpu_seconds_total[5m])", set(), 1),
            ("rat(keda_gpu_scaler_i_total[5m])", {"keda_gpu_scaler_i_total"}, 1),  # typo
            ('{__name__="keda_gpu_scaler_j"}', set(), 1),
        ]
        for expr, want, nproblems in cases:
            got, problems, _ = parse_promql(expr)
            self.assertEqual(got, want, expr)
            self.assertEqual(len(problems), nproblems, (expr, problems))
        self.assertEqual(templating_expr('label_values(keda_gpu_scaler_k{a=~"$a"}, node)'),
                         'keda_gpu_scaler_k{a=~"$a"}')
        self.assertIsNone(templating_expr("label_values(node)"))
        _, _, applied = parse_promql(
            "sum(rate(keda_gpu_scaler_l_total[1m])) / max by (a) (keda_gpu_scaler_m) + keda_gpu_scaler_n")
        self.assertEqual(applied, [("rate", "keda_gpu_scaler_l_total"), ("max", "keda_gpu_scaler_m"),
                                   (None, "keda_gpu_scaler_n")])

    def test_structure_errors_are_reported(self):
        bad = copy.deepcopy(self.dash)
        panels = [p for p in bad["panels"] if p["type"] != "row"]
        panels[1]["id"] = panels[0]["id"]
        panels[2]["datasource"] = {"type": "prometheus", "uid": "PBFA97CFB590B2093"}
        panels[3]["targets"][0]["expr"] += ' + keda_gpu_scaler_ready{node=~"$nosuchvar"}'
        del bad["uid"]
        problems, _, _ = check_dashboard(bad)
        text = "\n".join(problems)
        for want in ("uid", "panel ids repeated", "is not ${datasource}", "$nosuchvar"):
            self.assertIn(want, text)


@unittest.skipUnless(SERVER and SIM, "KEDA_GPU_SCALER and NVML_SIM_LIBRARY not set (run through CTest)")
class Live(unittest.TestCase):
    """(c) and (d): the real server's /metrics."""

    @classmethod
    def setUpClass(cls):
        with open(DASHBOARD) as f:
            cls.dash = json.load(f)
        cls.tmp = tempfile.TemporaryDirectory(prefix="kgs-dash-")
        cls.scenario = scenario(os.path.join(cls.tmp.name, "scenario.json"))
        cls.port, cls.mport, cls.pport = free_port(), free_port(), free_port()
        cls.dead = free_port()  # nothing listens: the demand source fails, which is fine
        cls.log = open(os.path.join(cls.tmp.name, "server.log"), "w+")
        env = child_env(scenario=os.path.join(cls.tmp.name, "scenario.json"))
        cls.proc = subprocess.Popen(
            scaler_command(SERVER, cls.port, cls.pport, cls.mport, nvml_library=SIM,
                           extra=["--node-name", "dash-node"]),
            env=env, stdout=cls.log, stderr=subprocess.STDOUT)
        try:
            cls._start()
        except BaseException:
            cls._stop()
            raise

    @classmethod
    def _start(cls):
        deadline = time.monotonic() + 20 * SLOW
        while http_get(cls.pport, "/readyz")[0] != 200:
            if cls.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("the scaler did not become ready:\n" + cls._log_tail())
            time.sleep(0.05)
        addr = "127.0.0.1:%d" % cls.port
        # A call that succeeds and calls that fail: the RPC histograms and the
        # error counters get samples; the engine trigger creates a demand source.
        cls.rpc = [
            cls._query(addr, {"metricType": "gpu_utilization", "targetValue": "50",
                              "gpuIndex": "0"}),
            cls._query(addr, {"metricType": "gpu_utilization", "targetValue": "50"}),
            cls._query(addr, {"metricType": "engine_queue", "engine": "vllm", "targetValue": "1",
                              "engineEndpoint": "http://127.0.0.1:%d/metrics" % cls.dead}),
        ]
        # A demand trigger whose engine answers, with a queue target and a
        # latency target: the Scaling signals row's trigger_* families.
        engine = LatencyEngine("vllm", waiting=6, running=2)
        cls.engine = engine_server(engine.text)
        demand = {"metricType": "demand", "engine": "vllm", "targetQueuePerReplica": "5",
                  "ttftP90Target": "500ms", "sourceInterval": "100ms", "windowSeconds": "30",
                  "engineEndpoint": "http://127.0.0.1:%d/metrics" % cls.engine.server_address[1]}
        cls._query(addr, demand)
        time.sleep(0.3)
        engine.observe("ttft", 0.3, n=40)
        # Until the scrape carries what the run should have produced (GPM needs
        # two samples; a source's first poll may still be in flight; the
        # latency window needs polls after the observations).
        want = {"keda_gpu_scaler_mig_sm_active_percent", "keda_gpu_scaler_gpu_sm_active_percent",
                "keda_gpu_scaler_source_polls_total", "keda_gpu_scaler_trigger_latency_seconds",
                "keda_gpu_scaler_trigger_decided_by", "keda_gpu_scaler_trigger_engines"}
        deadline = time.monotonic() + 15 * SLOW
        while True:
            cls._query(addr, demand)
            status, text = http_get(cls.mport, "/metrics")
            samples, types = parse_exposition(text) if status == 200 else ({}, {})
            polls = [float(v) for _, v in samples.get("keda_gpu_scaler_source_polls_total", [])]
            if want <= set(samples) and polls and polls[0] >= 1:
                break
            if time.monotonic() > deadline:
                raise AssertionError("the scrape never carried %s:\n%s\n%s"
                                     % (sorted(want - set(samples)), text[-3000:], cls._log_tail()))
            time.sleep(0.1)
        cls.text, cls.samples, cls.types = text, samples, types
        cls._aggregator()

    @classmethod
    def _aggregator(cls):
        """The Cold starts row's families: an aggregator reading one pod whose
        start completed (node 61 s, image 38 s, weights 29 s) from the fake
        API; a query with its podSelector makes the round that counts it."""
        cls.api = FakeKubeAPI(token="dash-token")
        cls.api.start()
        token = os.path.join(cls.tmp.name, "token")
        with open(token, "w") as f:
            f.write("dash-token")
        uid = cls.api.add_pod("ml", "vllm-a", labels={"app": "vllm"}, phase="Running",
                              node="gpu-node-4", pod_ip="10.244.3.4")
        cls.api.set_pod_status(uid, pod_ready(61, 99, 128), node="gpu-node-4")
        port, pport, mport = free_port(), free_port(), free_port()
        cls.agg = subprocess.Popen(
            scaler_command(SERVER, port, pport, mport, role="aggregator",
                           extra=["--agents", "127.0.0.1:%d" % free_port(), "--kube-api",
                                  cls.api.url, "--kube-token-file", token]),
            env=child_env(), stdout=cls.log, stderr=subprocess.STDOUT)
        md = {"metricType": "gpu_utilization", "targetValue": "50", "podSelector": "app=vllm"}
        want = "keda_gpu_scaler_cold_start_stage_seconds"
        deadline = time.monotonic() + 15 * SLOW
        while True:
            if http_get(pport, "/readyz")[0] == 200 or http_get(mport, "/metrics")[0] == 200:
                cmd = [SERVER, "query", "--address", "127.0.0.1:%d" % port, "--namespace", "ml",
                       "--timeout", "%ds" % int(5 * SLOW)]
                for k, v in md.items():
                    cmd += ["--metadata", "%s=%s" % (k, v)]
                subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=30 * SLOW)
            status, text = http_get(mport, "/metrics")
            samples, types = parse_exposition(text) if status == 200 else ({}, {})
            if want + "_count" in samples:
                break
            if cls.agg.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("the aggregator never exported %s:\n%s" % (want,
                                                                              cls._log_tail()))
            time.sleep(0.2)
        for name, rows in samples.items():
            cls.samples.setdefault(name, rows)
        for name, typ in types.items():
            cls.types.setdefault(name, typ)

    @classmethod
    def _query(cls, addr, md):
        cmd = [SERVER, "query", "--address", addr, "--timeout", "%ds" % int(5 * SLOW)]
        for k, v in md.items():
            cmd += ["--metadata", "%s=%s" % (k, v)]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=30 * SLOW)
        return r.returncode, r.stdout

    @classmethod
    def _log_tail(cls):
        cls.log.flush()
        cls.log.seek(0)
        return cls.log.read()[-3000:]

    @classmethod
    def _stop(cls):
        stop_process(cls.proc, 10 * SLOW)
        if getattr(cls, "agg", None):
            stop_process(cls.agg, 10 * SLOW)
        if getattr(cls, "api", None):
            cls.api.stop()
        if getattr(cls, "engine", None):
            cls.engine.shutdown()
            cls.engine.server_close()
        cls.log.close()
        cls.tmp.cleanup()

    @classmethod
    def tearDownClass(cls):
        cls._stop()

    def test_the_calls_were_made(self):
        self.assertEqual(self.rpc[0][0], 0, self.rpc[0][1])
        self.assertEqual(self.rpc[1][0], 1, self.rpc[1][1])  # the MIG GPU has no utilisation
        self.assertEqual(self.rpc[2][0], 1, self.rpc[2][1])  # nothing listens on the endpoint
        counts = dict(self.samples["keda_gpu_scaler_scaler_request_duration_seconds_count"])
        self.assertGreaterEqual(float(counts['{method="GetMetrics"}']), 3, counts)

    def test_every_dashboard_metric_is_exported(self):
        problems, used, applied = check_dashboard(self.dash)
        self.assertEqual(problems, [], "\n".join(problems))
        problems = check_against_scrape(used, applied, self.samples, self.types)
        self.assertEqual(problems, [], "\n".join(problems))
        # What the server exports and the dashboard leaves out (informational).
        families = set(self.types)
        shown = {family_of(n, self.types)[0] for n in used}
        unused = sorted(families - shown)
        sys.stderr.write("\n%d families queried; exported but not on the dashboard: %s\n"
                         % (len(shown), ", ".join(unused) or "none"))

    def test_a_bogus_metric_is_reported(self):
        # (d): every way a wrong name can slip in.
        bogus = copy.deepcopy(self.dash)
        panel = next(p for p in all_panels(bogus) if p["type"] == "timeseries")
        panel["targets"].append({"datasource": DS, "refId": "Z",
                                 "expr": 'sum(keda_gpu_scaler_gpu_bogus_percent{node=~"$node"})'})
        panel2 = [p for p in all_panels(bogus) if p["type"] == "timeseries"][3]
        panel2["targets"][0]["expr"] = panel2["targets"][0]["expr"].replace(
            "keda_gpu_scaler_", "keda_gpu_scaler_x", 1)
        var = next(v for v in bogus["templating"]["list"] if v["name"] == "node")
        var["query"]["query"] = var["definition"] = "label_values(keda_gpu_scaler_gpu_nodes, node)"
        structural, used, applied = check_dashboard(bogus)
        self.assertEqual(structural, [])
        problems = "\n".join(check_against_scrape(used, applied, self.samples, self.types))
        self.assertIn("keda_gpu_scaler_gpu_bogus_percent is not exported", problems)
        self.assertIn("keda_gpu_scaler_gpu_nodes is not exported", problems)
        self.assertIn("variable node", problems)
        self.assertRegex(problems, r"keda_gpu_scaler_x\w+ is not exported")

        # A histogram's family name, a counter without rate, rate of a gauge.
        wrong = copy.deepcopy(self.dash)
        ts = [p for p in all_panels(wrong) if p["type"] == "timeseries"]
        ts[0]["targets"][0]["expr"] = \
            "histogram_quantile(0.99, rate(keda_gpu_scaler_scaler_request_duration_seconds[5m]))"
        ts[1]["targets"][0]["expr"] = "keda_gpu_scaler_scaler_requests_total"
        ts[2]["targets"][0]["expr"] = "rate(keda_gpu_scaler_gpu_temperature_celsius[5m])"
        _, used, applied = check_dashboard(wrong)
        problems = "\n".join(check_against_scrape(used, applied, self.samples, self.types))
        self.assertIn("is a histogram family", problems)
        self.assertIn("counter keda_gpu_scaler_scaler_requests_total read without rate", problems)
        self.assertIn("rate() of keda_gpu_scaler_gpu_temperature_celsius, a gauge", problems)

        # A foreign metric (node-exporter's, DCGM's) is an error without any scrape.
        foreign = copy.deepcopy(self.dash)
        next(p for p in all_panels(foreign) if p["type"] == "stat")["targets"][0]["expr"] = \
            'avg(DCGM_FI_DEV_GPU_UTIL{node=~"$node"})'
        structural, _, _ = check_dashboard(foreign)
        self.assertTrue(any("DCGM_FI_DEV_GPU_UTIL" in p for p in structural), structural)

    def test_the_scenario_exercises_gpm_nvlink_and_mig(self):
        for name in ("keda_gpu_scaler_gpu_sm_active_percent", "keda_gpu_scaler_gpu_nvlink_throughput_mbps",
                     "keda_gpu_scaler_mig_sm_active_percent", "keda_gpu_scaler_mig_memory_used_bytes",
                     "keda_gpu_scaler_sources", "keda_gpu_scaler_nvml_driver_info"):
            self.assertIn(name, self.samples)
        nodes = {re.search(r'node="([^"]*)"', l).group(1)
                 for l, _ in self.samples["keda_gpu_scaler_gpu_health"]}
        self.assertEqual(nodes, {"dash-node"})


if __name__ == "__main__":
    unittest.main(verbosity=2)
