// SPDX-License-Identifier: MIT
/*
 * The VM's virtio-mmio devices: each one's window on the bus, a KVM
 * ioeventfd per queue on its QueueNotify register (a notification does
 * not leave the kernel), an irqfd on its GSI, and one I/O thread that
 * serves every queue. Locking (docs/devices.md): a device's own mutex
 * orders register accesses (vCPU threads) against serving (I/O thread);
 * io_lock here holds the I/O thread off while a snapshot saves state and
 * memory, so nothing changes under it.
 */
#include "vm_virtio.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "devices/devices.h"
#include "seccomp.h"
#include "vm_blk.h"
#include "vm_net.h"

struct vv_dev;

/* The statistics fields of one device at most: the transport's, then a disk's own or the backend's own. */
#define VV_STATS_PER_DEV                                                                         \
	(VM_VIRTIO_NR_STATS + (VM_VIRTIO_NR_BLK_STATS > VM_VIRTIO_MAX_STATS - VM_VIRTIO_NR_STATS \
				       ? VM_VIRTIO_NR_BLK_STATS                                  \
				       : VM_VIRTIO_MAX_STATS - VM_VIRTIO_NR_STATS))

struct vv_queue {
	struct vv_dev *dev;
	unsigned index;
	int efd;   /* KVM's ioeventfd for QueueNotify == index; also written by the MMIO fallback */
	bool ring; /* not a queue: the disk's io_uring completions (efd: the ring's eventfd) */
	bool tap;  /* not a queue: the tap's readiness (edge-triggered), not a notification: efd is -1 */
};

struct vv_dev {
	struct vm_virtio *owner;
	struct virtio_mmio *dev;
	const struct snap_part *part;
	struct dev_host host; /* opaque: this struct */
	struct vm_virtio_window win;
	int irqfd; /* -1: KVM_IRQ_LINE pulses instead */
	bool ioeventfd;
	struct vv_queue q[VIRTIO_MAX_QUEUES];
	struct vm_blk *blk;	    /* a disk: its image and ring */
	struct vv_queue ring;	    /* ... whose completions the I/O thread reaps */
	const struct vm_disk *disk; /* ... as the command line (or the snapshot) gave it */
	struct vm_tap *tap;	    /* virtio-net: its tap, else NULL */
	struct vv_queue tap_ready;  /* virtio-net: the tap has frames for queue 0 */
	uint64_t irq_delay_ns
		[VIRTIO_MAX_QUEUES];	     /* virtio-net: a queue's interrupts coalesced over this long */
	uint64_t irq_due[VIRTIO_MAX_QUEUES]; /* a coalesced interrupt fires then (util_now_ns); 0: none */
};

struct vm_virtio {
	struct vm_virtio_config cfg;
	struct vv_dev dev[VM_VIRTIO_MAX];
	unsigned n;
	int epfd, stop_efd;
	bool coalesce; /* a device coalesces interrupts (--net rx-usecs=, tx-usecs=) */
	pthread_t thread;
	bool started;
	pthread_mutex_t io_lock; /* the I/O thread serves under it; a snapshot saves under it */
	uint64_t *track;	 /* a migration: every page the devices reach is set here (atomic) */
	/* the start hand-over: the thread's seccomp result */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool start_done;
	int start_rc;
	struct errbuf start_err;
	enum seccomp_mode mode;
	/* the statistics fields' names: virtio.<dev>.<counter> */
	char stat_name[VM_VIRTIO_MAX * VV_STATS_PER_DEV][48];
	const char *stat_names[VM_VIRTIO_MAX * VV_STATS_PER_DEV];
	uint8_t stat_bytes[VM_VIRTIO_MAX * VV_STATS_PER_DEV];
	uint8_t stat_peak[VM_VIRTIO_MAX * VV_STATS_PER_DEV];
};

/* struct virtio_counters' fields, in order, as statistics field names. */
static const char *const counter_names[VM_VIRTIO_NR_STATS] = {
	"requests", "bytes", "notifications", "interrupts", "dropped", "needs_reset", "bad_accesses",
};
_Static_assert(sizeof(struct virtio_counters) == VM_VIRTIO_NR_STATS * sizeof(uint64_t),
	       "one statistics field per counter");
_Static_assert(VM_VIRTIO_MAX_STATS == VM_VIRTIO_NR_STATS + VIRTIO_MAX_OWN_STATS,
	       "room for every device's own");

/* A disk's own (struct virtio_blk_counters but the instant in-flight count and "other"). */
static const char *const blk_counter_names[VM_VIRTIO_NR_BLK_STATS] = {
	"reads",	 "writes",	 "flushes",    "bytes_read",  "bytes_written", "errors",
	"inflight_peak", "lat_lt_100us", "lat_lt_1ms", "lat_lt_10ms", "lat_ge_10ms",
};

