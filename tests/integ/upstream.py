#!/usr/bin/env python3
"""upstream.py: loopback test servers for the egressd integration tests
(python3 standard library only).  One thread per connection.

Kinds:
  echo     echo every byte back; after the client's EOF, finish echoing,
           shut down the write side and close (half-close aware).
  eofecho  read until the client's EOF, then send everything back and
           close (proves a half-close reached the upstream).
  banner   a server that speaks first: send "220 banner.test ready\r\n"
           at once, then behave as eofecho.
  hold     read until the client's EOF, then keep the connection open
           without a word (until --hold seconds pass, default 60).
  late     read until the client's EOF, then send "late 1\n" .. "late 3\n"
           --delay seconds apart (default 0.5), then close.
  http     HTTP/1.1 origin server: every response body names the method,
           the path, the request body's length and SHA-256, and every
           request header received, one per line ("h: Name: value").
           /chunked answers chunked, /close close-delimited (/closebigN
           with N more bytes; /resetmid the same, then a reset instead
           of the close), anything else
           with Content-Length; keep-alive; request bodies with
           Content-Length or chunked.  /cclose answers with Content-Length
           and "Connection: close", /http10 as HTTP/1.0 without
           keep-alive, and both then keep the connection open anyway (a
           proxy must not reuse it).  With --count-file, accepted
           connections are counted as for "count"; with --idle-close S,
           a connection idle S seconds between requests is closed; with
           --drop-after N, the request after the N-th on a connection is
           read and the connection closed without an answer (a server that
           closed a kept-alive connection just as a request came); with
           --req-log F, every request line received is appended to F.
  count    like echo, but counts accepted connections into --count-file
           (rewritten after each accept).
  tls      TLS server with a fresh self-signed certificate (CN and SAN
           up.test, written to --cert/--key); HTTP when the first bytes
           look like a request, else echo.
  sink     read and discard until EOF, then write "LEN SHA256\\n" to
           --report (if given) and close.
  source   send --bytes N pseudo-random bytes (seeded by --seed), then
           close; writes their SHA256 to --report.
  backlog  a listener that never accepts, with its accept queue filled,
           so connects to it hang (for connect_timeout).
  dns      UDP DNS stub on ADDR:PORT: names given with --a NAME=IP get
           their A/AAAA records (an empty answer for the other type), every
           other name NXDOMAIN; queries are logged to DIR/dns-queries.log.

Prints "READY" on standard output once it serves.
"""
import argparse
import hashlib
import os
import random
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time

A = None
count_lock = threading.Lock()
count = 0


def ready():
    print("READY", flush=True)


def echo(s, first=b""):
    try:
        if first:
            s.sendall(first)
        while True:
            d = s.recv(65536)
            if not d:
                break
            s.sendall(d)
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
    except (OSError, ssl.SSLError):
        pass
    finally:
        s.close()


def eofecho(s, first=b""):
    got = bytearray()
    try:
        if first:
            s.sendall(first)
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
        s.sendall(b"EOF after %d bytes:" % len(got) + bytes(got))
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        s.close()


def read_to_eof(s):
    n = 0
    while True:
        d = s.recv(65536)
        if not d:
            return n
        n += len(d)


def hold(s):
    try:
        read_to_eof(s)
        time.sleep(A.hold)
    except OSError:
        pass
    finally:
        s.close()


def late(s):
    try:
        read_to_eof(s)
        for i in (1, 2, 3):
            time.sleep(A.delay)
            s.sendall(b"late %d\n" % i)
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        s.close()


class Reader:
    """Buffered reads over a socket, with a pre-read prefix."""

    def __init__(self, s, first=b""):
        self.s = s
        self.buf = bytearray(first)

    def fill(self):
        d = self.s.recv(65536)
        if not d:
            return False
        self.buf += d
        return True

    def line(self):
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                ln = bytes(self.buf[:i + 1])
                del self.buf[:i + 1]
                return ln
            if not self.fill():
                return None

    def exact(self, n):
        while len(self.buf) < n:
            if not self.fill():
                return None
        d = bytes(self.buf[:n])
        del self.buf[:n]
        return d

    def head(self):
        while True:
            i = self.buf.find(b"\r\n\r\n")
            if i >= 0:
                h = bytes(self.buf[:i + 4])
                del self.buf[:i + 4]
                return h
            if len(self.buf) > 1 << 20 or not self.fill():
                return None


