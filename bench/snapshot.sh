#!/bin/sh
# SPDX-License-Identifier: MIT
# Snapshot benchmark (POSIX sh: it also runs in the busybox test VM). For a
# guest of 256 MiB and one of 1 GiB, 2 vCPUs, its RAM filled (the snap
# guest's `fill`, so the memory file is full size): the guest's pause for a
# snapshot (perfvisor snapshot --resume) interleaved with copying the same
# memory file (dd, and dd with fsync: a snapshot is fsync'ed), then the time
# from the start of a restore to the guest's first KVM_RUN (--verbose) for
# each memory mode, with and without the memory checksum. Medians of
# BENCH_SNAP_RUNS (5) each; ratios against the copy measured in the same run.
# Env: BUILD, BENCH_SNAP_RUNS, BENCH_SNAP_SIZES ("256M 1G"), BENCH_HOST,
# BENCH_SNAP_KEEP=0 to delete each copy at once (where /var/tmp is RAM, as in
# the test VM; on a disk, keeping them is fairer: deleting GiBs slows fsync).
set -eu
. "$(dirname "$0")/lib.sh"

build=${BUILD:-build}
runs=${BENCH_SNAP_RUNS:-5}
sizes=${BENCH_SNAP_SIZES:-256M 1G}
host=$(bench_host "$build/perfvisor")
pv=$build/perfvisor
spawn=$build/bench/spawn
guest=$build/guests/snap.elf
bench_positive BENCH_SNAP_RUNS "$runs"
bench_need "$pv" "$spawn" "$guest"
tmp=$(mktemp -d "${BENCH_SNAP_DIR:-/var/tmp}/pvsnap.XXXXXX" 2>/dev/null || mktemp -d)
vmpid=
trap '[ -n "$vmpid" ] && kill -KILL $vmpid 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM

# ms_of FILE: the number before " ms" after "paused " in perfvisor snapshot's line.
paused_ms() { sed -n 's/.*the guest was paused \([0-9.]*\) ms.*/\1/p' "$1"; }
# median: of the numbers on stdin, one per line.
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "nan" }'; }

echo "bench: snapshot: $runs snapshots of each size, interleaved with copies of the memory file, then $runs restores of each kind ..."
: >"$tmp/table"
for size in $sizes; do
	sock=$tmp/vm.sock
	rm -f "$sock" "$tmp/console"
	"$pv" run --kernel "$guest" --cpus 2 --memory "$size" --cmdline "fill phases=1000000 work_ms=20" \
		--api-socket "$sock" --console "$tmp/console" --timeout 3600 2>"$tmp/vm.err" &
	vmpid=$!
	i=0
	while ! grep -q 'phase 1/' "$tmp/console" 2>/dev/null && [ $i -lt 3000 ]; do sleep 0.1; i=$((i + 1)); done
	grep -q 'phase 1/' "$tmp/console" || { echo "bench: the $size guest never started its phases" >&2; cat "$tmp/vm.err" "$tmp/console" >&2; exit 1; }
	echo "bench: snapshot: $size guest running"
	: >"$tmp/snap.ms"; : >"$tmp/copy.us"; : >"$tmp/sync.us"
	# Snapshots and copies alternate, and nothing is deleted until the size is done, so
	# both meet the same file system state (deleting GiBs makes the next fsyncs wait).
	r=1
	while [ $r -le "$runs" ]; do
		"$pv" snapshot "$sock" --output "$tmp/s$r" --resume >"$tmp/snap.out" 2>&1 ||
			{ echo "bench: snapshot failed: $(cat "$tmp/snap.out")" >&2; exit 1; }
		paused_ms "$tmp/snap.out" >>"$tmp/snap.ms"
		# Where the files live in RAM (BENCH_SNAP_KEEP=0: the test VM's /tmp, a
		# tmpfs of half its RAM), each copy goes before the next is made: the
		# 1 GiB guest's memory file and two copies of it do not fit there (the
		# fsync'ed copy, made last, failed with ENOSPC).
		[ "${BENCH_SNAP_KEEP:-1}" = 0 ] && [ $r -gt 1 ] && rm -rf "$tmp/s$r"
		"$spawn" -n 1 -w 0 -d "$tmp" -t 900 -l copy -- dd if="$tmp/s1/memory" of="$tmp/copy$r" bs=4M >"$tmp/copy.tsv"
		awk -F '\t' '$1 == "copy" { print $3 }' "$tmp/copy.tsv" >>"$tmp/copy.us"
		[ "${BENCH_SNAP_KEEP:-1}" = 0 ] && rm -f "$tmp/copy$r"
		"$spawn" -n 1 -w 0 -d "$tmp" -t 900 -l copy+fsync -- dd if="$tmp/s1/memory" of="$tmp/sync$r" bs=4M conv=fsync >"$tmp/copy.tsv"
		awk -F '\t' '$1 == "copy+fsync" { print $3 }' "$tmp/copy.tsv" >>"$tmp/sync.us"
		[ "${BENCH_SNAP_KEEP:-1}" = 0 ] && rm -f "$tmp/sync$r"
		r=$((r + 1))
	done
	mib=$(du -m "$tmp/s1/memory" | cut -f1)
	kill -TERM $vmpid; wait $vmpid 2>/dev/null || true; vmpid=
	# Restores: each kind in turn, every round; the guest is stopped by --timeout 1 (status 124).
	key="first KVM_RUN "
	set -- -n "$runs" -w 1 -d "$tmp" -t 600 \
		-l map -x 124 -k "$key" -- "$pv" run --restore "$tmp/s1" --timeout 1 --verbose --console none \
		:: -l map-nocheck -x 124 -k "$key" -- "$pv" run --restore "$tmp/s1" --no-memory-check --timeout 1 --verbose --console none \
		:: -l read -x 124 -k "$key" -- "$pv" run --restore "$tmp/s1" --restore-memory read --timeout 1 --verbose --console none \
		:: -l read-nocheck -x 124 -k "$key" -- "$pv" run --restore "$tmp/s1" --restore-memory read --no-memory-check --timeout 1 --verbose --console none
	"$spawn" "$@" >"$tmp/restore.tsv"
	printf '%s\t%s\t%s\t%s\t%s\n' "$size" "$mib" "$(median <"$tmp/snap.ms")" \
		"$(median <"$tmp/copy.us")" "$(median <"$tmp/sync.us")" >>"$tmp/table"
	awk -F '\t' -v size="$size" '{ print "restore\t" size "\t" $1 "\t" $8 / 1000 }' "$tmp/restore.tsv" >>"$tmp/table"
	rm -rf "$tmp"/s[0-9]* "$tmp"/copy[0-9]* "$tmp"/sync[0-9]*
