// SPDX-License-Identifier: MIT
/*
 * Test helper: set a 32-bit property of a flattened device tree file in
 * place, to make snapshot state files a newer or broken perfvisor could
 * have written. The root's checksum is left as it was, or with --resum
 * recomputed (XXH3-64 with the property zeroed, docs/snapshot.md), for a
 * file that is damaged in its meaning, not its bytes.
 * Usage: fdtset FILE NODE PROPERTY VALUE [--resum]
 */
#include <libfdt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

int main(int argc, char **argv)
{
	static char buf[64 << 20];
	FILE *f;
	size_t n;
	int node, rc;

	if (argc != 5 && !(argc == 6 && !strcmp(argv[5], "--resum"))) {
		fprintf(stderr, "usage: fdtset FILE NODE PROPERTY VALUE [--resum]\n");
		return 2;
	}
	f = fopen(argv[1], "r+b");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	node = fdt_path_offset(buf, argv[2]);
	rc = node < 0 ? node
		      : fdt_setprop_inplace_u32(buf, node, argv[3], (uint32_t)strtoul(argv[4], NULL, 0));
	if (!rc && argc == 6) {
		rc = fdt_setprop_inplace_u64(buf, 0, "checksum", 0);
		if (!rc)
			rc = fdt_setprop_inplace_u64(buf, 0, "checksum", XXH3_64bits(buf, n));
	}
	if (rc) {
		fprintf(stderr, "fdtset: %s %s: %s\n", argv[2], argv[3], fdt_strerror(rc));
		return 1;
	}
	rewind(f);
	if (fwrite(buf, 1, n, f) != n || fclose(f)) {
		perror(argv[1]);
		return 1;
	}
	return 0;
}
