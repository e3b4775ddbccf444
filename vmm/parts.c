// SPDX-License-Identifier: MIT
/*
 * The VM's list of saveable parts (parts.h): a small table filled during
 * setup, looked up by the schema's part descriptions.
 */
#include "parts.h"

#include <errno.h>

int vm_parts_add(struct vm_parts *l, const struct snap_part *desc, const struct vm_part_ops *ops, void *obj,
		 struct errbuf *err)
{
	if (vm_parts_find(l, desc, ops->per_vcpu))
		return errbuf_set(err, -EEXIST, "the snapshot part %s is registered twice", desc->name);
	if (l->n == VM_MAX_PARTS)
		return errbuf_set(err, -ENOSPC, "more than %d snapshot parts", VM_MAX_PARTS);
	l->p[l->n++] = (struct vm_part){ desc, ops, obj };
	return 0;
}

const struct vm_part *vm_parts_find(const struct vm_parts *l, const struct snap_part *desc, bool per_vcpu)
{
	for (unsigned i = 0; i < l->n; i++)
		if (l->p[i].desc == desc && l->p[i].ops->per_vcpu == per_vcpu)
			return &l->p[i];
	return NULL;
}
