// SPDX-License-Identifier: MIT
/*
 * `kvmcpuid LEAF REG BIT`: does this host's KVM offer CPUID bit BIT of
 * register REG (eax, ebx, ecx, edx) of leaf LEAF (index 0) in
 * KVM_GET_SUPPORTED_CPUID? Exit 0 yes, 1 no, 2 on an error. For tests
 * that must know what KVM itself offers before perfvisor adds to it
 * (restore-older: an older perfvisor passed the list through).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

int main(int argc, char **argv)
{
	static const char *const regs[] = { "eax", "ebx", "ecx", "edx" };
	struct kvm_cpuid2 *c;
	unsigned long leaf, bit;
	int fd, reg = -1;

	if (argc != 4) {
		fprintf(stderr, "usage: kvmcpuid LEAF eax|ebx|ecx|edx BIT\n");
		return 2;
	}
	leaf = strtoul(argv[1], NULL, 0);
	bit = strtoul(argv[3], NULL, 0);
	for (int i = 0; i < 4; i++)
		if (!strcmp(argv[2], regs[i]))
			reg = i;
	if (reg < 0 || bit > 31) {
		fprintf(stderr, "kvmcpuid: REG is eax, ebx, ecx or edx and BIT 0 to 31\n");
		return 2;
	}
	fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "kvmcpuid: /dev/kvm: %s\n", strerror(errno));
		return 2;
	}
	for (unsigned n = 64; n <= 4096; n *= 2) {
		c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));
		if (!c)
			return 2;
		c->nent = n;
		if (ioctl(fd, KVM_GET_SUPPORTED_CPUID, c) == 0) {
			for (unsigned i = 0; i < c->nent; i++) {
				const struct kvm_cpuid_entry2 *e = &c->entries[i];
				const unsigned v[4] = { e->eax, e->ebx, e->ecx, e->edx };

				if (e->function == leaf && e->index == 0)
					return (v[reg] >> bit) & 1 ? 0 : 1;
			}
			return 1; /* no such leaf: not offered */
		}
		free(c);
		if (errno != E2BIG)
			break;
	}
	fprintf(stderr, "kvmcpuid: KVM_GET_SUPPORTED_CPUID: %s\n", strerror(errno));
	return 2;
}
