#!/usr/bin/env python3
"""hostile.py: hostile clients and counting upstreams for the egressd
hardening tests (python3 standard library only; loopback only).

usage: hostile.py COMMAND [OPTIONS]

Upstream:
  up --addr A --port P --count FILE [--log FILE] [--mode echo|http|stress]
      A counting server.  FILE holds "USES BYTES" (rewritten after each
      accept, each answer and each read): USES counts the connections
      accepted plus, in http mode, every request after the first on one
      connection (a proxy that reuses its upstream connections), so that
      it equals the requests a proxy let through either way.  --log appends every connection's
      received bytes, escaped, one line per read.  echo: echo bytes back;
      http: answer HTTP requests (200, Content-Length, "ok METHOD PATH"),
      else echo; stress: per connection at random echo, reset (SO_LINGER
      0) after the first bytes, or stall (never read).  Prints READY.

Clients (all print results on standard output):
  corpus --proxy A:P --file F --audit LOG [--var K=V]... [--up NAME=COUNT]...
      [--reach NAME] [--no-offbox]: run the bypass corpus (format in
      tests/data/bypass.txt), print "PASS desc", "FAIL desc", "SKIP name"
      and "DIAG text" lines; the TOTAL line counts the cases run.
  slowloris --proxy A:P --interval S --text T: send T one byte every S
      seconds; print "STATUS SECONDS" (STATUS "-" when none arrived).
  hold --proxy A:P --n N [--src ADDR] [--text T] [--secs S]: open N
      connections (bound to --src), send T on each, print "OPEN n" and
      the status line counts ("STATUS code count"), keep them S seconds.
  hello --proxy A:P --target H:P --file F|oversize [--chunk N]
      [--delay S] [--records N] [--early]: CONNECT, then send the
      ClientHello from F (or a generated one over 16 KiB) in pieces of N
      bytes with TCP_NODELAY (or re-framed into N TLS records; --early:
      in the same segment as the CONNECT head); print "CONNECT status",
      then "EOF n" (peer closed after n bytes back) or "OPEN n" (all
      echoed back, or still open after 1.5 s).
  slowreader --proxy A:P --target H:P --secs S: CONNECT, then never read
      for S seconds; print "CONNECT status".
  stress --proxy A:P --target H:P --n N --secs S [--seed K]: N concurrent
      tunnels for S seconds, each client leaving at a random point; print
      "DONE ok=... refused=... errors=...".
"""
import argparse
import asyncio
import os
import random
import re
import select
import socket
import struct
import sys
import time


# --- escapes -------------------------------------------------------------

def unescape(t):
    """\\r \\n \\t \\0 \\\\ \\xHH, and {{TEXT*N}} repetitions (outer first)."""
    def rep(m):
        return m.group(1) * int(m.group(2))
    t = re.sub(r"\{\{(.*?)\*(\d+)\}\}", rep, t)
    out = bytearray()
    b = t.encode("utf-8", "surrogateescape")
    i = 0
    while i < len(b):
        c = b[i]
        if c == 0x5c and i + 1 < len(b):
            n = chr(b[i + 1])
            if n in "rnt0\\":
                out += {"r": b"\r", "n": b"\n", "t": b"\t", "0": b"\0",
                        "\\": b"\\"}[n]
                i += 2
                continue
            if n == "x":
                out.append(int(b[i + 2:i + 4], 16))
                i += 4
                continue
        out.append(c)
        i += 1
    return bytes(out)


def esc(b):
    return "".join(chr(c) if 0x20 < c < 0x7f and c != 0x5c else
                   "\\x%02x" % c for c in b)


def hostport(s):
    h, _, p = s.rpartition(":")
    return h.strip("[]"), int(p)


def connect(proxy, src=None, timeout=5):
    h, p = hostport(proxy)
    s = socket.socket(socket.AF_INET6 if ":" in h else socket.AF_INET)
    s.settimeout(timeout)
    if src:
        s.bind((src, 0))
    s.connect((h, p))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


# --- upstream ------------------------------------------------------------

