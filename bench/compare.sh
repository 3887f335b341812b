#!/bin/bash
# Side-by-side benchmark of egressd, its peers and no proxy (direct),
# interleaved in one run: for each repetition, each proxy is started, every
# mode is measured, and the proxy is stopped. Prints a markdown table of
# medians with their min-max spread and ratios against direct and egressd,
# then the targets of issue 16 computed from the same medians.
#
# "floor" (bench/floor.c) is the cheapest CONNECT proxy we could write: no
# policy, no log, nothing but the system calls any proxy makes. It is not
# a peer; it shows how close to the machine's limit each proxy comes.
#
# The peers: tinyproxy and Squid (Debian packages), and with PEERS=1 also
# smokescreen, sandbox-runtime's proxy (srt) and Apache Traffic Server (ats),
# built and started by ../shared/peers (build.sh, start.sh: the same
# allowlist, 127.0.0.1 on the upstream's ports, and each one's normal
# per-connection log on).
#
# Everything listens on 127.0.0.1 only. Needs: `make -C bench`, the
# tinyproxy and squid Debian packages, root (Squid drops to cache_effective_user,
# tinyproxy to its User, ATS to trafficserver). Tunables (environment):
#   EGRESSD      egressd binary (default ../src/egressd/egressd from bench/)
#   EGRESSD_PHASE  lines added to egressd's [phase:bench] (budgets)
#   REPS         repetitions (3; 5 for a published table)
#   DUR          seconds per timed mode (10)
#   PROXIES      "direct floor egressd tinyproxy squid"
#   PEERS=1      adds "smokescreen srt ats" to PROXIES (needs
#                ../shared/peers/build.sh first; PEERS_DIR as for it)
#   PEERS_SRC    where build.sh/start.sh are ($here/../../shared/peers)
#   BUSY=N       N CPU hogs (`yes >/dev/null`, normal priority) run for the
#                whole run, the same for every proxy (0: none; BUSY=1 is one)
#   MODES        "rate rr bulk1 bulk8 up1 http idle" (idle last: closing
#                9,000 tunnels keeps a logging peer busy for a while).
#                http: plain-HTTP GETs (absolute form, no tunnel), one
#                after another on 32 kept-alive client connections, to
#                the keep-alive HTTP upstream: requests/s, p99 and proxy
#                CPU per request; run for direct, egressd, tinyproxy and
#                squid (floor and the CONNECT-only peers are skipped)
#   IDLE         idle tunnels per proxy (9000); IDLE_<PROXY> overrides
#                (IDLE_EGRESSD, IDLE_SMOKESCREEN, ...)
#   IDLE_REPS    in how many of the repetitions idle runs (all; its spread
#                is a few hundredths of a KiB, so 2 saves time)
#   PORT_BASE    first port used (23100; uses PORT_BASE..PORT_BASE+16);
#                keep it below the ephemeral range (ip_local_port_range),
#                or a client socket may hold a port a listener needs
#   SETTLE       seconds of pause after each mode (1)
#   BENCH_TMP    where the temp dir (configs, logs) goes (/tmp)
#   RESULTS      also copy the raw result lines to this file
#
# The noise rule: a comparison is judged only when the two spreads (min-max
# over the repetitions) do not overlap; when they do, the target line says
# "within noise" after yes/no, and the comparison is not counted as won or
# lost.

set -u

here=$(cd "$(dirname "$0")" && pwd)
EGRESSD=${EGRESSD:-$here/../src/egressd/egressd}
REPS=${REPS:-3}
DUR=${DUR:-10}
PROXIES=${PROXIES:-"direct floor egressd tinyproxy squid"}
PEERS=${PEERS:-0}
PEERS_SRC=${PEERS_SRC:-$here/../../shared/peers}
BUSY=${BUSY:-0}
MODES=${MODES:-"rate rr bulk1 bulk8 up1 http idle"}
IDLE=${IDLE:-9000}
IDLE_REPS=${IDLE_REPS:-$REPS}
PORT_BASE=${PORT_BASE:-23100}
SETTLE=${SETTLE:-1}
RESULTS=${RESULTS:-}

if [ "$PEERS" = 1 ]; then
	for px in smokescreen srt ats; do
		case " $PROXIES " in *" $px "*) ;; *) PROXIES="$PROXIES $px" ;; esac
	done
fi

