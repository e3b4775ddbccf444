#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build, once, the initramfs the guest-perf test (tests/integration/linux/linux-perf.sh,
# docs/guest-perf.md) boots, into BUILD/linux-perf/initramfs.cpio: the Linux tests' initramfs
# (tests/integration/linux-initramfs.sh) with a second cpio archive appended (the kernel unpacks
# both) that adds Debian's perf (the linux-perf package, installed here by scripts/deps.sh linux)
# with the libraries it needs (ldd), the project's perf driver for that kernel
# (BUILD/guest-drivers/linux/perfvisor_pmu.ko, at /lib/modules/perfvisor_pmu.ko),
# /bin/perfwork (tests/integration/perfwork.c, static) and /pvtest.sh, which the initramfs's
# `pvinit=script` runs: it loads the module and runs `perf list`, `perf stat` and `perf
# record`/`perf report` against it, printing `perftest: ...` lines that the test checks.
# Made on this machine (the test host has no network). Exit 1 with one line saying why if it
# cannot. Usage: tests/integration/linux-perfinit.sh [BUILD]
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")/../.." && pwd)
dir=$build/linux-perf
ko=$build/guest-drivers/linux/perfvisor_pmu.ko
base=$build/linux-initramfs/initramfs.cpio
bash "$here/scripts/linux-module.sh" "$build" >/dev/null || exit 1
bash "$here/tests/integration/linux-initramfs.sh" "$build" >/dev/null || exit 1
bash "$here/scripts/deps.sh" linux
perf=$(command -v perf || true)
[ -n "$perf" ] || { echo "linux-perfinit: no perf on this machine (Debian package linux-perf)" >&2; exit 1; }
# Cached: again only when an input changed.
key="$(cksum <"$ko") $(cksum <"$base") $(cksum <"$perf") $(cksum <"$0") $(cksum <"$here/tests/integration/perfwork.c")"
[ -s "$dir/initramfs.cpio" ] && [ "$(cat "$dir/key" 2>/dev/null)" = "$key" ] && exit 0
rm -rf "$dir" && mkdir -p "$dir"
add=$dir/root
mkdir -p "$add/bin" "$add/lib/modules" "$add/lib64" "$add/lib/x86_64-linux-gnu"
cp "$ko" "$add/lib/modules/"
cp "$perf" "$add/bin/perf"
for l in $(ldd "$perf" | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p'); do cp -L "$l" "$add/lib/x86_64-linux-gnu/"; done
cp -L /lib64/ld-linux-x86-64.so.2 "$add/lib64/"
"${CC:-cc}" -static -O2 -g -fno-omit-frame-pointer -o "$add/bin/perfwork" "$here/tests/integration/perfwork.c" ||
	{ echo "linux-perfinit: cannot link tests/integration/perfwork.c statically (libc6-dev's libc.a?)" >&2; exit 1; }
cat >"$add/pvtest.sh" <<'PERFTEST'
# The guest-perf test's script (pvinit=script; tests/integration/linux/linux-perf.sh reads
# its lines). The shell stays on CPU 0; every measured command runs on CPU 1, whose vCPU the
# host's statistics are compared with. PERFTEST_N port writes, 20000 unless pvtest.n= says.
export PATH=/bin LD_LIBRARY_PATH=/lib/x86_64-linux-gnu HOME=/tmp
say() { echo "perftest: $*"; }
taskset -p -c 0 $$ >/dev/null
n=$(sed -n 's/.*pvtest.n=\([0-9]*\).*/\1/p' /proc/cmdline); n=${n:-20000}
csv() { grep "$2" "$1" | head -n 1; }
if insmod /lib/modules/perfvisor_pmu.ko; then say "insmod: ok"; else say "insmod: failed"; fi
# pvtest.mode=bench (bench/guestperf.sh): pvtest.rounds rounds (3) of the same CPU-bound work
# (pvtest.work rounds of perfwork, 3000 unless given) without perf, under perf stat and perf stat -I 10
# (counting exits.io), under perf record -F 1000 and -c 1 ms; each but the first inside an outer perf stat -a that
# counts the MSR exits all this costs. Modes rotate from round to round.
if grep -q 'pvtest.mode=bench' /proc/cmdline; then
	r=$(sed -n 's/.*pvtest.rounds=\([0-9]*\).*/\1/p' /proc/cmdline); r=${r:-3}
	w=$(sed -n 's/.*pvtest.work=\([0-9]*\).*/\1/p' /proc/cmdline); w=${w:-3000}
	outer() { perf stat -a -x, -o /tmp/outer.csv -e perfvisor/exits.msr/,perfvisor/exits/ -- "$@"; }
	one() {
		rm -f /tmp/b.data /tmp/i.csv; samples=0 reads=0
		case $1 in
		off) outer taskset -c 1 perfwork rounds "$w" >/tmp/b.out ;;
		# perf stat on CPU 0, the workload on CPU 1, with and without -I 10: the difference in MSR
		# exits is the reads' (on the workload's CPU perf's wakeups would be context switches).
		stat) outer perf stat -x, -o /tmp/i.csv -e perfvisor/exits.io/ -- taskset -c 1 perfwork rounds "$w" >/tmp/b.out ;;
		freq) outer taskset -c 1 perf record -q -F 1000 -e perfvisor/task-clock/ -o /tmp/b.data -- perfwork rounds "$w" >/tmp/b.out 2>&1 ;;
		period) outer taskset -c 1 perf record -q -c 1000000 -e perfvisor/task-clock/ -o /tmp/b.data -- perfwork rounds "$w" >/tmp/b.out 2>&1 ;;
		interval) outer perf stat -I 10 -x, -o /tmp/i.csv -e perfvisor/exits.io/ -- taskset -c 1 perfwork rounds "$w" >/tmp/b.out ;;
		esac
		[ -f /tmp/b.data ] && samples=$(perf script -i /tmp/b.data -G -F ip 2>/dev/null | grep -c .)
		[ "$1" = interval ] && reads=$(grep -c 'exits.io' /tmp/i.csv)
		say "bench: $1$2 $(sed -n 's/.*wall_ns \([0-9]*\), cpu_ns \([0-9]*\).*/wall_ns=\1 cpu_ns=\2/p' /tmp/b.out) msr=$(grep 'exits.msr' /tmp/outer.csv | cut -d, -f1) exits=$(grep 'exits/' /tmp/outer.csv | cut -d, -f1) samples=$samples reads=$reads"
	}
	modes="off stat freq period interval"
	i=1
	while [ $i -le "$r" ]; do
		for m in $modes; do one "$m" "$i"; done
		modes="$(echo $modes | cut -d' ' -f2-) $(echo $modes | cut -d' ' -f1)"
		i=$((i + 1))
	done
	say "bench: done"
	exit 0
