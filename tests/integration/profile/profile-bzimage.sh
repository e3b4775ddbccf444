#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling (docs/profiling.md) of other boot protocols: a Linux bzImage (no symbols: addresses, many
# distinct stacks, sorted at exit under the main thread's filter).
. "$(dirname "$0")/../lib.sh"

run profile-bzimage 120 "$PV" run --kernel "$G/linux.bzimage" --profile task-clock:200us --profile-output "$T/prof-lx" --timeout 100
expect_status 0; expect_err "samples written to $T/prof-lx"
"$JC" symbols=none <"$T/prof-lx/profile.json" >/dev/null || bad "bzImage: symbols is not none"
grep -q '^vcpu0;ring0;0x[0-9a-f;x]* [0-9]*$' "$T/prof-lx/stacks.folded" || bad "bzImage: no address stacks"
done_test
