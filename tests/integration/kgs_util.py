"""Small helpers the integration tests and benchmarks share: free loopback
ports, polling for a condition, HTTP probes."""
import os
import socket
import time
import urllib.request


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


def http_ok(port, path):
    """True when http://127.0.0.1:port/path answers 200."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=1) as r:
            return r.status == 200
    except Exception:
        return False


def cpu_seconds(pid):
    """User + system CPU seconds process pid has used."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status_kib(pid, key):
    """A /proc/PID/status value in KiB (VmRSS, VmHWM); 0 when absent."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0
