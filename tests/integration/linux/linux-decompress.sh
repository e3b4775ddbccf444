#!/bin/sh
# SPDX-License-Identifier: MIT
# A bzImage whose payload is damaged: perfvisor decompresses Debian's xz payload on the host (the
# default), so the same bzImage with bytes of its payload overwritten is refused with one line and
# status 125, before any guest runs. (That both decompression paths reach /init, and what --verbose
# says each loaded, is checked by linux-boot: linux-poweroff decompresses in the guest, linux-reboot
# on the host.) Skipped on kvm_pvm, by knowledge (DESIGN §11).
# cases: linux-decompress-corrupt
. "$(dirname "$0")/../lib.sh"

linux_ready "linux-decompress-corrupt" || exit 0

# 16 bytes overwritten 4 MB into the 8 MB xz payload: liblzma's data or CRC32 check refuses it.
cp "$LXK/vmlinuz" "$T/vmlinuz-corrupt"
printf 'perfvisor-breaks' | dd of="$T/vmlinuz-corrupt" bs=1 seek=4000000 conv=notrunc 2>/dev/null
run linux-decompress-corrupt 300 "$PV" run --kernel "$T/vmlinuz-corrupt" --memory 256M --timeout 240
expect_status 125
expect_clean
expect_err "kernel '$T/vmlinuz-corrupt': corrupt xz payload in the bzImage"
done_test
