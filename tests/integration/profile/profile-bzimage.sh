#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling (docs/profiling.md) of other boot protocols: a Linux bzImage (no symbols: addresses, many
# distinct stacks, sorted at exit under the main thread's filter). The period is 1 ms: at 200 us, the
# nested test host spent 2.6 to 48 s in KVM_RUN on this guest's 20 ms, once over 100 s (docs/profiling.md).
. "$(dirname "$0")/../lib.sh"

run profile-bzimage 120 "$PV" run --kernel "$G/linux.bzimage" --profile task-clock:1ms --profile-output "$T/prof-lx" --timeout 100
expect_status 0; expect_err "samples written to $T/prof-lx"
"$JC" symbols=none <"$T/prof-lx/profile.json" >/dev/null || bad "bzImage: symbols is not none"
grep -q '^vcpu0;ring0;0x[0-9a-f;x]* [0-9]*$' "$T/prof-lx/stacks.folded" || bad "bzImage: no address stacks"
done_test
