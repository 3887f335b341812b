#!/bin/bash
# bench/routes.sh: a credential route in egressd against nginx as the
# reverse proxy ops teams would use instead (proxy_pass https://...,
# proxy_set_header x-api-key, proxy_ssl_verify on, upstream keepalive,
# proxy_buffering off), both in front of the same local TLS upstream (an
# nginx answering a small JSON body), interleaved round by round.
# Reports requests/s at 1 and 32 connections, p50/p99 added latency (the
# proxied latency minus a direct plain-HTTP request's to the same
# upstream), time to the first SSE event (tests/integ/modelapi.py's
# paced stream), CPU microseconds per request and RSS of the proxy.
#
#   bench/routes.sh BUILDDIR [ROUNDS] [REQUESTS]
#
# nginx runs twice: with access_log off (as usually benchmarked) and with
# an access log (a write(2) per request, as egressd's audit log writes
# two; EGRESSD_AUDIT=/dev/null shows what they cost).  EGRESSD_BEFORE=PATH (another egressd binary, e.g. one built from
# an earlier commit) adds its column, run interleaved with the others.
#
# Needs nginx (apt-get install nginx-light), openssl, python3, a C
# compiler (bench/httpload.c is the load generator), taskset (util-linux).  Loopback only:
# 127.0.0.2 (proxies), 127.0.0.3 (upstreams).  One worker each.
set -u
B=$(cd "${1:?usage: bench/routes.sh BUILDDIR [ROUNDS] [REQUESTS]}" && pwd)
ROUNDS=${2:-3}
N=${3:-20000}
S=$(cd "$(dirname "$0")/.." && pwd)
EGRESSD=$B/src/egressd/egressd
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "nginx not found (apt-get install nginx-light)"; exit 2; }
T=$(mktemp -d /tmp/egressd-bench-routes.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
cc -O2 -o "$T/httpload" "$S/bench/httpload.c" || exit 2

port() { python3 -S -c 'import socket; s=socket.socket(); s.bind(("127.0.0.3",0)); print(s.getsockname()[1])'; }
PU=$(port); PP=$(port); PT=$(port); PE=$(port); PN=$(port); PL=$(port); PB=$(port)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$T/ca.key" -out "$T/ca.crt" -days 2 -subj /CN=bench-ca >/dev/null 2>&1
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$T/api.key" -out "$T/api.csr" -subj /CN=api.test >/dev/null 2>&1
printf 'subjectAltName=DNS:api.test\n' >"$T/ext"
openssl x509 -req -in "$T/api.csr" -CA "$T/ca.crt" -CAkey "$T/ca.key" \
    -CAcreateserial -out "$T/api.crt" -days 2 -extfile "$T/ext" >/dev/null 2>&1
KEY=sk-bench-$$
BODY='{"id":"msg_bench","type":"message","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":12,"output_tokens":3}}'

# the upstream: TLS (and a plain twin for the baseline)
cat >"$T/up.conf" <<EOF
worker_processes 1; daemon off; pid $T/up.pid; error_log $T/up.err;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 10000000;
  server { listen 127.0.0.3:$PU ssl; listen 127.0.0.3:$PP;
    ssl_certificate $T/api.crt; ssl_certificate_key $T/api.key;
    location / { default_type application/json; return 200 '$BODY'; }
    location = /nginx-status { stub_status; } } }
EOF
"$NGINX" -p "$T" -c "$T/up.conf" & PIDS+=($!)
python3 -S "$S/tests/integ/modelapi.py" --addr 127.0.0.3 --port "$PT" \
    --cert "$T/api.crt" --key "$T/api.key" --log "$T/ma.log" >/dev/null 2>&1 & MAPID=$!; PIDS+=($MAPID)

