# lib.sh: shared helpers for the integration tests, sourced by every
# tests/integ/*.test.  TAP output (plan, ok, is, like, diag, done_testing),
# a per-test temp dir, free loopback ports, and starting/stopping egressd
# and the python test upstreams.  Every process started is killed by PID
# at exit.  Roles: egressd on 127.0.0.2, upstreams on 127.0.0.3; tests
# never use a non-loopback address or the system resolver.
#
# Environment (from make check): srcdir, builddir, EGRESSD.
#
# API summary (see each function's comment):
#   plan N | skip_all WHY | bail WHY | done_testing
#   ok STATUS DESC | pass DESC | fail DESC | check DESC CMD... | skip DESC WHY
#   is GOT WANT DESC | isnt GOT WANT DESC | like GOT ERE DESC | unlike ...
#   diag TEXT... | diag_file FILE [PREFIX]
#   free_port -> prints a free TCP port (tries 127.0.0.2 and 127.0.0.3)
#   start_egressd CONFIG_TEXT [ARGS...]   sets EG_PID EG_CONF EG_OUT EG_ERR
#   stop_egressd [SIG]                     sets EG_STATUS
#   start_upstream KIND ADDR PORT [ARGS...]   sets UP_PID (tls: UP_CERT)
#   raw ARGS...      runs rawclient.py (see its --help)
#   wait_for_line FILE ERE [SECONDS]   waits until a line of FILE matches
#   count_lines FILE ERE               prints how many lines match
#   proxy_conf LISTEN AUDIT [LINES...] prints a [proxy] section
# Variables: T (temp dir, removed at exit; KEEP_TMP=1 keeps it), EG_ADDR
# (127.0.0.2), UP_ADDR (127.0.0.3), PY (python3; run it as "$PY" -S),
# INTEG (this folder), EG_ADMIN_NONE (1 when "admin = none" is accepted).

