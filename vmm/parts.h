/* SPDX-License-Identifier: MIT */
/*
 * The VM's saveable parts: each component that has state registers it
 * here once, with the description its state file node has (snapfile's
 * struct snap_part) and how to copy the state out and back in. The
 * snapshot and the restore walk the list; they know no component. Set up
 * before the vCPUs start, read-only after. Calls nothing else in vmm/.
 */
#ifndef PERFVISOR_VMM_PARTS_H
#define PERFVISOR_VMM_PARTS_H

#include <stdbool.h>

#include "snapfile/snapfile.h"
#include "util/util.h"

/* How a kind of part is saved and loaded: a static table in its component. */
struct vm_part_ops {
	bool per_vcpu; /* one state per vCPU, else one for the VM */
	/* VM-wide: save on the main thread while the VM is paused; load before the vCPUs start. */
	void (*save)(void *obj, void *state);
	int (*load)(void *obj, const void *state, struct errbuf *err);
	/* Per vCPU: save on vCPU i's own thread while it is parked; load before it starts. */
	void (*save_vcpu)(void *obj, unsigned i, void *state);
	int (*load_vcpu)(void *obj, unsigned i, const void *state, struct errbuf *err);
};

/* A registered part: the schema's part it fills, its ops and the component they act on. */
struct vm_part {
	const struct snap_part *desc;
	const struct vm_part_ops *ops;
	void *obj;
};

#define VM_MAX_PARTS 32

struct vm_parts {
	struct vm_part p[VM_MAX_PARTS];
	unsigned n;
};

/* Register obj's part desc: 0, -EEXIST (desc is registered for the same scope), -ENOSPC, with a message. Setup thread. */
int vm_parts_add(struct vm_parts *l, const struct snap_part *desc, const struct vm_part_ops *ops, void *obj,
		 struct errbuf *err);
/*
 * The part registered for desc, VM-wide or per vCPU (one description, the
 * statistics', serves both), or NULL: a component this VM does not have
 * (the PV PMU when it is off).
 */
const struct vm_part *vm_parts_find(const struct vm_parts *l, const struct snap_part *desc, bool per_vcpu);

#endif