# egressd: one worker, a route to each upstream
cat >"$T/eg.ini" <<EOF
[proxy]
listen = 127.0.0.2:$PE
audit_log = ${EGRESSD_AUDIT:-$T/audit.log}
admin = none
workers = 1
[hosts]
api.test = 127.0.0.3
[route:api]
upstream = https://api.test:$PU
header = x-api-key: $KEY
allow = POST /v1/messages
ca_file = $T/ca.crt
meter = anthropic
[route:tick]
upstream = https://api.test:$PT
allow = GET /v1/tick
ca_file = $T/ca.crt
[phase:p]
allow = route:api route:tick
EOF
"$EGRESSD" -c "$T/eg.ini" 2>"$T/eg.err" & EGPID=$!; PIDS+=($EGPID)
WHO="egressd"
if [ -n "${EGRESSD_BEFORE:-}" ]; then
	sed -e "s/^listen = .*/listen = 127.0.0.2:$PB/" \
	    -e "s|^audit_log = .*|audit_log = $T/audit-before.log|" \
	    "$T/eg.ini" >"$T/eb.ini"
	"$EGRESSD_BEFORE" -c "$T/eb.ini" 2>"$T/eb.err" & EBPID=$!; PIDS+=($EBPID)
	WHO="$WHO before"
fi
WHO="$WHO nginx nginx+log"

# nginx as the reverse proxy, set up as the docs advise
cat >"$T/px.conf" <<EOF
worker_processes 1; daemon off; pid $T/px.pid; error_log $T/px.err;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 10000000;
  upstream api { server 127.0.0.3:$PU; keepalive 64; }
  upstream tick { server 127.0.0.3:$PT; keepalive 8; }
  server { listen 127.0.0.2:$PN;
    proxy_http_version 1.1;
    proxy_buffering off;
    proxy_ssl_verify on; proxy_ssl_trusted_certificate $T/ca.crt;
    proxy_ssl_name api.test; proxy_ssl_server_name on;
    proxy_ssl_session_reuse on;
    # (proxy_set_header is inherited only by a level that sets none: every
    # header of a location is set in it, Connection "" for keep-alive)
    location /api/ { proxy_pass https://api/;
      proxy_set_header Connection ""; proxy_set_header Authorization "";
      proxy_set_header Host api.test:$PU; proxy_set_header x-api-key "$KEY"; }
    location /tick/ { proxy_pass https://tick/;
      proxy_set_header Connection ""; proxy_set_header Authorization "";
      proxy_set_header Host api.test:$PT; } } }
EOF
"$NGINX" -p "$T" -c "$T/px.conf" & PIDS+=($!)
# the same with an access log (the default format, a write(2) each)
sed -e "s|pid $T/px.pid|pid $T/pl.pid|" -e "s|error_log $T/px.err|error_log $T/pl.err|" \
    -e "s|access_log off;|access_log $T/pl-access.log;|" \
    -e "s|listen 127.0.0.2:$PN;|listen 127.0.0.2:$PL;|" "$T/px.conf" >"$T/pl.conf"
"$NGINX" -p "$T" -c "$T/pl.conf" & PIDS+=($!)
sleep 1.5
NGPID=$(pgrep -P "$(cat "$T/px.pid")" | head -n 1)	# its one worker
NLPID=$(pgrep -P "$(cat "$T/pl.pid")" | head -n 1)

