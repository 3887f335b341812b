#!/usr/bin/env python3
"""stormclient.py: N client threads open tunnels through egressd until a
stop file appears.  Each round trip: CONNECT --target, expect 200, send a
line, expect it echoed, close.  Every --loop-every-th attempt instead
CONNECTs --loop (egressd's own address) and expects 403.  Prints one
summary line: ok=.. loop=.. bad=.. and the first few failures."""
import argparse, os, socket, sys, threading, time

ap = argparse.ArgumentParser()
ap.add_argument("--proxy", required=True)
ap.add_argument("--target", required=True)
ap.add_argument("--loop", required=True)
ap.add_argument("--n", type=int, default=64)
ap.add_argument("--loop-every", type=int, default=4)
ap.add_argument("--stop", required=True)
ap.add_argument("--secs", type=float, default=60)
a = ap.parse_args()
ph, pp = a.proxy.rsplit(":", 1)
lock = threading.Lock()
st = {"ok": 0, "loop": 0, "bad": 0}
bad = []


def head(s):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(4096)
        if not d:
            break
        buf += d
    return buf


def one(target, want):
    s = socket.create_connection((ph, int(pp)), timeout=5)
    try:
        s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" %
                  (target.encode(), target.encode()))
        h = head(s)
        line = h.split(b"\r\n", 1)[0].decode("latin-1")
        if not line.startswith("HTTP/1.1 %d" % want):
            return "%s: %r" % (target, line)
        if want == 200:
            s.sendall(b"ping\n")
            got = b""
            while len(got) < 5:
                d = s.recv(64)
                if not d:
                    break
                got += d
            if got != b"ping\n":
                return "%s: echo %r" % (target, got)
        return None
    finally:
        s.close()


def worker(k):
    i = k
    end = time.time() + a.secs
    while not os.path.exists(a.stop) and time.time() < end:
        i += 1
        isloop = i % a.loop_every == 0
        try:
            err = one(a.loop if isloop else a.target, 403 if isloop else 200)
        except OSError as e:
            err = "%s: %s" % (a.loop if isloop else a.target, e)
        with lock:
            if err is None:
                st["loop" if isloop else "ok"] += 1
            else:
                st["bad"] += 1
                if len(bad) < 5:
                    bad.append(err)


ts = [threading.Thread(target=worker, args=(k,)) for k in range(a.n)]
for t in ts:
    t.start()
print("READY", flush=True)
for t in ts:
    t.join()
print("ok=%d loop=%d bad=%d %s" % (st["ok"], st["loop"], st["bad"],
                                   " | ".join(bad)), flush=True)
