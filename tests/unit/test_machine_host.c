// SPDX-License-Identifier: MIT
/*
 * Unit tests for host_detect: the kind of KVM host from fake sysfs and
 * /proc/cpuinfo trees (kvm_pvm without VMX, kvm_intel with VMX, kvm_amd
 * with SVM, kvm_pvm built in beside kvm_intel, the nested flag, nothing).
 */
#include "machine/machine.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64];

static void mkroot(const char *flags, const char *const *modules)
{
	char path[256];
	FILE *f;

	strcpy(root, "/tmp/pv-host-XXXXXX");
	cr_assert(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/proc", root);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/sys", root);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/sys/module", root);
	cr_assert_eq(mkdir(path, 0755), 0);
	for (; modules && *modules; modules++) {
		snprintf(path, sizeof(path), "%s/sys/module/%s", root, *modules);
		cr_assert_eq(mkdir(path, 0755), 0);
	}
	if (!flags)
		return;
	snprintf(path, sizeof(path), "%s/proc/cpuinfo", root);
	f = fopen(path, "w");
	cr_assert(f);
	fprintf(f, "processor\t: 0\nvendor_id\t: X\nflags\t\t: %s\n\nprocessor\t: 1\nflags\t\t: %s\n", flags,
		flags);
	fclose(f);
}

static void rmroot(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}

static struct host_info detect(const char *flags, const char *const *modules)
{
	struct host_info h;

	mkroot(flags, modules);
	host_detect(root, &h);
	rmroot();
	return h;
}

Test(host, kvm_pvm_on_a_cpu_without_vmx)
{
	static const char *const mods[] = { "kvm", "kvm_pvm", NULL };
	struct host_info h = detect("fpu vme msr pae hypervisor lm constant_tsc x2apic", mods);
	char line[96];

	cr_assert_eq(h.kind, PV_HOST_KVM_PVM);
	cr_assert_eq(h.flags, PV_HOST_NESTED);
	host_describe(&h, line, sizeof(line));
	cr_assert_str_eq(line, "kvm_pvm (nested: the host is itself a VM)");
}

Test(host, kvm_intel_with_vmx)
{
	static const char *const mods[] = { "kvm", "kvm_intel", NULL };
	struct host_info h = detect("fpu vmx msr lm", mods);

	cr_assert_eq(h.kind, PV_HOST_KVM_INTEL);
	cr_assert_eq(h.flags, 0);
	cr_assert_str_eq(host_kind_name(h.kind), "kvm_intel");
}

Test(host, vmx_wins_over_a_built_in_kvm_pvm)
{
	static const char *const mods[] = { "kvm", "kvm_pvm", "kvm_intel", NULL };

	cr_assert_eq(detect("fpu vmx lm", mods).kind, PV_HOST_KVM_INTEL);
	/* Without VMX, kvm_intel cannot bind: kvm_pvm it is. */
	cr_assert_eq(detect("fpu lm", mods).kind, PV_HOST_KVM_PVM);
}

Test(host, kvm_amd_with_svm_nested)
{
	static const char *const mods[] = { "kvm", "kvm_amd", NULL };
	struct host_info h = detect("fpu svm hypervisor", mods);

	cr_assert_eq(h.kind, PV_HOST_KVM_AMD);
	cr_assert_eq(h.flags, PV_HOST_NESTED);
}

Test(host, words_not_substrings)
{
	static const char *const mods[] = { "kvm", "kvm_intel", "kvm_amd", NULL };
	/* "vmx_ept" and "svm_lock" are not "vmx"/"svm"; no "hypervisor" word either. */
	struct host_info h = detect("fpu vmx_ept svm_lock nohypervisor", mods);

	cr_assert_eq(h.kind, PV_HOST_KVM_INTEL, "a module without its CPU flag still names the kind");
	cr_assert_eq(h.flags, 0);
}

Test(host, nothing_readable)
{
	struct host_info h = detect(NULL, NULL);

	cr_assert_eq(h.kind, PV_HOST_UNKNOWN);
	cr_assert_eq(h.flags, 0);
	cr_assert_str_eq(host_kind_name(h.kind), "unknown");
	cr_assert_str_eq(host_kind_name(99), "unknown");
}
