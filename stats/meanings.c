// SPDX-License-Identifier: MIT
/*
 * What today's docs/stats-abi.md says the fields mean, as relations that
 * `perfvisor stats-check` checks on a live region. Every relation of an
 * older version's table (tests/abi/vN/meanings.c) is here too, or a
 * stronger one: a field's text may be sharpened, its meaning never changed.
 */
#include "stats/tools_internal.h"

/* One relation a line. */
/* clang-format off */
#define REASONS "exit.io", "exit.mmio", "exit.msr_read", "exit.msr_write", "exit.hlt", "exit.shutdown", "exit.other"

const struct stats_rule stats_rules[] = {
	{ STATS_RULE_VM_SUM, "exits_total", { "exits" }, NULL, "the sum of exits over the vCPUs (v1)" },
	{ STATS_RULE_VM_SUM, "time.kvm_run_ns_total", { "time.kvm_run_ns" }, NULL,
	  "the sum of the published time.kvm_run_ns (v1)" },
	{ STATS_RULE_VM_ONLINE, "vcpus_online", { NULL }, NULL, "the vCPU entries published (v1)" },
	{ STATS_RULE_VM_UPTIME, "uptime_ns", { NULL }, NULL, "the time since the VM was created (v1)" },
	{ STATS_RULE_VCPU_SUM, "exits", { REASONS }, NULL,
	  "exactly the sum of the seven exit.<reason> fields (sharpened from v1's bound)" },
	{ STATS_RULE_VM_GE, "time.kvm_run_live_ns_total", { "time.kvm_run_ns_total" }, NULL,
	  "the published sum plus the open intervals" },
	{ STATS_RULE_VM_LIVE_SUM, "time.kvm_run_live_ns_total", { "time.kvm_run_ns" }, NULL,
	  "the sum of the vCPUs' live time.kvm_run_ns at the update" },
};
/* clang-format on */

const unsigned stats_rules_len = sizeof(stats_rules) / sizeof(stats_rules[0]);

const char stats_rules_version[] = "current";
