#!/bin/bash
# Side-by-side benchmark of egressd, tinyproxy, Squid and no proxy (direct),
# interleaved in one run: for each repetition, each proxy is started, every
# mode is measured, and the proxy is stopped. Prints a markdown table of
# medians with ratios against direct and against egressd.
#
# "floor" (bench/floor.c) is the cheapest CONNECT proxy we could write: no
# policy, no log, nothing but the system calls any proxy makes. It is not
# a peer; it shows how close to the machine's limit each proxy comes.
#
# Everything listens on 127.0.0.1 only. Needs: `make -C bench`, the
# tinyproxy and squid Debian packages, root (Squid drops to cache_effective_user,
# tinyproxy to its User). Tunables (environment):
#   EGRESSD      egressd binary (default ../src/egressd/egressd from bench/)
#   REPS         repetitions (3)        DUR       seconds per timed mode (10)
#   PROXIES      "direct floor egressd tinyproxy squid"
#   MODES        "rate rr bulk1 bulk8 up1 idle" (idle last: closing
#                9,000 tunnels keeps a logging peer busy for a while)
#   IDLE_EGRESSD / IDLE_TINYPROXY / IDLE_SQUID   idle tunnels (9000 each)
#   PORT_BASE    first port used (23100; uses PORT_BASE..PORT_BASE+13);
#                keep it below the ephemeral range (ip_local_port_range),
#                or a client socket may hold a port a listener needs
#   BENCH_TMP    where the temp dir (configs, logs) goes (/tmp)
#   RESULTS      also copy the raw result lines to this file

set -u

here=$(cd "$(dirname "$0")" && pwd)
EGRESSD=${EGRESSD:-$here/../src/egressd/egressd}
REPS=${REPS:-3}
DUR=${DUR:-10}
PROXIES=${PROXIES:-"direct floor egressd tinyproxy squid"}
MODES=${MODES:-"rate rr bulk1 bulk8 up1 idle"}
IDLE_EGRESSD=${IDLE_EGRESSD:-9000}
IDLE_TINYPROXY=${IDLE_TINYPROXY:-9000}
IDLE_SQUID=${IDLE_SQUID:-9000}
PORT_BASE=${PORT_BASE:-23100}
RESULTS=${RESULTS:-}

P_ECHO=$PORT_BASE
P_HTTP=$((PORT_BASE + 1))
P_SOURCE=$((PORT_BASE + 2))
P_SINK=$((PORT_BASE + 3))
P_EGRESSD=$((PORT_BASE + 10))
P_TINYPROXY=$((PORT_BASE + 11))
P_SQUID=$((PORT_BASE + 12))
P_FLOOR=$((PORT_BASE + 13))

LOADGEN=$here/loadgen
FLOOR=$here/floor
UPSTREAM=$here/upstream

log() { echo "compare: $*" >&2; }

tmp=$(mktemp -d "${BENCH_TMP:-/tmp}/egressd-bench.XXXXXX") || exit 1
chmod 755 "$tmp"
upstream_pid=
proxy_pid=

cleanup() {
	if [ -n "$proxy_pid" ]; then
		kill -TERM "$proxy_pid" 2>/dev/null
		wait "$proxy_pid" 2>/dev/null
	fi
	if [ -n "$upstream_pid" ]; then
		kill -TERM "$upstream_pid" 2>/dev/null
		wait "$upstream_pid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

make -s -C "$here" >&2 || exit 1

port_in_use() {
	[ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

wait_port() {
	for _ in $(seq 1 100); do
		port_in_use "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

read -r eph_lo eph_hi </proc/sys/net/ipv4/ip_local_port_range
if [ "$((PORT_BASE + 13))" -ge "$eph_lo" ] && [ "$PORT_BASE" -le "$eph_hi" ]
then
	log "warning: ports $PORT_BASE.. overlap the ephemeral range" \
	    "$eph_lo-$eph_hi"
fi

for p in $P_ECHO $P_HTTP $P_SOURCE $P_SINK $P_EGRESSD $P_TINYPROXY \
    $P_SQUID $P_FLOOR; do
	if port_in_use "$p"; then
		log "port $p is in use; set PORT_BASE"
		exit 1
	fi
done

# Which proxies can run here.
run_list=
for px in $PROXIES; do
	case $px in
	direct|floor) ;;
	egressd)
		if [ ! -x "$EGRESSD" ]; then
			log "skipping egressd: $EGRESSD not built"
			continue
		fi
		# a private copy: a rebuild during the run cannot mix binaries
		cp "$EGRESSD" "$tmp/egressd-bin" || exit 1 ;;
	tinyproxy|squid)
		if ! command -v "$px" >/dev/null; then
			log "skipping $px: not installed (apt-get install $px)"
			continue
		fi ;;
	*) log "unknown proxy $px"; exit 2 ;;
	esac
	run_list="$run_list $px"