srcdir=${srcdir:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
builddir=${builddir:-$srcdir}
EGRESSD=${EGRESSD:-$builddir/src/egressd/egressd}
case $EGRESSD in /*) ;; *) EGRESSD=$PWD/$EGRESSD ;; esac
INTEG=$srcdir/tests/integ
# The interpreter itself, not a wrapper such as a pyenv shim (slow); run
# it with -S (no site packages: stdlib only, and much faster to start).
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
EG_ADDR=127.0.0.2		# egressd's listeners
UP_ADDR=127.0.0.3		# upstreams
export LC_ALL=C

_tap_n=0
_tap_fail=0
_tap_plan=
_PIDS=()

# plan N: print the TAP plan up front.
plan()
{
	_tap_plan=$1
	echo "1..$1"
}

# skip_all WHY: nothing to run here; exit 0.
skip_all()
{
	echo "1..0 # SKIP $*"
	_tap_plan=0
	exit 0
}

# bail WHY: abort the whole test script.
bail()
{
	echo "Bail out! $*"
	exit 1
}

# diag TEXT...: a TAP comment (each line prefixed with "# ").
diag()
{
	printf '%s\n' "$*" | sed 's/^/# /'
}

# diag_file FILE [PREFIX]: the last 30 lines of FILE as diagnostics.
diag_file()
{
	[ -s "$1" ] || return 0
	# the prefix may hold '/' or '&': no sed replacement
	tail -n 30 "$1" | P="${2:-$(basename "$1")}" awk '{ print "#   " ENVIRON["P"] ": " $0 }'
}

# ok STATUS DESC: STATUS 0 is a pass, anything else a failure.
ok()
{
	_tap_n=$((_tap_n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $_tap_n - $2"
		return 0
	fi
	echo "not ok $_tap_n - $2"
	_tap_fail=$((_tap_fail + 1))
	return 1
}

pass() { ok 0 "$1"; }
fail() { ok 1 "$1"; }

# skip DESC WHY: a test that could not run here.
skip()
{
	_tap_n=$((_tap_n + 1))
	echo "ok $_tap_n - $1 # SKIP $2"
}

# check DESC CMD...: ok when CMD exits 0.
check()
{
	local d=$1
	shift
	"$@"
	ok $? "$d"
}

# is GOT WANT DESC: string equality.
is()
{
	if [ "$1" = "$2" ]; then
		ok 0 "$3"
	else
		ok 1 "$3"
		diag "     got: '$1'" "expected: '$2'"
		return 1
	fi
}

# isnt GOT UNWANTED DESC
isnt()
{
	if [ "$1" != "$2" ]; then
		ok 0 "$3"
	else
		ok 1 "$3"
		diag "got the unwanted '$1'"
		return 1
	fi
}

# like GOT ERE DESC: GOT matches the extended regex ERE (bash =~).
like()
{
	if [[ $1 =~ $2 ]]; then
		ok 0 "$3"
	else
		ok 1 "$3"
		diag "     got: '$1'" "expected to match: $2"
		return 1
	fi
}

# unlike GOT ERE DESC
unlike()
{
	if [[ $1 =~ $2 ]]; then
		ok 1 "$3"
		diag "     got: '$1'" "expected not to match: $2"
		return 1
	fi
	ok 0 "$3"
}

# done_testing: print the plan if none was given, summarise, exit 0
# (the TAP driver counts "not ok" lines).
done_testing()
{
	if [ -z "$_tap_plan" ]; then
		echo "1..$_tap_n"
	elif [ "$_tap_plan" != "$_tap_n" ]; then
		diag "planned $_tap_plan tests but ran $_tap_n"
	fi
	[ "$_tap_fail" -eq 0 ] || diag "$_tap_fail of $_tap_n failed"
	exit 0
}

# --- temp dir and cleanup ---------------------------------------------------

T=$(mktemp -d "${TMPDIR:-/tmp}/egressd-integ.XXXXXX") || bail "mktemp failed"

# _track PID: kill PID at exit.
_track()
{
	_PIDS+=("$1")
}

# _untrack PID: PID was waited for; do not kill it at exit.
_untrack()
{
	local i
	for i in "${!_PIDS[@]}"; do
		[ "${_PIDS[$i]}" = "$1" ] && unset '_PIDS[i]'
	done
}

_cleanup()
{
	local p
	for p in "${_PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${_PIDS[@]}"; do
		# give each up to 2 s, then SIGKILL
		local i=0
		while kill -0 "$p" 2>/dev/null && [ $i -lt 20 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	if [ -n "$KEEP_TMP" ]; then
		echo "# kept $T" >&2
	else
		rm -rf "$T"
	fi
}
trap _cleanup EXIT
trap 'exit 1' INT TERM HUP

# A daemon started without "admin = none" puts its default admin socket
# ($XDG_RUNTIME_DIR/egressd/admin.sock) here, not in a shared place.
mkdir -m 0700 "$T/xdg" && export XDG_RUNTIME_DIR=$T/xdg

[ -n "$PY" ] || bail "python3 is needed for the test upstreams"
[ -x "$EGRESSD" ] || bail "$EGRESSD not found (set EGRESSD or builddir)"

# --- ports ---------------------------------------------------------------------

# Ports come from a per-script window derived from $$, below the Linux
# ephemeral range (32768+), so parallel tests and client sockets do not
# collide; each candidate is checked by binding it on both roles' addresses.
# The next candidate lives in a file, since callers use $(free_port).
echo $((10000 + ($$ % 1100) * 20)) >"$T/.port_next"

# free_port: print a TCP port that is free on 127.0.0.2 and 127.0.0.3.
free_port()
{
	local p
	p=$("$PY" -S - "$(cat "$T/.port_next")" <<'EOF'
import socket, sys
p = int(sys.argv[1])
for _ in range(2000):
    if p > 32000:
        p = 10000
    good = True
    for a in ("127.0.0.2", "127.0.0.3"):
        s = socket.socket()
        try:
            s.bind((a, p))
        except OSError:
            good = False
        finally:
            s.close()
    if good:
        print(p)
        sys.exit(0)
    p += 1
sys.exit(1)
EOF
) || bail "no free port"
	echo $((p + 1)) >"$T/.port_next"
	echo "$p"
}

# _wait_listen ADDR PORT|PATH SECONDS PID: wait until a TCP (ADDR PORT)
# or Unix (PATH, ADDR empty) listener accepts, as long as PID lives.
_wait_listen()
{
	"$PY" -S - "$@" <<'EOF'
import os, socket, sys, time
addr, port, secs, pid = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
end = time.time() + secs
while time.time() < end:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit(2)
    try:
        if addr:
            fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
            s = socket.socket(fam)
            s.settimeout(0.5)
            s.connect((addr.strip("[]"), int(port)))
        else:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(0.5)
            s.connect(port)
        s.close()
        sys.exit(0)
    except OSError:
        time.sleep(0.05)
sys.exit(1)
EOF
}

# --- egressd ---------------------------------------------------------------------

_eg_n=0

# start_egressd CONFIG_TEXT [ARGS...]: write CONFIG_TEXT to a file in $T,
# start "$EGRESSD -c FILE ARGS..." in the background (stdout to $EG_OUT,
# stderr to $EG_ERR) and wait up to 5 s until its first listener accepts:
# the first -l/-u in ARGS, else the first listen/unix line of the config
# (set EG_WAIT=ADDR:PORT or EG_WAIT=/path to override, EG_WAIT=none to
# skip).  Sets EG_PID, EG_CONF, EG_OUT, EG_ERR.  Returns 1 (with
# diagnostics) when the daemon does not come up.
start_egressd()
{
	local conf=$1 a prev= target= host port rc
	shift
	_eg_n=$((_eg_n + 1))
	EG_CONF=$T/egressd-$_eg_n.ini
	EG_OUT=$T/egressd-$_eg_n.out
	EG_ERR=$T/egressd-$_eg_n.err
	printf '%s\n' "$conf" >"$EG_CONF"
	"$EGRESSD" -c "$EG_CONF" "$@" >"$EG_OUT" 2>"$EG_ERR" &
	EG_PID=$!
	_track "$EG_PID"

	target=${EG_WAIT:-}
	if [ -z "$target" ]; then
		for a in "$@"; do
			case $prev in
			-l|--listen|-u|--unix) target=$a; break ;;
			esac
			prev=$a
		done
	fi
	if [ -z "$target" ]; then
		target=$(sed -n 's/^[[:space:]]*\(listen\|unix\)[[:space:]]*=[[:space:]]*\([^[:space:];]*\).*/\2/p' \
		    "$EG_CONF" | head -n 1)
	fi
	[ -n "$target" ] || target=127.0.0.1:3128
	[ "$target" = none ] && return 0
	case $target in
	/*)	host= ; port=$target ;;
	*)	host=${target%:*}; port=${target##*:} ;;
	esac
	_wait_listen "$host" "$port" 5 "$EG_PID"
	rc=$?
	if [ $rc -ne 0 ]; then
		if [ $rc -eq 2 ]; then
			wait "$EG_PID"
			diag "egressd exited ($?) before listening on $target"
		else
			diag "egressd did not listen on $target within 5 s"
		fi
		diag "config $EG_CONF:"
		diag_file "$EG_CONF" conf
		diag_file "$EG_ERR" stderr
		diag_file "$EG_OUT" stdout
		return 1
	fi
	return 0
}

# stop_egressd [SIG]: send SIG (default TERM) to $EG_PID and wait up to
# 5 s for it to exit; sets EG_STATUS to its exit status (124 when it had
# to be killed).
stop_egressd()
{
	local i=0
	EG_STATUS=
	[ -n "$EG_PID" ] || return 1
	kill -"${1:-TERM}" "$EG_PID" 2>/dev/null
	while kill -0 "$EG_PID" 2>/dev/null && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$EG_PID" 2>/dev/null; then
		kill -9 "$EG_PID" 2>/dev/null
		wait "$EG_PID" 2>/dev/null
		EG_STATUS=124
		diag "egressd $EG_PID did not exit within 5 s of SIG${1:-TERM}"
	else
		wait "$EG_PID"
		EG_STATUS=$?
	fi
	_untrack "$EG_PID"
	EG_PID=
	return 0
}

# --- upstreams ---------------------------------------------------------------------

_up_n=0

# start_upstream KIND ADDR PORT [ARGS...]: start tests/integ/upstream.py
# (KIND echo|eofecho|banner|hold|late|http|count|tls|sink|source|backlog|dns;
# see its docstring)
# on ADDR:PORT and wait (up to 10 s) until it prints READY.  Extra ARGS go to upstream.py (e.g. --count-file F, --http for
# tls).  For tls, the certificate (CN and SAN up.test) is UP_CERT.
# Sets UP_PID; its stderr is $T/up-N.err.
start_upstream()
{
	local kind=$1 addr=$2 port=$3
	shift 3
	_up_n=$((_up_n + 1))
	UP_CERT=$T/up-$_up_n.crt
	"$PY" -S "$INTEG/upstream.py" "$kind" --addr "$addr" --port "$port" \
	    --dir "$T" --cert "$UP_CERT" --key "$T/up-$_up_n.key" "$@" \
	    >"$T/up-$_up_n.out" 2>"$T/up-$_up_n.err" &
	UP_PID=$!
	_track "$UP_PID"
	# wait for its READY line (no probe connection: "count" counts them)
	local i=0
	while ! grep -q READY "$T/up-$_up_n.out" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 200 ] || ! kill -0 "$UP_PID" 2>/dev/null; then
			diag "upstream $kind on $addr:$port did not start"
			diag_file "$T/up-$_up_n.err" upstream
			return 1
		fi
		sleep 0.05
	done
	return 0
}

# raw ARGS...: tests/integ/rawclient.py (see "rawclient.py --help").
raw()
{
	"$PY" -S "$INTEG/rawclient.py" "$@"
}

# --- audit log helpers -------------------------------------------------------------

# wait_for_line FILE ERE [SECONDS]: wait (default 5 s) until a line of FILE
# matches ERE; returns 1 on timeout.
wait_for_line()
{
	local i=0 max=$(( ${3:-5} * 20 ))
	while [ $i -lt $max ]; do
		if [ -f "$1" ] && grep -Eq -- "$2" "$1"; then
			return 0
		fi
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# wait_for_count FILE ERE N [SECONDS]: until N lines of FILE match ERE
# (default 5 s).  For a line like one already there: a CLOSE may wait
# 20 ms in its worker's batch after the client has its answer
# (egressd(8), AUDIT LOG), so read the log only once it is in.
wait_for_count()
{
	local i=0 max=$(( ${4:-5} * 20 ))
	while [ $i -lt $max ]; do
		[ "$(count_lines "$1" "$2")" -ge "$3" ] && return 0
		sleep 0.05
		i=$((i + 1))
	done
	return 1
}

# count_lines FILE ERE: how many lines of FILE match ERE.
count_lines()
{
	local n
	n=$(grep -Ec -- "$2" "$1" 2>/dev/null)
	echo "${n:-0}"
}

# proxy_conf LISTEN AUDIT [EXTRA PROXY LINES...]: a [proxy] section for
# tests: the listener, the audit log, and no admin API where the build
# understands "admin = none".
proxy_conf()
{
	local l
	echo "[proxy]"
	echo "listen = $1"
	echo "audit_log = $2"
	[ -n "$EG_ADMIN_NONE" ] && echo "admin = none"
	shift 2
	for l in "$@"; do
		echo "$l"
	done
}

# Does this build accept "admin = none"?  (SPEC does not name it; without
# it, the admin API is off as long as the daemon does not start one.)
printf '[proxy]\nadmin = none\n[phase:p]\n' >"$T/.admin-none.ini"
if "$EGRESSD" -t -c "$T/.admin-none.ini" >/dev/null 2>&1; then
	EG_ADMIN_NONE=1
else
	EG_ADMIN_NONE=
fi