class Up:
    def __init__(self, a):
        self.a = a
        self.conns = 0
        self.bytes = 0
        self.rnd = random.Random(a.seed)
        self.write_count()

    def write_count(self):
        tmp = self.a.count + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d %d\n" % (self.conns, self.bytes))
        os.replace(tmp, self.a.count)

    def log(self, d):
        if self.a.log:
            with open(self.a.log, "a") as f:
                f.write(esc(d) + "\n")

    async def serve(self, r, w):
        self.conns += 1
        self.write_count()
        mode = self.a.mode
        if mode == "stress":
            mode = self.rnd.choice(["echo"] * 6 + ["reset", "stall"])
        try:
            if mode == "stall":
                await asyncio.sleep(3600)
                return
            buf = b""
            http = None
            nreq = 0
            while True:
                d = await r.read(65536)
                if not d:
                    break
                self.bytes += len(d)
                self.write_count()
                self.log(d)
                if mode == "reset":
                    sock = w.get_extra_info("socket")
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                    struct.pack("ii", 1, 0))
                    w.transport.abort()
                    return
                if http is None and mode == "http":
                    http = d.split(b" ", 1)[0] in (
                        b"GET", b"HEAD", b"POST", b"PUT", b"DELETE",
                        b"OPTIONS", b"PATCH")
                if not http:
                    w.write(d)
                    await w.drain()
                    continue
                buf += d
                while b"\r\n\r\n" in buf:
                    head, _, rest = buf.partition(b"\r\n\r\n")
                    lines = head.split(b"\r\n")
                    parts = lines[0].split(b" ")
                    hd = {}
                    for ln in lines[1:]:
                        k, _, v = ln.partition(b":")
                        hd[k.strip().lower()] = v.strip()
                    n = int(hd.get(b"content-length", b"0") or 0)
                    if len(rest) < n:
                        break
                    buf = rest[n:]
                    # a request line (not chunk framing, which this
                    # server does not parse) on a reused connection: one
                    # more use
                    if len(parts) == 3 and parts[2].startswith(b"HTTP/1."):
                        nreq += 1
                        if nreq > 1:
                            self.conns += 1
                            self.write_count()
                    body = b"ok " + b" ".join(parts[:2]) + b"\n"
                    close = b"close" in hd.get(b"connection", b"").lower()
                    w.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n"
                            b"%s\r\n" % (len(body), b"Connection: close\r\n"
                                         if close else b"") + body)
                    await w.drain()
                    if close:
                        w.close()
                        return
            w.close()
        except (OSError, asyncio.CancelledError):
            try:
                w.transport.abort()
            except Exception:
                pass


async def up_main(a):
    u = Up(a)
    fam = socket.AF_INET6 if ":" in a.addr else socket.AF_INET
    ls = socket.socket(fam)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((a.addr, a.port))
    ls.listen(4096)
    srv = await asyncio.start_server(u.serve, sock=ls, limit=1 << 20)
    print("READY", flush=True)
    async with srv:
        await srv.serve_forever()


# --- corpus --------------------------------------------------------------

DECISION = re.compile(r"^\S+ (ALLOW|BLOCK|FAIL) \S* ?.*\bid=(\d+)\b")
FAILS = {"dns_failure", "connect_failed", "connect_timeout"}


def load_corpus(path, var):
    cases = []
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        for ln in f:
            ln = ln.rstrip("\n")
            if not ln.strip() or ln.lstrip().startswith("#"):
                continue
            parts = ln.split(" | ", 2)
            if len(parts) != 3:
                sys.exit("hostile.py: bad corpus line: " + ln)
            name, expect, req = parts
            for k, v in var.items():
                req = req.replace("@%s@" % k, v)
            exp = []
            for e in expect.split(";"):
                st, reason = e.split()
                exp.append((int(st), reason))
            cases.append((name.strip(), exp, unescape(req)))
    return cases


