#!/bin/bash
# record.sh: what the record module costs (issue 14; doc/PERFORMANCE.md
# "Record").  Two measurements, both on 127.0.0.1 only:
#
#  1. tunnels/s (loadgen --mode rate, 64 clients) through egressd with the
#     audit chain off, with audit_chain = yes, and with audit_key
#     (checkpoints every checkpoint_lines = 1000 lines and every 60 s),
#     interleaved REPS times; medians, and the ratio to "off".
#  2. "egressd audit verify" on a chained log of SIZE_MB (default 1024)
#     MB against sha256sum on the same file: seconds, MB/s, and the
#     verifier's peak RSS (/usr/bin/time -v).
#
# Needs: make -C bench (loadgen, upstream), a built egressd with the record
# module, python3, /usr/bin/time.  Environment: EGRESSD, REPS (3), DUR
# (10), SIZE_MB (1024), PORT_BASE (23300), BENCH_TMP (/tmp), SKIP_RATE=1,
# SKIP_VERIFY=1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
EGRESSD=${EGRESSD:-$here/../src/egressd/egressd}
REPS=${REPS:-3}
DUR=${DUR:-10}
SIZE_MB=${SIZE_MB:-1024}
PORT_BASE=${PORT_BASE:-23300}
P_HTTP=$PORT_BASE
P_EG=$((PORT_BASE + 1))
tmp=$(mktemp -d "${BENCH_TMP:-/tmp}/egressd-record-bench.XXXXXX") || exit 1
up_pid= eg_pid=
cleanup() {
	[ -n "$eg_pid" ] && kill "$eg_pid" 2>/dev/null && wait "$eg_pid" 2>/dev/null
	[ -n "$up_pid" ] && kill "$up_pid" 2>/dev/null && wait "$up_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
log() { echo "record.sh: $*" >&2; }

wait_port() {
	local i
	for i in $(seq 1 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

if [ -z "${SKIP_RATE:-}" ]; then
	"$EGRESSD" record keygen "$tmp/k" >/dev/null || exit 1
	"$here/upstream" --http "$P_HTTP" 2>"$tmp/up.err" &
	up_pid=$!
	wait_port "$P_HTTP" || { log "upstream failed"; exit 1; }
	: >"$tmp/results"
	for rep in $(seq 1 "$REPS"); do
		for v in off chain checkpoints; do
			case $v in
			off) extra= ;;
			chain) extra="audit_chain = yes" ;;
			checkpoints) extra="audit_key = $tmp/k" ;;
			esac
			rm -f "$tmp/audit.log"
			cat >"$tmp/eg.ini" <<EOT
[proxy]
listen = 127.0.0.1:$P_EG
admin = none
audit_log = $tmp/audit.log
sni_check = no
plain_http = no
max_connections = 20000
max_connections_per_client = 20000
$extra
[hosts]
bench.test = 127.0.0.1
[phase:bench]
allow = bench.test:$P_HTTP
EOT
			"$EGRESSD" -c "$tmp/eg.ini" 2>"$tmp/eg.err" &
			eg_pid=$!
			wait_port "$P_EG" || { log "egressd failed"; cat "$tmp/eg.err"; exit 1; }
			out=$("$here/loadgen" --proxy "tcp:127.0.0.1:$P_EG" \
			    --target "bench.test:$P_HTTP" --mode rate \
			    --concurrency 64 --duration "$DUR" --label "$v")
			kill "$eg_pid"; wait "$eg_pid"; eg_pid=
			[ "$v" = off ] || "$EGRESSD" audit-verify \
			    ${extra:+--pubkey $tmp/k.pub} "$tmp/audit.log" >/dev/null 2>&1 ||
			    log "$v: the log did not verify"
			echo "rep=$rep $out" | tee -a "$tmp/results" >&2
			sleep 1
		done
	done
	echo
	echo "tunnels/s, medians of $REPS interleaved runs of ${DUR}s ($(nproc) CPUs)"
	awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "=");
		if (kv[1] == "proxy") p = kv[2]; if (kv[1] == "tunnels_per_s") t = kv[2] }
		v[p, ++n[p]] = t }
	function med(p,   i, j, k, a, m) { m = n[p]
		for (i = 1; i <= m; i++) a[i] = v[p, i]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++)
			if (a[j] < a[i]) { k = a[i]; a[i] = a[j]; a[j] = k }
		return a[int((m + 1) / 2)] }
	END { o = med("off"); printf "| audit | tunnels/s | vs off |\n|---|---|---|\n"
		split("off chain checkpoints", L, " ")
		for (i = 1; i <= 3; i++) printf "| %s | %d | %.3f |\n", L[i], med(L[i]), med(L[i]) / o }' "$tmp/results"
	kill "$up_pid"; wait "$up_pid" 2>/dev/null; up_pid=
fi

if [ -z "${SKIP_VERIFY:-}" ]; then
	log "writing a ${SIZE_MB} MB chained log"
	python3 - "$tmp/big.log" "$SIZE_MB" <<'EOT'
import hashlib, sys
path, mb = sys.argv[1], int(sys.argv[2])
z = b"0" * 64
with open(path, "wb", buffering=1 << 20) as f:
    body = (b"2026-12-01T17:00:00.000Z START - run=0d5e5a6b-1c2d-4e3f-8a9b-"
            b"0c1d2e3f4a5b config=" + z + b" prev=-")
    h = hashlib.sha256(z + body).hexdigest().encode()
    f.write(body + b" chain=" + h + b"\n")
    size, i = 0, 0
    while size < mb << 20:
        i += 1
        body = (b"2026-12-01T17:00:00.%03dZ BLOCK host-%d.example:443 id=%d "
                b"phase=agent client=127.0.0.1:%d method=CONNECT "
                b"reason=not_allowed" % (i % 1000, i % 997, i, 30000 + i % 30000))
        h = hashlib.sha256(h + body).hexdigest().encode()
        line = body + b" chain=" + h + b"\n"
        f.write(line)
        size += len(line)
EOT
	sz=$(stat -c %s "$tmp/big.log")
	cat "$tmp/big.log" >/dev/null	# warm the page cache for both
	for tool in sha256sum verify sha256sum verify; do
		if [ $tool = sha256sum ]; then
			/usr/bin/time -v sha256sum "$tmp/big.log" >/dev/null 2>"$tmp/time"
		else
			/usr/bin/time -v "$EGRESSD" audit-verify "$tmp/big.log" >/dev/null 2>"$tmp/time"
			grep -q 'Exit status: 0' "$tmp/time" || log "verify: the log did not verify"
		fi
		s=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/time" |
		    awk -F: '{ print $(NF-1) * 60 + $NF }')
		rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/time")
		echo "$tool $s $rss" >>"$tmp/vres"
	done
	echo
	echo "audit verify on a $((sz >> 20)) MB chained log (best of 2, page cache warm)"
	awk -v sz="$sz" '{ if (!($1 in b) || $2 < b[$1]) { b[$1] = $2; r[$1] = $3 } }
	END { printf "| tool | seconds | MB/s | peak RSS |\n|---|---|---|---|\n"
		printf "| sha256sum | %.2f | %.0f | %d kB |\n", b["sha256sum"], sz / 1048576 / b["sha256sum"], r["sha256sum"]
		printf "| egressd audit verify | %.2f | %.0f | %d kB |\n", b["verify"], sz / 1048576 / b["verify"], r["verify"]
		printf "\nratio (verify MB/s / sha256sum MB/s): %.2f\n", b["sha256sum"] / b["verify"] }' "$tmp/vres"
fi
