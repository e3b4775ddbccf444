#!/bin/sh
# SPDX-License-Identifier: MIT
# Network benchmark (POSIX sh: it also runs in the busybox test VM): TCP
# throughput guest -> host and host -> guest through perfvisor's virtio-net
# (--net tap=NAME, docs/devices.md) against QEMU's, each timed from inside the
# guest. Debian's stock kernel (BUILD/debian-kernel/vmlinuz) with the Linux
# tests' busybox initramfs (BUILD/linux-initramfs/initramfs.cpio;
# pvinit.mods=1 loads virtio_mmio and virtio_net, which find the device in the
# DSDT on both sides; pvinit=net gives eth0 10.0.2.15/24, sends
# pvinit.netmb MiB to 10.0.2.1:5001 with busybox nc, then receives as many
# from 10.0.2.1:5002, printing each stream's md5 and its start and end by the
# guest's clock), booted by QEMU microvm (the baseline: -netdev
# tap,vhost=off -device virtio-net-device) and by perfvisor, interleaved, same
# kernel, initramfs, command line, memory, vCPUs and MAC. vhost=off: QEMU
# moves the frames in its own process, as perfvisor does (no vhost-net);
# where /dev/vhost-net exists a third row, QEMU with vhost=on, is added for
# reference (BENCH_NET_VHOST=0 leaves it out).
# Each boot runs in a network namespace of its own (busybox unshare -n): a
# fresh tap (BUILD/tests/mktap) with 10.0.2.1/24, the two busybox nc
# listeners of tests/integration/linux/linux-virtio-net.sh, the VMM under
# timeout -s KILL; all of it is gone when the boot ends, whichever way.
# A direction whose md5 does not match what the host got (guest -> host) or
# sent (host -> guest) is not measured in that boot, and the reason printed.
# Needs root, /dev/net/tun and busybox's ip, nc and unshare (the test host
# has them). Env: BUILD, BENCH_NET_RUNS (3), BENCH_NET_MB (MiB each way: 4 on
# a nested KVM host, where the guest is CPU-bound at 0.1-2 MiB/s, else 256),
# BENCH_NET_CPUS (2), BENCH_NET_MEM (256M), BENCH_NET_TIMEOUT (240 s a boot:
# under the test host's 300 s without output), BENCH_NET_VHOST, BENCH_NET_MRG (1: perfvisor's
# --net mrg=on, mergeable receive buffers, which QEMU's device offers by default; 0: without),
# BENCH_NET_COALESCE (rx-usecs=2000,tx-usecs=2000: a second perfvisor row, "perfvisor coalescing",
# with --net ...,rx-usecs=R,tx-usecs=T, interrupt coalescing; "off": none), BENCH_HOST.
# Run by bench/run.sh.
set -eu
. "$(dirname "$0")/lib.sh"

build=${BUILD:-build}
pv=$build/perfvisor
mktap=$build/tests/mktap
kernel=$build/debian-kernel/vmlinuz
initrd=$build/linux-initramfs/initramfs.cpio
bench_need "$pv" "$mktap" "$kernel" "$initrd"
case "$("$pv" host 2>/dev/null)" in *nested*) defmb=4 ;; *) defmb=256 ;; esac
runs=${BENCH_NET_RUNS:-3}
mb=${BENCH_NET_MB:-$defmb}
cpus=${BENCH_NET_CPUS:-2}
mem=${BENCH_NET_MEM:-256M}
limit=${BENCH_NET_TIMEOUT:-240}
host=$(bench_host "$pv")
mac=52:54:00:12:34:60
bench_positive BENCH_NET_RUNS "$runs"
bench_positive BENCH_NET_MB "$mb"
bench_positive BENCH_NET_CPUS "$cpus"
bench_positive BENCH_NET_TIMEOUT "$limit"
case "$mem" in *M | *G) ;; *) echo "bench: BENCH_NET_MEM must be a size in M or G (e.g. 256M)" >&2; exit 2 ;; esac
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "bench: qemu-system-x86_64 not found (bash scripts/deps.sh bench)" >&2; exit 1; }
if ! bench_netns_ok; then
	echo "bench: net: not measured: needs root, /dev/net/tun and busybox ip, nc and unshare -n (the test host has them)"
	exit 0