static void blk_stats(struct virtio_mmio *v, uint64_t *out)
{
	struct virtio_blk_counters c = { 0 };

	virtio_blk_get_counters(v, &c);
	out[0] = c.reads;
	out[1] = c.writes;
	out[2] = c.flushes;
	out[3] = c.bytes_read;
	out[4] = c.bytes_written;
	out[5] = c.errors;
	out[6] = c.inflight_peak;
	for (unsigned k = 0; k < VIRTIO_BLK_LAT_BUCKETS; k++)
		out[7 + k] = c.lat[k];
}

unsigned vm_virtio_plan(const struct vm_virtio_plan_in *in, struct vm_virtio_window *out, unsigned max)
{
	static const uint32_t gsis[] = VM_VIRTIO_GSIS;
	static const char *const disk_names[] = {
		"virtio-blk0", "virtio-blk1", "virtio-blk2", "virtio-blk3",
		"virtio-blk4", "virtio-blk5", "virtio-blk6", "virtio-blk7"
	};
	static const char *const nets[VIRTIO_NET_MAX] = { "virtio-net0", "virtio-net1", "virtio-net2",
							  "virtio-net3" };
	const char *names[VM_VIRTIO_MAX];
	unsigned n = 0;

	_Static_assert(sizeof(gsis) / sizeof(gsis[0]) == VM_VIRTIO_MAX, "one GSI per device");
	_Static_assert(sizeof(disk_names) / sizeof(disk_names[0]) == VM_MAX_DISKS, "one name per disk");
	if (in->rng)
		names[n++] = "virtio-rng";
	for (unsigned i = 0; i < in->disks && i < VM_MAX_DISKS && n < VM_VIRTIO_MAX; i++)
		names[n++] = disk_names[i];
	/* then the nets */
	for (unsigned i = 0; i < in->nr_net && i < VIRTIO_NET_MAX && n < VM_VIRTIO_MAX; i++)
		names[n++] = nets[i];
	for (unsigned i = 0; i < n && i < max; i++)
		out[i] = (struct vm_virtio_window){
			names[i],	  "LNRO0005", i,   VM_VIRTIO_BASE + i * VIRTIO_MMIO_SIZE,
			VIRTIO_MMIO_SIZE, gsis[i],    true
		};
	return n;
}

unsigned vm_virtio_acpi_devs(const struct vm_virtio_plan_in *in, struct acpi_mmio_dev *out, unsigned max)
{
	struct vm_virtio_window w[VM_VIRTIO_MAX];
	unsigned n = vm_virtio_plan(in, w, VM_VIRTIO_MAX);

	for (unsigned i = 0; i < n && i < max; i++)
		out[i] =
			(struct acpi_mmio_dev){ w[i].hid, w[i].uid, w[i].base, (uint32_t)w[i].len, w[i].gsi };
	return n;
}

/* ---- what a device gets from the VM ------------------------------------------------- */

static void *host_gpa_to_hva(void *opaque, uint64_t gpa, uint64_t len)
{
	struct vv_dev *d = opaque;
	void *hva = gmem_hva(d->owner->cfg.mem, gpa, len);
	uint64_t *track = __atomic_load_n(&d->owner->track, __ATOMIC_ACQUIRE);

	/* A migration: the device may write any page it reaches, behind KVM's dirty log. */
	if (hva && track && len)
		for (uint64_t pfn = gpa >> 12; pfn <= (gpa + len - 1) >> 12; pfn++)
			__atomic_fetch_or(&track[pfn / 64], 1ULL << (pfn % 64), __ATOMIC_RELAXED);
	return hva;
}

static void host_log(void *opaque, const char *msg)
{
	(void)opaque;
	vm_log("%s", msg);
}

static void host_pulse_irq(void *opaque)
{
	struct vv_dev *d = opaque;
	uint64_t one = 1;

	if (d->irqfd >= 0) {
		(void)!write(d->irqfd, &one, sizeof(one));
		return;
	}
	for (uint32_t level = 1;; level = 0) {
		struct kvm_irq_level irq = { .irq = d->win.gsi, .level = level };

		ioctl(d->owner->cfg.vm_fd, KVM_IRQ_LINE, &irq);
		if (!level)
			break;
	}
}

/* A coalesced interrupt of queue q: fired by the I/O thread when it is due. The I/O thread. */
static void host_defer_irq(void *opaque, unsigned q)
{
	struct vv_dev *d = opaque;

	if (q < VIRTIO_MAX_QUEUES)
		d->irq_due[q] = util_now_ns() + d->irq_delay_ns[q];
}

