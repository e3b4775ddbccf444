// SPDX-License-Identifier: MIT
/*
 * Which kind of KVM host this is (docs/boot.md "Host kinds"): kvm_intel,
 * kvm_amd or kvm_pvm, and whether the host itself is a VM. Read from sysfs
 * and /proc/cpuinfo under a root directory, so tests can hand it fake trees.
 */
#include "machine/machine.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char *const kind_names[PV_HOST_KIND_NR] = {
	[PV_HOST_UNKNOWN] = "unknown",
	[PV_HOST_KVM_INTEL] = "kvm_intel",
	[PV_HOST_KVM_AMD] = "kvm_amd",
	[PV_HOST_KVM_PVM] = "kvm_pvm",
};

const char *host_kind_name(uint32_t kind)
{
	return kind < PV_HOST_KIND_NR ? kind_names[kind] : "unknown";
}

static bool module_present(const char *root, const char *mod)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/sys/module/%s", root, mod);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Does the first "flags" line of cpuinfo list `flag` as a whole word? */
static bool line_has_word(const char *line, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = strstr(line, word); p; p = strstr(p + 1, word)) {
		bool start = p == line || p[-1] == ' ' || p[-1] == '\t' || p[-1] == ':';
		bool end = p[n] == ' ' || p[n] == '\n' || p[n] == '\0';

		if (start && end)
			return true;
	}
	return false;
}

struct cpu_flags {
	bool vmx, svm, hypervisor;
};

static void read_cpu_flags(const char *root, struct cpu_flags *f)
{
	char path[512], line[8192];
	FILE *fp;

	memset(f, 0, sizeof(*f));
	snprintf(path, sizeof(path), "%s/proc/cpuinfo", root);
	fp = fopen(path, "re");
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp)) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		f->vmx = line_has_word(line, "vmx");
		f->svm = line_has_word(line, "svm");
		f->hypervisor = line_has_word(line, "hypervisor");
		break;
	}
	fclose(fp);
}

void host_detect(const char *root, struct host_info *h)
{
	struct cpu_flags f;

	read_cpu_flags(root, &f);
	memset(h, 0, sizeof(*h));
	/*
	 * A CPU with VMX/SVM and the matching module is hardware KVM, even if
	 * kvm_pvm is built in too (it binds only where neither is usable).
	 */
	if (f.vmx && module_present(root, "kvm_intel"))
		h->kind = PV_HOST_KVM_INTEL;
	else if (f.svm && module_present(root, "kvm_amd"))
		h->kind = PV_HOST_KVM_AMD;
	else if (module_present(root, "kvm_pvm"))
		h->kind = PV_HOST_KVM_PVM;
	else if (module_present(root, "kvm_intel"))
		h->kind = PV_HOST_KVM_INTEL;
	else if (module_present(root, "kvm_amd"))
		h->kind = PV_HOST_KVM_AMD;
	if (f.hypervisor)
		h->flags |= PV_HOST_NESTED;
}

int host_describe(const struct host_info *h, char *buf, size_t len)
{
	return snprintf(buf, len, "%s%s", host_kind_name(h->kind),
			(h->flags & PV_HOST_NESTED) ? " (nested: the host is itself a VM)" : "");
}
