#!/usr/bin/env python3
"""plot.py SCALE.TXT OUTDIR [NOTE]: one PNG per curve of bench/scale.sh's
output; NOTE (e.g. "preliminary, loaded machine") goes under each title.

Reads the key=value lines scale.sh prints (decide, reload, switch, audit,
idle, idlefit) and writes, for those present:
  scale-decide.png   ns per decision vs allowlist entries (log x)
  scale-reload.png   start-up and reload ms, peak RSS MiB vs entries (log x)
  scale-switch.png   phase-switch p50/p99 ms vs tunnels open elsewhere,
                     with the [min-max] of the per-round p99s
  scale-audit.png    audit lines/s per format and writing threads
  scale-idle.png     idle RSS per tunnel vs tunnels open, and the fixed part
Needs python3-matplotlib (Debian).
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def parse(path):
    rows = []
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            d = {"kind": w[0]}
            for kv in w[1:]:
                if "=" in kv:
                    k, v = kv.split("=", 1)
                    d[k] = v
            rows.append(d)
    return rows


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


NOTE = ""


def save(fig, outdir, name):
    p = os.path.join(outdir, name)
    if NOTE:
        for ax in fig.axes[:1]:
            ax.set_title(ax.get_title() + "\n(" + NOTE + ")", fontsize=10)
    fig.tight_layout()
    fig.savefig(p, dpi=110)
    plt.close(fig)
    print("plot.py: wrote " + p)


def main():
    global NOTE
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: plot.py SCALE.TXT OUTDIR [NOTE]")
    if len(sys.argv) == 4:
        NOTE = sys.argv[3]
    rows = parse(sys.argv[1])
    outdir = sys.argv[2]
    os.makedirs(outdir, exist_ok=True)

    d = [r for r in rows if r["kind"] == "decide"]
    if d:
        x = [num(r["entries"]) for r in d]
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(x, [num(r["ns_per_decision"]) for r in d], "o-",
                label="parse + match (median)")
        ax.fill_between(x, [num(r["p10_ns"]) for r in d],
                        [num(r["p90_ns"]) for r in d], alpha=0.2,
                        label="p10-p90 of batches")
        ax.plot(x, [num(r["ns_per_match"]) for r in d], "s--",
                label="match alone")
        ax.set_xscale("log")
        ax.set_ylim(bottom=0)
        ax.set_xlabel("allowlist entries in the phase")
        ax.set_ylabel("ns per decision")
        ax.set_title("Decision time vs allowlist size")
        ax.legend()
        save(fig, outdir, "scale-decide.png")

    d = [r for r in rows if r["kind"] == "reload"]
    if d:
        x = [num(r["entries"]) for r in d]
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(x, [num(r["start_ms"]) for r in d], "o-",
                label="start-up to admin socket (ms)")
        ax.plot(x, [num(r["reload_ms"]) for r in d], "s-",
                label="POST /v1/reload (ms, median)")
        ax.set_xscale("log")
        ax.set_xlabel("allowlist entries")
        ax.set_ylabel("ms")
        ax2 = ax.twinx()
        ax2.plot(x, [num(r["hwm_kib"]) / 1024 for r in d], "^:",
                 color="tab:red", label="peak RSS (VmHWM, MiB)")
        ax2.set_ylabel("MiB")
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, loc="upper left")
        ax.set_title("Start-up, reload and peak RSS vs allowlist size")
        save(fig, outdir, "scale-reload.png")

    d = [r for r in rows if r["kind"] == "switch"]
    if d:
        x = [num(r["open"]) for r in d]
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot(x, [num(r["p50_ms"]) for r in d], "o-", label="p50")
        ax.plot(x, [num(r["p99_ms"]) for r in d], "s-", label="p99")
        lo = [num(r["round_p99_min_ms"]) for r in d]
        hi = [num(r["round_p99_max_ms"]) for r in d]
        ax.fill_between(x, lo, hi, alpha=0.2,
                        label="per-round p99 [min-max]")
        ax.set_ylim(bottom=0)
        ax.set_xlabel("tunnels open in other sessions")
        ax.set_ylabel("ms to the admin 200")
        ax.set_title("Phase switch of one session")
        ax.legend()
        save(fig, outdir, "scale-switch.png")

    d = [r for r in rows if r["kind"] == "audit" and "lines_per_s" in r]
    if d:
        labels = ["%s, %s thr" % (r["format"], r["threads"]) for r in d]
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.bar(labels, [num(r["lines_per_s"]) / 1000 for r in d])
        ax.set_ylabel("thousand lines/s")
        ax.set_title("Audit lines/s the writer sustains")
        save(fig, outdir, "scale-audit.png")

    d = [r for r in rows if r["kind"] == "idle"]
    if d:
        fig, ax = plt.subplots(figsize=(6, 4))
        fits = {r.get("inflight", ""): r for r in rows
                if r["kind"] == "idlefit"}
        for g in sorted({r.get("inflight", "") for r in d},
                        key=lambda v: -num(v) if v else 0):
            pts = [r for r in d if r.get("inflight", "") == g]
            lab = "%s handshakes in flight" % g if g else "each run"
            line = ax.plot([num(r["conc"]) for r in pts],
                           [num(r["kib_per_tunnel"]) for r in pts], "o",
                           label=lab)[0]
            f = fits.get(g)
            if f:
                ax.axhline(num(f["marginal_kib_per_tunnel"]), ls="--",
                           color=line.get_color(),
                           label="marginal %s KiB/tunnel, fixed %s KiB"
                           % (f["marginal_kib_per_tunnel"], f["fixed_kib"]))
        ax.axhline(2, color="tab:red", ls=":", label="target 2 KiB")
        ax.set_ylim(bottom=0)
        ax.set_xlabel("idle tunnels open")
        ax.set_ylabel("RSS growth per tunnel (KiB)")
        ax.set_title("Idle RSS per tunnel")
        ax.legend(fontsize=8)
        save(fig, outdir, "scale-idle.png")


if __name__ == "__main__":
    main()
