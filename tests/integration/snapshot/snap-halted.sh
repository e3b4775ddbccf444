#!/bin/sh
# SPDX-License-Identifier: MIT
# Snapshot of a vCPU halted in hlt: snapshot-info says so, the restore passes.
# cases: snap-halted-end
. "$(dirname "$0")/../lib.sh"

snap_state snap-halted 2 "phases=10 aps=halt" 'phase 2/' '^vCPU 1: .*, halted,'
