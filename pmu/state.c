// SPDX-License-Identifier: MIT
/*
 * The PV PMU's saved state, as the snapshot's state file holds it: the
 * capabilities the guest was offered and each vCPU's MSR values, one
 * table of fields each (docs/snapshot.md). The PMU's own checks decide
 * whether a state is one a guest could have made.
 */
#include "pmu.h"

#include <stddef.h>

#define CF(prop, member) SNAP_FIELD(struct pmu_caps, prop, SNAP_F_U32, member, UINT32_MAX)

static const struct snap_field caps_fields[] = {
	SNAP_FIELD(struct pmu_caps, "nr-counters", SNAP_F_U32, nr_counters, PMU_NR_COUNTERS),
	CF("features", features),
	CF("min-period", min_period),
	CF("min-period-ns", min_period_ns),
	CF("max-pmis-per-s", max_pmis_per_s),
	CF("host-budget", host_budget),
	SNAP_FIELD_U64S(struct pmu_caps, "avail", avail),
	SNAP_FIELD_U64S(struct pmu_caps, "sample", sample),
	SNAP_FIELD_U64S(struct pmu_caps, "filter", filter),
};

const struct snap_part pmu_caps_part = {
	.name = "pmu",
	.size = sizeof(struct pmu_caps),
	.fields = caps_fields,
	.nr_fields = sizeof(caps_fields) / sizeof(caps_fields[0]),
	.flags = SNAP_PART_PMU,
};

#define VF(prop, member) SNAP_FIELD(struct pmu_vcpu_state, prop, SNAP_F_U64, member, 0)

static const struct snap_field vcpu_fields[] = {
	VF("global-ctrl", global_ctrl),
	VF("global-status", status),
	VF("pmi-cfg", pmi_cfg),
	VF("page", page),
	SNAP_FIELD_U64S(struct pmu_vcpu_state, "counter-config", cfg),
	SNAP_FIELD_U64S(struct pmu_vcpu_state, "counter-value", value),
	VF("page-seq", page_seq),
	VF("page-updates", page_updates),
	SNAP_FIELD(struct pmu_vcpu_state, "pmi-pending", SNAP_F_BOOL, pmi_pending, 1),
	SNAP_FIELD(struct pmu_vcpu_state, "pmi-throttled", SNAP_F_BOOL, throttled, 1),
	SNAP_FIELD_U64S_OPT(struct pmu_vcpu_state, "counter-reload", reload),
};

/* A vCPU's state against the capabilities the file says the guest was offered. */
static const char *vcpu_check(const struct snap *s, const void *state, const char **prop)
{
	const struct pmu_caps *caps = snap_part_state(s, &pmu_caps_part, -1);
	const char *why = "no PV PMU capabilities";

	(void)prop;
	if (caps && !pmu_vcpu_state_check(caps, state, &why))
		return NULL;
	return why;
}

const struct snap_part pmu_vcpu_part = {
	.name = "pmu",
	.size = sizeof(struct pmu_vcpu_state),
	.fields = vcpu_fields,
	.nr_fields = sizeof(vcpu_fields) / sizeof(vcpu_fields[0]),
	.flags = SNAP_PART_PMU,
	.check = vcpu_check,
};
