#!/bin/sh
# SPDX-License-Identifier: MIT
# Integration tests: boot every test guest on a real KVM and check the exit
# status and what the guest and perfvisor print. Each test is a file of its
# own, tests/integration/SECTION/NAME.sh (lib.sh holds what they share), run
# here as its own `sh` process in its own temporary directory; this runner
# picks the files, prints the header, and sums up the verdicts every file
# adds to a results directory. POSIX sh, and only what busybox and GNU
# coreutils both do the same way (it runs on both). docs/testing.md.
# Usage (from the repo root):
#   tests/integration/tests.sh [BUILD_DIR [NAME...]]   NAME: a section, a test or a case of one,
#                                                        several separated by commas or spaces
#   tests/integration/tests.sh BUILD_DIR --list        the sections, their tests and group cases
#   tests/integration/tests.sh BUILD_DIR -n NAME...    the test files NAME selects, nothing run
# An unknown NAME is an error (exit 2) that lists what exists.

D=tests/integration
# The sections, in the order a full run takes them; each is a directory of test files.
SECTIONS="guests stop console api stats exporter cli boot linux asan pmu snapshot migrate hostile profile seccomp"
# The library's paths ($B, $PV from BUILD_DIR, its first argument) and its summary functions.
PVT_LIB_ONLY=1
. "$D/lib.sh"
unset PVT_LIB_ONLY
[ $# -gt 0 ] && shift

for d in "$D"/*/; do
	s=$(basename "$d")
	case " $SECTIONS " in *" $s "*) ;; *)
		echo "tests.sh: $D/$s/ is not a section: add it to SECTIONS in $D/tests.sh" >&2; exit 2 ;;
	esac
done
# all_tests: every test file, in run order.
all_tests() {
	for s in $SECTIONS; do
		for f in "$D/$s"/*.sh; do [ -f "$f" ] && echo "$f"; done
	done
}
# cases_of FILE: the cases a group file names (nothing for a file of one case).
cases_of() { sed -n 's/^# cases: *//p' "$1" | tr '\n' ' ' | sed 's/ *$//'; }
list() {
	for s in $SECTIONS; do
		echo "$s"
		for f in "$D/$s"/*.sh; do
			[ -f "$f" ] || continue
			c=$(cases_of "$f")
			echo "  $(basename "$f" .sh)${c:+: $c}"
		done
	done
}
# select NAME: the files of section NAME, or test NAME, or the group file with case NAME.
select_one() {
	case " $SECTIONS " in *" $1 "*) all_tests | grep "^$D/$1/"; return 0 ;; esac
	for f in $(all_tests); do
		[ "$(basename "$f" .sh)" = "$1" ] && { echo "$f"; return 0; }
	done
	for f in $(all_tests); do
		case " $(cases_of "$f") " in *" $1 "*) echo "$f"; return 0 ;; esac
	done
	return 1
}

case "${1:-}" in
--list) list; exit 0 ;;
-n) dry=1; shift ;;
*) dry="" ;;
esac
names=$(echo "$*" | tr ',' ' ')
if [ -n "$names" ]; then
	chosen=""
	set -f # the names are words, never patterns
	for nm in $names; do
		set +f
		case "$nm" in *[!A-Za-z0-9._-]*) f="" ;; *) f=$(select_one "$nm") ;; esac
		if [ -z "$f" ]; then
			echo "tests.sh: no section, test or case is named '$nm'. There are (each section, then its tests; TEST: CASES for a test of several cases):" >&2
			list >&2
			exit 2
		fi
		chosen="$chosen
$f"
	done
	files=$(all_tests | while read -r f; do echo "$chosen" | grep -qxF "$f" && echo "$f"; done)
else
	files=$(all_tests)
fi
if [ -n "$dry" ]; then
	echo "$files"
	exit 0
fi

R=$(mktemp -d /tmp/pvresults.XXXXXX)
pvt_results "$R"
export PVT_RESULTS="$R"
# perfvisor's kernel cache (docs/boot.md): one for the whole run, gone with it, never the user's.
export XDG_CACHE_HOME="$R/xdg-cache"
pvt_header
# A rerun in a fresh test host after a stalled one (tests/testhost/run.sh):
# PVT_CARRY holds the verdicts of the files the earlier attempts finished
# (@@PVT_R lines). They count here as if run now, and those files are not
# run again.
if [ -n "${PVT_CARRY:-}" ] && [ -s "$PVT_CARRY" ]; then
	for k in passed failed skips; do sed -n "s/^@@PVT_R $k //p" "$PVT_CARRY" >>"$R/$k"; done
	carried=$(sed -n 's/^@@PVT_R done //p' "$PVT_CARRY")
	files=$(echo "$files" | while read -r f; do echo "$carried" | grep -qxF "$f" || echo "$f"; done)
	echo "integration: resuming: $(echo "$carried" | wc -l | tr -d ' ') test files finished in an earlier test host are not run again ($(wc -l <"$R/passed" | tr -d ' ') passed, $(wc -l <"$R/failed" | tr -d ' ') failed there$(sed 's/^/ /' "$R/failed" | tr -d '\n' | sed 's/^./: /'))"
fi
# PVT_SPLIT=busybox|gnu (tests/integration/run.sh, a test-host run with both userlands): each test
# file runs in one of its passes. The gnu pass boots the Linux guests (the linux section), the
# busybox pass runs every other section; each says what it leaves to the other (docs/testing.md).
case "${PVT_SPLIT:-}" in
"") ;;
busybox)
	why="the Linux guests boot once a test-host run, in its gnu pass (docs/testing.md)"
	for f in $files; do
		case "$f" in */linux/*) ;; *) continue ;; esac
		c=$(cases_of "$f")
		for k in ${c:-$(basename "$f" .sh)}; do echo "$k: $why" >>"$R/skips"; done
	done
	files=$(echo "$files" | grep -v '/linux/' || true)
	n=$(grep -c -F "$why" "$R/skips" || true)
	[ "$n" -eq 0 ] || echo "integration: $n Linux guest cases are left to the gnu pass"
	;;
gnu)
	n=$(echo "$files" | grep -c -v '/linux/' || true)
	files=$(echo "$files" | grep '/linux/' || true)
	[ "$n" -eq 0 ] || echo "integration: only the linux section here; the other sections' test files ($n) run in this run's busybox pass (docs/testing.md)"
	;;
*) echo "tests.sh: PVT_SPLIT must be busybox or gnu, not '$PVT_SPLIT'" >&2; exit 2 ;;
esac
[ -n "$names" ] && echo "integration: only $(echo "$files" | sed 's|.*/||; s|\.sh$||' | tr '\n' ' ')($(echo "$files" | wc -l | tr -d ' ') of $(all_tests | wc -l | tr -d ' ') tests)"
: >"$R/times"
t0=$(date +%s)
for f in $files; do
	np0=$(wc -l <"$R/passed") nf0=$(wc -l <"$R/failed") ns0=$(wc -l <"$R/skips")
	s0=$(date +%s)
	sh "$f" "$B"
	rc=$?
	echo "$(($(date +%s) - s0)) $(basename "$f" .sh)" >>"$R/times"
	# A file that ended badly without reporting a failed case (a shell error, a signal) fails too.
	if [ "$rc" -ne 0 ] && [ "$(wc -l <"$R/failed")" -eq "$nf0" ]; then
		t=$(basename "$f" .sh)
		echo "FAIL $t (the test file $f exited $rc)"
		echo "$t" >>"$R/failed"
	fi
	# In the test host (PVT_RECORD): this file's verdicts, for a rerun after a stall.
	if [ -n "${PVT_RECORD:-}" ]; then
		tail -n +$((np0 + 1)) "$R/passed" | sed 's/^/@@PVT_R passed /'
		tail -n +$((nf0 + 1)) "$R/failed" | sed 's/^/@@PVT_R failed /'
		tail -n +$((ns0 + 1)) "$R/skips" | sed 's/^/@@PVT_R skips /'
		echo "@@PVT_R done $f"
	fi
done
# Where the run's time went (CI must stay well under its 40 minutes): the slowest files.
echo "integration: $(($(date +%s) - t0)) s in all; the slowest test files (seconds):$(sort -rn "$R/times" | head -n 12 | awk '{ printf " %s %s", $2, $1 }')"
pvt_summary "$R"
rc=$?
rm -rf "$R"
exit $rc