def http(s, first=b""):
    r = Reader(s, first)
    served = 0
    try:
        while True:
            if A.idle_close and not r.buf:
                s.settimeout(A.idle_close)
                try:
                    if not r.fill():
                        break
                except socket.timeout:
                    break
                s.settimeout(None)
            head = r.head()
            if head is None:
                break
            if A.req_log:
                with count_lock, open(A.req_log, "a") as f:
                    f.write(head.split(b"\r\n", 1)[0].decode("latin-1") +
                            "\n")
            if A.drop_after and served >= A.drop_after:
                break
            served += 1
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) != 3:
                s.sendall(b"HTTP/1.1 400 Bad Request\r\n"
                          b"Content-Length: 0\r\nConnection: close\r\n\r\n")
                break
            method, path, ver = parts
            hdrs = []
            for ln in lines[1:]:
                if not ln:
                    continue
                k, _, v = ln.partition(":")
                hdrs.append((k.strip(), v.strip()))
            lk = {k.lower(): v for k, v in hdrs}
            body = b""
            if lk.get("expect", "").lower() == "100-continue":
                s.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            if "chunked" in lk.get("transfer-encoding", "").lower():
                while True:
                    szl = r.line()
                    if szl is None:
                        return
                    sz = int(szl.split(b";")[0].strip(), 16)
                    if sz == 0:
                        while True:  # trailers
                            t = r.line()
                            if t is None or t in (b"\r\n", b"\n"):
                                break
                        break
                    d = r.exact(sz)
                    if d is None:
                        return
                    body += d
                    r.exact(2)
            elif "content-length" in lk:
                body = r.exact(int(lk["content-length"]))
                if body is None:
                    return
            conn = lk.get("connection", "").lower()
            keep = ver == "HTTP/1.1" and "close" not in conn
            out = ["method: %s" % method, "path: %s" % path,
                   "version: %s" % ver, "body-len: %d" % len(body),
                   "body-sha256: %s" % hashlib.sha256(body).hexdigest()]
            out += ["h: %s: %s" % kv for kv in hdrs]
            payload = ("\n".join(out) + "\n").encode("latin-1")
            if path.startswith("/big"):
                payload += b"x" * (int(path[4:] or "1048576"))
            elif path.startswith("/closebig"):  # close-delimited, large
                payload += b"x" * (int(path[9:] or "1048576"))
            if method == "HEAD":
                s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n"
                          % len(payload))
                if not keep:
                    break
                continue
            if path.startswith("/chunked"):
                resp = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                if not keep:
                    resp += b"Connection: close\r\n"
                resp += b"\r\n"
                mid = len(payload) // 2
                for piece in (payload[:mid], payload[mid:]):
                    if piece:
                        resp += b"%x\r\n" % len(piece) + piece + b"\r\n"
                resp += b"0\r\n\r\n"
                s.sendall(resp)
            elif path.startswith("/cclose") or path.startswith("/http10"):
                ver_out = b"HTTP/1.0" if path.startswith("/http10") \
                    else b"HTTP/1.1"
                resp = (ver_out + b" 200 OK\r\nContent-Length: %d\r\n"
                        % len(payload))
                if ver_out == b"HTTP/1.1":
                    resp += b"Connection: close\r\n"
                s.sendall(resp + b"\r\n" + payload)
                continue    # and keep the connection open all the same
            elif path.startswith("/resetmid"):
                # a close-delimited answer cut short by a reset
                s.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n"
                          b"Content-Type: text/plain\r\n\r\n" + payload)
                time.sleep(0.3)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                             struct.pack("ii", 1, 0))
                s.close()
                return
            elif path.startswith("/close"):
                s.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n"
                          b"Content-Type: text/plain\r\n\r\n" + payload)
                break
            else:
                resp = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                        b"Content-Length: %d\r\n" % len(payload))
                if not keep:
                    resp += b"Connection: close\r\n"
                s.sendall(resp + b"\r\n" + payload)
            if not keep:
                break
    except (OSError, ssl.SSLError, ValueError):
        pass
    finally:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()


def sink(s):
    h = hashlib.sha256()
    n = 0
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            n += len(d)
            h.update(d)
    except OSError:
        pass
    if A.report:
        with open(A.report + ".tmp", "w") as f:
            f.write("%d %s\n" % (n, h.hexdigest()))
        os.rename(A.report + ".tmp", A.report)
    s.close()


def source(s):
    rnd = random.Random(A.seed)
    h = hashlib.sha256()
    left = A.bytes
    try:
        while left > 0:
            d = rnd.randbytes(min(left, 65536))
            h.update(d)
            s.sendall(d)
            left -= len(d)
        s.shutdown(socket.SHUT_WR)
        # wait for the client to finish before closing
        s.settimeout(30)
        while s.recv(65536):
            pass
    except OSError:
        pass
    if A.report:
        with open(A.report, "w") as f:
            f.write("%d %s\n" % (A.bytes, h.hexdigest()))
    s.close()


def looks_http(b):
    return b[:8].split(b" ")[0] in (b"GET", b"HEAD", b"POST", b"PUT",
                                     b"DELETE", b"OPTIONS")


def tls_conn(ctx, s):
    try:
        s.settimeout(30)
        t = ctx.wrap_socket(s, server_side=True)
        first = t.recv(65536)
        if not first:
            t.close()
            return
        if looks_http(first):
            http(t, first)
        else:
            echo(t, first)
    except (OSError, ssl.SSLError):
        s.close()


