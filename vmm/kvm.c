// SPDX-License-Identifier: MIT
/*
 * Opening /dev/kvm: API version, every capability perfvisor relies on (one
 * clear error each), the vCPU mmap size and the CPUID KVM supports; the
 * VM's creation; the MSR list and XSAVE size a snapshot needs.
 */
#include "kvm.h"

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

/* Three pages below the BIOS area, unused by guests. */
#define TSS_ADDR 0xfffbd000ULL

/* Guest RAM as memory slot 0 at guest-physical 0, with these KVM_MEM_* flags (set again: changed). */
static int set_ram_slot(int vm_fd, const struct gmem *mem, uint32_t flags, struct errbuf *err)
{
	struct kvm_userspace_memory_region region = {
		.slot = 0,
		.flags = flags,
		.guest_phys_addr = 0,
		.memory_size = mem->size,
		.userspace_addr = (uintptr_t)mem->hva,
	};

	if (ioctl(vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		return errbuf_set(err, -errno, "KVM_SET_USER_MEMORY_REGION%s: %s",
				  flags & KVM_MEM_LOG_DIRTY_PAGES ? " (dirty logging)" : "", strerror(errno));
	return 0;
}

int kvmsys_create_vm(const struct kvm_sys *k, const struct gmem *mem, unsigned nr_vcpus, int *vm_fd,
		     struct errbuf *err)
{
	struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };
	int fd;

	*vm_fd = -1;
	if (nr_vcpus > (unsigned)k->max_vcpus)
		return errbuf_set(err, -EINVAL, "--cpus %u exceeds this KVM's limit of %d vCPUs", nr_vcpus,
				  k->max_vcpus);
	fd = ioctl(k->fd, KVM_CREATE_VM, 0);
	if (fd < 0)
		return errbuf_set(err, -errno, "KVM_CREATE_VM: %s", strerror(errno));
	*vm_fd = fd;
	if (ioctl(fd, KVM_SET_TSS_ADDR, (unsigned long)TSS_ADDR) < 0)
		return errbuf_set(err, -errno, "KVM_SET_TSS_ADDR: %s", strerror(errno));
	if (ioctl(fd, KVM_CREATE_IRQCHIP, 0) < 0)
		return errbuf_set(err, -errno, "KVM_CREATE_IRQCHIP: %s", strerror(errno));
	if (ioctl(fd, KVM_CREATE_PIT2, &pit) < 0)
		return errbuf_set(err, -errno, "KVM_CREATE_PIT2: %s", strerror(errno));
	return set_ram_slot(fd, mem, 0, err);
}

int kvmsys_dirty_log(int vm_fd, const struct gmem *mem, bool on, struct errbuf *err)
{
	return set_ram_slot(vm_fd, mem, on ? KVM_MEM_LOG_DIRTY_PAGES : 0, err);
}

int kvmsys_get_dirty_log(int vm_fd, uint64_t *bitmap, struct errbuf *err)
{
	struct kvm_dirty_log log = { .slot = 0, .dirty_bitmap = bitmap };

	if (ioctl(vm_fd, KVM_GET_DIRTY_LOG, &log) < 0)
		return errbuf_set(err, -errno, "KVM_GET_DIRTY_LOG: %s", strerror(errno));
	return 0;
}

int kvmsys_msr_index_list(const struct kvm_sys *k, uint32_t **out, uint32_t *n, struct errbuf *err)
{
	struct kvm_msr_list probe = { .nmsrs = 0 }, *l;

	if (ioctl(k->fd, KVM_GET_MSR_INDEX_LIST, &probe) < 0 && errno != E2BIG)
		return errbuf_set(err, -errno, "snapshot: KVM_GET_MSR_INDEX_LIST: %s", strerror(errno));
	l = calloc(1, sizeof(*l) + probe.nmsrs * sizeof(uint32_t));
	if (!l)
		return errbuf_set(err, -ENOMEM, "out of memory");
	l->nmsrs = probe.nmsrs;
	if (ioctl(k->fd, KVM_GET_MSR_INDEX_LIST, l) < 0) {
		free(l);
		return errbuf_set(err, -errno, "snapshot: KVM_GET_MSR_INDEX_LIST: %s", strerror(errno));
	}
	*n = l->nmsrs;
	*out = malloc((l->nmsrs ? l->nmsrs : 1) * sizeof(uint32_t));
	if (*out)
		memcpy(*out, l->indices, l->nmsrs * sizeof(uint32_t));
	free(l);
	return *out ? 0 : errbuf_set(err, -ENOMEM, "out of memory");
}

unsigned kvmsys_cpuid_add(const struct kvm_sys *k)
{
	/* The deadline mode is the in-kernel LAPIC's, which every perfvisor VM has. */
	return ioctl(k->fd, KVM_CHECK_EXTENSION, KVM_CAP_TSC_DEADLINE_TIMER) > 0 ? CPUID_ADD_TSC_DEADLINE : 0;
}

long kvmsys_coalesce_pio(const struct kvm_sys *k, int vm_fd, uint16_t port, uint32_t len)
{
	struct kvm_coalesced_mmio_zone z = { .addr = port, .size = len, .pio = 1 };
	long page = sysconf(_SC_PAGESIZE);
	int off = ioctl(k->fd, KVM_CHECK_EXTENSION, KVM_CAP_COALESCED_MMIO);

	if (off <= 0 || ioctl(k->fd, KVM_CHECK_EXTENSION, KVM_CAP_COALESCED_PIO) <= 0 || page <= 0 ||
	    (long)(off + 1) * page > k->vcpu_mmap_size)
		return -EOPNOTSUPP;
	if (ioctl(vm_fd, KVM_REGISTER_COALESCED_MMIO, &z) < 0)
		return -errno;
	return (long)off * page;
}

uint32_t kvmsys_xsave_size(int vm_fd)
{
	int n = ioctl(vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_XSAVE2);

	return n > (int)sizeof(struct kvm_xsave) ? (uint32_t)n : (uint32_t)sizeof(struct kvm_xsave);
}