done

echo
awk -F '\t' -v host="$host" -v runs="$runs" '
	$1 == "restore" { r[$2, $3] = $4; next }
	{ size[++n] = $1; mib[$1] = $2; snap[$1] = $3; copy[$1] = $4 / 1000; sync[$1] = $5 / 1000 }
	END {
		printf "perfvisor bench — snapshot and restore (%s)\n", host
		printf "%-44s %10s   %s\n", "case", "median", "ratio"
		for (i = 1; i <= n; i++) {
			s = size[i]
			printf "%-44s %7.1f ms   1.00 (baseline)\n", s ": copy the memory file (dd, " mib[s] " MiB)", copy[s]
			printf "%-44s %7.1f ms   1.00 (baseline for the target)\n", s ": copy + fsync (dd conv=fsync)", sync[s]
			ratio = sync[s] > 0 ? snap[s] / sync[s] : 0
			rcopy = copy[s] > 0 ? snap[s] / copy[s] : 0
			verdict = ratio <= 1.5 ? "met" : "MISSED"
			printf "%-44s %7.1f ms   %.2fx copy + fsync, %.2fx copy (target <= 1.5x copy + fsync: %s)\n", \
				s ": snapshot, the guest paused", snap[s], ratio, rcopy, verdict
			target = "-"
			if (s == "256M")
				target = r[s, "map-nocheck"] <= 20 ? "(target <= 20 ms: met)" : "(target <= 20 ms: MISSED)"
			printf "%-44s %7.1f ms   %s\n", s ": restore, mapped lazily, no memory check", r[s, "map-nocheck"], target
			printf "%-44s %7.1f ms   -\n", s ": restore, mapped, memory checked", r[s, "map"]
			printf "%-44s %7.1f ms   -\n", s ": restore, read in (io_uring), checked", r[s, "read"]
			printf "%-44s %7.1f ms   -\n", s ": restore, read in, no memory check", r[s, "read-nocheck"]
		}
		printf "each row: median of %d runs; a guest of that size with 2 vCPUs and its RAM filled, snapshotted while it\n", runs
		printf "runs (--resume); restore = from the start of the restore to vCPU 0'"'"'s first KVM_RUN (--verbose); the memory\n"
		printf "file is in the page cache after the snapshot (a warm restore). The default restore maps and checks.\n"
	}' "$tmp/table"