fi
# pvtest.mode=snap: only this, for the snapshot test: port writes for 12 s while perf counts them;
# the host snapshots the VM meanwhile and the restored VM prints both counts.
if grep -q 'pvtest.mode=snap' /proc/cmdline; then
	# (The test boots this one with --cpuid-hide pmu-ack: sampling the version-1 way, three writes a PMI.)
	taskset -c 1 perf record -q -e perfvisor/task-clock/ -c 1000000 -o /tmp/s.data -- perfwork split 1 >/dev/null 2>&1
	say "snap-samples: $(perf script -i /tmp/s.data -G -F ip 2>/dev/null | grep -c .)"
	say "snap-mark"
	taskset -c 1 perf stat -x, -o /tmp/snap.csv -e perfvisor/exits.io/,perfvisor/exits/ -- perfwork io-for 12 /tmp/snap.n
	say "snap: $(cat /tmp/snap.n) port writes, $(csv /tmp/snap.csv exits.io) | $(csv /tmp/snap.csv 'exits/')"
	exit 0
fi
dmesg | grep 'perfvisor_pmu' | sed 's/^/perftest: dmesg: /'
say "events: $(ls /sys/bus/event_source/devices/perfvisor/events 2>&1 | tr '\n' ' ')"
say "format: $(cat /sys/bus/event_source/devices/perfvisor/format/event 2>&1)"
say "perf: $(perf --version 2>&1)"
perf list 2>&1 | grep 'perfvisor/' | head -n 40 | sed 's/^ */perftest: list: /'

# Exact: N port writes are N exits.io of the task, none of perf's own; the host's counter of
# vCPU 1 sees the same (it reads it at the two marks; the sleeps give it the time).
say "io-mark-before"; sleep 4
taskset -c 1 perf stat -x, -o /tmp/io.csv -e perfvisor/exits.io/,perfvisor/exits/ -- perfwork io "$n"
say "io-mark-after"; sleep 4
say "io: n $n, $(csv /tmp/io.csv exits.io) | $(csv /tmp/io.csv 'exits/')"

# task-clock against the program's own CPU time.
taskset -c 1 perf stat -x, -o /tmp/tc.csv -e perfvisor/task-clock/,perfvisor/time.kvm_run/ -- perfwork spin 2 >/tmp/spin.out
say "task-clock: $(csv /tmp/tc.csv task-clock) | $(csv /tmp/tc.csv time.kvm_run) | $(cat /tmp/spin.out)"