P_ECHO=$PORT_BASE
P_HTTP=$((PORT_BASE + 1))
P_SOURCE=$((PORT_BASE + 2))
P_SINK=$((PORT_BASE + 3))
P_EGRESSD=$((PORT_BASE + 10))
P_TINYPROXY=$((PORT_BASE + 11))
P_SQUID=$((PORT_BASE + 12))
P_FLOOR=$((PORT_BASE + 13))
P_SMOKESCREEN=$((PORT_BASE + 14))
P_SRT=$((PORT_BASE + 15))
P_ATS=$((PORT_BASE + 16))

LOADGEN=$here/loadgen
FLOOR=$here/floor
UPSTREAM=$here/upstream

log() { echo "compare: $*" >&2; }

tmp=$(mktemp -d "${BENCH_TMP:-/tmp}/egressd-bench.XXXXXX") || exit 1
chmod 755 "$tmp"
upstream_pid=
proxy_pid=
hog_pids=

cleanup() {
	local p
	if [ -n "$proxy_pid" ]; then
		kill -TERM "$proxy_pid" 2>/dev/null
		wait "$proxy_pid" 2>/dev/null
	fi
	for p in $hog_pids; do
		kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
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
if [ "$((PORT_BASE + 16))" -ge "$eph_lo" ] && [ "$PORT_BASE" -le "$eph_hi" ]
then
	log "warning: ports $PORT_BASE.. overlap the ephemeral range" \
	    "$eph_lo-$eph_hi"
fi

for p in $P_ECHO $P_HTTP $P_SOURCE $P_SINK $P_EGRESSD $P_TINYPROXY \
    $P_SQUID $P_FLOOR $P_SMOKESCREEN $P_SRT $P_ATS; do
	if port_in_use "$p"; then
		log "port $p is in use; set PORT_BASE"
		exit 1
	fi
done

# Which proxies can run here.  A proxy that cannot is reported in the
# table's notes, not silently dropped.
run_list=
skipped=
versions=
for px in $PROXIES; do
	case $px in
	direct|floor) ;;
	egressd)
		if [ ! -x "$EGRESSD" ]; then
			log "skipping egressd: $EGRESSD not built"
			skipped="$skipped egressd(not built)"
			continue
		fi
		# a private copy: a rebuild during the run cannot mix binaries
		cp "$EGRESSD" "$tmp/egressd-bin" || exit 1
		versions="$versions|$("$tmp/egressd-bin" --version 2>&1 |
		    head -n 1)" ;;
	tinyproxy|squid)
		if ! command -v "$px" >/dev/null; then
			log "skipping $px: not installed (apt-get install $px)"
			skipped="$skipped $px(not installed)"
			continue
		fi
		versions="$versions|$px $(dpkg-query -W -f '${Version}' \
		    "$px" 2>/dev/null)" ;;
	smokescreen|srt|ats)
		if [ ! -x "$PEERS_SRC/build.sh" ]; then
			log "skipping $px: no $PEERS_SRC/build.sh (set PEERS_SRC)"
			skipped="$skipped $px(no build.sh)"
			continue
		fi
		# build.sh only checks when the peer is built already
		if ! v=$("$PEERS_SRC/build.sh" "$px" 2>"$tmp/build-$px.err")
		then
			log "skipping $px: not built; run" \
			    "$PEERS_SRC/build.sh --install $px:"
			cat "$tmp/build-$px.err" >&2
			skipped="$skipped $px(not built)"
			continue
		fi
		versions="$versions|$v" ;;
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
plain_http = yes
workers = 0
max_connections = 20000
max_connections_per_client = 20000
idle_timeout = 600

[hosts]
bench.test = 127.0.0.1

[phase:bench]
allow = bench.test:$P_ECHO bench.test:$P_HTTP bench.test:$P_SOURCE bench.test:$P_SINK
EOF
	# EGRESSD_PHASE: more lines for [phase:bench] (budgets, to measure
	# their counting), e.g. EGRESSD_PHASE=$'budget_up = 1000G\nbudget_down = 1000G'
	[ -z "${EGRESSD_PHASE:-}" ] || printf '%s\n' "$EGRESSD_PHASE" \
	    >>"$tmp/egressd.ini"
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

proxy_port() {
	case $1 in
	floor) echo "$P_FLOOR" ;;
	egressd) echo "$P_EGRESSD" ;;
	tinyproxy) echo "$P_TINYPROXY" ;;
	squid) echo "$P_SQUID" ;;
	smokescreen) echo "$P_SMOKESCREEN" ;;
	srt) echo "$P_SRT" ;;
	ats) echo "$P_ATS" ;;
	esac
}

