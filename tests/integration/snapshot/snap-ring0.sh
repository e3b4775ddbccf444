#!/bin/sh
# SPDX-License-Identifier: MIT
# Snapshot of a vCPU working in ring 0: snapshot-info says so, the restore passes.
# cases: snap-ring0-end
. "$(dirname "$0")/../lib.sh"

snap_state snap-ring0 1 "phases=10 where=ring0" 'phase 2/' '^vCPU 0: .* in ring 0,'