# Per CPU (-a): every vCPU's port I/O while N port writes run on CPU 1 (and KVM's own exits).
perf stat -a -x, -o /tmp/all.csv -e perfvisor/exits.io/,perfvisor/kvm.exits/ -- taskset -c 1 perfwork io "$n"
say "all-cpus: $(csv /tmp/all.csv exits.io) | $(csv /tmp/all.csv kvm.exits)"

# More events than counters: perf multiplexes and scales (the last columns: time running, %).
ev=
for e in exits exits.io exits.mmio exits.msr exits.hlt exits.intr time.kvm_run time.vmm pmis exits.msr_read exits.msr_write; do
	ev="$ev${ev:+,}perfvisor/$e/"
done
taskset -c 1 perf stat -x, -o /tmp/mux.csv -e "$ev" -- perfwork io "$n"
say "mux: $(csv /tmp/mux.csv exits.io)"
grep perfvisor /tmp/mux.csv | sed 's/^/perftest: mux-all: /'

# Sampling: 1 ms of task-clock a sample, call chains; heavy:light should be 3:1.
taskset -c 1 perf record -q -e perfvisor/task-clock/ -c 1000000 -g -o /tmp/perf.data -- perfwork split 3 >/tmp/split.out 2>&1
say "record: $(cat /tmp/split.out | tr '\n' ' ')"
perf report -i /tmp/perf.data --stdio --no-children --sort sym -g none -q 2>/dev/null | grep -v '^$' | head -n 8 | sed 's/^ */perftest: report: /'
say "samples: $(perf script -i /tmp/perf.data -G -F ip 2>/dev/null | grep -c .)"
# perf script prints each sample's chain a frame a line, innermost first, and a blank line.
perf script -i /tmp/perf.data -F ip,sym 2>/dev/null >/tmp/chains.txt
say "chains: $(awk 'NF == 0 { if (top ~ /^(heavy|light)$/ && m) n++; top = ""; m = 0; next }
	top == "" { top = $2; next } $2 == "main" { m = 1 } END { print n + 0 }' /tmp/chains.txt) samples in heavy or light with main in their chain"
grep -m1 -A4 -e ' heavy$' -e ' light$' /tmp/chains.txt | sed 's/^/perftest: chain: /'

# Misuse: each fails with perf's message, the host does not mind.
say "bad-config: $(perf stat -e perfvisor/config=0x9999/ true 2>&1 | grep -m1 -i -e 'invalid' -e 'not supported' -e 'error')"
say "unavailable: $(perf stat -e perfvisor/config=0x0/ true 2>&1 | grep -m1 -i -e 'not supported' -e 'error')"
say "sample-class3: $(perf record -o /tmp/x.data -e perfvisor/kvm.exits/ -c 1000 -- true 2>&1 | grep -v '^ *$' | head -n 3 | tr '\n' ' ')"
taskset -c 1 perf record -q -o /tmp/p1.data -e perfvisor/exits/ -c 1 -- perfwork io 2000 >/dev/null 2>&1
say "period-1: status $?, $(perf script -i /tmp/p1.data -F ip 2>/dev/null | grep -c .) samples"
perf stat -a -x, -o /tmp/bg.csv -e perfvisor/exits/ -- sleep 6 & bg=$!
sleep 2
say "rmmod-busy: $(rmmod perfvisor_pmu 2>&1 || true) $(lsmod | grep -c perfvisor_pmu) loaded"
wait $bg
say "rmmod-busy: the open event's count $(csv /tmp/bg.csv 'exits/')"
rmmod perfvisor_pmu && say "rmmod: ok, $(lsmod | grep -c perfvisor_pmu) loaded"
insmod /lib/modules/perfvisor_pmu.ko && say "insmod again: ok, type $(cat /sys/bus/event_source/devices/perfvisor/type)"
say "done"
PERFTEST
(cd "$add" && find . | cpio -o -H newc --quiet) >"$dir/perf.cpio"
cat "$base" "$dir/perf.cpio" >"$dir/initramfs.tmp" && mv "$dir/initramfs.tmp" "$dir/initramfs.cpio"
cp "$add/bin/perfwork" "$dir/perfwork" # with its symbols, for a look at what the guest ran
rm -rf "$add" "$dir/perf.cpio"
echo "$key" >"$dir/key"
echo "linux-perfinit: $dir/initramfs.cpio ($(($(wc -c <"$dir/initramfs.cpio") / 1048576)) MiB: the Linux tests' initramfs, $("$perf" --version), perfvisor_pmu.ko for $(cat "$build/guest-drivers/linux/kernel"))"
