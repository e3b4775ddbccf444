#!/bin/sh
# SPDX-License-Identifier: MIT
# virtio-blk (docs/devices.md): the guest reads the pattern this test wrote into the image (eight
# requests in flight at once), writes sectors 8-15, flushes, reads them back, asks GET_ID, and
# gets IOERR/UNSUPP for bad requests; the image on the host then holds what the guest wrote.
# readonly=on refuses the writes and the image is unchanged. A second disk is the second window
# (/dev/vdb's order). The hostile cases: a header in a writable buffer, a buffer outside RAM, a
# sector that overflows, a reset with requests in flight. SIGKILL right after the guest's flush
# completed: the data is in the image. While a VM writes an image, a second VM cannot open it.
# cases: virtio-blk virtio-blk-ro virtio-blk-second virtio-blk-hostile virtio-blk-kill virtio-blk-locked
# cases: virtio-blk-rounds
. "$(dirname "$0")/../lib.sh"

# mkimage FILE: 64 pattern sectors ("pv-sector-NNNN\n", then zeros), 4 MiB in all.
mkimage() {
	i=0
	while [ $i -lt 64 ]; do
		printf 'pv-sector-%04d\n' $i; dd if=/dev/zero bs=497 count=1 2>/dev/null; i=$((i + 1))
	done >"$1"
	dd if=/dev/zero bs=512 count=8128 2>/dev/null >>"$1"
}
# written: what sectors 8-15 hold after the guest's writes.
written() {
	i=8
	while [ $i -lt 16 ]; do
		printf 'pv-written-%04d\n' $i; dd if=/dev/zero bs=496 count=1 2>/dev/null | tr '\000' '\245'; i=$((i + 1))
	done
}
sectors() { dd if="$1" bs=512 skip="$2" count="$3" 2>/dev/null; }

mkimage "$T/blk.img"
cp "$T/blk.img" "$T/orig.img"
written >"$T/want"

run virtio-blk 120 "$PV" run --kernel "$G/virtio-blk.elf" --disk path="$T/blk.img" --cmdline sectors=8192 \
	--verbose --timeout 100
expect_status 0; expect_out 'virtio-blk: done'; expect_out '^SUMMARY: [0-9]* tests, 0 unexpected failures'
expect_out "virtio-blk: id 'blk.img'"
expect_err 'virtio-blk0: virtio-mmio at 0xd0000000-0xd0000fff, GSI 5'
expect_err 'virtio-blk0: [0-9]* requests'
sectors "$T/blk.img" 8 8 | cmp -s - "$T/want" || bad "sectors 8-15 of the image: $(sectors "$T/blk.img" 8 1 | od -c | head -n 2)"
sectors "$T/blk.img" 0 8 | cmp -s - "$(sectors "$T/orig.img" 0 8 >"$T/o8"; echo "$T/o8")" || bad "sectors 0-7 changed"
expect_clean
grep 'virtio-blk0: [0-9]* re\|--disk path' "$T/$cur.err" | sed 's/^/  /'
done_test

cp "$T/orig.img" "$T/ro.img"
run virtio-blk-ro 120 "$PV" run --kernel "$G/virtio-blk.elf" --disk path="$T/ro.img",readonly=on \
	--cmdline "sectors=8192 ro" --timeout 100
expect_status 0; expect_out 'virtio-blk: done'; expect_out '^SUMMARY: [0-9]* tests, 0 unexpected failures'
cmp -s "$T/ro.img" "$T/orig.img" || bad "the read-only image changed"
expect_clean; done_test

# Two disks: the second (read-only) is the second window, GSI 6.
mkimage "$T/a.img"; mkimage "$T/b.img"; cp "$T/b.img" "$T/b.orig"
run virtio-blk-second 120 "$PV" run --kernel "$G/virtio-blk.elf" --disk path="$T/a.img" \
	--disk path="$T/b.img",readonly=on --cmdline "base=0xd0001000 gsi=6 sectors=8192 ro" --verbose --timeout 100
expect_status 0; expect_out 'virtio-blk: done'; expect_out '^SUMMARY: [0-9]* tests, 0 unexpected failures'
expect_out "virtio-blk: id 'b.img'"
expect_err 'virtio-blk1: virtio-mmio at 0xd0001000-0xd0001fff, GSI 6'
cmp -s "$T/b.img" "$T/b.orig" || bad "the read-only second image changed"
cmp -s "$T/a.img" "$T/b.orig" || bad "the first image changed: the guest wrote the wrong disk"
expect_clean; done_test

mkimage "$T/h.img"
run virtio-blk-hostile 120 "$PV" run --kernel "$G/virtio-blk.elf" --disk path="$T/h.img" \
	--cmdline "sectors=8192 hostile" --verbose --timeout 100
expect_status 0; expect_out 'virtio-blk: done'; expect_out '^SUMMARY: [0-9]* tests, 0 unexpected failures'
expect_err 'virtio-blk: queue 0: request [0-9]* dropped: buffer outside guest RAM'
expect_clean; done_test

# SIGKILL right after the flush completed: the data is in the image.
mkimage "$T/k.img"
cur=virtio-blk-kill; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
start_vm k 200 run --kernel "$G/virtio-blk.elf" --disk path="$T/k.img" --cmdline "sectors=8192 pause_ms=100000" --timeout 180
wait_for "$T/k.out" 'virtio-blk: flushed' || bad "the guest never flushed: $(tail -n 3 "$T/k.out")"
kill_ok=$ok
# Meanwhile the image is locked: a second VM cannot open it for writing, nor for reading.
run virtio-blk-locked-ro 30 "$PV" run --kernel "$G/virtio-blk.elf" --disk path="$T/k.img",readonly=on --timeout 20
ro_st=$st
run virtio-blk-locked 30 "$PV" run --kernel "$G/virtio-blk.elf" --disk path="$T/k.img" --timeout 20
expect_status 125; expect_err "--disk path=$T/k.img: is in use: another VM (or this one) holds its lock"
[ "$ro_st" -eq 125 ] && grep -q 'is in use' "$T/virtio-blk-locked-ro.err" || bad "a reader beside the writer: status $ro_st"
done_test
cur=virtio-blk-kill; ok=$kill_ok
stop_vm KILL
[ "$st" -eq 137 ] || bad "perfvisor exited $st, not killed"
sectors "$T/k.img" 8 8 | cmp -s - "$T/want" || bad "after SIGKILL the image lacks the flushed writes"
done_test

# Many requests: 200 rounds of 8 writes and 8 reads of 4 KiB, every byte checked; the rate it printed.
dd if=/dev/zero of="$T/r.img" bs=1M count=4 2>/dev/null
run virtio-blk-rounds 200 "$PV" run --kernel "$G/virtio-blk.elf" --disk path="$T/r.img" --cmdline loop=200 \
	--verbose --timeout 180
expect_status 0; expect_out '200 rounds of 8 writes and 8 reads, every byte right'
expect_out '^SUMMARY: [0-9]* tests, 0 unexpected failures'; expect_clean
grep 'requests/s' "$T/$cur.out" | sed 's/^/  /'
grep 'virtio-blk0: [0-9]* re' "$T/$cur.err" | sed 's/^/  /'
done_test
