#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build a small Linux root file system image and the initramfs that mounts it,
# from Debian packages, without root privileges, for Debian's stock kernel
# under perfvisor (docs/linux.md). Cached: a second run with the same inputs
# only prints what it has.
#
#   rootfs.ext4     ext4 (mke2fs -d): busybox (static) with every applet, the
#                   packages asked for with the libraries they need, the kernel
#                   package's modules a perfvisor guest can use (/lib/modules/VERSION:
#                   file systems, network, crypto, virtio; no hardware drivers; and the
#                   project's perf driver perfvisor_pmu when `make` built it for this kernel,
#                   docs/guest-perf.md: perf itself comes with --packages linux-perf), and /sbin/init:
#                   mounts /proc, /sys, /dev, loads the virtio modules, runs the
#                   workload `pvrun=NAME` names on the kernel command line
#                   (/etc/pvrun/NAME; `demo` is built in), then powers off
#   initramfs.cpio  busybox and the kernel's virtio and ext4 modules; its /init
#                   loads them, mounts root= (default /dev/vda) and switch_roots
#
# The kernel package is the one tests/integration/debian-kernel.sh fetches (the
# package linux-image-amd64 points to): its vmlinuz boots both.
set -euo pipefail

usage() {
	cat <<'EOF'
Usage: scripts/linux-rootfs.sh [options]
Build BUILD/linux-rootfs/{rootfs.ext4,initramfs.cpio} from Debian packages, without root.

Options:
  --build DIR          the build directory (default: build)
  --packages "P ..."   more Debian packages in the image, with the libraries they
                       need (default: "zstd"; busybox-static is always there)
  --add DIR            copy DIR's contents into the image's root (your own files,
                       e.g. DIR/etc/pvrun/NAME, a workload run by pvrun=NAME)
  --size MIB           the image's size in MiB (default: 256)
  --force              rebuild even if the cache is current
  --help               this text

Boot it (docs/linux.md):
  perfvisor run --kernel BUILD/debian-kernel/vmlinuz --initrd BUILD/linux-rootfs/initramfs.cpio \
      --disk path=BUILD/linux-rootfs/rootfs.ext4 --rng --memory 512M --cpus 2 \
      --cmdline "console=ttyS0 root=/dev/vda pvrun=demo"
EOF
}

build=build packages=zstd add="" size=256 force=0
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=${2:?--build needs a directory}; shift 2 ;;
	--packages) packages=${2?--packages needs a list}; shift 2 ;;
	--add) add=${2:?--add needs a directory}; shift 2 ;;
	--size) size=${2:?--size needs MiB}; shift 2 ;;
	--force) force=1; shift ;;
	--help | -h) usage; exit 0 ;;
	*) echo "linux-rootfs: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
