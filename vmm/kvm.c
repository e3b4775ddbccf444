// SPDX-License-Identifier: MIT
/*
 * Opening /dev/kvm: API version, every capability perfvisor relies on (one
 * clear error each), the vCPU mmap size and the CPUID KVM supports.
 */
#include "vm_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static const struct {
	int cap;
	const char *name;
	const char *why;
} required_caps[] = {
	{ KVM_CAP_USER_MEMORY, "KVM_CAP_USER_MEMORY", "guest RAM" },
	{ KVM_CAP_IRQCHIP, "KVM_CAP_IRQCHIP", "in-kernel LAPIC/IOAPIC/PIC" },
	{ KVM_CAP_PIT2, "KVM_CAP_PIT2", "in-kernel PIT" },
	{ KVM_CAP_EXT_CPUID, "KVM_CAP_EXT_CPUID", "guest CPUID" },
	{ KVM_CAP_IMMEDIATE_EXIT, "KVM_CAP_IMMEDIATE_EXIT", "stopping vCPUs" },
	{ KVM_CAP_SET_TSS_ADDR, "KVM_CAP_SET_TSS_ADDR", "x86 setup" },
	{ KVM_CAP_NR_VCPUS, "KVM_CAP_NR_VCPUS", "vCPU limit" },
};

int kvmsys_open(struct kvm_sys *k, struct errbuf *err)
{
	int rc, n;

	memset(k, 0, sizeof(*k));
	k->fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (k->fd < 0) {
		if (errno == ENOENT)
			return errbuf_set(
				err, -ENOENT,
				"/dev/kvm does not exist: this machine offers no KVM (load kvm-intel/kvm-amd, or use a host with virtualization)");
		if (errno == EACCES || errno == EPERM)
			return errbuf_set(
				err, -errno,
				"no permission to open /dev/kvm: add your user to the 'kvm' group or run as root");
		return errbuf_set(err, -errno, "cannot open /dev/kvm: %s", strerror(errno));
	}
	rc = ioctl(k->fd, KVM_GET_API_VERSION, 0);
	if (rc != KVM_API_VERSION) {
		rc = errbuf_set(err, -ENOTSUP, "KVM API version %d, perfvisor needs %d", rc, KVM_API_VERSION);
		goto fail;
	}
	for (size_t i = 0; i < sizeof(required_caps) / sizeof(required_caps[0]); i++) {
		if (ioctl(k->fd, KVM_CHECK_EXTENSION, required_caps[i].cap) <= 0) {
			rc = errbuf_set(err, -ENOTSUP, "KVM lacks %s (needed for %s)", required_caps[i].name,
					required_caps[i].why);
			goto fail;
		}
	}
	k->max_vcpus = ioctl(k->fd, KVM_CHECK_EXTENSION, KVM_CAP_MAX_VCPUS);
	if (k->max_vcpus <= 0)
		k->max_vcpus = ioctl(k->fd, KVM_CHECK_EXTENSION, KVM_CAP_NR_VCPUS);
	k->vcpu_mmap_size = ioctl(k->fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (k->vcpu_mmap_size < (int)sizeof(struct kvm_run)) {
		rc = errbuf_set(err, -ENOTSUP, "KVM_GET_VCPU_MMAP_SIZE returned %d", k->vcpu_mmap_size);
		goto fail;
	}
	/* The supported CPUID list grows with CPU features; retry on E2BIG. */
	for (n = 64; n <= 4096; n *= 2) {
		k->cpuid = calloc(1, sizeof(*k->cpuid) + n * sizeof(struct kvm_cpuid_entry2));
		if (!k->cpuid) {
			rc = errbuf_set(err, -ENOMEM, "out of memory");
			goto fail;
		}
		k->cpuid->nent = n;
		if (ioctl(k->fd, KVM_GET_SUPPORTED_CPUID, k->cpuid) == 0)
			return 0;
		rc = -errno;
		free(k->cpuid);
		k->cpuid = NULL;
		if (rc != -E2BIG)
			break;
	}
	rc = errbuf_set(err, rc, "KVM_GET_SUPPORTED_CPUID: %s", strerror(-rc));
fail:
	kvmsys_close(k);
	return rc;
}

void kvmsys_close(struct kvm_sys *k)
{
	free(k->cpuid);
	k->cpuid = NULL;
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
}