REQ="POST /api/v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
# CPU time of all the process's threads in ns (schedstat: exact, where
# utime + stime in clock ticks was +-1 tick of some 40 in a 32-connection run)
cpu() { cat "/proc/$1/task/"*/schedstat | awk '{ s += $1 } END { printf "%.0f", s }'; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

# the connections the upstream accepted so far (its stub_status; this
# request is one of them)
accepts()
{
	local r
	exec 9<>"/dev/tcp/127.0.0.3/$PP" || { echo 0; return; }
	printf 'GET /nginx-status HTTP/1.0\r\n\r\n' >&9
	r=$(cat <&9)
	exec 9<&-
	echo "$r" | awk 'f { print $1; exit } /accepts/ { f = 1 }'
}

# The 1-connection runs put the load generator, the proxy and the
# upstream on CPU 0 (PIN=0: left where the scheduler puts them).  One
# request at a time leaves nothing to run in parallel, and on this VM
# (cpuidle haltpoll) a wake-up across vCPUs costs tens of microseconds and
# depends on where each process happens to sit: unpinned, the same nginx
# was 25 % faster with its access log than without, and the order of the
# proxies changed from run to run.  Pinned, the row is the CPU work of the
# request's path, the same placement for every proxy.  The SSE runs are
# pinned the same way (client, proxy, the paced model API): an event comes
# after 50 ms of silence, when every vCPU has halted, and unpinned the
# first-event row measured which vCPU each process had been left on
# (0.09 to 0.25 ms for the same proxy from run to run).
PIN=${PIN:-1}
if [ "$PIN" = 1 ] && ! command -v taskset >/dev/null; then
	echo "taskset not found (util-linux): the 1-connection and SSE runs are not pinned" >&2
	PIN=0
fi
UPPID=$(pgrep -P "$(cat "$T/up.pid")" | head -n 1)	# the upstream's worker
ALLCPU=$(taskset -p $$ | awk '{print $NF}')
pin1() { [ "$PIN" = 1 ] || return 0; for q; do taskset -a -p 1 "$q" >/dev/null; done; }
unpin() { [ "$PIN" = 1 ] || return 0; for q; do taskset -a -p "$ALLCPU" "$q" >/dev/null; done; }
on1() { if [ "$PIN" = 1 ]; then taskset 1 "$@"; else "$@"; fi; }

# load NAME PID PORT CONNS: "rps p50 p99 cpu_us_per_req handshakes"
# (handshakes: the upstream connections opened during the run)
load()
{
	local c0 c1 a0 a1 out
	a0=$(accepts)
	c0=$(cpu "$2")
	if [ "$4" = 1 ]; then
		pin1 "$2" "$UPPID"
		out=$(on1 "$T/httpload" 127.0.0.2 "$3" 1 "$N" "$REQ")
		unpin "$2" "$UPPID"
	else
		out=$("$T/httpload" 127.0.0.2 "$3" "$4" "$N" "$REQ")
	fi || { echo "0 0 0 0 0"; return; }
	c1=$(cpu "$2")
	a1=$(accepts)
	echo "$out" | awk -v c="$((c1 - c0))" -v n="$N" \
	    -v h="$((a1 - a0 - 1))" '{print $2, $4, $6, c / 1000 / n, h}'
}
pin1 "$UPPID"
base=$(on1 "$T/httpload" 127.0.0.3 "$PP" 1 "$N" "$REQ")
unpin "$UPPID"
b50=$(echo "$base" | awk '{print $4}'); b99=$(echo "$base" | awk '{print $6}')

first_event()	# PORT PATH: p50 us from the upstream's send to receipt
{
	on1 python3 -S - "$1" "$2" <<'EOF'
import json, socket, sys, time
s = socket.create_connection(("127.0.0.2", int(sys.argv[1])), timeout=20)
s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % sys.argv[2]).encode())
buf, d = b"", []
while len(d) < 40:
    c = s.recv(65536)
    if not c:
        break
    now = time.time()
    buf += c
    while b"\n\n" in buf:
        ev, buf = buf.split(b"\n\n", 1)
        for line in ev.split(b"\n"):
            i = line.find(b"data: ")
            if i != -1:
                d.append((now - json.loads(line[i + 6:])["t"]) * 1e6)
d.sort()
print("%.0f" % d[len(d) // 2] if d else "-")
EOF
}

# of WHO: the contender's process (pid) and port (p)
of()
{
	case $1 in
	egressd)	pid=$EGPID; p=$PE ;;
	before)		pid=$EBPID; p=$PB ;;
	nginx)		pid=$NGPID; p=$PN ;;
	nginx+log)	pid=$NLPID; p=$PL ;;
	esac
}

# a warm-up, not counted: every proxy opens and keeps its 32 upstream TLS
# connections (the first round measured their handshakes, the others not)
for who in $WHO; do
	of "$who"
	"$T/httpload" 127.0.0.2 "$p" 32 2000 "$REQ" >/dev/null
