#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fetch the Debian kernel the integration tests boot, once, into
# BUILD/debian-kernel/: `apt-get download` of the linux-image package that
# linux-image-amd64 points to, unpacked with dpkg-deb; then its vmlinuz
# (a bzImage) and, decompressed from the bzImage's payload, its vmlinux
# (an ELF with a PVH note; --single-stream: the kernel appends its size after the xz stream: kvm_pvm boots that one, its emulated ring 0
# being too slow for the decompressor); and, from the same package, the
# modules a virtio guest needs (every virtio driver and ext4 are modules in
# Debian's config, DESIGN §11) in BUILD/debian-kernel/modules/, with `order`
# listing them in load order (each after what it depends on).
# Prints what it has; exit 1 with one
# line saying why if it cannot. Usage: tests/integration/debian-kernel.sh [BUILD]
set -euo pipefail
build=${1:-build}
dir=$build/debian-kernel
mkdir -p "$dir/cache"

if [ ! -s "$dir/vmlinuz" ]; then
	abi=$(bash "$(dirname "$0")/../../scripts/debian-kernel-abi.sh" --apt) || exit 1
	pkg=linux-image-$abi
	rm -f "$dir/cache/"*.deb
	(cd "$dir/cache" && timeout 600 apt-get download -q "$pkg" >/dev/null 2>"$PWD/apt.err") ||
		{ echo "debian-kernel: apt-get download $pkg failed: $(tail -n 1 "$dir/cache/apt.err")" >&2; exit 1; }
	rm -rf "$dir/cache/root"
	dpkg-deb -x "$dir/cache/"*.deb "$dir/cache/root"
	k=$(ls "$dir/cache/root/boot/"vmlinuz-* | head -n 1)
	cp "$k" "$dir/vmlinuz.tmp" && mv "$dir/vmlinuz.tmp" "$dir/vmlinuz"
	basename "$(ls "$dir/cache/"*.deb)" >"$dir/package"
	rm -rf "$dir/cache/root" "$dir/vmlinux" "$dir/modules"
fi
# The modules, in load order: virtio's core and transport, the devices, ext4 and what it needs.
# crc32c_generic: ext4 loads the crc32c hash at every mount, and fails without it.
mods="virtio_ring virtio virtio_mmio virtio-rng virtio_blk failover net_failover virtio_net crc16 crc32c_generic mbcache jbd2 ext4"
# (Again when the list changed.)
if [ ! -s "$dir/modules/order" ] || [ "$(tr '\n' ' ' <"$dir/modules/order")" != "$mods " ]; then
	deb=$(ls "$dir/cache/"*.deb 2>/dev/null | head -n 1)
	[ -n "$deb" ] || { echo "debian-kernel: the kernel package is no longer in $dir/cache: remove $dir/vmlinuz to fetch it again" >&2; exit 1; }
	rm -rf "$dir/cache/root" "$dir/modules.tmp" && mkdir -p "$dir/modules.tmp"
	dpkg-deb -x "$deb" "$dir/cache/root"
	for m in $mods; do
		f=$(find "$dir/cache/root/lib/modules" -name "$m.ko" | head -n 1)
		[ -n "$f" ] || { echo "debian-kernel: $(basename "$deb") has no module $m.ko" >&2; rm -rf "$dir/cache/root" "$dir/modules.tmp"; exit 1; }
		cp "$f" "$dir/modules.tmp/"
		echo "$m" >>"$dir/modules.tmp/order"
	done
	rm -rf "$dir/cache/root" "$dir/modules"
	mv "$dir/modules.tmp" "$dir/modules"
fi
if [ ! -s "$dir/vmlinux" ]; then
	# The compressed payload: after the setup sectors, at payload_offset for payload_length bytes.
	u() { od -An -t "u$2" -j "$1" -N "$2" "$dir/vmlinuz" | tr -d ' '; }
	setup=$(( ($(u $((0x1f1)) 1) + 1) * 512 ))
	off=$(u $((0x248)) 4); len=$(u $((0x24c)) 4)
	dd if="$dir/vmlinuz" iflag=skip_bytes,count_bytes skip=$((setup + off)) count="$len" status=none |
		xz -dc --single-stream >"$dir/vmlinux.tmp" 2>/dev/null ||
		{ echo "debian-kernel: cannot decompress the payload of $dir/vmlinuz with xz" >&2; rm -f "$dir/vmlinux.tmp"; exit 1; }
	mv "$dir/vmlinux.tmp" "$dir/vmlinux"
fi
echo "debian-kernel: $(cat "$dir/package"): $dir/vmlinuz ($(wc -c <"$dir/vmlinuz") bytes), $dir/vmlinux ($(wc -c <"$dir/vmlinux") bytes), $(wc -l <"$dir/modules/order") modules"
