/* SPDX-License-Identifier: MIT */
/*
 * Unit-test helpers for state files: parse expecting an error, and edit a
 * built file (a property set, a node deleted) with its checksum fixed up
 * so the parser's deeper checks are reached. Shared by the tests of
 * snapfile/ (a test schema) and of the VM's schema.
 */
#ifndef PERFVISOR_TESTS_SNAP_EDIT_H
#define PERFVISOR_TESTS_SNAP_EDIT_H

#include <criterion/criterion.h>
#include <libfdt.h>
#include <stdlib.h>
#include <string.h>

#include "snapfile/snapfile.h"

/* Parse with `schema`, expecting failure with rc and a message containing want. */
static inline void snap_expect_error(const struct snap_schema *schema, const void *blob, size_t len, int rc,
				     const char *want)
{
	struct snap *s = calloc(1, sizeof(*s));
	struct errbuf err = { "" };
	int got = snap_parse(blob, len, schema, s, &err);

	cr_assert_eq(got, rc, "rc %d, want %d (%s)", got, rc, err.msg);
	cr_assert(strstr(err.msg, want), "message '%s' lacks '%s'", err.msg, want);
	snap_fini(s);
	free(s);
}

/* A writable copy with room to change it, and the checksum recomputed after. */
static inline void *editable(const void *blob, size_t len)
{
	void *c = malloc(len + 4096);

	cr_assert(c);
	cr_assert_eq(fdt_open_into(blob, c, (int)len + 4096), 0);
	return c;
}

static inline size_t resum(void *blob)
{
	cr_assert_eq(fdt_pack(blob), 0);
	cr_assert_eq(fdt_setprop_inplace_u64(blob, 0, "checksum", 0), 0);
	cr_assert_eq(fdt_setprop_inplace_u64(blob, 0, "checksum", snap_hash(blob, fdt_totalsize(blob))), 0);
	return fdt_totalsize(blob);
}

static inline int node(const void *blob, const char *path)
{
	int n = fdt_path_offset(blob, path);

	cr_assert_geq(n, 0, "no node %s", path);
	return n;
}

/* Set path/prop to val in a copy of blob: the parse with `schema` must fail naming want. */
static inline void snap_set_and_expect(const struct snap_schema *schema, const void *blob, size_t len,
				       const char *path, const char *prop, const void *val, int vlen,
				       const char *want)
{
	void *c = editable(blob, len);

	cr_assert_eq(fdt_setprop(c, node(c, path), prop, val, vlen), 0);
	snap_expect_error(schema, c, resum(c), -EINVAL, want);
	free(c);
}

/* Delete path/prop (prop NULL: the node path) in a copy of blob: the parse must fail naming want. */
static inline void snap_delete_and_expect(const struct snap_schema *schema, const void *blob, size_t len,
					  const char *path, const char *prop, const char *want)
{
	void *c = editable(blob, len);

	if (prop)
		cr_assert_eq(fdt_delprop(c, node(c, path), prop), 0, "%s/%s", path, prop);
	else
		cr_assert_eq(fdt_del_node(c, node(c, path)), 0, "%s", path);
	snap_expect_error(schema, c, resum(c), -EINVAL, want);
	free(c);
}

#endif
