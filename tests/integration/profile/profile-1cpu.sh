#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling (docs/profiling.md) of the profile guest (lib.sh: prof_*): one vCPU, task-clock every 1 ms: the
# stacks, the 3:1 ratio, the report (--top, --json, --folded); then the same output directory
# again (refused: it exists) and a bad --top of the report on it.
# cases: profile-bad-output-exists profile-report-usage
. "$(dirname "$0")/../lib.sh"

run profile-1cpu 120 "$PV" run --kernel "$PROF" --profile task-clock:1ms --profile-output "$T/prof1" --timeout 100
expect_status 0; expect_out '^SUMMARY:'; expect_clean; expect_err "samples written to $T/prof1"
prof_checks "$T/prof1"; prof_ratio "$T/prof1" 5 hot_a hot_b
"$PV" profile report "$T/prof1" --top 3 | sed 's/^/    | /'
[ "$("$PV" profile report "$T/prof1" --top 2 | wc -l)" -eq 5 ] || bad "--top 2 does not print 2 rows"
"$PV" profile report "$T/prof1" --json | "$JC" version=2 spec=task-clock:1000000ns events/0/name=task-clock \
	events/0/period=1000000 symbols="ELF .symtab" vcpus/0/dropped=0 stacks/0/frames/0=* >/dev/null || bad "report --json"
[ "$("$PV" profile report "$T/prof1" --folded | wc -l)" -eq "$(wc -l <"$T/prof1/stacks.folded")" ] || bad "--folded differs from stacks.folded"
done_test
prof_bad output-exists 125 "already exists" --profile task-clock:1ms --profile-output "$T/prof1"
run profile-report-usage 20 "$PV" profile report "$T/prof1" --top 0
expect_status 2; expect_err '--top needs a number'; done_test
