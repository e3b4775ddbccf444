#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make run`: boot the bundled demo guest with 2 vCPUs and exit with its
# status. Where /dev/kvm is missing, boot it on the KVM inside the test host
# VM (tests/testhost/run.sh) and say so.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
cmd="$build/perfvisor run --kernel $build/guests/demo.elf --cpus 2 --memory 64M --timeout 300"

if [ -c /dev/kvm ]; then
	exec $cmd
fi
echo "run-demo: /dev/kvm is missing here; booting the demo on the KVM inside the test host VM"
exec bash tests/testhost/run.sh "$cmd"
