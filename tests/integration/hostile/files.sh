#!/bin/sh
# SPDX-License-Identifier: MIT
# Hostile files (docs/security.md): only a socket is replaced at --api-socket, a file given by
# mistake survives; a FIFO as the kernel, an initrd or the console is refused at once, not waited
# on (deaf to signals).
# cases: api-socket-not-a-socket kernel-fifo initrd-fifo console-fifo
. "$(dirname "$0")/../lib.sh"

echo "precious" >"$T/notsock"
run api-socket-not-a-socket 30 "$PV" run --kernel "$G/hello.elf" --api-socket "$T/notsock"
expect_status 125; expect_err 'exists and is not a socket: refusing to replace it'
grep -q precious "$T/notsock" || bad "the file at --api-socket was changed or deleted"
done_test
mkfifo "$T/kfifo" "$T/cfifo"
run kernel-fifo 20 "$PV" run --kernel "$T/kfifo"
expect_status 125; expect_err 'is not a regular file'; done_test
run initrd-fifo 20 "$PV" run --kernel "$G/multiboot.elf" --initrd "$T/kfifo"
expect_status 125; expect_err 'is not a regular file'; done_test
run console-fifo 20 "$PV" run --kernel "$G/hello.elf" --console "$T/cfifo"
expect_status 125; expect_err 'is a FIFO that nobody reads'; done_test
