// SPDX-License-Identifier: MIT
/*
 * The host-counter backend: perf_event_open on the calling (vCPU) thread.
 * Hardware events count the guest only (exclude_host) with the guest's
 * USR/OS filter; software events count the whole vCPU thread. A sampling
 * counter signals the vCPU thread on overflow (O_ASYNC, F_SETSIG,
 * F_SETOWN_EX), which interrupts KVM_RUN; or writes its samples into a
 * perf ring buffer and leaves the vCPU alone (--profile mode=leaf).
 */
#include "pmu.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static void perf_attr(struct perf_event_attr *a, const struct pmu_event_info *ev, uint64_t cfg,
		      uint64_t period)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = ev->cls == PV_PMU_CLASS_HW ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
	a->config = ev->perf_config;
	a->sample_period = period;
	a->wakeup_events = period ? 1 : 0;
	if (ev->cls == PV_PMU_CLASS_HW) {
		/* Guest-only counting, as KVM's own vPMU programs it. */
		a->exclude_host = 1;
		a->exclude_user = !(cfg & PV_PMU_CFG_USR);
		a->exclude_kernel = !(cfg & PV_PMU_CFG_OS);
	}
}

static int perf_open(struct perf_event_attr *a)
{
	long fd = syscall(SYS_perf_event_open, a, 0 /* this thread */, -1, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : (int)fd;
}

int pmu_perf_open(const struct pmu_event_info *ev, uint64_t cfg, uint64_t period, int signo)
{
	struct perf_event_attr a;
	struct f_owner_ex owner = { .type = F_OWNER_TID, .pid = (pid_t)syscall(SYS_gettid) };
	int fd, rc;

	if (ev->cls != PV_PMU_CLASS_HW && ev->cls != PV_PMU_CLASS_SW)
		return -EINVAL;
	perf_attr(&a, ev, cfg, period);
	fd = perf_open(&a);
	if (fd < 0 || !period)
		return fd;
	if (fcntl(fd, F_SETOWN_EX, &owner) < 0 || fcntl(fd, F_SETSIG, signo) < 0 ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int pmu_perf_open_ring(const struct pmu_event_info *ev, uint64_t cfg, uint64_t period, unsigned pages,
		       void **map, size_t *map_len)
{
	struct perf_event_attr a;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len = (1 + (size_t)pages) * page;
	void *m;
	int fd, rc;

	if ((ev->cls != PV_PMU_CLASS_HW && ev->cls != PV_PMU_CLASS_SW) || !period || !pages ||
	    (pages & (pages - 1)))
		return -EINVAL;
	perf_attr(&a, ev, cfg, period);
	/*
	 * The IP only; perf records the guest's when the interrupt came from it
	 * (PERF_RECORD_MISC_GUEST_*). Nobody polls the fd: wake a poller only
	 * when the ring is half full, which no reader waits for.
	 */
	a.sample_type = PERF_SAMPLE_IP;
	a.watermark = 1;
	a.wakeup_watermark = (uint32_t)(pages * page / 2);
	fd = perf_open(&a);
	if (fd < 0)
		return fd;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		rc = -errno;
		close(fd);
		return rc;
	}
	*map = m;
	*map_len = len;
	return fd;
}

int pmu_perf_read(int fd, uint64_t *count)
{
	ssize_t n = read(fd, count, sizeof(*count));

	if (n == (ssize_t)sizeof(*count))
		return 0;
	return n < 0 ? -errno : -EIO;
}

int pmu_perf_set_period(int fd, uint64_t period)
{
	return ioctl(fd, PERF_EVENT_IOC_PERIOD, &period) < 0 ? -errno : 0;
}

int pmu_perf_probe(const struct pmu_event_info *ev)
{
	struct perf_event_attr a;
	int fd;

	perf_attr(&a, ev, PV_PMU_CFG_USR | PV_PMU_CFG_OS, 0);
	fd = perf_open(&a);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}