fi
vhost=
if [ "${BENCH_NET_VHOST:-1}" != 0 ] && [ -c /dev/vhost-net ]; then vhost=1; fi

tmp=$(mktemp -d)
nspid=
# On any exit: the boot's namespace shell cleans up its VMM, listeners and tap on TERM.
trap '[ -z "$nspid" ] || { kill -TERM $nspid 2>/dev/null; wait $nspid 2>/dev/null || true; }; rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
head -c 1048576 /dev/urandom >"$tmp/blk"
i=0; while [ $i -lt "$mb" ]; do cat "$tmp/blk"; i=$((i + 1)); done >"$tmp/h2g.data"
md5sum <"$tmp/h2g.data" | cut -d' ' -f1 >"$tmp/h2g.want"
mkfifo "$tmp/idle"

cmd="console=ttyS0 printk.time=1 panic=-1 pvinit.mods=1 pvinit=net pvinit.netmb=$mb"
# QEMU's microvm as bench/linux.sh and bench/disk.sh boot it, the NIC on its
# virtio-mmio transport (described in its DSDT, like perfvisor's).
qemu="qemu-system-x86_64 -enable-kvm -cpu host,-arch-capabilities -smp $cpus -m $mem -M microvm
	-nodefaults -no-user-config -display none -monitor none -serial stdio -no-reboot -bios qboot.rom
	-kernel $kernel -initrd $initrd"
qnic="-device virtio-net-device,netdev=n0,mac=$mac -netdev tap,id=n0,ifname=pvbench0,script=no,downscript=no,vhost"
mrg=on
[ "${BENCH_NET_MRG:-1}" != 0 ] || mrg=off
coal=${BENCH_NET_COALESCE-rx-usecs=2000,tx-usecs=2000}
case "$coal" in
off | "") coal= ;;
rx-usecs=*,tx-usecs=*)
	r=${coal#rx-usecs=}; r=${r%%,*}; t=${coal#*,tx-usecs=}
	case "$r" in "" | *[!0-9]*) coal=bad ;; esac
	case "$t" in "" | *[!0-9]*) coal=bad ;; esac ;;
*) coal=bad ;;
esac
[ "$coal" != bad ] || { echo "bench: BENCH_NET_COALESCE must be rx-usecs=R,tx-usecs=T (microseconds, 0 to 10000) or off" >&2; exit 2; }
pvrun="$pv run --kernel $kernel --initrd $initrd --cpus $cpus --memory $mem --console stdio --verbose
	--net tap=pvbench0,mac=$mac,mrg=$mrg"

# In the namespace (busybox unshare -n sh -c "$ns" sh OUT COMMAND...): the
# tap pvbench0 with 10.0.2.1/24, the listeners, COMMAND under timeout -s
# KILL; its exit status in OUT.st; on TERM or INT, everything ended first.
# shellcheck disable=SC2016 # expanded by the namespace's shell
ns='
out=$1; shift
vm= p1= p2=
# The VMM: TERM first (GNU timeout passes it on; busybox timeout is the VMM
# itself), then KILL.
end() {
	if [ -n "$vm" ] && kill -TERM $vm 2>/dev/null; then
		sleep 1
		kill -KILL $vm 2>/dev/null
	fi
	[ -z "$p1$p2" ] || kill $p1 $p2 2>/dev/null
	wait 2>/dev/null
	"$MKTAP" -d pvbench0 >/dev/null 2>&1
}
trap "end; exit 143" TERM INT
busybox ip link set lo up
if ! "$MKTAP" pvbench0 >/dev/null || ! busybox ip addr add 10.0.2.1/24 dev pvbench0 ||
	! busybox ip link set pvbench0 up; then
	end; echo notap >"$out.st"; exit 0
fi
# busybox nc ends when the other side closes and closes its side when its input
# ends: the receiver reads a fifo that never ends (this shell holds it open).
exec 3<>"$T/idle"
busybox nc -l -p 5001 <&3 >"$out.g2h" &
p1=$!
busybox nc -l -p 5002 <"$T/h2g.data" >/dev/null &
p2=$!
timeout -s KILL "$LIMIT" "$@" >"$out" 2>"$out.err" </dev/null &
vm=$!
st=0; wait $vm || st=$?
vm=
echo $st >"$out.st"
sleep 1
end
'

