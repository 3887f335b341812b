#!/bin/sh
# contrib/dev.sh: the README's two commands, for a fresh Debian 12 or 13 machine.
#
#   ./contrib/dev.sh run    install what is missing, build, and run egressd
#                           in the foreground on its embedded default
#   ./contrib/dev.sh test   install what is missing, build, and run the whole
#                           test suite: the normal build, a build with every
#                           module disabled, an ASan/UBSan build, a
#                           ThreadSanitizer build (unit tests and $TSAN_TESTS)
#                           and `make distcheck`; ends with "N passed, N failed"
#   ./contrib/dev.sh tsan   only the ThreadSanitizer tree
#
# "test" also runs, once, in the normal tree, the slow packaging tests
# ($PACKAGING_TESTS: the Debian package built, linted and installed into
# a fresh Debian 12 root; the default tree built with --enable-werror, its
# make check run and the package built and linted in a fresh Debian 13
# root; make install with another prefix/sysconfdir).
#
# EGRESSD_REQUIRE_TSAN=1 makes a machine that cannot run ThreadSanitizer
# programs a failure instead of a skip; EGRESSD_REQUIRE_DEBOOTSTRAP=1 does
# the same for a machine without root, debootstrap or the apt mirror.
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)

PKGS="build-essential autoconf automake libtool pkg-config \
libmicrohttpd-dev libmbedtls-dev libc-ares-dev libinih-dev \
libseccomp-dev curl openssl python3 mandoc bubblewrap iproute2 procps \
libjansson-dev git libpsl-dev \
libsystemd-dev systemd logrotate prometheus"
# routes-sdk.test: the official model SDKs (installed by the test from
# npm).  Node and npm from Debian only where the machine has no node and
# npm of its own: a Node.js that bundles npm (as NodeSource's does)
# conflicts with Debian's npm package.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1
then
	PKGS="$PKGS nodejs npm"
fi

# The integration tests that run several workers against each other (and
# reloads and phase switches against them, and egressd replay -j's job
# threads, forking keepers while its proxy runs): the ThreadSanitizer tree
# runs these and the unit tests.  Names not (yet) in Makefile.am are left
# out.
TSAN_TESTS="tests/integ/stress.test tests/integ/phase-load.test \
tests/integ/concurrency.test tests/integ/admin.test \
tests/integ/reload-storm.test tests/integ/replay-net.test"

# packaging (ops-pkg): the Debian package's Build-Depends and tools, the
# Debian 12 and 13 roots of debpkg.test and deb13.test, the completion
# test's shells, jq for
# fleet-jq.test and python3-yaml for k8s.test
PKGS="$PKGS debhelper dpkg-dev fakeroot lintian debootstrap binutils \
libjansson-dev libsystemd-dev bash-completion zsh python3-yaml jq"

# the clients whose refusal and reset messages the tests read
# (refusal-clients.test, policy-reset.test): Go's net/http; strace for
# routes-syscalls.test's system-call counts
PKGS="$PKGS golang-go strace"

# Slow tests run once (in _build), not in every tree: not in TESTS.
PACKAGING_TESTS="tests/integ/debpkg.test tests/integ/install.test \
tests/integ/deb13.test"

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"
	elif command -v sudo >/dev/null 2>&1; then sudo "$@"
	else echo "dev.sh: need root to run: $*" >&2; return 1
	fi
}

deps() {
	missing=
	for p in $PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		    grep -q 'install ok installed' || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	echo "dev.sh: installing:$missing"
	as_root apt-get update -q
	as_root env DEBIAN_FRONTEND=noninteractive \
	    apt-get install -y -q --no-install-recommends $missing
}

# build DIR [configure flags...]: an out-of-tree build
build() {
	dir=$1; shift
	[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh)
	mkdir -p "$dir"
	(cd "$dir" && "$top/configure" --enable-werror "$@" >configure.out &&
	    make -j"$jobs" >make.out 2>&1) || {
		echo "dev.sh: build in $dir failed:" >&2
		tail -30 "$dir/make.out" "$dir/configure.out" 2>/dev/null >&2
		return 1
	}
}

# check DIR [MAKE ARGS...]: make check, never stopping the script on test
# failures.  $run_prefix (empty, or setarch for TSan) runs make.
run_prefix=
check() {
	cdir=$1; shift
	echo "dev.sh: make check in $cdir"
	(cd "$cdir" && $run_prefix make -j"$jobs" check "$@" >check.out 2>&1) ||
	{
		grep -E '^(FAIL|ERROR|XPASS):' "$cdir/check.out" >&2 || true
		tail -5 "$cdir/check.out" >&2
	}
}

# tsan_probe DIR: can this machine run ThreadSanitizer programs?  Prints
# the command prefix they need: nothing, or "setarch ARCH -R" where the
# kernel's mmap randomisation is wider than the runtime supports
# (vm.mmap_rnd_bits > 28: "FATAL: ThreadSanitizer: unexpected memory
# mapping").  Fails, with the reason on stderr, when neither works.
tsan_probe() {
	mkdir -p "$1"
	cat >"$1/tsan-probe.c" <<-'EOF'
	#include <pthread.h>
	static int n;
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	static void *f(void *a) { pthread_mutex_lock(&m); n++;
	    pthread_mutex_unlock(&m); return a; }
	int main(void) { pthread_t t; pthread_create(&t, 0, f, 0);
	    f(0); pthread_join(t, 0); return n != 2; }
	EOF
	${CC:-cc} -g -fsanitize=thread -o "$1/tsan-probe" "$1/tsan-probe.c" \
	    -pthread >"$1/tsan-probe.out" 2>&1 || {
		echo "the compiler cannot build with -fsanitize=thread:" \
		    "$(head -1 "$1/tsan-probe.out")" >&2
		return 1
	}
	if "$1/tsan-probe" >>"$1/tsan-probe.out" 2>&1; then
		echo
	elif setarch "$(uname -m)" -R "$1/tsan-probe" \
	    >>"$1/tsan-probe.out" 2>&1; then
		echo "setarch $(uname -m) -R"
	else
		echo "ThreadSanitizer programs do not run here, not even" \
		    "with ASLR off ($(grep -m1 -E 'FATAL|ERROR' \
		    "$1/tsan-probe.out")); try sysctl vm.mmap_rnd_bits=28" >&2
		return 1
	fi
}

