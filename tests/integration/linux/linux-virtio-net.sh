#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's stock kernel on virtio-net (--net) through the DSDT: in a network namespace of its own
# (busybox unshare -n), the test makes a tap with 10.0.2.1/24; the initramfs loads the kernel
# package's virtio modules, virtio_net binds the device, eth0 gets 10.0.2.15/24, and 100 MiB go
# guest -> host over TCP (busybox nc), then 100 MiB host -> guest; both md5 sums must match, no
# frame dropped or refused. Skipped on kvm_pvm by knowledge, as every Linux test (DESIGN §11).
# cases: linux-virtio-net
. "$(dirname "$0")/../lib.sh"

DK=$B/debian-kernel
IR=$B/linux-initramfs/initramfs.cpio
MB=${PVT_NET_MB:-100}

if [ "$("$PV" host --kind)" = kvm_pvm ]; then
	why="kvm_pvm emulates the guest's ring 0 (about 1 us an instruction) and a Linux kernel dies there on XSAVE (DESIGN §11)"
	echo "SKIP linux-virtio-net: $why"
	echo "linux-virtio-net: $why" >>"$PVT_RESULTS/skips"
	exit 0
fi
if ! can_tap || ! busybox unshare --help 2>&1 | grep -q -- '-n'; then
	echo "SKIP linux-virtio-net: needs root, /dev/net/tun, $MKTAP, busybox ip and unshare (the test host has them)"
	exit 0
fi
cur=linux-virtio-net; ok=1; st=0; : >"$T/$cur.out"; : >"$T/$cur.err"
if [ ! -s "$DK/vmlinuz" ] || [ ! -s "$IR" ] || [ ! -s "$DK/modules/order" ]; then
	bad "no Debian kernel, modules or initramfs ($DK, $IR): tests/integration/debian-kernel.sh and linux-initramfs.sh could not make them"
	done_test
	exit 0
fi
head -c 1048576 /dev/urandom >"$T/blk"
i=0; while [ $i -lt "$MB" ]; do cat "$T/blk"; i=$((i + 1)); done >"$T/h2g.data"
md5sum <"$T/h2g.data" | cut -d' ' -f1 >"$T/h2g.want"
# Everything network in the namespace: the tap, the listeners, perfvisor. Bounded below the test
# host's 300 s without output. (Known, 2026-12-05: with the nc fix this run went quiet for 300 s,
# not investigated yet: a slow or stalled 100 MiB transfer; PVT_NET_MB=N sets the size.)
T=$T MB=$MB PV=$PV DK=$DK IR=$IR MKTAP=$MKTAP cur=$cur busybox unshare -n sh -c '
	busybox ip link set lo up
	"$MKTAP" pvlinux0 && busybox ip addr add 10.0.2.1/24 dev pvlinux0 && busybox ip link set pvlinux0 up || exit 99
	# busybox nc ends when the other side closes and closes its side when its input ends: the
	# receiver reads a fifo that never ends (this shell holds it open), so the sender ends it.
	mkfifo "$T/idle" && exec 3<>"$T/idle"
	busybox nc -l -p 5001 <&3 >"$T/g2h.data" &
	p1=$!
	busybox nc -l -p 5002 <"$T/h2g.data" >/dev/null &
	p2=$!
	timeout -s KILL 260 "$PV" run --kernel "$DK/vmlinuz" --initrd "$IR" --memory 512M --cpus 2 \
		--net tap=pvlinux0,mac=52:54:00:12:34:58 --verbose --timeout 240 \
		--cmdline "console=ttyS0 printk.time=1 panic=-1 pvinit.mods=1 pvinit=net pvinit.netmb=$MB" \
		>"$T/$cur.out" 2>"$T/$cur.err" </dev/null
	echo $? >"$T/st"
	sleep 1; kill $p1 $p2 2>/dev/null; wait $p1 $p2 2>/dev/null
	"$MKTAP" -d pvlinux0
'
[ $? -ne 99 ] || bad "cannot make the tap in the namespace"
md5sum <"$T/g2h.data" 2>/dev/null | cut -d' ' -f1 >"$T/g2h.got"
st=$(cat "$T/st" 2>/dev/null || echo 255)
expect_status 0
expect_out 'pvinit: reached /init'
expect_out 'pvinit: eth0 52:54:00:12:34:58 driver virtio_net'
expect_no_out 'pvinit: insmod virtio'
g2h_sent=$(sed -n 's/.*pvinit: net sent md5 \([0-9a-f]*\).*/\1/p' "$T/$cur.out")
h2g_got=$(sed -n 's/.*pvinit: net received md5 \([0-9a-f]*\),.*/\1/p' "$T/$cur.out")
[ -n "$g2h_sent" ] && [ "$g2h_sent" = "$(cat "$T/g2h.got" 2>/dev/null)" ] ||
	bad "guest -> host: the guest sent md5 '${g2h_sent:-none}', the host got '$(cat "$T/g2h.got" 2>/dev/null)'"
[ -n "$h2g_got" ] && [ "$h2g_got" = "$(cat "$T/h2g.want")" ] ||
	bad "host -> guest: the host sent md5 '$(cat "$T/h2g.want")', the guest got '${h2g_got:-none}'"
expect_err 'virtio-net0: received [1-9][0-9]* frames, [0-9]* bytes, 0 dropped; sent [1-9][0-9]* frames, [0-9]* bytes, 0 errors'
# The rates, for information (nested TCG: judge nothing by them).
for dir in sent received; do
	sed -n "s/.*pvinit: net $dir.* \([0-9]*\) MiB in \([0-9.]*\) \([0-9.]*\)\$/\1 \2 \3/p" "$T/$cur.out" |
		awk -v d="$dir" '{ t = $3 - $2; printf "  guest %s %d MiB in %.1f s: %.1f MiB/s\n", d, $1, t, t > 0 ? $1 / t : 0 }'
done
grep 'pvinit: eth0\|pvinit: ping\|virtio-net0: received\|virtio-net0: [0-9]* requests' "$T/$cur.out" "$T/$cur.err" | sed 's/^[^:]*: */  /'
done_test
