#!/bin/bash
# Where a single bulk tunnel's time goes (issue 16): bulk down through one
# tunnel, direct, floor and egressd interleaved, each in two layouts:
#
#   free   the scheduler places upstream, proxy and loadgen on the CPUs
#   cpu0   all of them pinned to CPU 0 (taskset): no cross-CPU wake-ups or
#          cache traffic, and every process's CPU time adds up to 1 CPU
#
# For each run it prints MB/s and the CPU time per MB of the upstream, the
# proxy and the load generator (loadgen --pid/--upstream-pid, /proc/PID/stat),
# their sum, and the ceiling that sum sets on N CPUs: N / (sum per MB).
# With perf(1) it also counts, for egressd in the free layout, splice calls,
# epoll_wait calls, epoll_ctl calls and context switches per MB, and bytes
# per splice.  Everything on 127.0.0.1.
#
# With perf(1) and SCHED=1 (the default), it then answers whether the
# free layout waits: one more run each of direct and egressd under
# `perf sched record -a` for 1 s, summed per process from `perf sched
# timehist`: run time, sleep (waiting for data or room), scheduling delay
# (runnable, waiting for a CPU), and the CPUs' idle time ("bulksched" lines;
# "other" is everything else on the machine).
#
# The host's default congestion control matters (bbr paces every segment
# with a timer, even on loopback; egressd's own loopback legs do not pace,
# see egressd(8)): each line names it (cc=), with its count of TCP
# retransmissions and zero-window announcements per GB (nstat: the whole
# machine's, which is this run's on a quiet one).  CCS="bbr cubic" runs
# every repetition under each default in turn (root: it sets
# net.ipv4.tcp_congestion_control, and puts the old value back at exit).
# EGRESSD2=BINARY adds "egressd2", a second egressd build (before/after).
#
# Tunables: EGRESSD, EGRESSD2, REPS (3), DUR (4), PORT_BASE (23300),
# LAYOUTS ("free cpu0"), PROXIES ("direct floor egressd", plus egressd2),
# CCS (the current default), SCHED (1), BENCH_TMP.

set -u
here=$(cd "$(dirname "$0")" && pwd)
EGRESSD=${EGRESSD:-$here/../src/egressd/egressd}
REPS=${REPS:-3}
DUR=${DUR:-4}
PORT_BASE=${PORT_BASE:-23300}
LAYOUTS=${LAYOUTS:-"free cpu0"}
EGRESSD2=${EGRESSD2:-}
PROXIES=${PROXIES:-"direct floor egressd${EGRESSD2:+ egressd2}"}
CC_SYSCTL=/proc/sys/net/ipv4/tcp_congestion_control
cc0=$(cat "$CC_SYSCTL")
CCS=${CCS:-$cc0}
SCHED=${SCHED:-1}
P_SOURCE=$PORT_BASE
P_EGRESSD=$((PORT_BASE + 10))
P_FLOOR=$((PORT_BASE + 13))

