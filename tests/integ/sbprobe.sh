# sbprobe.sh: sourced by the sandbox tests (bash).  Can bubblewrap create
# a sandbox on this machine?  In a chroot, an unprivileged container or a
# CI runner without user namespaces it cannot ("No permissions to create
# new namespace"), and every sandbox case would fail for that one reason:
# probe once, and skip with the reason, or, with EGRESSD_REQUIRE_SANDBOX=1
# (.ci/run sets it), fail.
#
#   sb_probe     0 if bubblewrap works here; else 1 with the reason in
#                SB_WHY.  Sets BWRAP (kept if already set: the test of the
#                probe points it at a fake bwrap; egressd itself only ever
#                runs the one in the system directories).
#   sb_require   sb_probe, and when it fails end the TAP script: with
#                EGRESSD_REQUIRE_SANDBOX=1 "not ok" and exit 1, else
#                "1..0 # SKIP reason" and exit 0.

sb_probe()
{
	local d out
	SB_WHY=
	if [ -z "${BWRAP:-}" ]; then
		for d in /usr/bin /bin /usr/local/bin /usr/sbin; do
			if [ -x "$d/bwrap" ]; then BWRAP=$d/bwrap; break; fi
		done
	fi
	if [ -z "${BWRAP:-}" ] || [ ! -x "$BWRAP" ]; then
		SB_WHY="bubblewrap not installed (apt-get install bubblewrap)"
		return 1
	fi
	if ! out=$("$BWRAP" --unshare-all --ro-bind / / true 2>&1 </dev/null)
	then
		out=$(printf '%s\n' "$out" | head -n 1)
		SB_WHY="bubblewrap cannot create a sandbox here: ${out:-no message}"
		return 1
	fi
	return 0
}

sb_require()
{
	sb_probe && return 0
	if [ "${EGRESSD_REQUIRE_SANDBOX:-0}" = 1 ]; then
		echo "1..1"
		echo "not ok 1 - the sandbox is required (EGRESSD_REQUIRE_SANDBOX=1): $SB_WHY"
		exit 1
	fi
	echo "1..0 # SKIP $SB_WHY (EGRESSD_REQUIRE_SANDBOX=1 makes this a failure)"
	exit 0
}