# tsan DIR: build DIR with ThreadSanitizer and run the unit tests and
# $TSAN_TESTS.  Every report is kept in DIR/tsan-reports/ (a process
# stops at its first, halt_on_error=1, so the test it served fails too)
# and counts as a failure of its own in DIR/tsan-reports.trs.
tsan() {
	d=$1
	mkdir -p "$d"
	rm -f "$d/tsan-reports.trs"
	if ! prefix=$(tsan_probe "$d" 2>"$d/tsan-probe.why"); then
		if [ "${EGRESSD_REQUIRE_TSAN:-}" = 1 ]; then
			echo ":test-result: FAIL" >"$d/tsan-reports.trs"
			echo "dev.sh: TSan tree FAILED (EGRESSD_REQUIRE_TSAN=1):" \
			    "$(cat "$d/tsan-probe.why")" >&2
		else
			echo ":test-result: SKIP" >"$d/tsan-reports.trs"
			echo "dev.sh: TSan tree skipped: $(cat "$d/tsan-probe.why")"
		fi
		return 0
	fi
	[ -n "$prefix" ] && echo "dev.sh: TSan runs under '$prefix' (ASLR off)"
	build "$d" CFLAGS="-g -O1 -fsanitize=thread" \
	    LDFLAGS="-fsanitize=thread" || return 1
	tests='$(unit_tests)'
	for t in $TSAN_TESTS; do
		if [ -f "$top/$t" ] && grep -qF "$t" "$top/Makefile.am"; then
			tests="$tests $t"
		else
			echo "dev.sh: TSan tree: $t is not in Makefile.am (yet)"
		fi
	done
	rm -rf "$d/tsan-reports"
	mkdir -p "$d/tsan-reports"
	(export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 log_path=$d/tsan-reports/report"
	 run_prefix=$prefix
	 check "$d" TESTS="$tests")
	: >"$d/tsan-reports.trs"
	for r in "$d"/tsan-reports/report.*; do
		[ -f "$r" ] || continue
		echo ":test-result: FAIL" >>"$d/tsan-reports.trs"
		echo "dev.sh: ThreadSanitizer: $r:" >&2
		grep -E '^(WARNING|SUMMARY): ThreadSanitizer' "$r" >&2
	done
	[ -s "$d/tsan-reports.trs" ] ||
	    echo ":test-result: PASS" >"$d/tsan-reports.trs"
}

case "${1:-}" in
run)
	deps
	build "$top/_build"
	echo "dev.sh: egressd on 127.0.0.1:3128 (embedded default); Ctrl-C stops"
	exec "$top/_build/src/egressd/egressd" --audit -
	;;
test)
	deps
	rm -rf "$top/_build" "$top/_build-min" "$top/_build-asan" \
	    "$top/_build-tsan"
	build "$top/_build"
	check "$top/_build"
	t0=$(date +%s)
	check "$top/_build" TESTS="$PACKAGING_TESTS"
	echo "dev.sh: packaging tests: $(($(date +%s) - t0)) s"
	build "$top/_build-min" --disable-sandbox --disable-replay \
	    --disable-record --without-systemd
	check "$top/_build-min"
	build "$top/_build-asan" \
	    CFLAGS="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	    LDFLAGS="-fsanitize=address,undefined"
	(export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
	 export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	 check "$top/_build-asan")
	tsan "$top/_build-tsan"
	# distcheck: the tarball builds and passes from a clean copy
	dc=PASS
	(cd "$top/_build" && make -j"$jobs" distcheck >distcheck.out 2>&1) || {
		dc=FAIL
		tail -40 "$top/_build/distcheck.out" >&2
	}
	echo ":test-result: $dc" > "$top/_build/distcheck.trs"
	echo "dev.sh: make distcheck: $dc"
	trees="$top/_build $top/_build-min $top/_build-asan $top/_build-tsan"
	pass=$(cat $(find $trees -name '*.trs') |
	    grep -c '^:test-result: PASS' || true)
	skip=$(cat $(find $trees -name '*.trs') |
	    grep -c '^:test-result: SKIP' || true)
	fail=$(cat $(find $trees -name '*.trs') |
	    grep -cE '^:test-result: (FAIL|ERROR|XPASS)' || true)
	[ "$skip" -gt 0 ] && echo "($skip skipped)"
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	;;
tsan)
	# only the ThreadSanitizer tree, as in "test"
	deps
	rm -rf "$top/_build-tsan"
	tsan "$top/_build-tsan"
	pass=$(grep -c '^:test-result: PASS' $(find "$top/_build-tsan" \
	    -name '*.trs') /dev/null | awk -F: '{ n += $NF } END { print n }')
	fail=$(grep -cE '^:test-result: (FAIL|ERROR|XPASS)' $(find \
	    "$top/_build-tsan" -name '*.trs') /dev/null |
	    awk -F: '{ n += $NF } END { print n }')
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	;;
*)
	echo "usage: contrib/dev.sh run|test|tsan" >&2
	exit 2
	;;
esac
