#!/bin/bash
# How egressd's costs grow with the work (issue 16, "Scale"). Prints one
# "key=value" line per measured point (stdout; also to $OUT/scale.txt when
# OUT is set, with a PNG per curve from bench/plot.py if matplotlib is
# there), in this order:
#
#   decide   decision time at 10 / 1,000 / 100,000 allowlist entries
#            (bench-decide: parse + match, median of 301 batches)
#   reload   start-up time, reload time (POST /v1/reload, REPS_RELOAD
#            times) and peak RSS (VmHWM) with 10 ... 100,000 entries
#   switch   phase-switch time to the admin 200 with 0 / 1,000 / 9,000
#            tunnels open in other sessions, interleaved (bench/sessions
#            --switch); issue 12's p99 ratio
#   audit    audit lines/s the writer sustains: text, JSON (and chained
#            once the record module exists; skipped until then), 1 and 2
#            writing threads
#   idle     idle RSS per tunnel at 1,000 and 9,000 tunnels (loadgen idle
#            mode against one egressd each), with 256 (compare.sh's) and
#            16 handshakes in flight, and the fixed part (the intercept of
#            the line through the two points)
#
# Needs: make (the daemon built), make -C bench all decide audit, curl, root
# not required. Tunables: EGRESSD, PARTS ("decide reload switch audit idle"),
# SIZES ("10 1000 10000 100000"), REPS_RELOAD (5), SWITCH_K (500),
# SWITCH_R (10), SWITCH_T ("0,1000,9000"), AUDIT_SECS (3), IDLE_COUNTS
# ("1000 9000"), IDLE_INFLIGHT ("256 16"), IDLE_REPS (3), PORT_BASE (23200), BENCH_TMP, OUT (a
# directory: scale.txt and the PNGs go there), PLOT_NOTE (a line under each
# plot's title).

set -u

here=$(cd "$(dirname "$0")" && pwd)
EGRESSD=${EGRESSD:-$here/../src/egressd/egressd}
PARTS=${PARTS:-"decide reload switch audit idle"}
SIZES=${SIZES:-"10 1000 10000 100000"}
REPS_RELOAD=${REPS_RELOAD:-5}
SWITCH_K=${SWITCH_K:-500}
SWITCH_R=${SWITCH_R:-10}
SWITCH_T=${SWITCH_T:-"0,1000,9000"}
AUDIT_SECS=${AUDIT_SECS:-3}
IDLE_COUNTS=${IDLE_COUNTS:-"1000 9000"}
IDLE_REPS=${IDLE_REPS:-3}
IDLE_INFLIGHT=${IDLE_INFLIGHT:-"256 16"}
PORT_BASE=${PORT_BASE:-23200}
OUT=${OUT:-}

log() { echo "scale: $*" >&2; }

[ -x "$EGRESSD" ] || { log "$EGRESSD not built (make)"; exit 2; }
make -s -C "$here" all decide audit >&2 || exit 2

