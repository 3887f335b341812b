#!/usr/bin/env python3
"""rfc6979.py: ECDSA P-256 / SHA-256 signatures as RFC 6979 makes them
(deterministic nonce), in plain Python integers: an independent reference
for the signatures egressd's library call writes.  Not constant-time and
never used to sign anything real: a test oracle only.

  rfc6979.py selftest            the RFC's own vector (A.2.5, "sample")
  rfc6979.py sign D_HEX MSG_FILE print the DER signature of MSG_FILE's
                                 bytes, base64, as egressd writes it
"""
import base64
import hashlib
import hmac
import sys

P = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffff
A = P - 3
N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551
G = (0x6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296,
     0x4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5)


def add(p, q):
    if p is None:
        return q
    if q is None:
        return p
    if p[0] == q[0] and (p[1] + q[1]) % P == 0:
        return None
    if p == q:
        m = (3 * p[0] * p[0] + A) * pow(2 * p[1], P - 2, P) % P
    else:
        m = (q[1] - p[1]) * pow(q[0] - p[0], P - 2, P) % P
    x = (m * m - p[0] - q[0]) % P
    return (x, (m * (p[0] - x) - p[1]) % P)


def mul(k, p):
    r = None
    while k:
        if k & 1:
            r = add(r, p)
        p = add(p, p)
        k >>= 1
    return r


def b2i(b):
    return int.from_bytes(b, "big")


def i2o(x):
    return x.to_bytes(32, "big")


def nonce(d, h):
    """RFC 6979 3.2 for qlen = hlen = 256."""
    x = i2o(d)
    hm = i2o(b2i(h) % N)
    v = b"\x01" * 32
    k = b"\x00" * 32
    k = hmac.new(k, v + b"\x00" + x + hm, hashlib.sha256).digest()
    v = hmac.new(k, v, hashlib.sha256).digest()
    k = hmac.new(k, v + b"\x01" + x + hm, hashlib.sha256).digest()
    v = hmac.new(k, v, hashlib.sha256).digest()
    while True:
        v = hmac.new(k, v, hashlib.sha256).digest()
        t = b2i(v)
        if 1 <= t < N:
            return t
        k = hmac.new(k, v + b"\x00", hashlib.sha256).digest()
        v = hmac.new(k, v, hashlib.sha256).digest()


def sign(d, msg):
    h = hashlib.sha256(msg).digest()
    e = b2i(h)
    k = nonce(d, h)
    r = mul(k, G)[0] % N
    s = pow(k, N - 2, N) * (e + r * d) % N
    return r, s


def der_int(x):
    b = x.to_bytes((x.bit_length() + 7) // 8 or 1, "big")
    if b[0] & 0x80:
        b = b"\x00" + b
    return b"\x02" + bytes([len(b)]) + b


def der(r, s):
    body = der_int(r) + der_int(s)
    return b"\x30" + bytes([len(body)]) + body


def main():
    if sys.argv[1:] == ["selftest"]:
        d = 0xC9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721
        r, s = sign(d, b"sample")
        ok = (r == 0xEFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716
              and s == 0xF7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8)
        print("ok" if ok else "MISMATCH r=%x s=%x" % (r, s))
        return 0 if ok else 1
    if len(sys.argv) == 4 and sys.argv[1] == "sign":
        d = int(sys.argv[2], 16)
        with open(sys.argv[3], "rb") as f:
            msg = f.read()
        print(base64.b64encode(der(*sign(d, msg))).decode())
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
