#!/usr/bin/env python3
"""Issue 16, HTTP/2 amplification beyond nghttp2's built-in limits: HPACK
references to a 4 KB dynamic-table entry (one request of 147 KB decoding to
~600 MB of headers), a connection whose headers decode to hundreds of times
what it sent, and request bodies held open without END_STREAM on many
streams. Each probe runs on a fresh server (peak RSS is a per-process
figure) with an honest KEDA-like caller polling meanwhile (grpc-go,
kedaclient load), and prints peak RSS, server CPU and the honest p99.

The attacker speaks raw HTTP/2 over a socket: HPACK is encoded by hand (an
integer with an N-bit prefix, string literals without Huffman), and the
body flood respects flow control, sending only what the server's windows
allow: the point is what the server lets itself hold, not a protocol
error. Loopback only, bounded in count and time.

Environment (CTest): KEDA_GPU_SCALER, NVML_SIM_LIBRARY, KGS_GO_CLIENT.
"""
import select
import socket
import struct
import time
import unittest

import test_faults as tf
from kgs_util import cpu_seconds, proc_status_kib
from test_faults import PREFACE, SETTINGS, SLOW, WRAPPER, Honest, closed_within, frame

DATA, HEADERS, RST_STREAM, SETTINGS_T, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = \
    0, 1, 3, 4, 6, 7, 8, 9
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
FRAME_MAX = 16384  # SETTINGS_MAX_FRAME_SIZE's default