/* A notification that reached userspace (no ioeventfd matched), or more work: to the I/O thread. */
static void host_notify_queue(void *opaque, unsigned q)
{
	struct vv_dev *d = opaque;
	uint64_t one = 1;

	if (q < VIRTIO_MAX_QUEUES && d->q[q].efd >= 0)
		(void)!write(d->q[q].efd, &one, sizeof(one));
}

static int mmio_access(void *opaque, struct bus_access *a)
{
	struct vv_dev *d = opaque;
	struct dev_io io = {
		.addr = a->addr, .offset = a->offset, .len = a->len, .is_write = a->is_write, .data = a->data
	};

	virtio_mmio_io(d->dev, &io);
	return 0;
}

/* ---- setting up ------------------------------------------------------------------------- */

/* virtio-netN on its tap: the N-th --net. */
static int make_net(struct vv_dev *d, unsigned i, struct errbuf *err)
{
	const struct vm_net_cfg *nc = &d->owner->cfg.net[i];
	struct virtio_net_params p = { .ifname = nc->tap, .name = d->win.name };
	int rc;

	d->tap = calloc(1, sizeof(*d->tap));
	if (!d->tap)
		return errbuf_set(err, -ENOMEM, "out of memory");
	d->tap->fd = -1;
	rc = vm_tap_open(d->tap, nc->tap, err);
	if (rc)
		return rc;
	if (nc->has_mac)
		memcpy(p.mac, nc->mac, 6);
	else
		vm_net_default_mac(d->owner->cfg.vm_name, (unsigned long)getpid(), i, p.mac);
	p.offloads = d->tap->offloads;
	p.mrg_rxbuf = nc->mrg_rxbuf;
	p.rx_usecs = nc->rx_usecs; /* kept for the snapshot */
	p.tx_usecs = nc->tx_usecs;
	p.io = vm_tap_io(d->tap);
	d->tap_ready = (struct vv_queue){ .dev = d, .index = 0, .efd = -1, .tap = true };
	d->part = &virtio_net_parts[i];
	d->irq_delay_ns[0] = (uint64_t)nc->rx_usecs * 1000; /* queue 0 receives, */
	d->irq_delay_ns[1] = (uint64_t)nc->tx_usecs * 1000; /* queue 1 transmits */
	if (nc->rx_usecs || nc->tx_usecs)
		d->host.defer_irq = host_defer_irq;
	rc = virtio_net_create(&d->dev, &d->host, &p);
	if (rc)
		return errbuf_set(err, rc, "%s: %s", d->win.name, strerror(-rc));
	if (nc->rx_usecs || nc->tx_usecs) {
		virtio_mmio_defer_irqs(d->dev, (nc->rx_usecs ? 1u : 0) | (nc->tx_usecs ? 2u : 0));
		d->owner->coalesce = true;
	}
	if (d->owner->cfg.verbose) {
		char coal[80];

		virtio_net_coalescing_words(nc->rx_usecs, nc->tx_usecs, coal, sizeof(coal));
		vm_log("%s: tap %s, MAC %02x:%02x:%02x:%02x:%02x:%02x, offloads %s%s%s", d->win.name, nc->tap,
		       p.mac[0], p.mac[1], p.mac[2], p.mac[3], p.mac[4], p.mac[5],
		       p.offloads ? "csum, tso4, tso6" : "none (the tap refuses TUNSETOFFLOAD)",
		       p.mrg_rxbuf ? ", mergeable receive buffers" : "", coal);
	}
	return 0;
}

static int make_device(struct vm_virtio *vv, const struct vm_virtio_window *w, struct errbuf *err)
{
	struct vv_dev *d = &vv->dev[vv->n];
	int rc;

	*d = (struct vv_dev){ .owner = vv, .win = *w, .irqfd = -1 };
	for (unsigned i = 0; i < VIRTIO_MAX_QUEUES; i++)
		d->q[i] = (struct vv_queue){ d, i, -1 };
	d->host = (struct dev_host){
		.opaque = d,
		.gpa_to_hva = host_gpa_to_hva,
		.log = host_log,
		.pulse_irq = host_pulse_irq,
		.notify_queue = host_notify_queue,
	};
	if (!strncmp(w->name, "virtio-blk", 10)) {
		unsigned k = (unsigned)(w->name[10] - '0');
		struct virtio_blk_params p;

		d->disk = &vv->cfg.disks[k];
		d->ring = (struct vv_queue){ .dev = d, .index = 0, .efd = -1, .ring = true };
		rc = vm_blk_open(&d->blk, d->disk->path, d->disk->readonly, vv->cfg.verbose, err);
		if (rc)
			return rc;
		vm_blk_params(d->blk, &p);
		rc = virtio_blk_create(&d->dev, &p, &d->host);
		d->part = &virtio_blk_parts[k];
	} else if (!strncmp(w->name, "virtio-net", 10)) {
		vv->n++; /* destroy closes what make_net opened */
		rc = make_net(d, (unsigned)(w->name[10] - '0'), err);
		if (rc)
			return rc;
		return bus_register(vv->cfg.bus, BUS_MMIO, w->base, w->len, mmio_access, d, w->name, err);
	} else {
		rc = virtio_rng_create(&d->dev, &d->host);
		d->part = &virtio_rng_part;
	}
	vv->n++; /* destroyed with the others, also when it failed */
	if (rc)
		return errbuf_set(err, rc, "%s: %s", w->name, strerror(-rc));
	return bus_register(vv->cfg.bus, BUS_MMIO, w->base, w->len, mmio_access, d, w->name, err);
}

