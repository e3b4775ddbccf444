#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build, once, the ext4 image the Linux disk test (tests/integration/linux/linux-virtio-blk.sh)
# hands Debian's kernel as /dev/vda, into BUILD/linux-disk/disk.ext4: 100 MiB, made without
# root privileges by `mke2fs -d` from a directory holding pvtest.sh, the script the initramfs's
# `pvinit=disk` runs from the mounted disk. On the first boot it writes a 64 MiB file of random
# bytes and its checksum and syncs; on the next it checks the file against the checksum.
# mke2fs runs here (the test host has none); the test copies the image before each use.
# Usage: tests/integration/linux-disk.sh [BUILD]
set -euo pipefail
build=${1:-build}
dir=$build/linux-disk
img=$dir/disk.ext4
mkfs=$(command -v mke2fs || echo /usr/sbin/mke2fs)
[ -x "$mkfs" ] || { echo "linux-disk: mke2fs not found (Debian package e2fsprogs)"; exit 1; }
[ -s "$img" ] && [ "$img" -nt "$0" ] && exit 0
rm -rf "$dir" && mkdir -p "$dir/root"
cat >"$dir/root/pvtest.sh" <<'SCRIPT'
# Run by the initramfs's /init (pvinit=disk) with the disk mounted on /mnt.
if [ -f /mnt/big.sum ]; then
	echo "pvtest: second boot, checking /mnt/big"
	if sha256sum -c /mnt/big.sum; then echo "pvtest: read back, checksum equal"; else echo "pvtest: checksum differs"; fi
else
	dd if=/dev/urandom of=/mnt/big bs=1M count=64 2>/dev/null
	sync
	sha256sum /mnt/big >/mnt/big.sum
	sync
	echo "pvtest: wrote 64 MiB, $(cut -c1-16 /mnt/big.sum)..."
fi
SCRIPT
# No metadata_csum: it needs the crc32c module, which the initramfs does not carry.
"$mkfs" -q -F -t ext4 -O ^metadata_csum -L pvdisk -d "$dir/root" "$img" 100M
echo "linux-disk: $img (ext4, 100 MiB, pvtest.sh)"
