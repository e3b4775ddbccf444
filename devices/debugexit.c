// SPDX-License-Identifier: MIT
/*
 * QEMU-compatible isa-debug-exit: a guest write of `value` stops the VM with
 * status (value << 1) | 1, so no guest value can mean plain success (0).
 * Stateless; the host's request_stop decides which stop request wins.
 */
#include "devices/devices_internal.h"

void debugexit_write(const struct dev_host *host, uint32_t value)
{
	dev_stop(host, (int)(((value << 1) | 1) & 0xff), "guest debug-exit");
}