# boot LABEL RUN COMMAND...: one boot; appends to results.tsv "LABEL RUN
# g2h|h2g MiB seconds" or "LABEL RUN g2h|h2g|boot failed reason", its binding
# line to bind.tsv, and prints one line (the test host stops a VM whose
# command prints nothing for 300 s).
boot() {
	label=$1 run=$2
	shift 2
	out=$tmp/out.$run.$(echo "$label" | tr -c 'a-z0-9\n' '_')
	T=$tmp LIMIT=$limit MKTAP=$mktap busybox unshare -n sh -c "$ns" sh "$out" "$@" 2>"$out.ns" &
	nspid=$!
	wait $nspid || true
	nspid=
	st=$(cat "$out.st" 2>/dev/null || echo "none")
	g2h_got=$(md5sum <"$out.g2h" 2>/dev/null | cut -d' ' -f1)
	tr -d '\r' <"$out" 2>/dev/null | awk -v lab="$label" -v run="$run" -v st="$st" -v limit="$limit" -v frames="$out.frames" \
		-v mb="$mb" -v g2hgot="$g2h_got" -v h2gwant="$(cat "$tmp/h2g.want")" \
		-v err="$(tail -n 2 "$out.err" 2>/dev/null | tr '\t\n' '  ')" '
		/^pvinit: eth0 / { sub(/^pvinit: /, ""); printf "%s\t%s\n", lab, $0 >"/dev/stderr"; next }
		/^pvinit: net sent md5 [0-9a-f]+$/ { smd5 = $5; next }
		/^pvinit: net frames (start|sent|received) tx [0-9]+ [0-9]+ rx [0-9]+ [0-9]+$/ {
			for (i = 0; i < 4; i++) fr[$4, i] = $(6 + i + (i > 1)); next
		}
		/^pvinit: net tcp (start|sent|received) / {  # the guest TCP'"'"'s segments out and in
			for (i = 5; i <= NF; i++) if ($i ~ /^(OutSegs|InSegs)=[0-9]+$/) { split($i, kv, "="); seg[$4, kv[1]] = kv[2] }
			next
		}
		/^pvinit: net sent [0-9]+ MiB in [0-9.]+ [0-9.]+$/ { sn = $4; st0 = $7; st1 = $8; sent = 1; next }
		/^pvinit: net received md5 [0-9a-f]*, [0-9]+ MiB in [0-9.]+ [0-9.]+$/ {
			rmd5 = $5; sub(/,$/, "", rmd5); rn = $6; rt0 = $9; rt1 = $10; recv = 1; next
		}
		function one(what, ok, n, t0, t1, why) {
			if (!ok) printf "%s\t%s\t%s\tfailed\t%s\n", lab, run, what, why
			else if (n != mb) printf "%s\t%s\t%s\tfailed\tthe guest moved %s MiB, not %s\n", lab, run, what, n, mb
			else if (t1 - t0 <= 0) printf "%s\t%s\t%s\tfailed\tno time passed by the guest'"'"'s clock\n", lab, run, what
			else printf "%s\t%s\t%s\t%s\t%.2f\n", lab, run, what, n, t1 - t0
		}
		END {
			if (st == "notap") { printf "%s\t%s\tboot\tfailed\tcannot make the tap in the namespace\n", lab, run; exit }
			if (st == "137") why = sprintf("killed: the boot took longer than %d s", limit)
			else if (st != "0") why = sprintf("the VMM exited with status %s: %s", st, err)
			if (!sent) one("g2h", 0, 0, 0, 0, why != "" ? why : "the guest printed no time for its sending")
			else one("g2h", smd5 != "" && smd5 == g2hgot, sn, st0, st1, sprintf("md5: the guest sent %s, the host got %s", smd5, g2hgot))
			if (!recv) one("h2g", 0, 0, 0, 0, why != "" ? why : "the guest printed no time for its receiving")
			else one("h2g", rmd5 == h2gwant, rn, rt0, rt1, sprintf("md5: the host sent %s, the guest got %s", h2gwant, rmd5))
			if (why != "" && sent && recv) printf "%s\t%s\tboot\tfailed\t%s\n", lab, run, why
			# eth0 frames and bytes each way during each direction, as the guest counted them
			# the data segments TCP sent (g2h) or took in (h2g), where the guest said: else -1
			if (("start", 0) in fr && ("sent", 0) in fr)
				printf "%s\t%s\tg2h\t%d\t%d\t%d\t%d\t%d\n", lab, run, fr["sent", 0] - fr["start", 0], fr["sent", 1] - fr["start", 1],
					fr["sent", 2] - fr["start", 2], fr["sent", 3] - fr["start", 3],
					(("sent", "OutSegs") in seg && ("start", "OutSegs") in seg) ? seg["sent", "OutSegs"] - seg["start", "OutSegs"] : -1 >frames
			if (("sent", 0) in fr && ("received", 0) in fr)
				printf "%s\t%s\th2g\t%d\t%d\t%d\t%d\t%d\n", lab, run, fr["received", 0] - fr["sent", 0], fr["received", 1] - fr["sent", 1],
					fr["received", 2] - fr["sent", 2], fr["received", 3] - fr["sent", 3],
					(("received", "InSegs") in seg && ("sent", "InSegs") in seg) ? seg["received", "InSegs"] - seg["sent", "InSegs"] : -1 >frames
		}' >"$tmp/boot.tsv" 2>>"$tmp/bind.tsv"
	cat "$tmp/boot.tsv" >>"$tmp/results.tsv"
	cat "$out.frames" >>"$tmp/frames.tsv" 2>/dev/null || true
	# perfvisor --verbose: the device's counters (frames dropped, errors).
	grep -h 'virtio-net0: received' "$out.err" 2>/dev/null | sed "s/^.*virtio-net0: /virtio-net0: /; s/^/$label	$run	/" >>"$tmp/counters.tsv" || true
	awk -F '\t' -v lab="$label" -v run="$run" '
		$4 == "failed" { s = s sprintf("; %s not measured: %s", $3 == "g2h" ? "guest->host" : $3 == "h2g" ? "host->guest" : "boot", $5); next }
		{ s = s sprintf("; %s %d MiB %.2f s (%.2f MiB/s)", $3 == "g2h" ? "guest->host" : "host->guest", $4, $5, $4 / $5) }
		END { printf "bench: net: %s, boot %d%s\n", lab, run, s }' "$tmp/boot.tsv"
}