def hpack_int(value, prefix_bits, first=0):
    """An HPACK integer (RFC 7541, 5.1) in the low prefix_bits of a first
    byte whose high bits are `first`."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = bytearray([first | limit])
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def hpack_str(s):
    """A string literal, not Huffman-coded (H = 0)."""
    return hpack_int(len(s), 7) + s


def request_block(path):
    """A gRPC request's headers, indexing nothing: :method POST (static 3),
    :scheme http (6), :path literal (name 4), :authority localhost (name 1),
    content-type application/grpc (name 31)."""
    return (bytes([0x83, 0x86]) + hpack_int(4, 4) + hpack_str(path) +
            hpack_int(1, 4) + hpack_str(b"localhost") +
            hpack_int(31, 4) + hpack_str(b"application/grpc"))


# A literal with incremental indexing and a new name: 4,035 bytes of the
# 4,096 HTTP/2 lets a peer assume before its SETTINGS are acknowledged;
# afterwards the newest dynamic entry is index 62, one byte to reference.
BIG_ENTRY = bytes([0x40]) + hpack_str(b"x-a") + hpack_str(b"a" * 4000)
BIG_REF = bytes([0x80 | 62])


class Peer:
    """One raw HTTP/2 client connection: frames out, and what the server
    sends read and tracked (its SETTINGS, flow-control windows, resets,
    GOAWAY). `ack_settings`: whether its SETTINGS are acknowledged (an
    attacker that never does keeps the 4 KB header table in force)."""

    def __init__(self, port, ack_settings=True):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.ack_settings = ack_settings
        self.buf = b""
        self.settings = None
        self.conn_window = 65535
        self.stream_windows = {}
        self.reset = set()
        self.goaway = None
        self.closed = False
        self.sock.sendall(PREFACE + SETTINGS)

    def close(self):
        self.sock.close()

    def send(self, data):
        try:
            self.sock.sendall(data)
        except OSError:
            self.closed = True

    def pump(self, timeout=0.0):
        """Reads what the server has sent within timeout seconds."""
        end = time.monotonic() + timeout
        while not self.closed:
            left = max(0.0, end - time.monotonic())
            r, _, _ = select.select([self.sock], [], [], left)
            if not r:
                return
            try:
                data = self.sock.recv(1 << 20)
            except OSError:
                data = b""
            if not data:
                self.closed = True
                return
            self.buf += data
            self._frames()
            timeout = 0
            end = time.monotonic()

    def _frames(self):
        while len(self.buf) >= 9:
            n = int.from_bytes(self.buf[:3], "big")
            if len(self.buf) < 9 + n:
                return
            ftype, flags = self.buf[3], self.buf[4]
            sid = int.from_bytes(self.buf[5:9], "big") & 0x7fffffff
            payload = self.buf[9:9 + n]
            self.buf = self.buf[9 + n:]
            if ftype == SETTINGS_T and not flags & ACK:
                self.settings = {}
                for i in range(0, len(payload), 6):
                    key, val = struct.unpack(">HI", payload[i:i + 6])
                    self.settings[key] = val
                if self.ack_settings:
                    self.send(frame(SETTINGS_T, ACK, 0))
            elif ftype == WINDOW_UPDATE:
                inc = int.from_bytes(payload[:4], "big") & 0x7fffffff
                if sid == 0:
                    self.conn_window += inc
                elif sid in self.stream_windows:
                    self.stream_windows[sid] += inc
            elif ftype == RST_STREAM:
                self.reset.add(sid)
            elif ftype == GOAWAY:
                self.goaway = int.from_bytes(payload[4:8], "big")
            elif ftype == PING and not flags & ACK:
                self.send(frame(PING, ACK, 0, payload))

    def wait_settings(self, timeout=5.0):
        end = time.monotonic() + timeout
        while self.settings is None and time.monotonic() < end and not self.closed:
            self.pump(0.1)
        if self.settings is None:
            raise AssertionError("no SETTINGS from the server")
        return self.settings

    def header_block(self, sid, block, end_stream):
        """HEADERS, then CONTINUATION frames of at most FRAME_MAX bytes."""
        chunks = [block[i:i + FRAME_MAX] for i in range(0, len(block), FRAME_MAX)] or [b""]
        out = []
        for i, chunk in enumerate(chunks):
            flags = END_HEADERS if i == len(chunks) - 1 else 0
            if i == 0:
                out.append(frame(HEADERS, flags | (END_STREAM if end_stream else 0), sid, chunk))
            else:
                out.append(frame(CONTINUATION, flags, sid, chunk))
        self.send(b"".join(out))


class HostileHttp2(unittest.TestCase):
    """Each probe: a fresh server, kedaclient polling meanwhile; peak RSS
    under 32 MiB (the chart's limits are 128 Mi agent, 256 Mi aggregator;
    the probes peak at 5-7 MiB), no honest call failing or waiting a
    second."""

    PEAK_KIB = 32 * 1024
    server = tf.MetadataBudgets.server
    metric = tf.MetadataBudgets.metric
    figures = tf.MetadataBudgets.figures
    assert_bounded = tf.MetadataBudgets.assert_bounded

    def refusals(self, s, limit):
        return self.metric(s, "limit_refusals_total", '{limit="%s"}' % limit)

    def test_hpack_references_to_a_4_kb_entry_stop_at_the_header_list_cap(self):
        """10 requests of 147 KB (a HEADERS and 8 CONTINUATION frames, the
        most nghttp2 takes) of one-byte references to a 4 KB entry, from a
        peer that never acknowledges our SETTINGS (so the 4 KB table stays):
        each decoded to ~600 MB of header fields that nghttp2 validated
        byte by byte, 289 ms of CPU a request. Now each stream is reset
        once its header list passes 16 KiB and the rest is only decoded."""
        s = self.server()
        cpu0 = cpu_seconds(s.proc.pid)
        honest = Honest(self, s, 5)
        time.sleep(0.5)
        p = Peer(s.port, ack_settings=False)
        self.addCleanup(p.close)
        p.wait_settings()
        size = FRAME_MAX * 9  # 147,456 bytes
        cpu1 = cpu_seconds(s.proc.pid)
        t0 = time.monotonic()
        for i in range(10):
            head = request_block(b"/") + (BIG_ENTRY if i == 0 else b"")
            p.header_block(2 * i + 1, head + BIG_REF * (size - len(head)), True)
            p.pump(0)
        while time.monotonic() - t0 < 10 * SLOW and len(p.reset) < 10 and not p.closed:
            p.pump(0.1)
        attack_cpu = cpu_seconds(s.proc.pid) - cpu1
        time.sleep(max(0.0, 5.5 - (time.monotonic() - t0)))
        f = self.figures(s, cpu0, honest)
        print("    10 x 147 KB of HPACK references: server CPU %.3f s (%.1f ms a request), "
              "%d streams reset" % (attack_cpu, attack_cpu * 100, len(p.reset)), flush=True)
        self.assertEqual(len(p.reset), 10, "every stream reset at the header-list cap")
        self.assertIsNone(p.goaway)
        if not WRAPPER and not tf.SANITIZED:
            self.assertLess(attack_cpu, 0.3)  # 2.9 s before (289 ms a request)
        self.assert_bounded(f)
        self.assertEqual(self.refusals(s, "header-list-bytes"), 10)

    def test_headers_decoding_to_hundreds_of_times_their_size_end_the_connection(self):
        """Streams of four references each stay under the header-list cap
        (16 KiB) but decode to ~430 bytes a byte: past 64 a byte (a compliant
        client, with no dynamic table offered, stays under 60) the
        connection gets GOAWAY ENHANCE_YOUR_CALM and is closed."""
        s = self.server()
        cpu0 = cpu_seconds(s.proc.pid)
        honest = Honest(self, s, 3)
        p = Peer(s.port, ack_settings=False)
        self.addCleanup(p.close)
        p.wait_settings()
        cpu1 = cpu_seconds(s.proc.pid)
        p.header_block(1, request_block(b"/") + BIG_ENTRY, True)
        burst = []
        for i in range(1, 2001):
            burst.append(frame(HEADERS, END_HEADERS | END_STREAM, 2 * i + 1,
                               request_block(b"/") + BIG_REF * 4))
        p.send(b"".join(burst))
        took = closed_within(p.sock, 5 * SLOW)
        attack_cpu = cpu_seconds(s.proc.pid) - cpu1
        f = self.figures(s, cpu0, honest)
        print("    2,000 streams of 4 references: closed after %s s, server CPU %.3f s"
              % (None if took is None else "%.2f" % took, attack_cpu), flush=True)
        self.assertIsNotNone(took, "the amplifying connection was not closed")
        self.assertEqual(self.refusals(s, "hpack-amplification"), 1)
        if not WRAPPER and not tf.SANITIZED:
            self.assertLess(attack_cpu, 0.3)
        self.assert_bounded(f)

    def flood(self, port, streams, seconds):
        """Opens `streams` GetMetrics streams whose messages declare 65,536
        bytes (the default --max-request-bytes) and sends their bodies without
        END_STREAM, as far as the server's windows let it, for at most
        `seconds` (or until a second without progress). Returns the peer and
        the bytes sent."""
        p = Peer(port)
        self.addCleanup(p.close)
        p.wait_settings()
        p.pump(0.2)  # our ACK out; the connection's WINDOW_UPDATE in
        init = p.settings.get(4, 65535)
        prefix = b"\x00" + struct.pack(">I", 65536)
        left = {}
        block = bytes([0x20]) + request_block(b"/externalscaler.ExternalScaler/GetMetrics")
        for i in range(streams):
            sid = 2 * i + 1
            p.header_block(sid, block, False)
            p.stream_windows[sid] = init
            left[sid] = 5 + 65536
        sent, body = 0, b"\x00" * FRAME_MAX
        end = time.monotonic() + seconds
        idle_since = time.monotonic()
        while time.monotonic() < end and not p.closed and left:
            out = []
            for sid in list(left):
                if sid in p.reset:
                    del left[sid]
                    continue
                n = min(left[sid], p.stream_windows[sid], p.conn_window, FRAME_MAX)
                if n <= 0:
                    continue
                first = left[sid] == 5 + 65536
                payload = (prefix + body)[:n] if first else body[:n]
                out.append(frame(DATA, 0, sid, payload))
                left[sid] -= n
                p.stream_windows[sid] -= n
                p.conn_window -= n
                sent += n
                if left[sid] == 0:
                    del left[sid]
                if len(out) >= 64:
                    break
            if out:
                p.send(b"".join(out))
                idle_since = time.monotonic()
                p.pump(0)
            else:
                if time.monotonic() - idle_since > 1.0:
                    break
                p.pump(0.05)
        return p, sent

    def test_bodies_without_end_stream_are_held_within_the_buffer_budget(self):
        """1,000 streams, each a 64 KiB message sent whole but never ended:
        the server held every one (131 MB of buffers at twice their size,
        bounded only by the 10 s request timer). Now a connection may hold
        1 MiB (--max-buffered-bytes-per-connection), which is also its HTTP/2
        window: the peer is flow-controlled, and a request that would go
        beyond is refused."""
        s = self.server()
        cpu0 = cpu_seconds(s.proc.pid)
        honest = Honest(self, s, 6)
        time.sleep(0.5)
        p, sent = self.flood(s.port, 1000, 4 * SLOW)
        f = self.figures(s, cpu0, honest)
        held = self.metric(s, "request_buffered_bytes")
        print("    1,000 open 64 KiB bodies: %.1f MB sent, %.2f MiB buffered, %d streams "
              "refused" % (sent / 1e6, held / 1048576, len(p.reset)), flush=True)
        self.assertFalse(p.closed, "flow control kept: the connection stays")
        self.assertLessEqual(held, 1024 * 1024)
        self.assertLessEqual(sent, 1024 * 1024 + 65535 + 64 * (5 + 65536))
        self.assert_bounded(f)
        refused = self.refusals(s, "max-buffered-bytes-per-connection")
        self.assertEqual(refused, len(p.reset))

    def test_bodies_over_many_connections_are_held_within_the_server_budget(self):
        """Six connections of 1 MiB windows against a 2 MiB server budget:
        what they hold stays at the budget (those holding more than 16 KiB
        are refused), and KEDA's connection, holding a few hundred bytes at
        a time, is never refused."""
        s = self.server("--max-buffered-bytes", "2097152")
        cpu0 = cpu_seconds(s.proc.pid)
        honest = Honest(self, s, 6)
        time.sleep(0.5)
        peers = [self.flood(s.port, 40, 0.6 * SLOW)[0] for _ in range(6)]
        for p in peers:
            p.pump(0.3)  # the last resets
        f = self.figures(s, cpu0, honest)
        held = self.metric(s, "request_buffered_bytes")
        refused = self.refusals(s, "max-buffered-bytes")
        print("    6 connections x 40 open 64 KiB bodies: %.2f MiB buffered, %d refused by "
              "the server budget" % (held / 1048576, refused), flush=True)
        self.assertLessEqual(held, 2 * 1024 * 1024)
        self.assertGreater(refused, 0)
        self.assertEqual(refused + self.refusals(s, "max-buffered-bytes-per-connection"),
                         sum(len(p.reset) for p in peers))
        self.assert_bounded(f)


if __name__ == "__main__":
    unittest.main(verbosity=2)
