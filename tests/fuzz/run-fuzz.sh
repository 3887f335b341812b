#!/bin/sh
# run-fuzz.sh: build every libFuzzer target whose source exists and run
# each for SECONDS seconds (default 60) over its committed corpus.  New
# inputs go to a scratch directory; crashes are reported and kept there.
# Usage: tests/fuzz/run-fuzz.sh [SECONDS] [TARGET...], or `make fuzz
# [FUZZ_SECONDS=N]` in a build directory.  It works in the source tree;
# the build directory (for @core below) is FUZZ_BUILD, else the directory
# it was started in.
set -u
build=${FUZZ_BUILD:-$(pwd)}
cd "$(dirname "$0")/../.." || exit 3

# name|library sources|extra link flags.  A target is skipped when
# tests/fuzz/fuzz-NAME.c or one of its sources does not exist.  "@core"
# in the flags is the built core library (of the build directory: build
# once first) and its dependencies, for a parser
# that reaches the rest of the core (the configuration's modules and
# audit sinks): its own sources, instrumented, come first and win.
TARGETS='
reqparse|src/lib/reqparse.c src/lib/host.c|@core
host|src/lib/host.c|@core
addrclass|src/lib/addrclass.c|@core
resp|src/lib/reqparse.c src/lib/host.c|@core
pattern|src/lib/policy.c src/lib/host.c|@core
sni|src/lib/sni.c|@core
relayhdr|src/lib/relayhdr.c|
session-body|src/lib/sessbody.c|
auditparse|src/lib/auditparse.c|
cfg|src/lib/cfg.c src/lib/inilex.c src/lib/policy.c src/lib/host.c|@core
redact|src/mod/replay/redact.c src/mod/common/fsutil.c src/lib/crypto.c src/lib/alloc.c|-lmbedcrypto -ljansson
verify|src/mod/record/verify.c src/mod/record/chain.c src/lib/crypto.c src/lib/alloc.c|-lmbedcrypto
canon|src/mod/record/canon.c src/lib/alloc.c|-ljansson
record|src/mod/record/check.c src/mod/record/seal.c|@core
plan|src/mod/replay/plan.c src/lib/inilex.c|@core
receipt|src/mod/replay/receipt.c src/mod/common/fsutil.c src/lib/alloc.c|-lmbedcrypto -ljansson
meter|src/lib/meter.c|@core
route|src/lib/route.c src/lib/routecfg.c src/lib/reqparse.c|@core
'

# @core: each built archive with the libraries libtool recorded for it
core=
for la in src/lib/libegress-core.la src/mod/common/libmodcommon.la; do
	[ -f "$build/$la" ] || continue
	core="$core $build/${la%/*}/.libs/$(basename "$la" .la).a $(sed -n \
	    "s/^dependency_libs='\(.*\)'\$/\1/p" "$build/$la")"
done

secs=${1:-60}
[ $# -gt 0 ] && shift
only="$*"
CC=${CC:-clang}
CFLAGS=${FUZZ_CFLAGS:--g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined}
scratch=${FUZZ_SCRATCH:-${TMPDIR:-/tmp}/egressd-fuzz.$$}
mkdir -p "$scratch" || exit 3
status=0

echo "$TARGETS" | while IFS='|' read -r name srcs libs; do
	[ -n "$name" ] || continue
	if [ -n "$only" ]; then
		case " $only " in *" $name "*) ;; *) continue ;; esac
	fi
	main=tests/fuzz/fuzz-$name.c
	if [ ! -f "$main" ]; then
		echo "== $name: skipped ($main missing)"
		continue
	fi
	missing=
	for s in $srcs; do
		[ -f "$s" ] || missing="$missing $s"
	done
	if [ -n "$missing" ]; then
		echo "== $name: skipped (missing:$missing)"
		continue
	fi
	bin=$scratch/fuzz-$name
	case $libs in *@core*)
		if [ ! -f "$build/src/lib/.libs/libegress-core.a" ]; then
			echo "== $name: skipped (no $build/src/lib/.libs/libegress-core.a: FUZZ_BUILD=DIR)"
			continue
		fi
		libs=$(echo "$libs" | sed "s|@core|$core|")
	esac
	# shellcheck disable=SC2086
	if ! $CC $CFLAGS -I"$build" -Isrc/lib -Isrc/include -o "$bin" "$main" $srcs \
	    $libs; then
		echo "== $name: BUILD FAILED"
		echo fail >>"$scratch/status"
		continue
	fi
	corpus=tests/fuzz/corpus/$name
	new=$scratch/corpus-$name
	art=$scratch/crash-$name/
	mkdir -p "$corpus" "$new" "$art"
	echo "== $name: fuzzing ${secs}s (new inputs in $new)"
	"$bin" -max_total_time="$secs" -print_final_stats=1 \
	    -artifact_prefix="$art" -max_len=8192 "$new" "$corpus" \
	    >"$scratch/log-$name" 2>&1
	rc=$?
	grep -E '^stat::number_of_executed_units|^stat::peak_rss' \
	    "$scratch/log-$name" | sed "s/^/   $name /"
	if [ $rc -ne 0 ]; then
		echo "== $name: FAILED (exit $rc); log $scratch/log-$name"
		grep -E 'ERROR|SUMMARY|Test unit written' \
		    "$scratch/log-$name" | head -20
		ls "$art"
		echo fail >>"$scratch/status"
	else
		echo "== $name: ok"
	fi
done

[ -f "$scratch/status" ] && status=1
echo "scratch: $scratch"
exit $status
