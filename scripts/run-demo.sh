#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make run`: boot the bundled demo guest with 2 vCPUs, profiled from the
# host (docs/profiling.md), show the profile's top symbols, and exit with
# the guest's status. Where /dev/kvm is missing, boot it on the KVM inside
# the test host VM (tests/testhost/run.sh) and say so.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
prof=$build/demo-profile
cmd="rm -rf $prof; $build/perfvisor run --kernel $build/guests/demo.elf --cpus 2 --memory 64M --timeout 300 \
--profile task-clock:1ms --profile-output $prof; st=\$?; echo; $build/perfvisor profile report $prof --top 8; exit \$st"

if [ -c /dev/kvm ]; then
	exec sh -c "$cmd"
fi
echo "run-demo: /dev/kvm is missing here; booting the demo on the KVM inside the test host VM"
exec bash tests/testhost/run.sh "$cmd"