echo "bench: net: $runs interleaved boots of each VMM, $mb MiB each way, perfvisor with --net mrg=$mrg${coal:+ and with mrg=$mrg,$coal}${vhost:+, and QEMU with vhost=on} ..."
: >"$tmp/results.tsv"
: >"$tmp/bind.tsv"
: >"$tmp/counters.tsv"
: >"$tmp/frames.tsv"
i=1
while [ $i -le "$runs" ]; do
	# shellcheck disable=SC2086 # $qemu, $qnic and $pvrun are word lists (no path here has a space)
	boot "qemu microvm" $i $qemu $qnic=off -append "$cmd"
	# shellcheck disable=SC2086
	boot "perfvisor" $i $pvrun --cmdline "$cmd"
	if [ -n "$coal" ]; then
		# shellcheck disable=SC2086
		boot "perfvisor coalescing" $i $pvrun,$coal --cmdline "$cmd"
	fi
	if [ -n "$vhost" ]; then
		# shellcheck disable=SC2086
		boot "qemu vhost=on" $i $qemu $qnic=on -append "$cmd"
	fi
	i=$((i + 1))
done

echo
awk -F '\t' -v host="$host" -v cpus="$cpus" -v mem="$mem" -v mb="$mb" -v runs="$runs" -v vhost="$vhost" -v coal="$coal" \
	-v pkg="$(cat "$build/debian-kernel/package" 2>/dev/null)" "$bench_awk_med"'