/* The queues' eventfds (in KVM as ioeventfds where it can), the irqfd, the epoll set. */
static int wire_device(struct vm_virtio *vv, struct vv_dev *d, struct errbuf *err)
{
	struct kvm_irqfd irqfd = { .gsi = d->win.gsi };

	/* PERFVISOR_VIRTIO_FALLBACK=1 (the tests): no ioeventfd, no irqfd, as where KVM lacks them. */
	bool fallback =
		getenv("PERFVISOR_VIRTIO_FALLBACK") && !strcmp(getenv("PERFVISOR_VIRTIO_FALLBACK"), "1");

	d->ioeventfd = !fallback;
	for (unsigned i = 0; i < virtio_mmio_nr_queues(d->dev); i++) {
		struct vv_queue *q = &d->q[i];
		struct kvm_ioeventfd ioe = {
			.datamatch = i,
			.addr = d->win.base + VIRTIO_MMIO_QUEUE_NOTIFY,
			.len = 4,
			.flags = KVM_IOEVENTFD_FLAG_DATAMATCH,
		};
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = q };

		q->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (q->efd < 0)
			return errbuf_set(err, -errno, "%s: eventfd: %s", d->win.name, strerror(errno));
		ioe.fd = q->efd;
		if (fallback || ioctl(vv->cfg.vm_fd, KVM_IOEVENTFD, &ioe) < 0)
			d->ioeventfd = false; /* notifications exit to the bus, which writes q->efd */
		if (epoll_ctl(vv->epfd, EPOLL_CTL_ADD, q->efd, &ev) < 0)
			return errbuf_set(err, -errno, "%s: epoll_ctl: %s", d->win.name, strerror(errno));
	}
	if (d->blk) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &d->ring };

		d->ring.efd = vm_blk_eventfd(d->blk);
		if (epoll_ctl(vv->epfd, EPOLL_CTL_ADD, d->ring.efd, &ev) < 0)
			return errbuf_set(err, -errno, "%s: epoll_ctl: %s", d->win.name, strerror(errno));
	}
	/* Frames from the tap: edge-triggered, so frames left waiting (no buffer) do not spin the thread. */
	if (d->tap &&
	    epoll_ctl(vv->epfd, EPOLL_CTL_ADD, d->tap->fd,
		      &(struct epoll_event){ .events = EPOLLIN | EPOLLET, .data.ptr = &d->tap_ready }) < 0)
		return errbuf_set(err, -errno, "%s: epoll_ctl: %s", d->win.name, strerror(errno));
	d->irqfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->irqfd < 0)
		return errbuf_set(err, -errno, "%s: eventfd: %s", d->win.name, strerror(errno));
	irqfd.fd = (uint32_t)d->irqfd;
	if (fallback || ioctl(vv->cfg.vm_fd, KVM_IRQFD, &irqfd) < 0) {
		close(d->irqfd);
		d->irqfd = -1;
	}
	if (vv->cfg.verbose)
		vm_log("%s: virtio-mmio at 0x%" PRIx64 "-0x%" PRIx64
		       ", GSI %u; notify by %s, interrupt by %s",
		       d->win.name, d->win.base, d->win.base + d->win.len - 1, d->win.gsi,
		       d->ioeventfd ? "ioeventfd" : "MMIO exit", d->irqfd >= 0 ? "irqfd" : "KVM_IRQ_LINE");
	return 0;
}

