#!/usr/bin/env python3
"""dnsstub.py: a tiny UDP DNS server for the egressd tests (python3
standard library only).  It answers A and AAAA queries from a fixed
mapping, always with TTL 0, and NXDOMAIN for every name it does not know.

usage: dnsstub.py --port PORT [--addr 127.0.0.1] [--log FILE]
                  [--a NAME=IP[,IP...]]... [--rebind NAME=SET1/SET2]...
                  [--silent NAME]... [--json FILE]

  --a NAME=IPS        NAME always answers the comma-separated IPS (v4 for
                      A queries, v6 for AAAA; the other type gets an empty
                      NOERROR answer).
  --rebind NAME=A/B   successive queries of the same type for NAME answer
                      the comma-separated set A, then B, then A, ...
                      (DNS rebinding).
  --silent NAME       queries for NAME are logged ("NAME QTYPE SILENT")
                      and never answered (a resolver that does not answer).
  --json FILE         {"name": ["ip", ...], ...}: more --a mappings.
  --log FILE          one line per query: "NAME QTYPE ANSWER,..." (the
                      answer given, "-" if none, "NXDOMAIN").

Prints "READY" on standard output once it serves.
"""
import argparse
import json
import socket
import sys

QT_A, QT_AAAA = 1, 28


def parse_ips(text):
    return [x for x in text.split(",") if x]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--addr", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--log")
    p.add_argument("--a", action="append", default=[])
    p.add_argument("--rebind", action="append", default=[])
    p.add_argument("--silent", action="append", default=[])
    p.add_argument("--json")
    a = p.parse_args()
    silent = set(n.lower().rstrip(".") for n in a.silent)

    fixed = {}
    rebind = {}
    for m in a.a:
        name, _, ips = m.partition("=")
        fixed.setdefault(name.lower().rstrip("."), []).extend(parse_ips(ips))
    if a.json:
        with open(a.json) as f:
            for name, ips in json.load(f).items():
                fixed.setdefault(name.lower().rstrip("."), []).extend(ips)
    for m in a.rebind:
        name, _, sets = m.partition("=")
        s1, _, s2 = sets.partition("/")
        rebind[name.lower().rstrip(".")] = [parse_ips(s1), parse_ips(s2)]
    turn = {}

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((a.addr, a.port))
    print("READY", flush=True)
    while True:
        q, peer = s.recvfrom(4096)
        if len(q) < 17 or q[2] & 0x80:
            continue
        i, labels = 12, []
        try:
            while q[i]:
                if q[i] & 0xc0:
                    raise IndexError
                labels.append(q[i + 1:i + 1 + q[i]].decode("latin-1"))
                i += 1 + q[i]
            qtype = int.from_bytes(q[i + 1:i + 3], "big")
            qend = i + 5
            if qend > len(q):
                raise IndexError
        except IndexError:
            continue
        name = ".".join(labels).lower()
        rcode = 0
        if name in silent:
            if a.log:
                with open(a.log, "a") as f:
                    f.write("%s %d SILENT\n" % (name, qtype))
            continue
        if name in rebind:
            k = (name, qtype)
            n = turn.get(k, 0)
            turn[k] = n + 1
            ips = rebind[name][n % 2]
        elif name in fixed:
            ips = fixed[name]
        else:
            ips = []
            rcode = 3
        ans = b""
        given = []
        for ip in ips:
            fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
            want = QT_AAAA if fam == socket.AF_INET6 else QT_A
            if qtype != want:
                continue
            rd = socket.inet_pton(fam, ip)
            ans += (b"\xc0\x0c" + want.to_bytes(2, "big") +
                    b"\x00\x01" + b"\x00\x00\x00\x00" +   # IN, TTL 0
                    len(rd).to_bytes(2, "big") + rd)
            given.append(ip)
        if a.log:
            with open(a.log, "a") as f:
                f.write("%s %d %s\n" % (
                    name, qtype, "NXDOMAIN" if rcode else
                    (",".join(given) or "-")))
        # same id; QR=1, opcode and RD copied; RA=1; RCODE
        flags = bytes([0x80 | (q[2] & 0x79), 0x80 | rcode])
        s.sendto(q[:2] + flags + b"\x00\x01" +
                 len(given).to_bytes(2, "big") + b"\0\0\0\0" +
                 q[12:qend] + ans, peer)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
