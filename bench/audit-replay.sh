#!/bin/sh
# audit-replay.sh: the "egressd audit replay" benchmark (issue 14): a
# recorded log of N request lines (default 1,000,000: 70% ALLOW, 25%
# BLOCK not_allowed, 5% FAIL, over 20,000 hosts) replayed against a
# 10,000-entry allowlist (exact names, *. and **. wildcards, some with
# ports, CIDRs) that differs from the recorded one, so that the replay
# has changes to group.  Prints seconds, lines/s and the peak RSS, for the
# text log and for the same log in JSON.  Nothing is dialled.
#
# usage: bench/audit-replay.sh [-e EGRESSD] [-n LINES] [-r RUNS]
#   (from the top of a build tree; default EGRESSD src/egressd/egressd)
set -eu

egressd=src/egressd/egressd
lines=1000000
runs=3
while getopts e:n:r: o; do
	case $o in
	e) egressd=$OPTARG ;;
	n) lines=$OPTARG ;;
	r) runs=$OPTARG ;;
	*) echo "usage: $0 [-e EGRESSD] [-n LINES] [-r RUNS]" >&2; exit 2 ;;
	esac
done
[ -x "$egressd" ] || { echo "$0: $egressd not found" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/egressd-bench-audit.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# 10,000 allowlist entries: 7,000 exact, 1,500 "*.", 1,000 "**.", 400
# with a port, 100 CIDRs.  The new file drops every tenth exact name and
# adds names that the log refused.
awk -v out="$tmp/new.ini" 'BEGIN {
	print "[proxy]\nlisten = 127.0.0.1:1\naudit_log = none\n" \
	    "deny_private = yes\n[phase:agent]" > out
	for (i = 0; i < 7000; i++)
		if (i % 10 != 0)
			print "allow = h" i ".svc" (i % 97) ".example" > out
	for (i = 0; i < 700; i++)
		print "allow = r" i ".refused.example" > out
	for (i = 0; i < 1500; i++)
		print "allow = *.w" i ".example" > out
	for (i = 0; i < 1000; i++)
		print "allow = **.a" i ".example" > out
	for (i = 0; i < 400; i++)
		print "allow = p" i ".example:" (8000 + i) > out
	for (i = 0; i < 100; i++)
		print "allow = 198.51." i ".0/24" > out
}'
n=$(grep -c '^allow' "$tmp/new.ini")

# the recorded log: hosts drawn from the same families, plus refused ones
awk -v n="$lines" -v out="$tmp/audit.log" 'BEGIN {
	srand(14);
	for (k = 0; k < n; k++) {
		r = rand();
		f = int(rand() * 6);
		i = int(rand() * 7000);
		if (f == 0 || f == 1) { h = "h" i ".svc" (i % 97) ".example"; p = 443; rule = h }
		else if (f == 2) { h = "x" (i % 50) ".w" (i % 1500) ".example"; p = 443; rule = "*.w" (i % 1500) ".example" }
		else if (f == 3) { h = "a" (i % 1000) ".example"; p = 443; rule = "**.a" (i % 1000) ".example" }
		else if (f == 4) { h = "p" (i % 400) ".example"; p = 8000 + i % 400; rule = h ":" p }
		else { h = "198.51." (i % 100) "." (i % 250 + 1); p = 443; rule = "198.51." (i % 100) ".0/24" }
		ts = sprintf("2026-11-29T18:%02d:%02d.%03dZ", int(k / 60000) % 60, int(k / 1000) % 60, k % 1000);
		if (r < 0.70)
			printf "%s ALLOW %s:%d id=%d phase=agent client=127.0.0.1:%d method=CONNECT addr=203.0.113.%d rule=%s\n", ts, h, p, k + 1, 20000 + k % 40000, i % 250 + 1, rule > out;
		else if (r < 0.95)
			printf "%s BLOCK r%d.refused.example:443 id=%d phase=agent client=127.0.0.1:%d method=CONNECT reason=not_allowed\n", ts, i % 2000, k + 1, 20000 + k % 40000 > out;
		else
			printf "%s FAIL %s:%d id=%d phase=agent client=127.0.0.1:%d method=CONNECT reason=connect_failed\n", ts, h, p, k + 1, 20000 + k % 40000 > out;
	}
}'
# the same requests in JSON
awk '{
	split($3, hp, ":"); port = hp[length(hp)]; host = substr($3, 1, length($3) - length(port) - 1);
	printf "{\"ts\":\"%s\",\"event\":\"%s\",\"host\":\"%s\",\"port\":%s", $1, $2, host, port;
	for (i = 4; i <= NF; i++) {
		eq = index($i, "="); k = substr($i, 1, eq - 1); v = substr($i, eq + 1);
		if (k == "id") printf ",\"id\":%s", v; else printf ",\"%s\":\"%s\"", k, v;
	}
	print "}";
}' "$tmp/audit.log" >"$tmp/audit.json"

timeit()
{
	# best of $runs: seconds and peak RSS (KiB) of one replay
	best=
	rss=
	i=0
	while [ $i -lt "$runs" ]; do
		i=$((i + 1))
		t0=$(date +%s.%N)
		if command -v /usr/bin/time >/dev/null 2>&1; then
			/usr/bin/time -f %M -o "$tmp/rss" "$egressd" audit replay \
			    -c "$tmp/new.ini" "$1" >"$tmp/out" 2>"$tmp/err" || true
			rss=$(tail -n 1 "$tmp/rss")
		else
			"$egressd" audit replay -c "$tmp/new.ini" "$1" \
			    >"$tmp/out" 2>"$tmp/err" || true
			rss=?
		fi
		t1=$(date +%s.%N)
		s=$(echo "$t1 - $t0" | bc -l 2>/dev/null || awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
		if [ -z "$best" ] || [ "$(awk -v a="$s" -v b="$best" 'BEGIN { print (a < b) }')" = 1 ]; then
			best=$s
		fi
	done
	awk -v s="$best" -v n="$lines" -v r="$rss" -v f="$2" 'BEGIN {
		printf "%-5s %8d lines  %6.2f s  %9.0f lines/s  peak RSS %s KiB\n", f, n, s, n / s, r }'
	tail -n 1 "$tmp/out" | sed 's/^/      /'
	[ -s "$tmp/err" ] && sed 's/^/      stderr: /' "$tmp/err" | head -n 3
	return 0
}

echo "audit replay: $lines request lines against a $n-entry allowlist (best of $runs)"
timeit "$tmp/audit.log" text
timeit "$tmp/audit.json" json