done
case "$size" in '' | *[!0-9]*) echo "linux-rootfs: --size takes a whole number of MiB, not '$size'" >&2; exit 2 ;; esac
[ "$size" -ge 16 ] || { echo "linux-rootfs: --size $size MiB is too small (at least 16)" >&2; exit 2; }
[ -z "$add" ] || [ -d "$add" ] || { echo "linux-rootfs: --add $add is not a directory" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
bash "$here/scripts/deps.sh" linux
for t in apt-get apt-cache dpkg-deb mke2fs cpio objdump; do
	command -v "$t" >/dev/null || { echo "linux-rootfs: $t is missing (scripts/deps.sh linux installs it)" >&2; exit 1; }
done

dir=$build/linux-rootfs
dk=$build/debian-kernel
mkdir -p "$dir/debs"
bash "$here/tests/integration/debian-kernel.sh" "$build" >/dev/null || exit 1

# The guest's perf driver, when `make` built it for this kernel (docs/guest-perf.md): modprobe perfvisor_pmu.
ko=$build/guest-drivers/linux/perfvisor_pmu.ko
[ -s "$ko" ] && [ "$(cat "$build/guest-drivers/linux/kernel" 2>/dev/null)" = "$(sed -n 's/^linux-image-\([^_]*\)_.*/\1/p' "$dk/package")" ] || ko=
key="$(cat "$dk/package") | $packages | $size | ${add:+$(cd "$add" && find . -type f | sort | xargs -r cksum | cksum)} | $(cksum <"$0") | ${ko:+$(cksum <"$ko")}"
if [ "$force" = 0 ] && [ -s "$dir/rootfs.ext4" ] && [ -s "$dir/initramfs.cpio" ] && [ "$(cat "$dir/key" 2>/dev/null)" = "$key" ]; then
	echo "linux-rootfs: $dir/rootfs.ext4 ($size MiB) and $dir/initramfs.cpio are current"
	exit 0
fi

# fetch PKG...: download what is not in the cache yet.
fetch() {
	local need=()
	for p in "$@"; do ls "$dir/debs/${p}_"*.deb >/dev/null 2>&1 || need+=("$p"); done
	[ ${#need[@]} -eq 0 ] && return 0
	(cd "$dir/debs" && timeout 600 apt-get download -q "${need[@]}" >/dev/null 2>"$PWD/apt.err") || {
		apt-get update -qq >/dev/null 2>&1 || true
		(cd "$dir/debs" && timeout 600 apt-get download -q "${need[@]}" >/dev/null 2>"$PWD/apt.err")
	} || { echo "linux-rootfs: apt-get download ${need[*]} failed: $(tail -n 1 "$dir/debs/apt.err")" >&2; exit 1; }
}
# The packages asked for and, recursively, the libraries they depend on (lib*, zlib1g; not tools or scripts).
closure() {
	local todo=("$@") seen=" " p d
	while [ ${#todo[@]} -gt 0 ]; do
		p=${todo[0]}; todo=("${todo[@]:1}")
		case "$seen" in *" $p "*) continue ;; esac
		seen="$seen$p "
		for d in $(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
			--no-enhances "$p" 2>/dev/null | sed -n 's/^ *\(Pre\)\{0,1\}Depends: \([a-z0-9][a-z0-9.+-]*\).*/\2/p'); do
			case "$d" in lib* | zlib1g) todo+=("$d") ;; esac
		done
	done
	echo "$seen"
}
pkgs=$(closure busybox-static $packages)
# shellcheck disable=SC2086 # a list of package names
fetch $pkgs

root=$dir/root
rm -rf "$root" "$dir/initrd-root"
mkdir -p "$root"
for p in $pkgs; do dpkg-deb -x "$(ls "$dir/debs/${p}_"*.deb | head -n 1)" "$root"; done
# Debian's usrmerge layout: /bin, /sbin and /lib are links into /usr.
for d in bin sbin lib lib64; do
	if [ -d "$root/$d" ] && [ ! -L "$root/$d" ]; then
		mkdir -p "$root/usr/$d" && cp -a "$root/$d/." "$root/usr/$d/" && rm -rf "${root:?}/$d"
	fi
	[ -e "$root/usr/$d" ] || mkdir -p "$root/usr/$d"
	ln -sfn "usr/$d" "$root/$d"
done
rm -rf "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/info" "$root/usr/share/locale"
mkdir -p "$root/proc" "$root/sys" "$root/dev" "$root/tmp" "$root/run" "$root/mnt" "$root/etc/pvrun" "$root/root"
# Every busybox applet as a link, where the packages gave no real tool of that name.
for a in $("$root/usr/bin/busybox" --list 2>/dev/null || true); do
	[ -e "$root/usr/bin/$a" ] || [ -e "$root/usr/sbin/$a" ] || ln -s busybox "$root/usr/bin/$a"
done
# The kernel package's modules, all of them (insmod, modprobe needs modules.dep: busybox depmod makes it).
kroot=$dir/kernel-root
rm -rf "$kroot" && dpkg-deb -x "$(ls "$dk/cache/"*.deb | head -n 1)" "$kroot"
kver=$(ls "$kroot/lib/modules" | head -n 1)
# Of the hardware drivers, only what a perfvisor guest has (virtio and its friends): all of them is 400 MiB.
(cd "$kroot/lib/modules/$kver" && find . -type f | grep -v -e '^\./kernel/drivers/' -e '^\./kernel/sound/' -e '^\./kernel/net/' ;
	find ./kernel/drivers/virtio ./kernel/drivers/block ./kernel/drivers/char/hw_random ./kernel/drivers/net/virtio_net.ko \
		./kernel/drivers/net/net_failover.ko ./kernel/drivers/net/tun.ko ./kernel/net/core ./kernel/net/ipv4 \
		./kernel/net/ipv6 ./kernel/net/packet ./kernel/net/unix -type f 2>/dev/null) |
	while read -r f; do mkdir -p "$root/usr/lib/modules/$kver/$(dirname "$f")" && cp -a "$kroot/lib/modules/$kver/$f" "$root/usr/lib/modules/$kver/$f"; done
rm -rf "$kroot"
[ -z "$ko" ] || { mkdir -p "$root/usr/lib/modules/$kver/extra" && cp "$ko" "$root/usr/lib/modules/$kver/extra/"; }
echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
echo "root:x:0:" >"$root/etc/group"
echo "perfvisor" >"$root/etc/hostname"
cat >"$root/etc/pvrun/demo" <<'DEMO'
# The demo workload (pvrun=demo): compress and check 32 MiB, serve a file over HTTP on loopback.
echo "pvrun: demo: $(nproc) CPUs, $(free -m | awk '/Mem:/ { print $2 }') MiB"
dd if=/dev/urandom of=/tmp/half bs=1M count=16 2>/dev/null
cat /tmp/half /tmp/half >/tmp/data
t0=$(date +%s)
if command -v zstd >/dev/null; then zstd -q -3 -T0 /tmp/data -o /tmp/data.zst && zstd -q -t /tmp/data.zst && c=zstd
else gzip -c /tmp/data >/tmp/data.gz && gzip -t /tmp/data.gz && c=gzip; fi
echo "pvrun: demo: $c compressed and checked 32 MiB in $(($(date +%s) - t0)) s: $(ls -l /tmp/data.* | awk '{ print $5 }') bytes"
ip link set lo up
mkdir -p /tmp/www && cp /tmp/half /tmp/www/file
httpd -p 127.0.0.1:8080 -h /tmp/www
wget -q -O /tmp/got http://127.0.0.1:8080/file && cmp -s /tmp/got /tmp/half && echo "pvrun: demo: HTTP: 16 MiB over loopback, same bytes"
DEMO
cat >"$root/sbin/pvinit" <<'INIT'
#!/bin/sh
# perfvisor's init for this image: mount, load the virtio modules, run pvrun=NAME, power off.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc 2>/dev/null
mount -t sysfs sys /sys 2>/dev/null
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmp /tmp
hostname -F /etc/hostname
for m in virtio_mmio virtio-rng virtio_blk virtio_net; do modprobe "$m" 2>/dev/null; done
echo "pvinit: root $(awk '$2 == "/" { print $1, $3 }' /proc/mounts) on $(uname -r), $(date -u)"
run=$(sed -n 's/.*pvrun=\([^ ]*\).*/\1/p' /proc/cmdline)
if [ -n "$run" ] && [ -f "/etc/pvrun/$run" ]; then
	echo "pvinit: running /etc/pvrun/$run"
	sh "/etc/pvrun/$run"
	echo "pvinit: /etc/pvrun/$run ended with $?"
elif [ -n "$run" ]; then
	echo "pvinit: no workload /etc/pvrun/$run"
else
	echo "pvinit: no pvrun= on the command line: a shell on the console (exit powers off)"
	setsid cttyhack sh
fi
sync
poweroff -f
INIT
chmod +x "$root/sbin/pvinit"
ln -sfn pvinit "$root/sbin/init" 2>/dev/null || true
if [ -n "$add" ]; then cp -a "$add/." "$root/"; fi
# Libraries a binary needs that no package gave: say so (the image would fail at run time).
missing=$(find "$root/usr/bin" "$root/usr/sbin" -type f -perm -u+x 2>/dev/null | while read -r f; do
	objdump -p "$f" 2>/dev/null | sed -n 's/^ *NEEDED *//p' || true
done | sort -u | while read -r l; do
	[ -n "$(find "$root/usr/lib" -name "$l" -print -quit)" ] || echo "$l"
done)
[ -z "$missing" ] || echo "linux-rootfs: warning: no package gave $(echo "$missing" | tr '\n' ' ')" >&2
"$root/usr/bin/busybox" depmod -b "$root" "$kver" 2>/dev/null || true
rm -f "$dir/rootfs.tmp"
mke2fs -q -t ext4 -L pvroot -d "$root" "$dir/rootfs.tmp" "${size}M" ||
	{ echo "linux-rootfs: mke2fs -d failed (is $size MiB enough for $(du -sm "$root" | cut -f1) MiB?)" >&2; exit 1; }
mv "$dir/rootfs.tmp" "$dir/rootfs.ext4"

# The initramfs: busybox, the modules that reach an ext4 root on virtio-blk, an /init that switch_roots.
ir=$dir/initrd-root
mkdir -p "$ir/bin" "$ir/proc" "$ir/sys" "$ir/dev" "$ir/newroot" "$ir/lib/modules"
cp "$root/usr/bin/busybox" "$ir/bin/busybox"
cp "$dk/modules/"*.ko "$dk/modules/order" "$ir/lib/modules/"
cat >"$ir/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /lib/modules/order); do insmod "/lib/modules/$m.ko" 2>/dev/null; done
rootdev=$(sed -n 's/.*root=\([^ ]*\).*/\1/p' /proc/cmdline); rootdev=${rootdev:-/dev/vda}
ro=rw; case " $(cat /proc/cmdline) " in *" ro "*) ro=ro ;; esac
i=0
while [ ! -b "$rootdev" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if mount -t ext4 -o "$ro" "$rootdev" /newroot; then
	umount /proc /sys; mount --move /dev /newroot/dev 2>/dev/null || umount /dev
	exec switch_root /newroot /sbin/init
fi
echo "initramfs: cannot mount $rootdev (no --disk? see docs/linux.md); powering off"
poweroff -f
INIT
chmod +x "$ir/init"
(cd "$ir" && find . | cpio -o -H newc --quiet) >"$dir/initramfs.tmp" && mv "$dir/initramfs.tmp" "$dir/initramfs.cpio"
rm -rf "$root" "$ir"
echo "$key" >"$dir/key"
echo "linux-rootfs: $dir/rootfs.ext4 ($size MiB: busybox $packages, modules $kver) and $dir/initramfs.cpio"