def make_cert():
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
         "-days", "2", "-subj", "/CN=up.test",
         "-addext", "subjectAltName=DNS:up.test",
         "-keyout", A.key, "-out", A.cert],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def listener(backlog=1024):
    fam = socket.AF_INET6 if ":" in A.addr else socket.AF_INET
    ls = socket.socket(fam, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((A.addr, A.port))
    ls.listen(backlog)
    return ls


def count_accept():
    global count
    with count_lock:
        count += 1
        with open(A.count_file + ".tmp", "w") as f:
            f.write("%d\n" % count)
        os.rename(A.count_file + ".tmp", A.count_file)


def serve_backlog():
    ls = listener(0)
    held = []
    # fill the accept queue (and the SYN queue behind it) until a
    # connect no longer completes
    for _ in range(64):
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        c.setblocking(False)
        try:
            c.connect((A.addr, A.port))
        except BlockingIOError:
            pass
        held.append(c)
        import select
        _, w, _ = select.select([], [c], [], 0.3)
        if not w:
            break
    ready()
    while True:
        time.sleep(3600)


def serve_dns():
    answers = {}
    for a in A.a or []:
        name, _, ip = a.partition("=")
        answers.setdefault(name.lower().rstrip("."), []).append(ip)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((A.addr, A.port))
    ready()
    while True:
        q, peer = s.recvfrom(4096)
        if len(q) < 17:
            continue
        # the question: labels, then QTYPE and QCLASS
        i, labels = 12, []
        try:
            while q[i]:
                labels.append(q[i + 1:i + 1 + q[i]].decode("latin-1"))
                i += 1 + q[i]
            qend = i + 5
            qtype = int.from_bytes(q[i + 1:i + 3], "big")
        except IndexError:
            continue
        name = ".".join(labels).lower()
        with open(os.path.join(A.dir, "dns-queries.log"), "a") as f:
            f.write("%s %d\n" % (name, qtype))
        ans = b""
        n = 0
        rcode = 3
        if name in answers:
            rcode = 0
            for ip in answers[name]:
                fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
                want = 28 if fam == socket.AF_INET6 else 1
                if qtype != want:
                    continue
                rd = socket.inet_pton(fam, ip)
                ans += (b"\xc0\x0c" + want.to_bytes(2, "big") +
                        b"\x00\x01\x00\x00\x00\x3c" +
                        len(rd).to_bytes(2, "big") + rd)
                n += 1
        # same id, QR=1, opcode and RD copied, RA=1, RCODE
        flags = bytes([0x80 | (q[2] & 0x79), 0x80 | rcode])
        s.sendto(q[:2] + flags + b"\x00\x01" + n.to_bytes(2, "big") +
                 b"\0\0\0\0" + q[12:qend] + ans, peer)


def main():
    global A
    p = argparse.ArgumentParser()
    p.add_argument("kind", choices=["echo", "eofecho", "http", "count",
                                    "tls", "sink", "banner", "hold", "late",
                                    "source", "backlog", "dns"])
    p.add_argument("--addr", default="127.0.0.3")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--dir", default=".")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--count-file")
    p.add_argument("--report")
    p.add_argument("--bytes", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--hold", type=float, default=60)
    p.add_argument("--delay", type=float, default=0.5)
    p.add_argument("--req-log")
    p.add_argument("--drop-after", type=int, default=0,
                   help="http: close without answering the request after "
                   "the N-th on a connection")
    p.add_argument("--idle-close", type=float, default=0,
                   help="http: close a connection idle this many seconds")
    p.add_argument("--a", action="append",
                   help="dns: NAME=IP to answer (A or AAAA); else NXDOMAIN")
    A = p.parse_args()
    if A.kind == "backlog":
        return serve_backlog()
    if A.kind == "dns":
        return serve_dns()
    ctx = None
    if A.kind == "tls":
        A.cert = A.cert or os.path.join(A.dir, "up.crt")
        A.key = A.key or os.path.join(A.dir, "up.key")
        make_cert()
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(A.cert, A.key)
    if A.count_file:
        with open(A.count_file, "w") as f:
            f.write("0\n")
    ls = listener()
    ready()
    while True:
        s, _ = ls.accept()
        if A.count_file:
            count_accept()
        if A.kind == "count":
            fn, args = echo, (s,)
        elif A.kind == "echo":
            fn, args = echo, (s,)
        elif A.kind == "eofecho":
            fn, args = eofecho, (s,)
        elif A.kind == "banner":
            fn, args = eofecho, (s, b"220 banner.test ready\r\n")
        elif A.kind == "hold":
            fn, args = hold, (s,)
        elif A.kind == "late":
            fn, args = late, (s,)
        elif A.kind == "http":
            fn, args = http, (s,)
        elif A.kind == "sink":
            fn, args = sink, (s,)
        elif A.kind == "source":
            fn, args = source, (s,)
        else:
            fn, args = tls_conn, (ctx, s)
        threading.Thread(target=fn, args=args, daemon=True).start()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