def read_count(path):
    try:
        with open(path) as f:
            return [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return [0, 0]


def audit_events(path, off):
    """Lines after byte offset off: list of (event, id, reason, line)."""
    try:
        with open(path, "rb") as f:
            f.seek(off)
            data = f.read()
    except OSError:
        return []
    ev = []
    for ln in data.decode("utf-8", "replace").splitlines():
        parts = ln.split(" ")
        if len(parts) < 3:
            continue
        m = re.search(r" id=(\d+)", ln)
        r = re.search(r" reason=(\S+)", ln)
        ev.append((parts[1], m.group(1) if m else "?",
                   r.group(1) if r else "-", ln))
    return ev


def run_case(proxy, req, n_expect, timeout=4.0):
    """Send req; return (list of status codes, tunnel echo ok list, note)."""
    got = bytearray()
    statuses = []
    note = ""
    try:
        s = connect(proxy, timeout=timeout)
    except OSError as e:
        return statuses, "connect: %s" % e
    deadline = time.time() + timeout
    try:
        s.sendall(req)
        eof = False

        def more():
            nonlocal eof
            s.settimeout(max(0.01, deadline - time.time()))
            d = s.recv(65536)
            if not d:
                eof = True
                return False
            got.extend(d)
            return True

        while len(statuses) < n_expect and not eof:
            while b"\r\n\r\n" not in got and not eof:
                more()
            if b"\r\n\r\n" not in got:
                break
            head, _, rest = bytes(got).partition(b"\r\n\r\n")
            del got[:len(head) + 4]
            line = head.split(b"\r\n")[0]
            try:
                code = int(line.split(b" ")[1])
            except (IndexError, ValueError):
                note = "bad status line %r" % line
                break
            statuses.append(code)
            m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
            if m:
                n = int(m.group(1))
                while len(got) < n and not eof:
                    more()
                del got[:n]
            elif code == 200 and req.startswith(b"CONNECT"):
                # the tunnel: one round trip through the echo upstream
                s.sendall(b"ping\n")
                while len(got) < 5 and not eof:
                    more()
                if bytes(got[:5]) != b"ping\n":
                    note = "tunnel did not echo (%r)" % bytes(got[:40])
                del got[:5]
            else:
                while more():
                    pass
    except socket.timeout:
        note = note or "timeout"
    except OSError as e:
        note = note or "error: %s" % e
    finally:
        s.close()
    return statuses, note


def corpus_main(a):
    var = dict(v.split("=", 1) for v in a.var or [])
    ups = dict(v.split("=", 1) for v in a.up or [])
    reach = a.reach
    cases = load_corpus(a.file, var)
    off = os.path.getsize(a.audit) if os.path.exists(a.audit) else 0
    expected_reach = 0
    seen_names = set()
    for name, exp, req in cases:
        if name.startswith("!"):
            name = name[1:]
            if a.no_offbox:
                print("SKIP %s" % name)
                continue
        if name in seen_names:
            print("FAIL duplicate case name %s" % name)
        seen_names.add(name)
        want_allow = sum(1 for _, r in exp if r == "ALLOW")
        statuses, note = run_case(a.proxy, req, len(exp))
        # the audit: one decision per expected request, a CLOSE per ALLOW
        t_end = time.time() + 3
        while True:
            ev = audit_events(a.audit, off)
            dec = [e for e in ev if e[0] in ("ALLOW", "BLOCK", "FAIL")]
            ids = {e[1] for e in dec if e[0] == "ALLOW"}
            closed = {e[1] for e in ev if e[0] == "CLOSE"}
            if (len(dec) >= len(exp) and ids <= closed) or \
                    time.time() > t_end:
                break
            time.sleep(0.01)
        time.sleep(0.005)
        ev = audit_events(a.audit, off)
        dec = [e for e in ev if e[0] in ("ALLOW", "BLOCK", "FAIL")]
        off = os.path.getsize(a.audit)
        problems = []
        want_st = [st for st, _ in exp]
        if statuses != want_st:
            problems.append("status %s, expected %s" % (statuses, want_st))
        if note:
            problems.append(note)
        got_dec = [(e[0], e[2]) for e in dec]
        want_dec = [("ALLOW", "-") if r == "ALLOW" else
                    ("FAIL" if r in FAILS else "BLOCK", r) for _, r in exp]
        if got_dec != want_dec:
            problems.append("audit %s, expected %s" % (got_dec, want_dec))
        for e in ev:
            if e[0] == "CLOSE" and e[1] not in {d[1] for d in dec
                                                if d[0] == "ALLOW"}:
                problems.append("stray CLOSE: " + e[3])
        # no refused request may reach an upstream
        expected_reach += want_allow
        t_end = time.time() + 2
        while True:
            counts = {k: read_count(v)[0] for k, v in ups.items()}
            if counts.get(reach, 0) >= expected_reach or \
                    time.time() > t_end:
                break
            time.sleep(0.01)
        for k, n in counts.items():
            want = expected_reach if k == reach else 0
            if n != want:
                problems.append("upstream %s has %d uses, "
                                "expected %d" % (k, n, want))
                if k == reach:
                    expected_reach = n   # report each leak once
        desc = "%s: %s" % (name, "; ".join("%d %s" % e for e in exp))
        if problems:
            print("FAIL " + desc)
            print("DIAG   request: " + esc(req)[:300])
            for p in problems:
                print("DIAG   " + p)
            for e in ev:
                print("DIAG   audit: " + e[3][:300])
        else:
            print("PASS " + desc)
        sys.stdout.flush()
    print("TOTAL %d %d" % (len(seen_names), expected_reach))


# --- other clients -------------------------------------------------------

def read_status(s, timeout):
    got = b""
    s.settimeout(timeout)
    try:
        while b"\r\n\r\n" not in got:
            d = s.recv(4096)
            if not d:
                break
            got += d
    except (socket.timeout, OSError):
        pass
    m = re.match(rb"HTTP/1\.\d (\d{3})", got)
    return (m.group(1).decode() if m else "-"), got


def slowloris_main(a):
    s = connect(a.proxy)
    t0 = time.time()
    data = unescape(a.text)
    s.setblocking(False)
    got = b""
    for i in range(len(data) * 1000):
        b = data[i % len(data):i % len(data) + 1]
        try:
            s.send(b)
        except OSError:
            break
        r, _, _ = select.select([s], [], [], a.interval)
        if r:
            try:
                got = s.recv(4096)
            except OSError:
                got = b""
            break
        if time.time() - t0 > a.max:
            break
    m = re.match(rb"HTTP/1\.\d (\d{3})", got)
    print("%s %.2f" % (m.group(1).decode() if m else "-",
                       time.time() - t0))


def hold_main(a):
    socks = []
    codes = {}
    data = unescape(a.text) if a.text else b""
    for _ in range(a.n):
        try:
            s = connect(a.proxy, a.src, timeout=2)
            if data:
                s.sendall(data)
            socks.append(s)
        except OSError:
            codes["connect_error"] = codes.get("connect_error", 0) + 1
    print("OPEN %d" % len(socks), flush=True)
    if data:
        for s in socks:
            code, _ = read_status(s, a.wait)
            codes[code] = codes.get(code, 0) + 1
    for k in sorted(codes):
        print("STATUS %s %d" % (k, codes[k]), flush=True)
    time.sleep(a.secs)
    for s in socks:
        s.close()


def records(hello, n):
    """Re-frame a TLS handshake record's payload into n records."""
    ctype, ver, ln = hello[0], hello[1:3], int.from_bytes(hello[3:5], "big")
    body = hello[5:5 + ln]
    cut = [len(body) * i // n for i in range(n + 1)]
    out = b""
    for i in range(n):
        part = body[cut[i]:cut[i + 1]]
        out += bytes([ctype]) + ver + len(part).to_bytes(2, "big") + part
    return out + hello[5 + ln:]


def hello_main(a):
    s = connect(a.proxy)
    head = b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (
        a.target.encode(), a.target.encode())
    if a.early:
        # the hello right behind the CONNECT head, in the same segment
        with open(a.file, "rb") as f:
            s.sendall(head + f.read())
        code, got = read_status(s, 5)
        print("CONNECT %s" % code, flush=True)
        n = len(got.partition(b"\r\n\r\n")[2])
        s.settimeout(1.5)
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    print("EOF %d" % n)
                    return
                n += len(d)
        except socket.timeout:
            print("OPEN %d" % n)
        except OSError:
            print("EOF %d" % n)
        return
    s.sendall(head)
    code, _ = read_status(s, 5)
    print("CONNECT %s" % code, flush=True)
    if code != "200":
        return
    if a.file == "oversize":
        # a ClientHello claiming 30000 bytes, in full-size records
        body = b"\x01" + (30000).to_bytes(3, "big") + b"\x03\x03" + \
            b"\x00" * 29998
        data = b""
        for i in range(0, len(body), 16384):
            part = body[i:i + 16384]
            data += b"\x16\x03\x01" + len(part).to_bytes(2, "big") + part
    else:
        with open(a.file, "rb") as f:
            data = f.read()
    if a.records > 1:
        data = records(data, a.records)
    if a.pad:
        data += b"\x00" * a.pad
    step = a.chunk or len(data)
    try:
        for i in range(0, len(data), step):
            s.sendall(data[i:i + step])
            if a.delay:
                time.sleep(a.delay)
    except OSError:
        print("SENDERR")
    got = 0
    s.settimeout(1.5)
    try:
        while True:
            d = s.recv(65536)
            if not d:
                print("EOF %d" % got)
                return
            got += len(d)
            if got >= len(data):
                # all of it came back through the echo upstream
                print("OPEN %d" % got)
                return
    except socket.timeout:
        print("OPEN %d" % got)
    except OSError:
        print("EOF %d" % got)


def slowreader_main(a):
    s = connect(a.proxy)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"CONNECT %s HTTP/1.1\r\n\r\n" % a.target.encode())
    # read just the 200 head, byte by byte, then stop reading
    got = b""
    s.settimeout(5)
    while not got.endswith(b"\r\n\r\n"):
        d = s.recv(1)
        if not d:
            break
        got += d
    print("CONNECT %s" % got[9:12].decode("latin-1"), flush=True)
    if a.send:
        s.sendall(unescape(a.send))
    time.sleep(a.secs)
    s.close()


async def stress_one(a, rnd, stats, deadline):
    try:
        h, p = hostport(a.proxy)
        r, w = await asyncio.wait_for(asyncio.open_connection(h, p), 10)
    except (OSError, asyncio.TimeoutError):
        stats["errors"] += 1
        return
    try:
        how = rnd.random()
        req = b"CONNECT %s HTTP/1.1\r\n\r\n" % a.target.encode()
        if how < 0.1:
            # leave in the middle of the request head
            w.write(req[:rnd.randrange(1, len(req))])
            await w.drain()
            await asyncio.sleep(rnd.random() * 0.5)
            stats["early"] += 1
            return
        w.write(req)
        await w.drain()
        head = await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), 15)
        if not head.startswith(b"HTTP/1.1 200"):
            stats["refused"] += 1
            return
        stats["ok"] += 1
        for _ in range(rnd.randrange(0, 20)):
            if time.time() > deadline:
                break
            w.write(os.urandom(rnd.randrange(1, 4096)))
            await w.drain()
            if rnd.random() < 0.5:
                await asyncio.wait_for(r.read(65536), 2)
            await asyncio.sleep(rnd.random() * 0.2)
        if rnd.random() < 0.3:
            sock = w.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                            struct.pack("ii", 1, 0))
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError,
            asyncio.LimitOverrunError):
        stats["errors"] += 1
    finally:
        try:
            w.close()
        except Exception:
            pass


