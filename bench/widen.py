#!/usr/bin/env python3
"""widen.py: compare.sh's long table (metric | proxy | median | [min-max]
| ...) as one row per metric and one column per proxy, "median [min-max]",
the way doc/PERFORMANCE.md shows it.

usage: widen.py [FILE]   (compare.sh's output; standard input without FILE)
"""
import sys

ORDER = ["egressd", "ats", "smokescreen", "srt", "squid", "tinyproxy",
         "floor", "direct"]
NAMES = {"ats": "Traffic Server", "srt": "sandbox-runtime",
         "squid": "Squid"}
SKIP = ("CONNECT-to-first-byte p50", "CONNECT-to-200", "round trip p99")


def main():
    src = open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin
    rows, seen = {}, []
    for line in src:
        f = [c.strip() for c in line.strip().strip("|").split("|")]
        if f[0] == "target":
            break                   # the targets table that follows
        if len(f) != 6 or f[0] in ("metric", "---") or f[0].startswith("-"):
            continue
        metric, proxy, median, spread = f[0], f[1], f[2], f[3]
        if metric.startswith(SKIP):
            continue
        if metric not in rows:
            rows[metric] = {}
            seen.append(metric)
        rows[metric][proxy] = "%s [%s]" % (median.split(" (")[0], spread)
    cols = [p for p in ORDER if any(p in rows[m] for m in seen)]
    print("| median [min–max] | " +
          " | ".join(NAMES.get(p, p) for p in cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for m in seen:
        print("| %s | %s |" % (m, " | ".join(rows[m].get(p, "–")
                                              for p in cols)))


if __name__ == "__main__":
    main()