done

# --- configurations -------------------------------------------------------

write_egressd_conf() {
	cat >"$tmp/egressd.ini" <<EOF
[proxy]
listen = 127.0.0.1:$P_EGRESSD
admin = $tmp/egressd-admin.sock
audit_log = $tmp/egressd-audit.log
sni_check = no
plain_http = no
workers = 0
max_connections = 20000
max_connections_per_client = 20000
idle_timeout = 600

[hosts]
bench.test = 127.0.0.1

[phase:bench]
allow = bench.test:$P_ECHO bench.test:$P_HTTP bench.test:$P_SOURCE bench.test:$P_SINK
EOF
}

write_tinyproxy_conf() {
	cat >"$tmp/tinyproxy.conf" <<EOF
User tinyproxy
Group tinyproxy
Port $P_TINYPROXY
Listen 127.0.0.1
Timeout 600
LogFile "$tmp/tinyproxy/tinyproxy.log"
LogLevel Info
PidFile "$tmp/tinyproxy/tinyproxy.pid"
MaxClients 10000
Allow 127.0.0.1
DisableViaHeader Yes
ConnectPort $P_ECHO
ConnectPort $P_HTTP
ConnectPort $P_SOURCE
ConnectPort $P_SINK
EOF
	mkdir -p "$tmp/tinyproxy"
	chown tinyproxy:tinyproxy "$tmp/tinyproxy"
}

write_squid_conf() {
	cat >"$tmp/squid.conf" <<EOF
http_port 127.0.0.1:$P_SQUID
visible_hostname bench.test
pid_filename $tmp/squid/squid.pid
cache_effective_user proxy
cache deny all
cache_store_log none
access_log $tmp/squid/access.log
cache_log $tmp/squid/cache.log
coredump_dir $tmp/squid
max_filedescriptors 20000
shutdown_lifetime 1 seconds
acl localhost_src src 127.0.0.1/32
acl SSL_ports port $P_ECHO $P_HTTP $P_SOURCE $P_SINK
acl CONNECT method CONNECT
http_access deny CONNECT !SSL_ports
http_access allow localhost_src
http_access deny all
EOF
	mkdir -p "$tmp/squid"
	chown proxy:proxy "$tmp/squid"
}

start_proxy() {
	case $1 in
	floor)
		"$FLOOR" --listen "$P_FLOOR" >"$tmp/floor.out" 2>&1 &
		proxy_pid=$!
		port=$P_FLOOR ;;
	egressd)
		write_egressd_conf
		"$tmp/egressd-bin" -c "$tmp/egressd.ini" \
		    >"$tmp/egressd.out" 2>&1 &
		proxy_pid=$!
		port=$P_EGRESSD ;;
	tinyproxy)
		write_tinyproxy_conf
		tinyproxy -d -c "$tmp/tinyproxy.conf" \
		    >"$tmp/tinyproxy.out" 2>&1 &
		proxy_pid=$!
		port=$P_TINYPROXY ;;
	squid)
		write_squid_conf
		squid -N -f "$tmp/squid.conf" >"$tmp/squid.out" 2>&1 &
		proxy_pid=$!
		port=$P_SQUID ;;
	esac
	if ! wait_port "$port" "$proxy_pid"; then
		log "$1 did not start; its output:"
		cat "$tmp/$1.out" >&2
		stop_proxy
		return 1
	fi
	sleep 0.5
	return 0
}

stop_proxy() {
	[ -n "$proxy_pid" ] || return 0
	kill -TERM "$proxy_pid" 2>/dev/null
	for _ in $(seq 1 50); do
		kill -0 "$proxy_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$proxy_pid" 2>/dev/null
	wait "$proxy_pid" 2>/dev/null
	proxy_pid=
	rm -rf "$tmp/tinyproxy" "$tmp/squid" "$tmp"/egressd-*.log \
	    "$tmp"/egressd-admin.sock
}