int vm_virtio_create(struct vm_virtio **out, const struct vm_virtio_config *cfg, struct errbuf *err)
{
	struct vm_virtio_window w[VM_VIRTIO_MAX];
	unsigned n = vm_virtio_plan(&(struct vm_virtio_plan_in){ cfg->rng, cfg->nr_disks, cfg->nr_net }, w,
				    VM_VIRTIO_MAX);
	struct vm_virtio *vv;
	int rc = 0;

	*out = NULL;
	if (!n)
		return 0; /* no device asked for: no window, no fd, no thread */
	vv = calloc(1, sizeof(*vv));
	if (!vv)
		return errbuf_set(err, -ENOMEM, "out of memory");
	*out = vv;
	vv->cfg = *cfg;
	vv->epfd = vv->stop_efd = -1;
	pthread_mutex_init(&vv->io_lock, NULL);
	pthread_mutex_init(&vv->lock, NULL);
	pthread_cond_init(&vv->cond, NULL);
	vv->stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	vv->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (vv->stop_efd < 0 || vv->epfd < 0)
		return errbuf_set(err, -errno, "virtio: eventfd/epoll: %s", strerror(errno));
	if (epoll_ctl(vv->epfd, EPOLL_CTL_ADD, vv->stop_efd, &(struct epoll_event){ .events = EPOLLIN }) < 0)
		return errbuf_set(err, -errno, "virtio: epoll_ctl: %s", strerror(errno));
	for (unsigned i = 0; i < n && !rc; i++) {
		rc = make_device(vv, &w[i], err);
		if (!rc)
			rc = wire_device(vv, &vv->dev[i], err);
	}
	return rc;
}

unsigned vm_virtio_windows(const struct vm_virtio *vv, struct vm_virtio_window *out, unsigned max)
{
	for (unsigned i = 0; vv && i < vv->n && i < max; i++)
		out[i] = vv->dev[i].win;
	return vv ? vv->n : 0;
}

/* ---- snapshot parts --------------------------------------------------------------------- */

/* Take the disk's completions and answer them. io_lock held. wait_ms: for the first one (a drain). */
static unsigned reap(struct vv_dev *d, int wait_ms)
{
	uint64_t tags[64];
	int64_t res[64];
	unsigned n, left = 0;

	do {
		n = vm_blk_reap(d->blk, tags, res, 64, wait_ms, &left);
		if (n)
			virtio_mmio_complete(d->dev, tags, res, n);
		wait_ms = 0;
	} while (n == 64);
	return left;
}

/*
 * Before a disk's state is saved, its requests in flight complete: no
 * new chain is taken (the VM is paused, io_lock held), and the ring's
 * completions are waited for and answered, so the saved rings and guest
 * memory hold every answer (docs/snapshot.md). Bounded: 30 s.
 */
static void drain(struct vv_dev *d)
{
	unsigned left = 1;

	for (int tries = 0; left && tries < 300; tries++)
		left = reap(d, 100);
	if (left)
		vm_log("%s: %u requests still at the disk after 30 s: the snapshot may miss their answers",
		       d->win.name, left);
}

/* The VM is paused: no register access comes; io_lock keeps the I/O thread off until it resumes. */
static void part_save(void *obj, void *state)
{
	struct vv_dev *d = obj;

	pthread_mutex_lock(&d->owner->io_lock);
	if (d->blk)
		drain(d);
	if (d->tap) {
		virtio_net_save(d->dev, state);
	} else if (d->blk) {
		struct virtio_blk_state *st = state;
		const char *path = vm_blk_path(d->blk);
		size_t len = strlen(path) < sizeof(st->path) ? strlen(path) : sizeof(st->path);

		virtio_blk_save(d->dev, st);
		memcpy(st->path, path, len);
		st->path_len = (uint16_t)len;
		st->readonly = d->disk->readonly;
	} else {
		virtio_mmio_save(d->dev, state);
	}
	pthread_mutex_unlock(&d->owner->io_lock);
}

static int part_load(void *obj, const void *state, struct errbuf *err)
{
	struct vv_dev *d = obj;
	int rc = d->tap	  ? virtio_net_load(d->dev, state)
		 : d->blk ? virtio_blk_load(d->dev, state)
			  : virtio_mmio_load(d->dev, state);

	return rc ? errbuf_set(err, rc, "%s refuses its saved state: a ready queue's rings are not in RAM",
			       d->win.name)
		  : 0;
}

static const struct vm_part_ops part_ops = { .save = part_save, .load = part_load };

int vm_virtio_add_parts(struct vm_virtio *vv, struct vm_parts *l, struct errbuf *err)
{
	for (unsigned i = 0; vv && i < vv->n; i++) {
		int rc = vm_parts_add(l, vv->dev[i].part, &part_ops, &vv->dev[i], err);

		if (rc)
			return rc;
	}
	return 0;
}

/* ---- the I/O thread ---------------------------------------------------------------------- */

/*
 * Serve one queue, unless the VM is paused: then wait (a snapshot is
 * saving the devices and guest memory) and serve after the resume.
 */
