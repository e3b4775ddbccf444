#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make run-linux`: boot Debian's stock kernel (tests/integration/debian-kernel.sh
# fetches it) with its root file system on a virtio disk (scripts/linux-rootfs.sh
# builds it), entropy from virtio-rng and 2 vCPUs, profiled from the host; the
# image's init runs the demo workload (compress, check, serve over HTTP) and
# powers off; then the VM's counters and the profile's summary. Where /dev/kvm is
# missing, boot it on the KVM inside the test host VM and say so. On kvm_pvm a
# Linux kernel cannot run (its ring 0 is emulated, DESIGN §11): say so and stop.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
if [ -c /dev/kvm ] && [ "$("$build/perfvisor" host --kind 2>/dev/null)" = kvm_pvm ]; then
	echo "run-linux: this KVM host is kvm_pvm: it emulates a guest's ring 0 (about 1 us an instruction) and a" >&2
	echo "run-linux: Linux kernel dies there on XSAVE (docs/linux.md); boot it on bare-metal KVM. 'make run' works here." >&2
	exit 1
fi
bash scripts/linux-rootfs.sh --build "$build"
prof=$build/linux-profile
cmd="rm -rf $prof; $build/perfvisor run --kernel $build/debian-kernel/vmlinuz --initrd $build/linux-rootfs/initramfs.cpio \
--disk path=$build/linux-rootfs/rootfs.ext4 --rng --cpus 2 --memory 512M --timeout 600 --verbose \
--profile task-clock:1ms --profile-output $prof --cmdline 'console=ttyS0 root=/dev/vda pvrun=demo quiet'; st=\$?; echo; \
$build/perfvisor profile report $prof --top 8; exit \$st"

if [ -c /dev/kvm ]; then
	exec sh -c "$cmd"
fi
echo "run-linux: /dev/kvm is missing here; booting Linux on the KVM inside the test host VM"
exec bash tests/testhost/run.sh "$cmd"
