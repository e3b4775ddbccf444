#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling, bad values: one clear line each, exit status 2 (or 125 for what only the VM
# setup finds), no output directory made; a bad profile report and stat --profile-top without a socket.
# (Where the host has a hardware PMU, cycles is tested as available instead: profile-cycles.)
# cases: profile-bad-unknown-event profile-bad-no-period profile-bad-no-unit profile-bad-zero
# cases: profile-bad-too-short profile-bad-too-long profile-bad-bad-number profile-bad-empty-item
# cases: profile-bad-event-twice profile-bad-option-twice profile-bad-hw-count profile-bad-unknown-mode
# cases: profile-bad-mode-twice profile-bad-mode-alone profile-bad-no-pmu profile-cycles
# cases: profile-bad-output-alone profile-bad-symbols-alone profile-bad-output-no-parent
# cases: profile-bad-symbols-missing profile-bad-symbols-empty profile-report-bad profile-stat-pid
. "$(dirname "$0")/../lib.sh"

prof_bad unknown-event 2 "unknown event 'foo'" --profile foo:1ms
prof_bad no-period 2 'needs EVENT:PERIOD' --profile task-clock
prof_bad no-unit 2 'a time period needs a unit' --profile task-clock:5
prof_bad zero 2 'the period must be 100us to 10s' --profile task-clock:0ms
prof_bad too-short 2 'the period must be 100us to 10s' --profile task-clock:10us
prof_bad too-long 2 'the period must be 100us to 10s' --profile cpu-clock:1000s
prof_bad bad-number 2 "'1x' is not a period" --profile task-clock:1x
prof_bad empty-item 2 'an empty item in the list' --profile task-clock:1ms,
prof_bad event-twice 2 'event task-clock is given twice' --profile task-clock:1ms,task-clock:2ms
prof_bad option-twice 2 '--profile is given twice' --profile task-clock:1ms --profile cpu-clock:1ms
prof_bad hw-count 2 'a count of events from 10000' --profile cycles:10
prof_bad unknown-mode 2 "unknown mode 'fast' (modes: stack, the default; leaf)" --profile task-clock:1ms,mode=fast
prof_bad mode-twice 2 'mode= is given twice' --profile task-clock:1ms,mode=leaf,mode=stack
prof_bad mode-alone 2 'needs EVENT:PERIOD' --profile mode=leaf
if [ -d /sys/bus/event_source/devices/cpu ]; then
	echo "  (profile-bad-no-pmu: this host has a hardware PMU; cycles is tested as available)"
	run profile-cycles 120 "$PV" run --kernel "$PROF" --profile cycles:1000000 --profile-output "$T/prof7" --timeout 100
	expect_status 0; prof_checks "$T/prof7"; done_test
else
	prof_bad no-pmu 2 'cycles: this host has no hardware PMU' --profile cycles:100000
fi
prof_bad output-alone 2 '--profile-output needs --profile' --profile-output "$T/profnever"
prof_bad symbols-alone 2 '--symbols needs --profile' --symbols "$G/profile.map"
prof_bad output-no-parent 125 "its parent directory: No such file or directory" --profile task-clock:1ms \
	--profile-output "$T/nothere/prof"
prof_bad symbols-missing 125 "--symbols '$T/nothere'" --profile task-clock:1ms --symbols "$T/nothere" --profile-output "$T/profnever"
printf 'not a symbol file\n' >"$T/nosyms.txt"
prof_bad symbols-empty 125 'no text symbols in it' --profile task-clock:1ms --symbols "$T/nosyms.txt" --profile-output "$T/profnever"
run profile-report-bad 20 "$PV" profile report "$T/nothere"
expect_status 1; expect_err "$T/nothere/profile.json"; done_test
run profile-stat-pid 20 "$PV" stat 1 --profile-top 3
expect_status 2; expect_err '--profile-top needs a control socket TARGET'; done_test
