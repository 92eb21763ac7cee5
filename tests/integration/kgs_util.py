"""Helpers every integration test, deploy test and benchmark shares, so each
is written (and fixed) once:

  where and how    SOURCE_DIR, timeout_multiplier
  ports and waits  free_port, wait_for
  HTTP probes      http_ok, http_get
  processes        child_env, scaler_command, stop_process, ServerProcess
  KEDA's client    md_args, Streaming (kedaclient's JSON lines as they arrive)
  /proc figures    cpu_seconds, proc_status_kib

Scripts outside tests/integration put this folder on sys.path first.
"""
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request


# ---- where and how ----

# The repository: KGS_SOURCE_DIR (set by CTest), else derived from this file.
SOURCE_DIR = os.environ.get("KGS_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def timeout_multiplier():
    """KGS_TEST_TIMEOUT_MULTIPLIER (slow machines stretch every bound), 1 when unset."""
    return float(os.environ.get("KGS_TEST_TIMEOUT_MULTIPLIER", "1") or "1")


# ---- ports and waits ----

def free_port(host="127.0.0.1"):
    """A port free on host now (bound and released)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_for(fn, timeout, interval=0.05):
    """fn()'s first truthy value within timeout seconds, or None."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(interval)
    return None


# ---- HTTP probes ----

def http_ok(port, path):
    """True when http://127.0.0.1:port/path answers 200."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=1) as r:
            return r.status == 200
    except Exception:
        return False


def http_get(port, path, timeout=2.0):
    """(status, body text) of http://127.0.0.1:port/path; (None, why) when
    nothing answered."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as e:
        return None, str(e)


# ---- processes ----

def child_env(path="/usr/bin:/bin", scenario=None, **extra):
    """A clean environment for a program under test: PATH, this process's
    sanitizer options (ASAN_OPTIONS, UBSAN_OPTIONS, LSAN_OPTIONS) so a
    sanitizer build behaves the same in the child, the NVML stand-in's
    scenario when given, then extra variables (which win)."""
    env = {"PATH": path}
    env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
    if scenario is not None:
        env["NVML_SIM_SCENARIO"] = scenario
    env.update(extra)
    return env


def scaler_command(binary, port, probe_port, metrics_port=0, role=None, nvml_library=None,
                   sample_interval="200ms", extra=()):
    """keda-gpu-scaler's command line on loopback: gRPC on port, probes on
    probe_port, /metrics on metrics_port (0: off), then extra."""
    cmd = [binary]
    if role:
        cmd += ["--role", role]
    cmd += ["--listen-address", "127.0.0.1", "--port", str(port), "--probe-port", str(probe_port),
            "--metrics-port", str(metrics_port)]
    if nvml_library:
        cmd += ["--nvml-library", nvml_library]
    if sample_interval:
        cmd += ["--sample-interval", sample_interval]
    return cmd + list(extra)


def stop_process(p, timeout=5.0):
    """SIGTERM, then SIGKILL when p has not exited within timeout seconds;
    returns its exit status (negative: the signal that ended it)."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)
    return p.returncode


class ServerProcess:
    """A server under test: its process (wrapper + cmd), its output in a log
    file (log_path, or a temporary file removed by close_log), and the ways
    to wait for it and stop it. Subclasses add what their tests ask of it."""

    def __init__(self, cmd, env, wrapper=(), log_path=None, stdin=None):
        if log_path:
            self.log = open(log_path, "w+")
            self._temp_log = False
        else:
            self.log = tempfile.NamedTemporaryFile(mode="w+", prefix="kgs-server-", suffix=".log",
                                                   delete=False)
            self._temp_log = True
        self.proc = subprocess.Popen(list(wrapper) + list(cmd), env=env, stdin=stdin,
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def output(self, limit=4000):
        """The last limit characters the server wrote."""
        try:
            self.log.flush()
            with open(self.log.name, errors="replace") as f:
                return f.read()[-limit:]
        except (OSError, ValueError):
            return ""

    def wait_http_ready(self, probe_port, timeout):
        """Waits for /readyz on probe_port to answer 200; fails (after stopping
        the server) when it exits first or the time runs out."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise AssertionError("server exited %d before ready:\n%s"
                                     % (self.proc.returncode, self.output()))
            if http_get(probe_port, "/readyz", timeout=1.0)[0] == 200:
                return
            time.sleep(0.05)
        self.stop()
        raise AssertionError("server not ready within %.0f s:\n%s" % (timeout, self.output()))

    def wait_tcp(self, port, timeout):
        """True once 127.0.0.1:port accepts a connection within timeout seconds."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    def stop(self, timeout=5.0):
        """SIGTERM, then SIGKILL after timeout; returns (exit status or None
        when it had to be killed, seconds taken)."""
        t0 = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                return None, time.monotonic() - t0
        return self.proc.returncode, time.monotonic() - t0

    def close_log(self):
        self.log.close()
        if self._temp_log:
            os.unlink(self.log.name)


# ---- KEDA's client (kedaclient, grpc-go) ----

def md_args(md):
    """kedaclient's -metadata flags for the dict md."""
    args = []
    for k, v in (md or {}).items():
        args += ["-metadata", "%s=%s" % (k, v)]
    return args