start_proxy() {
	local port
	port=$(proxy_port "$1")
	case $1 in
	floor)
		"$FLOOR" --listen "$P_FLOOR" >"$tmp/floor.out" 2>&1 &
		proxy_pid=$! ;;
	egressd)
		write_egressd_conf
		"$tmp/egressd-bin" -c "$tmp/egressd.ini" \
		    >"$tmp/egressd.out" 2>&1 &
		proxy_pid=$! ;;
	tinyproxy)
		write_tinyproxy_conf
		tinyproxy -d -c "$tmp/tinyproxy.conf" \
		    >"$tmp/tinyproxy.out" 2>&1 &
		proxy_pid=$! ;;
	squid)
		write_squid_conf
		squid -N -f "$tmp/squid.conf" >"$tmp/squid.out" 2>&1 &
		proxy_pid=$! ;;
	smokescreen|srt|ats)
		# start.sh execs the proxy: $! is the proxy's PID
		UPSTREAM_PORTS="$P_ECHO $P_HTTP $P_SOURCE $P_SINK" \
		    "$PEERS_SRC/start.sh" "$1" "127.0.0.1:$port" \
		    "$tmp/peer-$1" >"$tmp/$1.out" 2>&1 &
		proxy_pid=$! ;;
	esac
	if ! wait_port "$port" "$proxy_pid"; then
		log "$1 did not start; its output:"
		cat "$tmp/$1.out" "$tmp/peer-$1"/*.log >&2 2>/dev/null
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
	    "$tmp"/egressd-admin.sock "$tmp"/peer-*
}

# run_mode REP PROXY MODE: one loadgen run, result line appended.
run_mode() {
	local rep=$1 px=$2 mode=$3 host via args out idle var pidarg=
	if [ "$px" = direct ]; then
		via="--direct"
		host=127.0.0.1
	else
		via="--proxy tcp:127.0.0.1:$(proxy_port "$px")"
		# the peers allow the address, egressd a name
		host=127.0.0.1
		[ "$px" = egressd ] && host=bench.test
		pidarg="--pid $proxy_pid"
	fi
	case $mode in
	idle)
		[ "$px" = direct ] && return 0
		[ "$rep" -gt "$IDLE_REPS" ] && return 0
		var=IDLE_$(echo "$px" | tr '[:lower:]' '[:upper:]')
		idle=${!var:-$IDLE}
		args="--mode idle --target $host:$P_ECHO --concurrency $idle
		    --duration 2" ;;
	rate)
		args="--mode rate --target $host:$P_HTTP --concurrency 64
		    --duration $DUR" ;;
	http)
		# plain HTTP: floor and the peers' configurations are
		# CONNECT-only
		case $px in
		direct|egressd|tinyproxy|squid) ;;
		*) return 0 ;;
		esac
		args="--mode http --target $host:$P_HTTP --concurrency 32
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
	out=$("$LOADGEN" $via $args $pidarg --upstream-pid "$upstream_pid" \
	    --label "$px") || {
		log "loadgen failed: $px $mode"
		echo "rep=$rep key=$mode proxy=$px failed=1" >>"$tmp/results"
		return 0
	}
	echo "rep=$rep key=$mode $out" >>"$tmp/results"
	echo "rep=$rep key=$mode $out" >&2
	sleep "$SETTLE"		# let TIME_WAIT and the proxy settle
}

"$UPSTREAM" --echo "$P_ECHO" --http "$P_HTTP" --source "$P_SOURCE" \
    --sink "$P_SINK" 2>"$tmp/upstream.out" &
upstream_pid=$!
for p in $P_ECHO $P_HTTP $P_SOURCE $P_SINK; do
	wait_port "$p" "$upstream_pid" || { log "upstream failed"; exit 1; }
done

# the busy machine: the hogs run from before the first proxy to the end
for _ in $(seq 1 "$BUSY"); do
	yes >/dev/null &
	hog_pids="$hog_pids $!"
done

t_start=$(date -u +%s)
: >"$tmp/results"
for rep in $(seq 1 "$REPS"); do
	for px in $run_list; do
		t_px=$(date +%s)
		if [ "$px" != direct ]; then
			if ! start_proxy "$px"; then
				echo "rep=$rep key=start proxy=$px failed=1" \
				    >>"$tmp/results"
				continue
			fi
		fi
		for mode in $MODES; do
			run_mode "$rep" "$px" "$mode"
		done
		stop_proxy
		log "rep $rep: $px took $(( $(date +%s) - t_px )) s"
	done
done
t_end=$(date -u +%s)

[ -n "$RESULTS" ] && cp "$tmp/results" "$RESULTS"

# --- table of medians -----------------------------------------------------

echo
if [ "$BUSY" -gt 0 ]; then
	echo "Busy machine: $BUSY CPU hog(s) (\`yes >/dev/null\`, nice 0) for the whole run."
else
	echo "Quiet machine (no hog; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg))."
fi
echo "Medians of $REPS interleaved runs of ${DUR} s per timed mode ($(nproc) CPUs, $(uname -r)),"
echo "$(date -u -d "@$t_start" '+%F %H:%M')-$(date -u -d "@$t_end" '+%H:%M') UTC; [min-max] over the runs."
echo "Ratios are this proxy's median divided by direct's and by egressd's."
echo "CPU: the proxy's user+system time (all threads) over the measured window."
echo "$versions" | tr '|' '\n' | sed '/^$/d; s/^/- /'
[ -n "$skipped" ] && echo "- not run:$skipped"
grep 'failed=1' "$tmp/results" | sed 's/^/- failed: /'
echo
awk -v order="$run_list" -f - "$tmp/results" <<'AWK'
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
function vmin(k,   i, m) {
	m = val[k, 1]
	for (i = 2; i <= cnt[k]; i++)
		if (val[k, i] < m)
			m = val[k, i]
	return m
}
function vmax(k,   i, m) {
	m = val[k, 1]
	for (i = 2; i <= cnt[k]; i++)
		if (val[k, i] > m)
			m = val[k, i]
	return m
}
function fmt(v) {
	if (v == "")
		return "n/a"
	if (v >= 100 || v <= -100)
		return sprintf("%.0f", v)
	return sprintf("%.2f", v)
}
function ratio(a, b) {
	if (a == "" || b == "" || b == 0)
		return "-"
	return sprintf("%.2f", a / b)
}
function has(mode, p, metric) {
	return cnt[mode SUBSEP p SUBSEP metric] > 0
}
function med(mode, p, metric) {
	return median(mode SUBSEP p SUBSEP metric)
}
{
	delete f
	for (i = 1; i <= NF; i++) {
		eq = index($i, "=")
		f[substr($i, 1, eq - 1)] = substr($i, eq + 1)
	}
	if (f["failed"] == 1)
		next
	for (m in f) {
		k = f["key"] SUBSEP f["proxy"] SUBSEP m
		cnt[k]++
		val[k, cnt[k]] = f[m] + 0
	}
}
END {
	ni = split("rate:tunnels_per_s:tunnels/s (64 conc)|" \
	    "rate:c2fb_p50_us:CONNECT-to-first-byte p50 (us)|" \
	    "rate:c2fb_p99_us:CONNECT-to-first-byte p99 (us)|" \
	    "rate:c2s_p99_us:CONNECT-to-200 p99 (us; ats answers before connecting)|" \
	    "rate:cpu_us_per_tunnel:proxy CPU per tunnel (us)|" \
	    "rr:reqs_per_s:round trips/s (32 tunnels)|" \
	    "rr:lat_p99_us:round trip p99 (us)|" \
	    "rr:cpu_us_per_rt:proxy CPU per round trip (us)|" \
	    "bulk1:mb_per_s:bulk down, 1 tunnel (MB/s)|" \
	    "bulk1:cpu_us_per_mb:proxy CPU per MB, bulk 1 tunnel (us)|" \
	    "bulk8:mb_per_s:bulk down, 8 tunnels (MB/s)|" \
	    "bulk8:cpu_us_per_mb:proxy CPU per MB, bulk 8 tunnels (us)|" \
	    "up1:mb_per_s:bulk up, 1 tunnel (MB/s)|" \
	    "http:reqs_per_s:plain-HTTP keep-alive requests/s (32 conns)|" \
	    "http:lat_p99_us:plain-HTTP request p99 (us)|" \
	    "http:cpu_us_per_req:proxy CPU per plain-HTTP request (us)|" \
	    "http:conns:client connections opened (plain HTTP)|" \
	    "idle:kib_per_tunnel:idle RSS per tunnel (KiB)", items, "|")
	np = split(order, px, " ")
	print "| metric | proxy | median | [min-max] | vs direct | vs egressd |"
	print "|---|---|---:|---:|---:|---:|"
	for (i = 1; i <= ni; i++) {
		split(items[i], p3, ":")
		mode = p3[1]; metric = p3[2]
		title = substr(items[i], length(mode) + length(metric) + 3)
		d = has(mode, "direct", metric) ? med(mode, "direct", metric) : ""
		e = has(mode, "egressd", metric) ? med(mode, "egressd", metric) : ""
		for (j = 1; j <= np; j++) {
			k = mode SUBSEP px[j] SUBSEP metric
			if (!cnt[k])
				continue
			v = median(k)
			extra = ""
			if (mode == "idle")
				extra = sprintf(" (%d of %d open)",
				    med("idle", px[j], "open"),
				    med("idle", px[j], "conc"))
			printf "| %s | %s | %s%s | %s-%s | %s | %s |\n", title,
			    px[j], fmt(v), extra, fmt(vmin(k)), fmt(vmax(k)),
			    ratio(v, d), ratio(v, e)
		}
	}
	# the targets of issue 16, from the same medians
	print ""
	print "| target | egressd | bound | from | ratio | met |"
	print "|---|---:|---:|---|---:|---|"
	peers = "smokescreen srt ats squid tinyproxy"
	target("rate", "tunnels_per_s", "tunnels/s >= the best peer",
	    peers, "max", 1)
	target("rate", "c2fb_p99_us",
	    "CONNECT-to-first-byte p99 <= the best peer", peers, "min", 1)
	target("rr", "reqs_per_s", "round trips/s >= the best peer",
	    peers, "max", 1)
	target("bulk1", "mb_per_s", "bulk, 1 tunnel >= the best peer",
	    peers, "max", 1)
	target("bulk8", "mb_per_s", "bulk, 8 tunnels >= the best peer",
	    peers, "max", 1)
	target("up1", "mb_per_s", "bulk up, 1 tunnel >= the best peer",
	    peers, "max", 1)
	target("idle", "kib_per_tunnel", "idle RSS per tunnel <= the best peer",
	    peers, "min", 1)
	target("http", "reqs_per_s",
	    "plain-HTTP keep-alive requests/s >= squid and tinyproxy",
	    "squid tinyproxy", "max", 1)
	target("http", "cpu_us_per_req",
	    "CPU per plain-HTTP request <= squid and tinyproxy",
	    "squid tinyproxy", "min", 1)
	target("idle", "kib_per_tunnel", "idle RSS per tunnel <= 2 KiB",
	    "const", "min", 2)
	target("bulk1", "mb_per_s", "bulk, 1 tunnel >= 0.8x direct",
	    "direct", "max", 0.8)
	target("rate", "cpu_us_per_tunnel", "CPU per tunnel <= 1.1x floor",
	    "floor", "min", 1.1)
	target("rr", "cpu_us_per_rt", "CPU per round trip <= 1.1x floor",
	    "floor", "min", 1.1)
	target("bulk1", "cpu_us_per_mb", "CPU per MB (1 tunnel) <= 1.1x floor",
	    "floor", "min", 1.1)
	target("bulk8", "cpu_us_per_mb", "CPU per MB (8 tunnels) <= 1.1x floor",
	    "floor", "min", 1.1)
}
# target(...): the egressd median against the bound: the best of the
# proxies named in `against` (or a constant); "max" means more is better.
# The noise rule: when egressd's [min-max] overlaps the bound's (factor
# applied), the line says "within noise".
function target(mode, metric, title, against, better, factor,
    e, b, bp, v, q, ok, r, n, ke, kb, lo, hi, note) {
	if (!has(mode, "egressd", metric))
		return
	e = med(mode, "egressd", metric)
	b = ""; bp = ""
	if (against == "const") {
		b = factor; factor = 1
	} else {
		n = split(against, q, " ")
		for (r = 1; r <= n; r++) {
			if (!has(mode, q[r], metric))
				continue
			v = med(mode, q[r], metric)
			if (b == "" || (better == "max" ? v > b : v < b)) {
				b = v; bp = q[r]
			}
		}
	}
	if (b == "" || b == 0) {
		printf "| %s | %s | n/a | - | - | - |\n", title, fmt(e)
		return
	}
	ok = better == "max" ? e >= factor * b : e <= factor * b
	note = ""
	if (against != "const") {
		ke = mode SUBSEP "egressd" SUBSEP metric
		kb = mode SUBSEP bp SUBSEP metric
		lo = factor * vmin(kb); hi = factor * vmax(kb)
		if (vmax(ke) >= lo && vmin(ke) <= hi)
			note = " (within noise)"
	}
	printf "| %s | %s | %s | %s | %.2f | %s%s |\n", title, fmt(e),
	    fmt(b),
	    against == "const" ? "-" : bp, e / b, ok ? "yes" : "**no**", note
}
AWK
echo
echo "Run took $(( (t_end - t_start) / 60 )) min $(( (t_end - t_start) % 60 )) s."