static void serve(struct vm_virtio *vv, struct vv_queue *q)
{
	const struct timespec ms = { 0, 1000000 };

	pthread_mutex_lock(&vv->io_lock);
	while (vmctl_paused(vv->cfg.ctl) && !vmctl_stopping(vv->cfg.ctl)) {
		pthread_mutex_unlock(&vv->io_lock);
		nanosleep(&ms, NULL);
		pthread_mutex_lock(&vv->io_lock);
	}
	if (q->dev->tap)
		vm_tap_apply(q->dev->tap); /* the offloads the guest took, before its frames move */
	if (!vmctl_stopping(vv->cfg.ctl) && q->ring)
		reap(q->dev, 0);
	else if (!vmctl_stopping(vv->cfg.ctl) && q->tap)
		virtio_mmio_poll(q->dev->dev, q->index);
	else if (!vmctl_stopping(vv->cfg.ctl))
		virtio_mmio_serve(q->dev->dev, q->index);
	if (q->dev->blk)
		vm_blk_kick(q->dev->blk); /* the requests just taken, in one system call */
	pthread_mutex_unlock(&vv->io_lock);
}

/* Fire the coalesced interrupts that are due; returns when the next one is (0: none waits). */
static uint64_t fire_due(struct vm_virtio *vv)
{
	uint64_t now = util_now_ns(), next = 0;

	if (!vv->coalesce)
		return 0;
	for (unsigned i = 0; i < vv->n; i++) {
		struct vv_dev *d = &vv->dev[i];

		for (unsigned k = 0; k < VIRTIO_MAX_QUEUES; k++) {
			if (!d->irq_due[k])
				continue;
			if (d->irq_due[k] <= now) {
				d->irq_due[k] = 0;
				pthread_mutex_lock(&vv->io_lock);
				virtio_mmio_fire_deferred(d->dev, k);
				pthread_mutex_unlock(&vv->io_lock);
			} else if (!next || d->irq_due[k] < next) {
				next = d->irq_due[k];
			}
		}
	}
	return next;
}

static void *io_thread(void *arg)
{
	struct vm_virtio *vv = arg;
	struct epoll_event ev[16];
	int rc;

	rc = seccomp_install(vv->mode, SECCOMP_THREAD_IO, 0, &vv->start_err);
	pthread_mutex_lock(&vv->lock);
	vv->start_rc = rc;
	vv->start_done = true;
	pthread_cond_broadcast(&vv->cond);
	pthread_mutex_unlock(&vv->lock);
	if (rc)
		return NULL;
	/*
	 * A restored VM may have requests whose notification was in flight at
	 * the snapshot, and an interrupt that was (or was to be) raised.
	 */
	for (unsigned i = 0; i < vv->n; i++) {
		virtio_mmio_repulse(vv->dev[i].dev);
		for (unsigned k = 0; k < virtio_mmio_nr_queues(vv->dev[i].dev); k++)
			serve(vv, &vv->dev[i].q[k]);
	}
	for (;;) {
		uint64_t due = fire_due(vv);
		int n;

		if (due) {
			uint64_t now = util_now_ns(), left = due > now ? due - now : 0;
			struct timespec ts = { (time_t)(left / 1000000000), (long)(left % 1000000000) };

			n = epoll_pwait2(vv->epfd, ev, 16, &ts, NULL);
			if (n < 0 && errno == ENOSYS) /* before Linux 5.11: whole milliseconds */
				n = epoll_wait(vv->epfd, ev, 16, (int)((left + 999999) / 1000000));
			if (n == 0)
				continue;
		} else {
			n = epoll_wait(vv->epfd, ev, 16, -1);
		}

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			vm_log("virtio I/O thread: epoll_wait: %s", strerror(errno));
			return NULL;
		}
		for (int k = 0; k < n; k++) {
			struct vv_queue *q = ev[k].data.ptr;
			uint64_t v;

			if (!q)
				return NULL; /* the stop eventfd */
			if (q->efd >= 0)
				(void)!read(q->efd, &v, sizeof(v));
			serve(vv, q);
		}
	}
}

static const int sync_signals[] = { SIGSYS, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT };

int vm_virtio_start(struct vm_virtio *vv, enum seccomp_mode mode, struct errbuf *err)
{
	sigset_t all, old;
	int rc;

	if (!vv)
		return 0;
	vv->mode = mode;
	/*
	 * Every signal blocked (the thread must not take the process's), but
	 * the synchronous ones: a blocked SIGSYS from its seccomp filter would
	 * kill the process without the handler's message.
	 */
	sigfillset(&all);
	for (size_t i = 0; i < sizeof(sync_signals) / sizeof(sync_signals[0]); i++)
		sigdelset(&all, sync_signals[i]);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = -pthread_create(&vv->thread, NULL, io_thread, vv);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return errbuf_set(err, rc, "virtio: cannot start the I/O thread: %s", strerror(-rc));
	vv->started = true;
	pthread_mutex_lock(&vv->lock);
	while (!vv->start_done)
		pthread_cond_wait(&vv->cond, &vv->lock);
	rc = vv->start_rc;
	pthread_mutex_unlock(&vv->lock);
	return rc ? errbuf_set(err, rc, "%s", vv->start_err.msg) : 0;
}