done
declare -A R
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

# rounds FN: FN WHO ROUND for every contender, ROUNDS times.  The order
# turns by one each round, so that no proxy always runs first or right
# after the same other one (this VM's idle loop, cpuidle haltpoll, makes
# a run faster or slower with what ran just before it).
read -r -a ORDER <<<"$WHO"
rounds()
{
	local r k who
	for r in $(seq 1 "$ROUNDS"); do
		k=$(( (r - 1) % ${#ORDER[@]} ))
		for who in "${ORDER[@]:k}" "${ORDER[@]:0:k}"; do
			of "$who"
			"$1" "$who" "$r"
		done
	done
}
load_runs()	# WHO ROUND
{
	R[$1,1,$2]=$(load "$1" "$pid" "$p" 1)
	R[$1,32,$2]=$(load "$1" "$pid" "$p" 32)
}
sse_run()	# WHO ROUND
{
	pin1 "$pid" "$MAPID"
	R[$1,sse,$2]=$(first_event "$p" /tick/v1/tick)
	unpin "$pid" "$MAPID"
}
rounds load_runs
# The SSE runs come after every load run, in rounds of their own.  Each
# right after its proxy's load runs, the row ranged over 0.06-0.28 ms for
# one proxy from run to run, and in some runs every proxy was at 0.22 or
# more; in rounds of their own, 0.07-0.16 ms.
rounds sse_run
med()	# values on stdin: the median
{
	sort -g | awk '{v[NR]=$1} END {print NR ? v[int((NR + 1) / 2)] : "-"}'
}
col()	# WHO KEY FIELD
{
	local r
	for r in $(seq 1 "$ROUNDS"); do echo "${R[$1,$2,$r]}" | awk -v f="$3" '{print $f}'; done | med
}
echo "baseline (direct plain HTTP to the upstream, 1 connection$([ "$PIN" = 1 ] && echo ', on CPU 0')): p50 ${b50} us, p99 ${b99} us"
echo "load average (1, 5, 15 min) before the rounds: $LOAD0, after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
row()	# LABEL KEY FIELD FORMAT [OFFSET]: one cell per contender
{
	local w v line="| $1 |"
	for w in $WHO; do
		v=$(col "$w" "$2" "$3")
		[ -n "${5:-}" ] && v=$(( v - $5 ))
		line="$line $(printf "$4" "$v") |"
	done
	echo "$line"
}
hdr="| median of $ROUNDS interleaved rounds, $N requests each |"; sep="|---|"
for w in $WHO; do
	case $w in
	before) hdr="$hdr egressd before |" ;;
	nginx) hdr="$hdr nginx (access_log off) |" ;;
	nginx+log) hdr="$hdr nginx (access log on) |" ;;
	*) hdr="$hdr $w |" ;;
	esac
	sep="$sep---|"
done
echo "$hdr"; echo "$sep"
on=$([ "$PIN" = 1 ] && echo ", CPU 0")
row "requests/s, 1 connection$on" 1 1 %s
row "requests/s, 32 connections" 32 1 %s
row "added latency p50, 1 connection (us$on)" 1 2 %s "$b50"
row "added latency p99, 1 connection (us$on)" 1 3 %s "$b99"
row "first SSE event after its send, p50 (us$on)" sse 1 %s
row "CPU per request, 32 connections (us)" 32 4 %.2f
row "upstream TLS handshakes, 1 connection run" 1 5 %s
row "upstream TLS handshakes, 32 connection run" 32 5 %s
line="| RSS after the runs (KiB) |"
for w in $WHO; do
	of "$w"
	line="$line $(rss "$pid") |"
done
echo "$line"
# upstream keep-alive works for all: TLS connections open to the
# upstream now (a handshake per request would show as 0 or thousands)
echo
line="TLS connections to the upstream after the runs:"
for w in $WHO; do
	of "$w"
	line="$line $w $(ss -Htnp state established "( dport = :$PU )" 2>/dev/null | grep -c "pid=$pid,")"
done
echo "$line"
