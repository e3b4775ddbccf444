// SPDX-License-Identifier: MIT
/*
 * The machine's devices, one line each, in the order the VM makes them
 * (and a snapshot writes their states). A new device is its own file in
 * devices/ and one line here.
 */
#include "devices/devices.h"

const struct dev_desc *const dev_table[] = {
	&dev_serial, &dev_testdev, &dev_debugexit, &dev_i8042, &dev_fwcfg,
};

const unsigned dev_table_len = sizeof(dev_table) / sizeof(dev_table[0]);
