// SPDX-License-Identifier: MIT
/*
 * The machine's devices, one line each, in the order the VM makes them
 * (and a snapshot writes their states). A new device is its own file in
 * devices/ (its state machine and its `const struct dev_desc dev_NAME`)
 * and one line here.
 */
#include "devices/devices.h"

/* One line a device; a new one goes before the end (no realignment: a one-line diff). */
/* clang-format off */
#define DEVICES(X) \
	X(serial) \
	X(testdev) \
	X(debugexit) \
	X(i8042) \
	X(fwcfg) \
	X(rtc) \
	X(port92) \
	X(acpipm) \
	X(absent) \
	/* the end of the list */
/* clang-format on */

#define DECLARE(name) extern const struct dev_desc dev_##name;
#define ENTRY(name) &dev_##name,

DEVICES(DECLARE)

const struct dev_desc *const dev_table[] = { DEVICES(ENTRY) };

const unsigned dev_table_len = sizeof(dev_table) / sizeof(dev_table[0]);
