#!/bin/sh
# SPDX-License-Identifier: MIT
# Snapshot of a vCPU still waiting for INIT and SIPI: snapshot-info says so, the restore passes.
# cases: snap-sipi-end
. "$(dirname "$0")/../lib.sh"

snap_state snap-sipi 3 "phases=10 aps=late" 'phase 2/' '^vCPU 2: .*, waiting for INIT and SIPI,'
