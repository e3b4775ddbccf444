// SPDX-License-Identifier: MIT
/*
 * Test helper: set a 32-bit property of a flattened device tree file in
 * place, to make snapshot state files a newer or broken perfvisor could
 * have written. The root's checksum is left as it was, or with --resum
 * recomputed (XXH3-64 with the property zeroed, docs/snapshot.md), for a
 * file that is damaged in its meaning, not its bytes.
 * Usage: fdtset FILE NODE PROPERTY VALUE [--resum]
 *        fdtset FILE --delete NODE [PROPERTY]   (always re-summed)
 * The second form removes a property, or a whole node, and writes the
 * smaller tree back (the file shrinks): a state file as an older perfvisor
 * wrote it, before that property or node existed.
 */
#include <libfdt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

/* fdtset FILE --delete NODE [PROPERTY]: remove, pack, re-sum, write back. */
static int delete (char *buf, FILE *f, const char *file, const char *path, const char *prop)
{
	int node = fdt_path_offset(buf, path), rc;
	size_t n;

	rc = node < 0 ? node : prop ? fdt_delprop(buf, node, prop) : fdt_del_node(buf, node);
	if (!rc)
		rc = fdt_pack(buf);
	n = rc ? 0 : fdt_totalsize(buf);
	if (!rc)
		rc = fdt_setprop_inplace_u64(buf, 0, "checksum", 0);
	if (!rc)
		rc = fdt_setprop_inplace_u64(buf, 0, "checksum", XXH3_64bits(buf, n));
	if (rc) {
		fprintf(stderr, "fdtset: delete %s %s: %s\n", path, prop ? prop : "(node)", fdt_strerror(rc));
		return 1;
	}
	rewind(f);
	if (fwrite(buf, 1, n, f) != n || fflush(f) || ftruncate(fileno(f), (off_t)n) || fclose(f)) {
		perror(file);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static char buf[64 << 20];
	FILE *f;
	size_t n;
	int node, rc;
	bool del = argc >= 4 && !strcmp(argv[2], "--delete");

	if (!del && argc != 5 && !(argc == 6 && !strcmp(argv[5], "--resum"))) {
		fprintf(stderr,
			"usage: fdtset FILE NODE PROPERTY VALUE [--resum] | FILE --delete NODE [PROPERTY]\n");
		return 2;
	}
	f = fopen(argv[1], "r+b");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	if (del)
		return argc > 5 ? 2 : delete (buf, f, argv[1], argv[3], argc == 5 ? argv[4] : NULL);
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