make -s -C "$here" >&2 || exit 2
[ -x "$EGRESSD" ] || { echo "bulkprof: $EGRESSD not built" >&2; exit 2; }
tmp=$(mktemp -d "${BENCH_TMP:-/tmp}/egressd-bulkprof.XXXXXX") || exit 2
up_pid=
px_pid=
cleanup() {
	[ "$(cat "$CC_SYSCTL")" = "$cc0" ] || echo "$cc0" >"$CC_SYSCTL"
	[ -n "$px_pid" ] && { kill -TERM "$px_pid"; wait "$px_pid"; } 2>/dev/null
	[ -n "$up_pid" ] && { kill -TERM "$up_pid"; wait "$up_pid"; } 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$tmp/egressd.ini" <<EOF
[proxy]
listen = 127.0.0.1:$P_EGRESSD
admin = $tmp/admin.sock
audit_log = $tmp/audit.log
sni_check = no
plain_http = no
workers = 0

[hosts]
bench.test = 127.0.0.1

[phase:bench]
allow = bench.test:$P_SOURCE
EOF

wait_port() {
	for _ in $(seq 1 100); do
		[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ] && return 0
		sleep 0.1
	done
	return 1
}

"$here/upstream" --source "$P_SOURCE" 2>/dev/null &
up_pid=$!
wait_port "$P_SOURCE" || exit 2
ncpu=$(nproc)
have_perf=0
perf stat -e syscalls:sys_enter_splice -- true >/dev/null 2>&1 && have_perf=1

# nstat_gb BYTES: retransmitted segments and zero-window announcements
# since the last call, per GB moved
nstat_gb() {
	nstat 2>/dev/null | awk -v b="$1" '
		$1 == "TcpRetransSegs" { r = $2 }
		$1 == "TcpExtTCPToZeroWindowAdv" { z = $2 }
		END { g = b / 1e9; if (g <= 0) g = 1
		      printf " retrans_per_gb=%.1f zerowin_per_gb=%.1f",
		          r / g, z / g }'
}

for rep in $(seq 1 "$REPS"); do
for cc in $CCS; do
[ "$(cat "$CC_SYSCTL")" = "$cc" ] || echo "$cc" >"$CC_SYSCTL" || exit 2
for layout in $LAYOUTS; do
for px in $PROXIES; do
	pin=
	[ "$layout" = cpu0 ] && pin="taskset -c 0"
	case $px in
	direct) via="--direct"; tgt=127.0.0.1:$P_SOURCE ;;
	floor)	$pin "$here/floor" --listen "$P_FLOOR" >/dev/null 2>&1 &
		px_pid=$!; wait_port "$P_FLOOR"
		via="--proxy tcp:127.0.0.1:$P_FLOOR"; tgt=127.0.0.1:$P_SOURCE ;;
	egressd|egressd2)
		bin=$EGRESSD
		[ "$px" = egressd2 ] && bin=$EGRESSD2
		$pin "$bin" -c "$tmp/egressd.ini" >/dev/null 2>&1 &
		px_pid=$!; wait_port "$P_EGRESSD"
		via="--proxy tcp:127.0.0.1:$P_EGRESSD"; tgt=bench.test:$P_SOURCE ;;
	esac
	if [ "$layout" = cpu0 ]; then
		taskset -a -p -c 0 "$up_pid" >/dev/null
	else
		taskset -a -p -c "0-$((ncpu - 1))" "$up_pid" >/dev/null
	fi
	pidarg=
	[ -n "$px_pid" ] && pidarg="--pid $px_pid"
	cnt=
	if [ "${px#egressd}" != "$px" ] && [ "$layout" = free ] && [ "$have_perf" = 1 ]
	then
		# over the loadgen's whole run (its setup is a few ms)
		perf stat -x, -e syscalls:sys_enter_splice,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_ctl,context-switches \
		    -p "$px_pid" -- sleep "$DUR" 2>"$tmp/perf.out" >/dev/null &
		cnt=$!
	fi
	nstat -n 2>/dev/null
	# shellcheck disable=SC2086
	out=$($pin "$here/loadgen" $via --target "$tgt" --mode bulk \
	    --concurrency 1 --duration "$DUR" $pidarg \
	    --upstream-pid "$up_pid" --label "$px")
	extra=$(nstat_gb "$(echo "$out" | sed -n 's/.*bytes=\([0-9]*\).*/\1/p')")
	if [ -n "$cnt" ]; then
		wait "$cnt"
		mb=$(echo "$out" | sed -n 's/.*bytes=\([0-9]*\).*/\1/p')
		extra=$extra$(awk -F, -v mb="$mb" '
			{ v[$3] = $1 }
			END {
				m = mb / 1e6
				if (m <= 0) exit
				printf " splices_per_mb=%.1f epoll_wait_per_mb=%.2f" \
				    " epoll_ctl_per_mb=%.2f cswitch_per_mb=%.2f", \
				    v["syscalls:sys_enter_splice"] / m,
				    v["syscalls:sys_enter_epoll_wait"] / m,
				    v["syscalls:sys_enter_epoll_ctl"] / m,
				    v["context-switches"] / m
				if (v["syscalls:sys_enter_splice"] > 0)
					printf " kb_per_splice_pair=%.0f", \
					    m * 1e6 / 1024 / \
					    (v["syscalls:sys_enter_splice"] / 2)
			}' "$tmp/perf.out")
	fi
	echo "$out" | awk -v layout="$layout" -v rep="$rep" -v ncpu="$ncpu" \
	    -v extra="$extra" -v cc="$cc" -v px="$px" '{
		for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		mb = f["bytes"] / 1e6
		up = f["up_cpu_ms"] * 1000 / mb
		lg = f["lg_cpu_ms"] * 1000 / mb
		pr = ("proxy_cpu_ms" in f) ? f["proxy_cpu_ms"] * 1000 / mb : 0
		sum = up + lg + pr
		printf "bulkprof rep=%d cc=%s layout=%s proxy=%s mb_per_s=%.0f " \
		    "up_us_per_mb=%.0f proxy_us_per_mb=%.0f lg_us_per_mb=%.0f " \
		    "sum_us_per_mb=%.0f cpus_used=%.2f ceiling_mb_per_s=%.0f%s\n",
		    rep, cc, layout, px, f["mb_per_s"], up, pr, lg, sum,
		    sum * f["mb_per_s"] / 1e6,
		    (layout == "cpu0" ? 1 : ncpu) * 1e6 / sum, extra
	}'
	if [ -n "$px_pid" ]; then
		kill -TERM "$px_pid"; wait "$px_pid" 2>/dev/null; px_pid=
	fi
	sleep 0.5