void vm_virtio_stats_fields(struct vm_virtio *vv, const char *const **names, const uint8_t **bytes,
			    const uint8_t **peak, unsigned *n)
{
	*n = 0;
	*names = vv ? vv->stat_names : NULL;
	*bytes = vv ? vv->stat_bytes : NULL;
	*peak = vv ? vv->stat_peak : NULL;
	for (unsigned i = 0; vv && i < vv->n; i++) {
		/* "virtio-rng" gives "virtio.rng.requests", "virtio-blk0" "virtio.blk0.reads", "virtio-net0" "virtio.net0.rx_bytes" */
		const char *dev = strchr(vv->dev[i].win.name, '-'), *const * own;
		unsigned nr_own = virtio_mmio_backend_counters(vv->dev[i].dev, &own, NULL);
		unsigned nb = vv->dev[i].blk ? VM_VIRTIO_NR_BLK_STATS : 0;

		if (nr_own > VM_VIRTIO_MAX_STATS - VM_VIRTIO_NR_STATS)
			nr_own = VM_VIRTIO_MAX_STATS - VM_VIRTIO_NR_STATS;
		dev = dev ? dev + 1 : vv->dev[i].win.name;
		for (unsigned k = 0; k < VM_VIRTIO_NR_STATS + nb + nr_own; k++, (*n)++) {
			const char *what = k < VM_VIRTIO_NR_STATS ? counter_names[k]
					   : k < VM_VIRTIO_NR_STATS + nb
						   ? blk_counter_names[k - VM_VIRTIO_NR_STATS]
						   : own[k - VM_VIRTIO_NR_STATS - nb];

			snprintf(vv->stat_name[*n], sizeof(vv->stat_name[*n]), "virtio.%s.%s", dev, what);
			vv->stat_names[*n] = vv->stat_name[*n];
			/* "bytes", "bytes_read", "rx_bytes", ... count bytes */
			vv->stat_bytes[*n] = strstr(what, "bytes") != NULL;
			vv->stat_peak[*n] = !strcmp(what, "inflight_peak");
		}
	}
}

void vm_virtio_stats_read(void *ctx, uint64_t *values)
{
	const struct vm_virtio *vv = ctx;
	uint64_t own[VM_VIRTIO_MAX_STATS];

	for (unsigned i = 0; i < vv->n; i++) {
		unsigned nr_own = virtio_mmio_backend_counters(vv->dev[i].dev, NULL, own);

		virtio_mmio_get_counters(vv->dev[i].dev, (struct virtio_counters *)values);
		values += VM_VIRTIO_NR_STATS;
		if (vv->dev[i].blk) {
			blk_stats(vv->dev[i].dev, values);
			values += VM_VIRTIO_NR_BLK_STATS;
		}
		for (unsigned k = 0; k < nr_own && k < VM_VIRTIO_MAX_STATS - VM_VIRTIO_NR_STATS; k++)
			*values++ = own[k];
	}
}

void vm_virtio_log(const struct vm_virtio *vv)
{
	for (unsigned i = 0; vv && i < vv->n; i++) {
		struct virtio_counters c;

		virtio_mmio_get_counters(vv->dev[i].dev, &c);
		vm_log("%s: %" PRIu64 " requests, %" PRIu64 " bytes, %" PRIu64 " notifications, %" PRIu64
		       " interrupts, %" PRIu64 " dropped, %" PRIu64 " resets needed, %" PRIu64
		       " bad accesses",
		       vv->dev[i].win.name, c.requests, c.bytes, c.notifies, c.interrupts, c.dropped,
		       c.needs_reset, c.bad_accesses);
		if (vv->dev[i].blk) {
			uint64_t b[VM_VIRTIO_NR_BLK_STATS];

			blk_stats(vv->dev[i].dev, b);
			vm_log("%s: %" PRIu64 " reads, %" PRIu64 " writes, %" PRIu64 " flushes, %" PRIu64
			       " bytes read, %" PRIu64 " bytes written, %" PRIu64 " errors, %" PRIu64
			       " in flight at most; latency <100us %" PRIu64 ", <1ms %" PRIu64
			       ", <10ms %" PRIu64 ", >=10ms %" PRIu64,
			       vv->dev[i].win.name, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8],
			       b[9], b[10]);
		}
		if (vv->dev[i].tap) {
			/* the backend's six, then rx and tx: notifications, interrupts */
			uint64_t own[VIRTIO_MAX_OWN_STATS] = { 0 };
			struct virtio_net_counters nc;
			const uint64_t *q = own + sizeof(nc) / sizeof(uint64_t);

			virtio_mmio_backend_counters(vv->dev[i].dev, NULL, own);
			memcpy(&nc, own, sizeof(nc));
			vm_log("%s: received %" PRIu64 " frames, %" PRIu64 " bytes, %" PRIu64
			       " dropped; sent %" PRIu64 " frames, %" PRIu64 " bytes, %" PRIu64 " errors",
			       vv->dev[i].win.name, nc.rx_packets, nc.rx_bytes, nc.rx_dropped, nc.tx_packets,
			       nc.tx_bytes, nc.tx_errors);
			vm_log("%s: receive queue %" PRIu64 " notifications, %" PRIu64
			       " interrupts; transmit queue %" PRIu64 " notifications, %" PRIu64
			       " interrupts",
			       vv->dev[i].win.name, q[0], q[1], q[2], q[3]);
		}
	}
}

