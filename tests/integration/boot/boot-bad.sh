#!/bin/sh
# SPDX-License-Identifier: MIT
# Bad boot input: one clear line each, status 125, nothing booted.
# cases: boot-bad-mb-truncated boot-bad-mb-outside-ram boot-bad-mb-video boot-bad-mb-elf-truncated
# cases: boot-bad-bzimage-truncated boot-bad-pvh-truncated boot-bad-module-does-not-fit
# cases: boot-bad-initrd-directory boot-bad-initrd-missing boot-bad-linux-initrd-does-not-fit
# cases: boot-bad-linux-two-initrds boot-bad-elf64-initrd boot-bad-cpuid-hide
. "$(dirname "$0")/../lib.sh"

boot_inputs
mbhdr 0x10003 >"$T/mb-trunc.bin"; head -c 20 "$T/mb-trunc.bin" >"$T/mb-trunc2.bin"
run boot-bad-mb-truncated 10 "$PV" run --kernel "$T/mb-trunc2.bin"
expect_status 125; expect_err "truncated multiboot header at offset 0x0"; done_test
{ mbhdr 0x10003 0x10000000 0x10000000 0 0 0x10000020; head -c 4096 /dev/zero; } >"$T/mb-high.bin"
run boot-bad-mb-outside-ram 10 "$PV" run --kernel "$T/mb-high.bin" --memory 64M
expect_status 125; expect_err "multiboot kernel at 0x10000000-0x10001020 lies outside guest memory (64 MiB)"; done_test
{ mbhdr 0x10007 0x100000 0x100000 0 0 0x100020; head -c 4096 /dev/zero; } >"$T/mb-video.bin"
run boot-bad-mb-video 10 "$PV" run --kernel "$T/mb-video.bin"
expect_status 125; expect_err "requires features perfvisor does not offer (flags 0x4, bit 2: a video mode)"; done_test
head -c 5000 "$G/multiboot.elf" >"$T/mb-elf-trunc.elf"
run boot-bad-mb-elf-truncated 10 "$PV" run --kernel "$T/mb-elf-trunc.elf"
expect_status 125; expect_err "kernel '$T/mb-elf-trunc.elf': truncated ELF: segment"; done_test
head -c 768 "$G/linux.bzimage" >"$T/bz-trunc"
run boot-bad-bzimage-truncated 10 "$PV" run --kernel "$T/bz-trunc"
expect_status 125; expect_err "truncated bzImage: 1024 bytes of setup code, the file has 768"; done_test
head -c 8192 "$G/pvh.elf" >"$T/pvh-trunc.elf"
run boot-bad-pvh-truncated 10 "$PV" run --kernel "$T/pvh-trunc.elf"
expect_status 125; expect_err "kernel '$T/pvh-trunc.elf': truncated ELF: segment"; done_test
dd if=/dev/zero of="$T/big-module" bs=1M count=5 2>/dev/null
run boot-bad-module-does-not-fit 30 "$PV" run --kernel "$G/multiboot.elf" --memory 8M --initrd "$T/big-module"
expect_status 125; expect_err "initrd '$T/big-module' (5242880 bytes) does not fit in guest memory"; done_test
run boot-bad-initrd-directory 10 "$PV" run --kernel "$G/multiboot.elf" --initrd "$T"
expect_status 125; expect_err "initrd '$T' is not a regular file"; done_test
run boot-bad-initrd-missing 10 "$PV" run --kernel "$G/linux.bzimage" --initrd "$T/nope"
expect_status 125; expect_err "cannot open initrd '$T/nope': No such file or directory"; done_test
dd if=/dev/zero of="$T/initrd-1m" bs=1M count=1 2>/dev/null
run boot-bad-linux-initrd-does-not-fit 30 "$PV" run --kernel "$G/linux.bzimage" --memory 4M --initrd "$T/initrd-1m"
expect_status 125; expect_err "initrd '$T/initrd-1m' (1048576 bytes) does not fit between the kernel's end"; done_test
run boot-bad-linux-two-initrds 10 "$PV" run --kernel "$G/linux.bzimage" --initrd "$T/mod0" --initrd "$T/mod1"
expect_status 125; expect_err "a Linux kernel takes one --initrd FILE, without arguments"; done_test
run boot-bad-elf64-initrd 10 "$PV" run --kernel "$G/hello.elf" --initrd "$T/mod0"
expect_status 125; expect_err "an ELF64 guest of perfvisor's own contract (docs/boot.md) takes no modules"; done_test
run boot-bad-cpuid-hide 10 "$PV" run --kernel "$G/hello.elf" --cpuid-hide avx9
expect_status 2; expect_err "unknown feature 'avx9' (known: xsave, cmpxchg16b, tsc-deadline, pmu-ack)"; done_test