done
done
done
done

# --- does the free layout wait? -------------------------------------------
[ "$have_perf" = 1 ] && [ "$SCHED" = 1 ] || exit 0
[ "$(cat "$CC_SYSCTL")" = "$cc0" ] || echo "$cc0" >"$CC_SYSCTL"
taskset -a -p -c "0-$((ncpu - 1))" "$up_pid" >/dev/null
for px in direct egressd; do
	if [ "$px" = egressd ]; then
		"$EGRESSD" -c "$tmp/egressd.ini" >/dev/null 2>&1 &
		px_pid=$!; wait_port "$P_EGRESSD"
		via="--proxy tcp:127.0.0.1:$P_EGRESSD"; tgt=bench.test:$P_SOURCE
	else
		via="--direct"; tgt=127.0.0.1:$P_SOURCE
	fi
	# shellcheck disable=SC2086
	"$here/loadgen" $via --target "$tgt" --mode bulk --concurrency 1 \
	    --duration 3 --label "$px" >"$tmp/sched-lg.out" &
	lg=$!
	sleep 1
	perf sched record -a -o "$tmp/sched.data" -- sleep 1 >/dev/null 2>&1
	wait "$lg"
	perf sched timehist -i "$tmp/sched.data" 2>/dev/null | awk -v px="$px" \
	    -v up="$up_pid" -v lgp="$lg" -v pp="${px_pid:-none}" \
	    -v mbs="$(sed -n 's/.*mb_per_s=\([0-9.]*\).*/\1/p' "$tmp/sched-lg.out")" '
	NR > 3 && NF >= 6 && $4 ~ /^[0-9.]+$/ {
		# "name[tid]" or "name[tid/pid]": ours by PID, the rest "other"
		t = $3
		id = t; sub(/^.*\[/, "", id); sub(/\]$/, "", id)
		np = split(id, q, "/"); pid = q[np]
		if (t ~ /^<idle>/) k = "idle"
		else if (pid == up) k = "upstream"
		else if (pid == lgp) k = "loadgen"
		else if (pid == pp) k = "egressd"
		else k = "other"
		w[k] += $4; d[k] += $5; r[k] += $6
	}
	END {
		n = split("upstream egressd loadgen other idle", o, " ")
		for (i = 1; i <= n; i++) {
			k = o[i]
			if (!(k in r)) continue
			printf "bulksched proxy=%s mb_per_s=%s task=%s run_ms=%.0f " \
			    "sleep_ms=%.0f delay_ms=%.0f\n", px, mbs, k, r[k],
			    k == "idle" ? 0 : w[k], k == "idle" ? 0 : d[k]
		}
	}'
	if [ -n "$px_pid" ]; then
		kill -TERM "$px_pid"; wait "$px_pid" 2>/dev/null; px_pid=
	fi
done
