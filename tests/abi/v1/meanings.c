// SPDX-License-Identifier: MIT
/*
 * What ABI v1's docs/stats-abi.md (commit 7cc480c, frozen beside this file
 * as stats-abi.md) says the fields mean, as relations the v1 build of
 * `stats-check` checks on a live region of any later producer:
 *
 *   exits_total            "sum of `exits` over vCPUs (the scoreboard's `sb_sum`)"
 *   time.kvm_run_ns_total  "sum of `time.kvm_run_ns`"
 *   vcpus_online           "vCPU entries published"
 *   uptime_ns              "time since the VM was created"
 *   exits                  "returns from KVM_RUN with an exit to userspace", split by reason into
 *                          the exit.<reason> fields ("exit.other: any reason not listed"); an exit
 *                          of reason KVM_EXIT_INTR is also counted in exit.intr
 *
 * Nothing here may change: a new meaning is a new field, checked in
 * stats/meanings.c.
 */
#include "stats/tools_internal.h"

/* One relation a line. */
/* clang-format off */
#define REASONS "exit.io", "exit.mmio", "exit.msr_read", "exit.msr_write", "exit.hlt", "exit.shutdown", "exit.other"

const struct stats_rule stats_rules[] = {
	{ STATS_RULE_VM_SUM, "exits_total", { "exits" }, NULL, "the sum of exits over the vCPUs" },
	{ STATS_RULE_VM_SUM, "time.kvm_run_ns_total", { "time.kvm_run_ns" }, NULL,
	  "the sum of time.kvm_run_ns over the vCPUs" },
	{ STATS_RULE_VM_ONLINE, "vcpus_online", { NULL }, NULL, "the vCPU entries published" },
	{ STATS_RULE_VM_UPTIME, "uptime_ns", { NULL }, NULL, "the time since the VM was created" },
	{ STATS_RULE_VCPU_SUM, "exits", { REASONS }, "exit.intr",
	  "the exits by reason, plus at most the KVM_EXIT_INTR ones" },
};
/* clang-format on */

const unsigned stats_rules_len = sizeof(stats_rules) / sizeof(stats_rules[0]);

const char stats_rules_version[] = "v1";
