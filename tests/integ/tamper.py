#!/usr/bin/env python3
"""tamper.py: every way to damage a chained audit log, each checked with
"egressd audit verify" for the line it must name (record-chain.test).

    tamper.py EGRESSD LOG WORKDIR [--pubkey PUB]

Prints one "ok"/"FAIL" line per kind with counts; exit 0 when every
case was found at the right line.  Cases: one byte changed at every
position (XOR 1); each line deleted; a forged line inserted before each
line; each pair of neighbours swapped; head cut (first k lines); tail
cut inside the last line.  A line number L names line L of the damaged
file (1-based)."""
import os
import re
import subprocess
import sys

EG, LOG, WD = sys.argv[1], sys.argv[2], sys.argv[3]
PUB = sys.argv[sys.argv.index("--pubkey") + 1] if "--pubkey" in sys.argv else None
VERIFY = [EG, "audit-verify"] + (["--pubkey", PUB] if PUB else [])
orig = open(LOG, "rb").read()
lines = orig.split(b"\n")[:-1]
N = len(lines)
bad = 0


def run(data):
    p = os.path.join(WD, "t.log")
    with open(p, "wb") as f:
        f.write(data)
    r = subprocess.run(VERIFY + [p], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    m = re.match(rb"^.*t\.log:(\d+): (.*)$", r.stdout.split(b"\n")[0])
    return r.returncode, int(m.group(1)) if m else None, \
        m.group(2).decode() if m else r.stdout.decode()


def want(kind, data, line, reason=None):
    global bad
    rc, got, why = run(data)
    good = rc == 1 and got == line and (reason is None or reason in why)
    if not good:
        bad += 1
        if bad < 20:
            print("# %s: expected line %s%s, got rc=%d line=%s: %s" % (
                kind, line, " (%s)" % reason if reason else "", rc, got,
                why))
    return good


def join(ls):
    return b"".join(l + b"\n" for l in ls)


# intact first
rc, got, why = run(orig)
print("%s intact: rc=%d" % ("ok" if rc == 0 else "FAIL", rc))
bad += rc != 0

# one byte at every position
n = 0
start = 0
for i, l in enumerate(lines):
    for off in range(len(l) + 1):         # the newline too
        pos = start + off
        d = bytearray(orig)
        d[pos] ^= 1
        n += want("byte %d (line %d)" % (pos, i + 1), bytes(d), i + 1)
    start += len(l) + 1
print("%s byte: %d of %d positions found at their line" % (
    "ok" if n == len(orig) else "FAIL", n, len(orig)))

# deletions (the last line's deletion needs a checkpoint or a next file)
n = 0
for i in range(N - 1):
    n += want("delete %d" % (i + 1), join(lines[:i] + lines[i + 1:]),
              i + 1, "START missing" if i == 0 else "deleted")
print("%s delete: %d of %d" % ("ok" if n == N - 1 else "FAIL", n, N - 1))

# insertions of a forged line (an old line's copy, or a new one)
n = 0
forged = lines[1].replace(b"1.test", b"7.test")
assert forged != lines[1]
for i in range(N + 1):
    n += want("insert before %d" % (i + 1),
              join(lines[:i] + [forged] + lines[i:]), i + 1,
              "START missing" if i == 0 else "inserted")
print("%s insert: %d of %d" % ("ok" if n == N + 1 else "FAIL", n, N + 1))

# swaps of neighbours
n = 0
for i in range(N - 1):
    ls = list(lines)
    ls[i], ls[i + 1] = ls[i + 1], ls[i]
    n += want("swap %d,%d" % (i + 1, i + 2), join(ls), i + 1,
              "START missing" if i == 0 else "reordered")
print("%s swap: %d of %d" % ("ok" if n == N - 1 else "FAIL", n, N - 1))

# head cut: the first k lines gone
n = 0
for k in range(1, N):
    n += want("head -%d" % k, join(lines[k:]), 1, "START missing")
print("%s head: %d of %d" % ("ok" if n == N - 1 else "FAIL", n, N - 1))

# tail cut inside the last line
n = 0
last = len(lines[-1])
for k in (1, 2, 10, 70, last):
    n += want("tail -%d" % k, orig[:len(orig) - k], N)
print("%s tail: %d of 5" % ("ok" if n == 5 else "FAIL", n))
sys.exit(1 if bad else 0)