# run_mode REP PROXY MODE: one loadgen run, result line appended.
run_mode() {
	local rep=$1 px=$2 mode=$3 host via args out idle
	if [ "$px" = direct ]; then
		via="--direct"
		host=127.0.0.1
	else
		case $px in
		egressd) via="--proxy tcp:127.0.0.1:$P_EGRESSD"
			 host=bench.test ;;
		tinyproxy) via="--proxy tcp:127.0.0.1:$P_TINYPROXY"
			 host=127.0.0.1 ;;
		squid) via="--proxy tcp:127.0.0.1:$P_SQUID"
			 host=127.0.0.1 ;;
		floor) via="--proxy tcp:127.0.0.1:$P_FLOOR"
			 host=127.0.0.1 ;;
		esac
	fi
	case $mode in
	idle)
		[ "$px" = direct ] && return 0
		case $px in
		floor) idle=$IDLE_EGRESSD ;;
		egressd) idle=$IDLE_EGRESSD ;;
		tinyproxy) idle=$IDLE_TINYPROXY ;;
		squid) idle=$IDLE_SQUID ;;
		esac
		args="--mode idle --target $host:$P_ECHO --concurrency $idle
		    --duration 2 --pid $proxy_pid" ;;
	rate)
		args="--mode rate --target $host:$P_HTTP --concurrency 64
		    --duration $DUR" ;;
	rr)
		args="--mode rr --target $host:$P_ECHO --concurrency 32
		    --duration $DUR" ;;
	bulk1)
		args="--mode bulk --target $host:$P_SOURCE --concurrency 1
		    --duration $DUR" ;;
	bulk8)
		args="--mode bulk --target $host:$P_SOURCE --concurrency 8
		    --duration $DUR" ;;
	up1)
		args="--mode bulk --upload --target $host:$P_SINK
		    --concurrency 1 --duration $DUR" ;;
	*) log "unknown mode $mode"; exit 2 ;;
	esac
	# shellcheck disable=SC2086
	out=$("$LOADGEN" $via $args --label "$px") || {
		log "loadgen failed: $px $mode"
		return 0
	}
	echo "rep=$rep key=$mode $out" >>"$tmp/results"
	echo "rep=$rep key=$mode $out" >&2
	sleep 1		# let TIME_WAIT and the proxy settle
}

"$UPSTREAM" --echo "$P_ECHO" --http "$P_HTTP" --source "$P_SOURCE" \
    --sink "$P_SINK" 2>"$tmp/upstream.out" &
upstream_pid=$!
for p in $P_ECHO $P_HTTP $P_SOURCE $P_SINK; do
	wait_port "$p" "$upstream_pid" || { log "upstream failed"; exit 1; }
done

: >"$tmp/results"
for rep in $(seq 1 "$REPS"); do
	for px in $run_list; do
		if [ "$px" != direct ]; then
			start_proxy "$px" || continue
		fi
		for mode in $MODES; do
			run_mode "$rep" "$px" "$mode"
		done
		stop_proxy
	done
done

[ -n "$RESULTS" ] && cp "$tmp/results" "$RESULTS"

# --- table of medians -----------------------------------------------------

