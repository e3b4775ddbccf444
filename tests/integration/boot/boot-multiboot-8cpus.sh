#!/bin/sh
# SPDX-License-Identifier: MIT
# Multiboot: fw_cfg follows --cpus and --memory; every AP starts.
. "$(dirname "$0")/../lib.sh"

run boot-multiboot-8cpus 180 "$PV" run --kernel "$G/multiboot.elf" --cpus 8 --memory 256M --cmdline "path=$G/multiboot.elf mods=0" \
	--timeout 150 --verbose
boot_guest 17 multiboot; expect_out 'multiboot: fw_cfg: 8 CPUs, 256 MiB'; expect_out 'multiboot: 8 CPUs online'; done_test
