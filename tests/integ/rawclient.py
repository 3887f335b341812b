#!/usr/bin/env python3
"""rawclient.py: send raw bytes to egressd and print what comes back.

usage: rawclient.py (-c ADDR:PORT | -u PATH) [-t SECS] [--snap AUDIT:OUT]
                    [--noread] ACTION...

Actions run in order, then everything received (if not --noread) is read
until the peer closes or SECS pass (default 5), and written raw to
standard output.  Standard error gets one line: "rawclient: eof" or
"rawclient: timeout" (or "rawclient: reset").

  send:TEXT     send TEXT after expanding \\r \\n \\t \\\\ and \\xHH
  sendfile:PATH send a file's bytes
  sleep:SECS    pause
  shut          shutdown(SHUT_WR) (not over TLS: use "end")
  end           stop here: no further actions, no final read
  head          read until the end of a response head (\\r\\n\\r\\n)
  recv:N        read until N more bytes arrived
  tls:NAME      start TLS (no certificate check) with SNI NAME, or with no
                SNI when NAME is empty; later actions go through TLS

--snap AUDIT:OUT copies the file AUDIT to OUT the moment the first reply
bytes arrive, to prove the audit line was written before the reply.
"""
import argparse
import os
import shutil
import socket
import ssl
import sys
import time

got = bytearray()
snapped = False


def unescape(t):
    out = bytearray()
    i = 0
    b = t.encode("latin-1", "surrogateescape")
    while i < len(b):
        c = b[i:i + 1]
        if c == b"\\" and i + 1 < len(b):
            n = b[i + 1:i + 2]
            if n == b"r":
                out += b"\r"
            elif n == b"n":
                out += b"\n"
            elif n == b"t":
                out += b"\t"
            elif n == b"\\":
                out += b"\\"
            elif n == b"x":
                out.append(int(b[i + 2:i + 4], 16))
                i += 2
            else:
                out += c + n
            i += 2
            continue
        out += c
        i += 1
    return bytes(out)


def do_recv(s, deadline, args):
    """One recv; returns False at EOF."""
    global snapped
    s.settimeout(max(0.01, deadline - time.time()))
    d = s.recv(65536)
    if d and not snapped and args.snap:
        audit, out = args.snap.split(":", 1)
        if os.path.exists(audit):
            shutil.copyfile(audit, out)
        else:
            open(out, "w").close()
        snapped = True
    if not d:
        return False
    got.extend(d)
    return True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-c", "--connect")
    p.add_argument("-u", "--unix")
    p.add_argument("-t", "--timeout", type=float, default=5)
    p.add_argument("--snap")
    p.add_argument("--noread", action="store_true")
    p.add_argument("actions", nargs="*")
    args = p.parse_args()
    if args.unix:
        s = socket.socket(socket.AF_UNIX)
        s.connect(args.unix)
    else:
        host, _, port = args.connect.rpartition(":")
        host = host.strip("[]")
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        s = socket.socket(fam)
        s.settimeout(args.timeout)
        s.connect((host, int(port)))
    deadline = time.time() + args.timeout
    status = "eof"
    try:
        for a in args.actions:
            op, _, v = a.partition(":")
            if op == "send":
                s.sendall(unescape(v))
            elif op == "sendfile":
                with open(v, "rb") as f:
                    s.sendall(f.read())
            elif op == "sleep":
                time.sleep(float(v))
                deadline = max(deadline, time.time() + 1)
            elif op == "end":
                args.noread = True
                break
            elif op == "shut":
                s.shutdown(socket.SHUT_WR)
            elif op == "head":
                while b"\r\n\r\n" not in got:
                    if not do_recv(s, deadline, args):
                        break
            elif op == "recv":
                want = len(got) + int(v)
                while len(got) < want:
                    if not do_recv(s, deadline, args):
                        break
            elif op == "tls":
                ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
                s.settimeout(max(0.01, deadline - time.time()))
                s = ctx.wrap_socket(s, server_hostname=v or None)
            else:
                sys.exit("rawclient: unknown action " + a)
        if not args.noread:
            while do_recv(s, deadline, args):
                pass
    except socket.timeout:
        status = "timeout"
    except (ConnectionResetError, BrokenPipeError):
        status = "reset"
    except (ssl.SSLError, OSError) as e:
        status = "error: %s" % e
    sys.stdout.buffer.write(got)
    sys.stdout.flush()
    sys.stderr.write("rawclient: %s\n" % status)
    s.close()


if __name__ == "__main__":
    main()