tmp=$(mktemp -d "${BENCH_TMP:-/tmp}/egressd-scale.XXXXXX") || exit 2
eg_pid=
up_pid=
cleanup() {
	[ -n "$eg_pid" ] && { kill -TERM "$eg_pid" 2>/dev/null;
	    wait "$eg_pid" 2>/dev/null; }
	[ -n "$up_pid" ] && { kill -TERM "$up_pid" 2>/dev/null;
	    wait "$up_pid" 2>/dev/null; }
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

results=$tmp/scale.txt
: >"$results"
emit() {
	echo "$*" | tee -a "$results"
}

now_ms() { date +%s%3N; }

status_kib() {	# PID FIELD
	awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null
}

wait_path() {	# PATH PID
	for _ in $(seq 1 600); do
		[ -S "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

median() { sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
minmax() { sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo "-" hi }'; }

# --- decide ---------------------------------------------------------------

part_decide() {
	local s
	# shellcheck disable=SC2086
	"$here/bench-decide" --raw $SIZES | while read -r s; do emit "$s"; done
}

# --- reload ---------------------------------------------------------------

# write_conf N: a phase of N entries (a mix like bench-decide's: exact
# names, *. and ** wildcards), 100 per allow line
write_conf() {
	local n=$1
	{
		echo "[proxy]"
		echo "listen = 127.0.0.1:$((PORT_BASE + 10))"
		echo "admin = $tmp/admin.sock"
		echo "audit_log = $tmp/audit.log"
		echo "workers = 0"
		echo "phase = big"
		echo
		echo "[phase:big]"
		awk -v n="$n" 'BEGIN {
			for (i = 0; i < n; i++) {
				if (i % 100 == 0)
					printf "%sallow =", i ? "\n" : ""
				if (i % 4 == 3)
					printf " *.svc%d.example.com", i
				else if (i % 8 == 1)
					printf " **.zone%d.example.net", i
				else
					printf " api%d.example.org", i
			}
			printf "\n"
		}'
	} >"$tmp/scale.ini"
}

part_reload() {
	local n t0 t1 start hwm0 rss code times r
	for n in $SIZES; do
		write_conf "$n"
		rm -f "$tmp/admin.sock"
		t0=$(now_ms)
		"$EGRESSD" -c "$tmp/scale.ini" >"$tmp/egressd.out" 2>&1 &
		eg_pid=$!
		if ! wait_path "$tmp/admin.sock" "$eg_pid"; then
			log "egressd with $n entries did not start:"
			cat "$tmp/egressd.out" >&2
			eg_pid=
			continue
		fi
		t1=$(now_ms)
		start=$((t1 - t0))
		hwm0=$(status_kib "$eg_pid" VmHWM)
		: >"$tmp/times"
		for r in $(seq 1 "$REPS_RELOAD"); do
			code=$(curl -s -o /dev/null -X POST \
			    -w '%{http_code} %{time_total}' \
			    --unix-socket "$tmp/admin.sock" \
			    http://egressd/v1/reload)
			[ "${code%% *}" = 200 ] ||
			    log "reload with $n entries: HTTP ${code%% *}"
			echo "${code#* }" | awk '{ printf "%.1f\n", $1 * 1000 }' \
			    >>"$tmp/times"
		done
		rss=$(status_kib "$eg_pid" VmRSS)
		times=$(median <"$tmp/times")
		emit "reload entries=$n start_ms=$start reload_ms=$times" \
		    "reload_ms_range=$(minmax <"$tmp/times")" \
		    "reloads=$REPS_RELOAD hwm_start_kib=$hwm0" \
		    "hwm_kib=$(status_kib "$eg_pid" VmHWM) rss_kib=$rss"
		kill -TERM "$eg_pid"
		wait "$eg_pid" 2>/dev/null
		eg_pid=
	done
}

# --- switch ---------------------------------------------------------------

part_switch() {
	local l
	"$here/sessions" -e "$EGRESSD" --switch -T "$SWITCH_T" -k "$SWITCH_K" \
	    -r "$SWITCH_R" >"$tmp/switch.out" 2>&1
	grep -v '^switch ' "$tmp/switch.out" >&2
	grep '^switch ' "$tmp/switch.out" | while read -r l; do emit "$l"; done
}

# --- audit ----------------------------------------------------------------

part_audit() {
	local f t out
	for f in text json chained; do
		for t in 1 2; do
			out=$("$here/bench-audit" --format "$f" --threads "$t" \
			    --seconds "$AUDIT_SECS")
			case $? in
			0) emit "$out" ;;
			3) log "audit format $f: not in this tree (skipped)"
			   break ;;
			*) log "bench-audit $f failed: $out" ;;
			esac
		done
	done
}

# --- idle -----------------------------------------------------------------

part_idle() {
	local n r out
	"$here/upstream" --echo "$PORT_BASE" 2>"$tmp/upstream.out" &
	up_pid=$!
	sleep 0.3
	cat >"$tmp/idle.ini" <<EOF
[proxy]
listen = 127.0.0.1:$((PORT_BASE + 10))
admin = $tmp/admin.sock
audit_log = $tmp/audit.log
sni_check = no
plain_http = no
workers = 0
max_connections = 20000
max_connections_per_client = 20000
idle_timeout = 600

[hosts]
bench.test = 127.0.0.1

[phase:bench]
allow = bench.test:$PORT_BASE
EOF
	for r in $(seq 1 "$IDLE_REPS"); do
		for inf in $IDLE_INFLIGHT; do
		for n in $IDLE_COUNTS; do
			rm -f "$tmp/admin.sock"
			"$EGRESSD" -c "$tmp/idle.ini" >"$tmp/egressd.out" 2>&1 &
			eg_pid=$!
			wait_path "$tmp/admin.sock" "$eg_pid" || {
				log "egressd did not start"
				cat "$tmp/egressd.out" >&2
				eg_pid=; break; }
			out=$("$here/loadgen" --proxy \
			    "tcp:127.0.0.1:$((PORT_BASE + 10))" \
			    --target "bench.test:$PORT_BASE" --mode idle \
			    --concurrency "$n" --duration 1 --pid "$eg_pid" \
			    --inflight "$inf")
			emit "idle rep=$r inflight=$inf $out"
			kill -TERM "$eg_pid"
			wait "$eg_pid" 2>/dev/null
			eg_pid=
		done
		done
	done
	kill -TERM "$up_pid"
	wait "$up_pid" 2>/dev/null
	up_pid=
	# the fixed part: RSS(n) = fixed + n * per_tunnel, from the medians,
	# for each number of handshakes in flight
	awk '$1 == "idle" {
		delete f
		for (i = 2; i <= NF; i++) {
			split($i, kv, "=")
			f[kv[1]] = kv[2]
		}
		g = f["inflight"]; k = f["conc"]
		groups[g] = 1; counts[g, k] = 1
		n[g, k]++
		v[g, k, n[g, k]] = f["rss_kib"] - f["rss_base_kib"]
		base[g, k, n[g, k]] = f["rss_base_kib"]
	}
	function med(g, k, arr,   i, j, t, a, m) {
		m = n[g, k]
		for (i = 1; i <= m; i++) a[i] = arr[g, k, i]
		for (i = 2; i <= m; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
				t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
			}
		return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
	}
	END {
		for (g in groups) {
			lo = ""; hi = ""
			for (gk in counts) {
				split(gk, q, SUBSEP)
				if (q[1] != g) continue
				k = q[2]
				if (lo == "" || k + 0 < lo + 0) lo = k
				if (hi == "" || k + 0 > hi + 0) hi = k
			}
			if (lo == "" || lo == hi)
				continue
			dl = med(g, lo, v); dh = med(g, hi, v)
			slope = (dh - dl) / (hi - lo)
			printf "idlefit inflight=%d low=%d high=%d " \
			    "kib_per_tunnel_low=%.2f kib_per_tunnel_high=%.2f " \
			    "marginal_kib_per_tunnel=%.2f fixed_kib=%.0f " \
			    "rss_base_kib=%.0f\n", g, lo, hi, dl / lo, dh / hi,
			    slope, dl - slope * lo, med(g, lo, base)
		}
	}' "$results" | sort | while read -r l; do emit "$l"; done
}

for part in $PARTS; do
	case $part in
	decide|reload|switch|audit|idle) log "$part"; "part_$part" ;;
	*) log "unknown part $part"; exit 2 ;;
	esac
done

if [ -n "$OUT" ]; then
	mkdir -p "$OUT"
	cp "$results" "$OUT/scale.txt"
	# Debian's python3 first: python3-matplotlib is installed for it
	py=
	for p in /usr/bin/python3 python3; do
		if "$p" -c 'import matplotlib' 2>/dev/null; then
			py=$p
			break
		fi
	done
	if [ -n "$py" ]; then
		"$py" "$here/plot.py" "$OUT/scale.txt" "$OUT" \
		    ${PLOT_NOTE:+"$PLOT_NOTE"} >&2
	else
		log "no python3-matplotlib: no PNGs (apt-get install python3-matplotlib)"
	fi
fi
