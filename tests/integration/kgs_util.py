"""Small helpers the integration tests and benchmarks share: free loopback
ports, polling for a condition, HTTP probes."""
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