echo
echo "Medians of $REPS interleaved runs ($(nproc) CPUs, $(uname -r))."
echo "Ratios are this proxy's median divided by direct's and by egressd's."
echo
awk -v order="$run_list" '
function median(k,   n, i, j, t, a) {
	n = cnt[k]
	for (i = 1; i <= n; i++)
		a[i] = val[k, i]
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	if (n % 2)
		return a[(n + 1) / 2]
	return (a[n / 2] + a[n / 2 + 1]) / 2
}
function fmt(v) {
	if (v == "")
		return "n/a"
	if (v >= 100)
		return sprintf("%.0f", v)
	return sprintf("%.2f", v)
}
function ratio(a, b) {
	if (a == "" || b == "" || b == 0)
		return "-"
	return sprintf("%.2f", a / b)
}
{
	delete f
	for (i = 1; i <= NF; i++) {
		eq = index($i, "=")
		f[substr($i, 1, eq - 1)] = substr($i, eq + 1)
	}
	for (m in f) {
		k = f["key"] SUBSEP f["proxy"] SUBSEP m
		cnt[k]++
		val[k, cnt[k]] = f[m] + 0
	}
}
END {
	nm = split("rate:tunnels_per_s:tunnels/s (64 conc) " \
	    "rate:c2s_p50_us:CONNECT-to-200 p50 (us) " \
	    "rate:c2s_p99_us:CONNECT-to-200 p99 (us) " \
	    "rate:c2fb_p50_us:CONNECT-to-first-byte p50 (us) " \
	    "rate:c2fb_p99_us:CONNECT-to-first-byte p99 (us) " \
	    "rr:reqs_per_s:round trips/s (32 tunnels) " \
	    "rr:lat_p99_us:round trip p99 (us) " \
	    "bulk1:mb_per_s:bulk down, 1 tunnel (MB/s) " \
	    "bulk8:mb_per_s:bulk down, 8 tunnels (MB/s) " \
	    "up1:mb_per_s:bulk up, 1 tunnel (MB/s) " \
	    "idle:kib_per_tunnel:idle RSS per tunnel (KiB)", spec, " ")
	np = split(order, px, " ")
	print "| metric | proxy | median | vs direct | vs egressd |"
	print "|---|---|---:|---:|---:|"
	# spec entries were split on spaces: rebuild them on the key marker
	line = ""
	for (i = 1; i <= nm; i++) {
		if (spec[i] ~ /^[a-z0-9]+:[a-z0-9_]+:/) {
			if (line != "")
				items[++ni] = line
			line = spec[i]
		} else
			line = line " " spec[i]
	}
	items[++ni] = line
	for (i = 1; i <= ni; i++) {
		split(items[i], p3, ":")
		mode = p3[1]; metric = p3[2]
		title = substr(items[i], length(mode) + length(metric) + 3)
		d = ""; e = ""
		if (cnt[mode, "direct", metric])
			d = median(mode SUBSEP "direct" SUBSEP metric)
		if (cnt[mode, "egressd", metric])
			e = median(mode SUBSEP "egressd" SUBSEP metric)
		for (j = 1; j <= np; j++) {
			k = mode SUBSEP px[j] SUBSEP metric
			if (!cnt[k])
				continue
			v = median(k)
			extra = ""
			if (mode == "idle")
				extra = sprintf(" (%d of %d open)",
				    median("idle" SUBSEP px[j] SUBSEP "open"),
				    median("idle" SUBSEP px[j] SUBSEP "conc"))
			printf "| %s | %s | %s%s | %s | %s |\n", title, px[j],
			    fmt(v), extra, ratio(v, d), ratio(v, e)
		}
	}
	# the targets of issue 6, from the same medians
	print ""
	print "| target | egressd | bound | ratio | met |"
	print "|---|---:|---:|---:|---|"
	target("rate", "tunnels_per_s", "tunnels/s >= 3x the better peer",
	    "peer", "max", 3)
	target("rate", "c2fb_p99_us",
	    "CONNECT-to-first-byte p99 <= 1/2 the better peer", "peer",
	    "min", 0.5)
	target("rr", "reqs_per_s", "round trips/s >= 2x the better peer",
	    "peer", "max", 2)
	target("bulk1", "mb_per_s", "bulk, 1 tunnel >= 0.8x direct",
	    "direct", "max", 0.8)
	target("bulk8", "mb_per_s", "bulk, 8 tunnels >= 0.8x direct",
	    "direct", "max", 0.8)
	target("idle", "kib_per_tunnel", "idle RSS per tunnel <= 4 KiB",
	    "const", "min", 4)
}
# target(...): the egressd median against the bound: the better of the peers
# (tinyproxy, squid), direct, or a constant; "max" means more is better.
function target(mode, metric, title, against, better, factor,
    e, b, v, q, ok, r) {
	if (!cnt[mode, "egressd", metric])
		return
	e = median(mode SUBSEP "egressd" SUBSEP metric)
	b = ""
	if (against == "const")
		b = 1
	else if (against == "direct") {
		if (cnt[mode, "direct", metric])
			b = median(mode SUBSEP "direct" SUBSEP metric)
	} else {
		split("tinyproxy squid", q, " ")
		for (r = 1; r <= 2; r++) {
			if (!cnt[mode, q[r], metric])
				continue
			v = median(mode SUBSEP q[r] SUBSEP metric)
			if (b == "" || (better == "max" ? v > b : v < b))
				b = v
		}
	}
	if (b == "" || b == 0) {
		printf "| %s | %s | n/a | - | - |\n", title, fmt(e)
		return
	}
	ok = better == "max" ? e >= factor * b : e <= factor * b
	printf "| %s | %s | %s | %.2f | %s |\n", title, fmt(e),
	    against == "const" ? "-" : fmt(b), e / b, ok ? "yes" : "**no**"
}' "$tmp/results"