FILENAME ~ /bind.tsv$/ { bind[$1] = $2; next }
FILENAME ~ /counters.tsv$/ { cnt[$1] = $3; next }
FILENAME ~ /frames.tsv$/ {
	fb[$1, $3]++; for (i = 0; i < 4; i++) fs[$1, $3, i] += $(4 + i)
	if ($8 >= 0) { sb[$1, $3]++; ss[$1, $3] += $8; sf[$1, $3] += $3 == "g2h" ? $4 : $6 }
	next
}
{
	lab = $1
	if (!(lab in seen)) { seen[lab] = ++nl; labs[nl] = lab }
	if ($4 == "failed") { nfail[lab]++; fails[lab, nfail[lab]] = sprintf("boot %s, %s: %s", $2, $3, $5); next }
	k = ++n[lab, $3]; v[lab, $3, k] = $4 / $5
}
function median(lab, what,    i, a) {
	for (i = 1; i <= n[lab, what]; i++) a[i] = v[lab, what, i]
	return med(a, n[lab, what])
}
function cell(lab, what,    m, b) {
	if (!n[lab, what]) return sprintf("%-27s", "not measured")
	m = median(lab, what)
	if (lab == base) return sprintf("%4d %9.2f %-12s", n[lab, what], m, "1.00 (base)")
	b = n[base, what] ? median(base, what) : 0
	return sprintf("%4d %9.2f %-12s", n[lab, what], m, b > 0 ? sprintf("%.2f", m / b) : "-")
}
END {
	base = "qemu microvm"
	printf "perfvisor bench — net: TCP through virtio-net from inside a Linux guest (%s)\n", host
	printf "%s, busybox initramfs, %s vCPUs, %s; %s MiB each way a boot with busybox nc, to and from a tap\n", pkg, cpus, mem, mb
	printf "(10.0.2.1/24) in a network namespace of its own; QEMU microvm -netdev tap,vhost=off -device virtio-net-device\n"
	printf "and perfvisor --net tap=NAME: both move the frames in their own process%s\n", vhost ? "; QEMU vhost=on: in the host kernel" : " (no /dev/vhost-net here: no vhost=on row)"
	if (coal != "") printf "perfvisor coalescing: --net tap=NAME,...,%s (interrupt coalescing; off by default)\n", coal
	printf "%-20s  %-27s  %-27s\n", "case", "runs guest->host MiB/s ratio", "runs host->guest MiB/s ratio"
	for (i = 1; i <= nl; i++) {
		lab = labs[i]
		printf "%-20s  %s  %s\n", lab, cell(lab, "g2h"), cell(lab, "h2g")
	}
	printf "MiB/s by the guest'"'"'s clock (/proc/uptime, 10 ms) from nc'"'"'s start to its end: guest->host: a 1 MiB random block\n"
	printf "sent %d times (cat | nc); host->guest: nc | md5sum in the guest. A direction counts only where both ends'"'"' md5s\n", mb
	printf "match. Medians of the boots that measured; each ratio is against QEMU vhost=off (higher is better).\n"
	for (i = 1; i <= nl; i++) {
		lab = labs[i]
		if (lab in bind) printf "%s: %s\n", lab, bind[lab]
		if (lab in cnt) printf "%s: (last boot) %s\n", lab, cnt[lab]
		for (d = 1; d <= 2; d++) {
			w = d == 1 ? "g2h" : "h2g"
			if (!fb[lab, w]) continue
			# the data frames go out (g2h: tx) or come in (h2g: rx); the other way, mostly ACKs
			dn = d == 1 ? 0 : 2; an = d == 1 ? 2 : 0
			printf "%s: %s frames (%d boots, as eth0 counted them): %d data frames a MiB of %.0f bytes on average, %d the other way a MiB",
				lab, w == "g2h" ? "guest->host" : "host->guest", fb[lab, w], fs[lab, w, dn] / (fb[lab, w] * mb),
				fs[lab, w, dn + 1] / (fs[lab, w, dn] ? fs[lab, w, dn] : 1), fs[lab, w, an] / (fb[lab, w] * mb)
			# TCP'"'"'s segments (its own counts: a GSO frame carries several) against those frames
			if (sb[lab, w]) printf "; the guest'"'"'s TCP %s %d segments a MiB, %.2f a frame", w == "g2h" ? "sent" : "took in",
				ss[lab, w] / (sb[lab, w] * mb), ss[lab, w] / (sf[lab, w] ? sf[lab, w] : 1)
			printf "\n"
		}
		for (k = 1; k <= nfail[lab]; k++) printf "%s: not measured: %s\n", lab, fails[lab, k]
	}
	if (!nl) print "not measured: no boot printed anything"
}' "$tmp/bind.tsv" "$tmp/counters.tsv" "$tmp/frames.tsv" "$tmp/results.tsv"