class Streaming:
    """A kedaclient run (client SUB -addr addr ... -max-time max_time) whose
    JSON lines are read as they arrive, each with its arrival time. `seen`
    holds every object read so far (for failure messages)."""

    def __init__(self, client, sub, addr, *args, md=None, max_time=60):
        cmd = [client, sub, "-addr", addr, "-max-time", "%ds" % max_time] + md_args(md)
        self.proc = subprocess.Popen(cmd + list(args), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.q = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if line.strip():
                self.q.put((time.monotonic(), json.loads(line)))
        self.q.put((time.monotonic(), None))

    def next(self, timeout):
        """(arrival time, object); fails on timeout or end of output."""
        try:
            t, obj = self.q.get(timeout=max(0.01, timeout))
        except queue.Empty:
            raise AssertionError("no output from kedaclient within %.1f s (seen: %s)"
                                 % (timeout, self.seen))
        if obj is None:
            raise AssertionError("kedaclient ended early: %s" % self.proc.stderr.read())
        self.seen.append(obj)
        return t, obj

    def until(self, result, deadline):
        """Reads StreamIsActive messages until one says `result` (True or
        False) before the monotonic deadline; (arrival time, object). Fails
        on the stream's end message or anything else that is not one."""
        while True:
            t, m = self.next(deadline - time.monotonic())
            if "end" in m:
                raise AssertionError("stream ended: %s %s" % (m, self.proc.stderr.read()))
            if "result" not in m:
                raise AssertionError("not a StreamIsActive message: %s" % m)
            if m["result"] is result:
                return t, m

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.proc.stdout.close()
        self.proc.stderr.close()


# ---- /proc figures ----

def cpu_seconds(pid):
    """User + system CPU seconds process pid has used."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status_kib(pid, key, missing=0):
    """A /proc/PID/status value in KiB (VmRSS, VmHWM) or a count (Threads);
    `missing` when absent."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return missing


class ProbedScaler(ServerProcess):
    """A standalone scaler on one simulated GPU for the probe tests (hostile
    sources, tenant budgets): its ports, its scenario and log in a temporary
    directory, started and polled until its GPU trigger answers. A subclass
    gives poll(md). close() stops it and fails on a sanitizer's report or,
    under a wrapper, a non-zero exit."""

    GPU_MD = {"metricType": "gpu_utilization", "targetValue": "50"}

    def __init__(self, server, nvml_library, args=(), wrapper=(), slow=1.0):
        from kgs_sim import Sim, device  # kgs_sim stands alone; imported where used
        self.tmp = tempfile.mkdtemp()
        self.sim = Sim({"devices": [device(0, gpu_util=30)]})
        self.wrapper = list(wrapper)
        self.port, self.probe, self.metrics = free_port(), free_port(), free_port()
        super().__init__(scaler_command(server, self.port, self.probe, self.metrics,
                                        nvml_library=nvml_library, extra=args),
                         child_env(scenario=self.sim.path), wrapper=self.wrapper,
                         log_path=os.path.join(self.tmp, "log"))
        self.wait_tcp(self.port, 15 * slow)
        self.stop_timeout = 10 * slow
        deadline = time.monotonic() + 10 * slow
        while "error" in self.poll(self.GPU_MD) and time.monotonic() < deadline:
            time.sleep(0.1)

    def metric(self, name, labels=""):
        """keda_gpu_scaler_<name><labels> on /metrics, or None."""
        status, body = http_get(self.metrics, "/metrics")
        self.metrics_ok = status == 200
        m = re.search(r"^keda_gpu_scaler_%s%s (\S+)$" % (name, re.escape(labels)), body or "",
                      re.M)
        return float(m.group(1)) if m else None

    def close(self):
        code, _ = self.stop(self.stop_timeout)
        text = self.output(3000)
        self.close_log()
        self.sim.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.wrapper and code != 0:
            raise AssertionError("server exited %s under %s:\n%s" % (code, self.wrapper[0], text))
        if "Sanitizer" in text or "runtime error:" in text:
            raise AssertionError("a sanitizer report in the server's output:\n" + text)