void vm_virtio_destroy(struct vm_virtio *vv)
{
	uint64_t one = 1;

	if (!vv)
		return;
	if (vv->started) {
		(void)!write(vv->stop_efd, &one, sizeof(one));
		pthread_join(vv->thread, NULL);
	}
	for (unsigned i = 0; i < vv->n; i++) {
		struct vv_dev *d = &vv->dev[i];

		for (unsigned k = 0; k < VIRTIO_MAX_QUEUES; k++)
			if (d->q[k].efd >= 0)
				close(d->q[k].efd);
		vm_blk_destroy(d->blk); /* waits for what is at the disk: it may write guest RAM */
		if (d->irqfd >= 0)
			close(d->irqfd);
		virtio_mmio_destroy(d->dev);
		if (d->tap)
			vm_tap_close(d->tap);
		free(d->tap);
	}
	if (vv->epfd >= 0)
		close(vv->epfd);
	if (vv->stop_efd >= 0)
		close(vv->stop_efd);
	pthread_mutex_destroy(&vv->io_lock);
	pthread_mutex_destroy(&vv->lock);
	pthread_cond_destroy(&vv->cond);
	free(vv);
}

void vm_virtio_track(struct vm_virtio *vv, uint64_t *bitmap)
{
	if (vv)
		__atomic_store_n(&vv->track, bitmap, __ATOMIC_RELEASE);
}

/* A tap handed over (detached: its fd closed) or attached again with the guest's offloads. VM paused. */
static int tap_handover(struct vm_virtio *vv, struct vv_dev *d, bool release, struct errbuf *err)
{
	struct vm_tap *t = d->tap;
	char name[sizeof(t->name)];
	uint64_t want;
	int rc = 0;

	pthread_mutex_lock(&vv->io_lock); /* the I/O thread does not touch the tap meanwhile */
	if (release) {
		if (t->fd >= 0)
			epoll_ctl(vv->epfd, EPOLL_CTL_DEL, t->fd, NULL);
		vm_tap_close(t);
	} else if (t->fd < 0) {
		memcpy(name, t->name, sizeof(name));
		want = __atomic_load_n(&t->want, __ATOMIC_ACQUIRE);
		rc = vm_tap_open(t, name, err);
		/* The offloads the guest took: set again at its next transmission (applied is 0 now). */
		__atomic_store_n(&t->want, want, __ATOMIC_RELEASE);
		if (!rc && epoll_ctl(vv->epfd, EPOLL_CTL_ADD, t->fd,
				     &(struct epoll_event){ .events = EPOLLIN | EPOLLET,
							    .data.ptr = &d->tap_ready }) < 0)
			rc = errbuf_set(err, -errno, "tap %s: epoll_ctl: %s", name, strerror(errno));
	}
	pthread_mutex_unlock(&vv->io_lock);
	return rc;
}

int vm_virtio_devices_handover(struct vm_virtio *vv, bool release, struct errbuf *err)
{
	int rc = 0;

	for (unsigned i = 0; vv && i < vv->n; i++) {
		int r = vv->dev[i].blk	 ? vm_blk_handover(vv->dev[i].blk, release, err)
			: vv->dev[i].tap ? tap_handover(vv, &vv->dev[i], release, err)
					 : 0;

		rc = rc ? rc : r;
	}
	return rc;
}

unsigned vm_virtio_disks_info(const struct vm_virtio *vv, struct vm_disk_info *out, unsigned max)
{
	unsigned n = 0;

	for (unsigned i = 0; vv && i < vv->n && n < max; i++)
		if (vv->dev[i].blk) {
			out[n].path = vm_blk_path(vv->dev[i].blk);
			vm_blk_describe(vv->dev[i].blk, &out[n].readonly, &out[n].sectors);
			n++;
		}
	return n;
}

unsigned vm_virtio_taps(const struct vm_virtio *vv, const char **names, unsigned max)
{
	unsigned n = 0;

	for (unsigned i = 0; vv && i < vv->n && n < max; i++)
		if (vv->dev[i].tap)
			names[n++] = vv->dev[i].tap->name;
	return n;
}
