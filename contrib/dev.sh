#!/bin/sh
# contrib/dev.sh: the README's two commands, for a fresh Debian 12 machine.
#
#   ./contrib/dev.sh run    install what is missing, build, and run egressd
#                           in the foreground on its embedded default
#   ./contrib/dev.sh test   install what is missing, build, and run the whole
#                           test suite: the normal build, a build with every
#                           module disabled, an ASan/UBSan build, and
#                           `make distcheck`; ends with "N passed, N failed"
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)
jobs=$(nproc 2>/dev/null || echo 2)

PKGS="build-essential autoconf automake libtool pkg-config \
libmicrohttpd-dev libmbedtls-dev libc-ares-dev libinih-dev \
libseccomp-dev curl openssl python3 mandoc bubblewrap iproute2 procps"

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

# check DIR: make check, never stopping the script on test failures
check() {
	echo "dev.sh: make check in $1"
	(cd "$1" && make -j"$jobs" check >check.out 2>&1) || {
		grep -E '^(FAIL|ERROR|XPASS):' "$1/check.out" >&2 || true
		tail -5 "$1/check.out" >&2
	}
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
	rm -rf "$top/_build" "$top/_build-min" "$top/_build-asan"
	build "$top/_build"
	check "$top/_build"
	build "$top/_build-min" --disable-sandbox
	check "$top/_build-min"
	build "$top/_build-asan" \
	    CFLAGS="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	    LDFLAGS="-fsanitize=address,undefined"
	(export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
	 export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	 check "$top/_build-asan")
	# distcheck: the tarball builds and passes from a clean copy
	dc=PASS
	(cd "$top/_build" && make -j"$jobs" distcheck >distcheck.out 2>&1) || {
		dc=FAIL
		tail -40 "$top/_build/distcheck.out" >&2
	}
	echo ":test-result: $dc" > "$top/_build/distcheck.trs"
	echo "dev.sh: make distcheck: $dc"
	pass=$(cat $(find "$top/_build" "$top/_build-min" "$top/_build-asan" \
	    -name '*.trs') | grep -c '^:test-result: PASS' || true)
	skip=$(cat $(find "$top/_build" "$top/_build-min" "$top/_build-asan" \
	    -name '*.trs') | grep -c '^:test-result: SKIP' || true)
	fail=$(cat $(find "$top/_build" "$top/_build-min" "$top/_build-asan" \
	    -name '*.trs') | grep -cE '^:test-result: (FAIL|ERROR|XPASS)' ||
	    true)
	[ "$skip" -gt 0 ] && echo "($skip skipped)"
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	;;
*)
	echo "usage: contrib/dev.sh run|test" >&2
	exit 2
	;;
esac