async def stress_async(a):
    rnd = random.Random(a.seed)
    stats = {"ok": 0, "refused": 0, "errors": 0, "early": 0}
    deadline = time.time() + a.secs
    tasks = []
    for i in range(a.n):
        tasks.append(asyncio.ensure_future(
            stress_one(a, random.Random(rnd.random()), stats, deadline)))
        if i % 200 == 199:
            await asyncio.sleep(0.05)
    await asyncio.wait(tasks, timeout=a.secs + 20)
    print("DONE " + " ".join("%s=%d" % kv for kv in sorted(stats.items())))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up")
    u.add_argument("--addr", default="127.0.0.3")
    u.add_argument("--port", type=int, required=True)
    u.add_argument("--count", required=True)
    u.add_argument("--log")
    u.add_argument("--mode", default="echo",
                   choices=["echo", "http", "stress"])
    u.add_argument("--seed", type=int, default=1)
    c = sub.add_parser("corpus")
    c.add_argument("--proxy", required=True)
    c.add_argument("--file", required=True)
    c.add_argument("--audit", required=True)
    c.add_argument("--var", action="append")
    c.add_argument("--up", action="append")
    c.add_argument("--reach", default="a")
    c.add_argument("--no-offbox", action="store_true",
                   help='skip the cases whose name starts with "!"')
    s = sub.add_parser("slowloris")
    s.add_argument("--proxy", required=True)
    s.add_argument("--interval", type=float, default=0.3)
    s.add_argument("--text", required=True)
    s.add_argument("--max", type=float, default=20)
    h = sub.add_parser("hold")
    h.add_argument("--proxy", required=True)
    h.add_argument("--n", type=int, required=True)
    h.add_argument("--src")
    h.add_argument("--text")
    h.add_argument("--wait", type=float, default=3)
    h.add_argument("--secs", type=float, default=0)
    e = sub.add_parser("hello")
    e.add_argument("--proxy", required=True)
    e.add_argument("--target", required=True)
    e.add_argument("--file", required=True)
    e.add_argument("--chunk", type=int, default=0)
    e.add_argument("--delay", type=float, default=0)
    e.add_argument("--records", type=int, default=1)
    e.add_argument("--pad", type=int, default=0)
    e.add_argument("--early", action="store_true")
    r = sub.add_parser("slowreader")
    r.add_argument("--proxy", required=True)
    r.add_argument("--target", required=True)
    r.add_argument("--secs", type=float, default=3)
    r.add_argument("--send")
    t = sub.add_parser("stress")
    t.add_argument("--proxy", required=True)
    t.add_argument("--target", required=True)
    t.add_argument("--n", type=int, default=2000)
    t.add_argument("--secs", type=float, default=10)
    t.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    if a.cmd == "up":
        asyncio.run(up_main(a))
    elif a.cmd == "corpus":
        corpus_main(a)
    elif a.cmd == "slowloris":
        slowloris_main(a)
    elif a.cmd == "hold":
        hold_main(a)
    elif a.cmd == "hello":
        hello_main(a)
    elif a.cmd == "slowreader":
        slowreader_main(a)
    elif a.cmd == "stress":
        asyncio.run(stress_async(a))


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
