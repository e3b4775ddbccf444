/* SPDX-License-Identifier: MIT */
/*
 * perfvisor devices: each device is a state machine behind read/write
 * functions that take a register offset, and a declaration (struct
 * dev_desc) of its ports, its access callback and its saved state.
 * Devices know nothing of KVM or the bus; what they need from the VM
 * (guest memory, console, stopping the VM, interrupts, logging) comes
 * through struct dev_host, so unit tests drive them with fakes.
 */
#ifndef PERFVISOR_DEVICES_H
#define PERFVISOR_DEVICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapfile/snapfile.h"

/* Services a device may use. Any callback may be NULL if the device does not need it. */
struct dev_host {
	void *opaque;
	/* Host pointer for guest range [gpa, gpa+len), or NULL if not entirely in guest RAM. */
	void *(*gpa_to_hva)(void *opaque, uint64_t gpa, uint64_t len);
	/* Ask the VM to stop with this exit status; the first request wins. */
	void (*request_stop)(void *opaque, int status, const char *why);
	/* Bytes for the console (serial output, test-device prints). */
	void (*console_write)(void *opaque, const void *buf, size_t len);
	/* Set the level of this device's interrupt line. */
	void (*set_irq)(void *opaque, int level);
	/* A message for the operator (stderr); the device rate-limits guest-triggered ones. */
	void (*log)(void *opaque, const char *msg);
	/* virtio: an edge on the device's interrupt line (an irqfd). Any thread. */
	void (*pulse_irq)(void *opaque);
	/* virtio: serve queue q off this thread (the I/O thread); NULL serves it at once. vCPU thread. */
	void (*notify_queue)(void *opaque, unsigned q);
	/* virtio: call virtio_mmio_fire_deferred(q) after the coalescing delay. Under the device's lock. */
	void (*defer_irq)(void *opaque, unsigned q);
};

/* ---- 16550A UART (8 registers at a base port, typically 0x3f8) ---------- */
struct serial;

/* Create a UART. Returns 0 or -ENOMEM. */
int serial_create(struct serial **out, const struct dev_host *host);
void serial_destroy(struct serial *s);
/* Register access at offset 0..7. Thread-safe (internal lock). */
uint8_t serial_read(struct serial *s, unsigned offset);
void serial_write(struct serial *s, unsigned offset, uint8_t value);
/* Queue input bytes for the guest (RBR). Returns bytes accepted (FIFO may be full). Any thread. */
size_t serial_push_input(struct serial *s, const uint8_t *buf, size_t len);

#define SERIAL_RX_MAX 256 /* input bytes the UART holds for the guest */

/* The UART's whole state, for snapshots: registers, sticky bits, pending input in order. */
struct serial_state {
	uint8_t ier, lcr, mcr, fcr, scr, dll, dlm;
	uint8_t lsr_errors; /* sticky LSR error bits (OE, PE, FE, BI) */
	uint8_t msr;	    /* modem status, delta bits included */
	bool thri_pending;
	uint16_t rx_count;
	uint8_t rx[SERIAL_RX_MAX];
};

/* Copy the state out. Any thread. */
void serial_save(struct serial *s, struct serial_state *st);
/* Could a UART be in this state (register bits it can hold, input within SERIAL_RX_MAX)? Pure. */
bool serial_state_valid(const struct serial_state *st);
/*
 * Load a saved state and drive the interrupt line to match it. -EINVAL,
 * changing nothing, if no UART could be in it (bits a register cannot
 * hold, more input than SERIAL_RX_MAX). Any thread.
 */
int serial_restore(struct serial *s, const struct serial_state *st);

/* ---- Test device (ucall, include/perfvisor/testdev.h) -------------------- */
struct testdev;

struct testdev_counters {
	uint64_t prints, syncs, asserts, dones, bad_requests;
};

int testdev_create(struct testdev **out, const struct dev_host *host);
void testdev_destroy(struct testdev *t);
/* A guest OUT to PV_TESTDEV_PORT of `len` bytes carrying `value`. Thread-safe. */
void testdev_write(struct testdev *t, uint32_t value, unsigned len);
void testdev_get_counters(struct testdev *t, struct testdev_counters *out);
/* Continue counting from saved counters (a restored VM). */
void testdev_set_counters(struct testdev *t, const struct testdev_counters *in);

/* ---- fw_cfg, QEMU-compatible (traditional I/O interface, no DMA) -------- */
#define FWCFG_SELECTOR_PORT 0x510 /* 16-bit write: select an item, rewind it */
#define FWCFG_DATA_PORT 0x511	  /* 8-bit read: the item's next byte */

/* Item keys (QEMU's numbering); any other key reads as zeros. */
#define FWCFG_SIGNATURE 0x0000 /* "QEMU" */
#define FWCFG_ID 0x0001	       /* u32 feature bits: FWCFG_ID_TRADITIONAL */
#define FWCFG_RAM_SIZE 0x0003  /* u64 little-endian: bytes of RAM */
#define FWCFG_NB_CPUS 0x0005   /* u16 little-endian: vCPUs */
#define FWCFG_MAX_CPUS 0x000f  /* u16 little-endian: vCPUs (no hotplug) */
#define FWCFG_FILE_DIR 0x0019  /* u32 big-endian file count (0), then the files */
#define FWCFG_ID_TRADITIONAL 0x1

/*
 * The whole device state: a plain struct (no pointers, no lock), so it can
 * be saved and restored as is. The caller serializes accesses.
 */
struct fwcfg {
	uint16_t selector; /* selected key */
	uint16_t nr_cpus;
	uint32_t offset; /* next byte of the selected item */
	uint64_t ram_size;
};

void fwcfg_init(struct fwcfg *f, uint16_t nr_cpus, uint64_t ram_size);
/* A guest write of `key` to the selector port. */
void fwcfg_select(struct fwcfg *f, uint16_t key);
/* A guest read of the data port: the selected item's next byte, 0 past its end. */
uint8_t fwcfg_read(struct fwcfg *f);

/* ---- QEMU-compatible debug exit (port 0xf4) ------------------------------ */
/* A guest write of `value` stops the VM with status (value << 1) | 1, masked to 8 bits. */
void debugexit_write(const struct dev_host *host, uint32_t value);

/* ---- i8042 keyboard controller: only the reset line ---------------------- */
struct i8042;

int i8042_create(struct i8042 **out, const struct dev_host *host);
void i8042_destroy(struct i8042 *k);
/* port is 0x60 or 0x64. Writing 0xfe to 0x64 pulses reset: the VM stops with status 0. */
uint8_t i8042_read(struct i8042 *k, uint16_t port);
void i8042_write(struct i8042 *k, uint16_t port, uint8_t value);

/* The controller's state, for snapshots. */
struct i8042_state {
	uint8_t ctr;	 /* command byte */
	uint8_t pending; /* 0, or the command (0x60) waiting for its data byte */
	bool obf;	 /* output buffer full */
	uint8_t out;	 /* the output byte */
};

void i8042_save(struct i8042 *k, struct i8042_state *st);
/* Is the pending command one the controller waits on (none, or 0x60)? Pure. */
bool i8042_state_valid(const struct i8042_state *st);
/* -EINVAL, changing nothing, for a pending command the controller never waits on. */
int i8042_restore(struct i8042 *k, const struct i8042_state *st);

/* ---- CMOS RTC and CMOS RAM (MC146818-compatible; devices/rtc.c) --------- */
#define RTC_INDEX_PORT 0x70 /* write: the register index (bit 7: NMI mask, kept, not acted on) */
#define RTC_DATA_PORT 0x71  /* the indexed register */
#define RTC_CMOS_SIZE 128   /* registers and RAM bytes */

struct rtc;

/* A wall clock: nanoseconds since the epoch (the host's CLOCK_REALTIME unless a test sets one). */
typedef int64_t (*rtc_clock_fn)(void *opaque);

/* Create an RTC showing the host's time (UTC). 0 or -ENOMEM. `host` is unused (no IRQ 8). */
int rtc_create(struct rtc **out, const struct dev_host *host);
void rtc_destroy(struct rtc *r);
/* Use `fn` as the host clock (NULL: CLOCK_REALTIME again). For tests. */
void rtc_set_clock(struct rtc *r, rtc_clock_fn fn, void *opaque);
/* port is RTC_INDEX_PORT or RTC_DATA_PORT. Thread-safe (internal lock). */
uint8_t rtc_read(struct rtc *r, uint16_t port);
void rtc_write(struct rtc *r, uint16_t port, uint8_t value);

/* The RTC's state, for snapshots: the restored guest time is the host clock + offset. */
struct rtc_state {
	uint64_t offset;	     /* guest seconds - host seconds, two's complement */
	uint8_t index;		     /* the index register, NMI-mask bit included */
	uint16_t cmos_len;	     /* RTC_CMOS_SIZE */
	uint8_t cmos[RTC_CMOS_SIZE]; /* registers and RAM; the time registers count only while SET */
};

void rtc_save(struct rtc *r, struct rtc_state *st);
/* Could an RTC be in this state (128 bytes, an offset within +-10000 years)? Pure. */
bool rtc_state_valid(const struct rtc_state *st);
/* -EINVAL, changing nothing, for a state no RTC could be in. Any thread. */
int rtc_restore(struct rtc *r, const struct rtc_state *st);

/* ---- System Control Port A (0x92; devices/port92.c) --------------------- */
struct port92;

int port92_create(struct port92 **out, const struct dev_host *host);
void port92_destroy(struct port92 *p);
/* Bit 1 (A20) reads back; a write with bit 0 set stops the VM with status 0 (fast reset). */
uint8_t port92_read(struct port92 *p);
void port92_write(struct port92 *p, uint8_t value);

struct port92_state {
	uint8_t value; /* bit 1, A20 */
};

/* ---- ACPI PM1a blocks, PM timer, reset register (devices/acpipm.c) ------- */
/* Ports: PV_LB_ACPI_* in include/perfvisor/legacy_boot.h (the FADT announces them). */
struct acpipm;

int acpipm_create(struct acpipm **out, const struct dev_host *host);
void acpipm_destroy(struct acpipm *p);
/*
 * An access of `len` bytes at `offset` in the block, byte by byte (any
 * width works). Writing SLP_EN with SLP_TYP 5 (\_S5) stops the VM with
 * status 0, as does PV_LB_ACPI_RESET_VALUE at the reset register. Thread-safe.
 */
void acpipm_access(struct acpipm *p, unsigned offset, uint8_t *data, unsigned len, bool is_write);
/* The PM timer: 3.579545 MHz from the host's monotonic clock, 24 bits. */
uint32_t acpipm_timer(struct acpipm *p);

struct acpipm_state {
	uint16_t sts, en; /* PM1 status and enable */
	uint16_t cnt;	  /* PM1 control: SCI_EN (always set), BM_RLD, SLP_TYP */
};

void acpipm_save(struct acpipm *p, struct acpipm_state *st);
/* Does PM1 control hold only bits it keeps, SCI_EN among them? Pure. */
bool acpipm_state_valid(const struct acpipm_state *st);
int acpipm_restore(struct acpipm *p, const struct acpipm_state *st);

/* ---- virtio-mmio devices (virtio 1.x, register layout version 2; docs/devices.md) ---- */
#define VIRTIO_MMIO_SIZE 0x1000u	/* each device's window */
#define VIRTIO_MMIO_QUEUE_NOTIFY 0x050u /* the notify register: a 32-bit write of the queue index */
#define VIRTIO_MAX_QUEUES 2u		/* queues a device of this transport has at most */
#define VIRTIO_STATUS_NEEDS_RESET 0x40u

struct virtio_mmio;
struct dev_io;

/* What a device counts (each read atomically): --verbose, the statistics (virtio.<dev>.*). */
struct virtio_counters {
	uint64_t requests;     /* chains served */
	uint64_t bytes;	       /* bytes written into the guest's buffers */
	uint64_t notifies;     /* queue notifications served */
	uint64_t interrupts;   /* interrupts raised */
	uint64_t dropped;      /* malformed chains given back empty, failed requests */
	uint64_t needs_reset;  /* times the device entered DEVICE_NEEDS_RESET */
	uint64_t bad_accesses; /* register accesses a driver must not make, ignored */
};

/* What the transport counts per queue (each read atomically): notifications of it, interrupts for its used buffers. */
struct virtio_queue_counters {
	uint64_t notifies;
	uint64_t interrupts;
};

/* One queue's saved state. */
struct virtio_queue_state {
	uint32_t num;
	bool ready;
	uint64_t desc, avail, used;
	uint16_t last_avail, used_idx;
};

/* A virtio-mmio device's saved state: the transport's registers, its queues, and its counters (they continue). */
struct virtio_mmio_state {
	uint32_t status, dev_features_sel, drv_features_sel, queue_sel, int_status, config_gen;
	uint64_t drv_features;
	struct virtio_queue_state q[VIRTIO_MAX_QUEUES];
	struct virtio_counters c;
	struct virtio_queue_counters qc[VIRTIO_MAX_QUEUES]; /* they continue too */
};

/* virtio-rng (device ID 4): one queue, filled from getrandom(). 0 or -ENOMEM. Setup thread. */
int virtio_rng_create(struct virtio_mmio **out, const struct dev_host *host);
/* NULL is a no-op. No thread may use the device any more. */
void virtio_mmio_destroy(struct virtio_mmio *v);
/* A guest access to the window (offset < VIRTIO_MMIO_SIZE). vCPU threads; the device serializes itself. */
void virtio_mmio_io(struct virtio_mmio *v, struct dev_io *io);
/* Serve queue q: take every available request, answer it, interrupt if the driver wants. I/O thread. */
void virtio_mmio_serve(struct virtio_mmio *v, unsigned q);
/*
 * Interrupt coalescing: the used-buffer interrupts of the queues in mask
 * (bit q) wait for host.defer_irq's timer, which then calls
 * virtio_mmio_fire_deferred(q): one interrupt for what was used meanwhile
 * (if the driver wants one). Without defer_irq, none waits.
 */
void virtio_mmio_defer_irqs(struct virtio_mmio *v, uint32_t mask);
void virtio_mmio_fire_deferred(struct virtio_mmio *v, unsigned q);
/*
 * After a load: an edge on the interrupt line if InterruptStatus is not 0
 * (a state saved with a coalesced interrupt still waiting has it raised;
 * one the driver had not yet answered comes again, and a driver that finds
 * nothing new ignores it). Any thread.
 */
void virtio_mmio_repulse(struct virtio_mmio *v);
unsigned virtio_mmio_nr_queues(const struct virtio_mmio *v);
/* "virtio-rng" */
const char *virtio_mmio_name(const struct virtio_mmio *v);
void virtio_mmio_get_counters(struct virtio_mmio *v, struct virtio_counters *out);
/* Copy the state out under the device's lock. Any thread. */
void virtio_mmio_save(struct virtio_mmio *v, struct virtio_mmio_state *st);
/* Could the transport be in this state (bits, sizes)? Pure. */
bool virtio_mmio_state_valid(const struct virtio_mmio_state *st);
/* Load a state: -EINVAL, changing nothing, if invalid or a ready queue's rings are not in RAM. */
int virtio_mmio_load(struct virtio_mmio *v, const struct virtio_mmio_state *st);

/* ---- virtio-blk (device ID 2; docs/devices.md) ------------------------------------------------ */
struct iovec;

/* What the block device asks its I/O engine to do. */
enum blk_op {
	BLK_OP_READ,	/* readv at off into iov */
	BLK_OP_WRITE,	/* writev at off from iov */
	BLK_OP_FLUSH,	/* make every completed write durable (fdatasync) */
	BLK_OP_DISCARD, /* deallocate [off, off + len): reads give zeros after */
	BLK_OP_ZERO,	/* zero [off, off + len) */
};

/* One operation: the iovecs point into guest RAM and stay valid until its completion. */
struct blk_io {
	enum blk_op op;
	const struct iovec *iov;
	unsigned niov;
	uint64_t off, len;
	uint64_t tag; /* handed back with the result: virtio_mmio_complete() */
};

/*
 * Where a block device's I/O goes (vmm/vm_blk.c: io_uring on the image;
 * the unit tests: a fake). submit queues one operation and returns 0, or
 * -errno (the request fails with IOERR at once). The result comes back
 * later, from the thread that reaps the engine, through
 * virtio_mmio_complete(). Called under the device's lock, I/O thread.
 */
struct blk_engine {
	void *opaque;
	int (*submit)(void *opaque, const struct blk_io *io);
};

#define VIRTIO_BLK_SERIAL_LEN 20 /* GET_ID's answer */
#define VIRTIO_BLK_LAT_BUCKETS 4 /* request latency: <100 us, <1 ms, <10 ms, >= 10 ms */

/* What the block device is given. */
struct virtio_blk_params {
	uint64_t sectors;		    /* capacity in 512-byte sectors */
	bool readonly;			    /* VIRTIO_BLK_F_RO: writes, discards and zeroing get IOERR */
	bool discard;			    /* the image's file system punches holes: VIRTIO_BLK_F_DISCARD */
	bool write_zeroes;		    /* ... zeroes ranges: VIRTIO_BLK_F_WRITE_ZEROES */
	char serial[VIRTIO_BLK_SERIAL_LEN]; /* GET_ID, NUL-padded */
	struct blk_engine engine;
};

/* What a block device counts besides the transport's counters (each read atomically). */
struct virtio_blk_counters {
	uint64_t reads, writes, flushes, other; /* requests by kind (other: GET_ID, discard, zeroes) */
	uint64_t bytes_read, bytes_written;
	uint64_t errors;   /* requests answered IOERR or UNSUPP */
	uint64_t inflight; /* instant: requests at the engine now */
	uint64_t inflight_peak;
	uint64_t lat[VIRTIO_BLK_LAT_BUCKETS]; /* completed requests by latency bucket */
};

/* virtio-blk (device ID 2): one queue. 0, -ENOMEM or -EINVAL. Setup thread. */
int virtio_blk_create(struct virtio_mmio **out, const struct virtio_blk_params *p,
		      const struct dev_host *host);
/* The block device's own counters; false (out untouched) if v is not a block device. Any thread. */
bool virtio_blk_get_counters(struct virtio_mmio *v, struct virtio_blk_counters *out);
/*
 * An engine's result for the operation tagged tag (res: bytes done or
 * -errno): answer the request, push it on the used ring, interrupt if
 * the driver wants. A request of a device reset since is only forgotten:
 * nothing is written into the rings. Takes the device's lock; the
 * thread that reaps the engine (the I/O thread, or a snapshot's drain).
 */
void virtio_mmio_complete(struct virtio_mmio *v, const uint64_t *tags, const int64_t *res, unsigned n);
/* Requests at the engine now (a drain waits for 0). Any thread. */
unsigned virtio_mmio_inflight(struct virtio_mmio *v);

/* A disk's saved state: the transport's, its counters, and which image it is (the restore opens the same). */
struct virtio_blk_state {
	struct virtio_mmio_state t;
	struct virtio_blk_counters bc; /* they continue after a restore; inflight is 0 (drained) */
	uint8_t path[4096];	       /* the image's absolute path, not NUL-terminated */
	uint16_t path_len;
	bool readonly;
};
/* Copy the transport's state and the counters out (the caller sets path, readonly). Any thread. */
void virtio_blk_save(struct virtio_mmio *v, struct virtio_blk_state *st);
/* Load them: -EINVAL, changing nothing, if invalid (virtio_mmio_load). Setup thread. */
int virtio_blk_load(struct virtio_mmio *v, const struct virtio_blk_state *st);

/* The snapshot parts of the disks, /dev/vda first (nodes "virtio-blk0" to "virtio-blk7"). */
#define VIRTIO_BLK_MAX_PARTS 8
extern const struct snap_part virtio_blk_parts[VIRTIO_BLK_MAX_PARTS];

/* The snapshot part of the virtio-rng device (its node "virtio-rng"). */
extern const struct snap_part virtio_rng_part;
/* Serve queue q because the backend has work (a tap frame), not a notification. I/O thread. */
void virtio_mmio_poll(struct virtio_mmio *v, unsigned q);
/*
 * The device's own counters: the backend's, then, for a device whose queues
 * have names (virtio-net's rx and tx), each queue's notifications and
 * interrupts ("rx_notifications", "rx_interrupts", ...). Names (may be
 * NULL) and values (may be NULL); returns how many, at most
 * VIRTIO_MAX_OWN_STATS. Any thread.
 */
#define VIRTIO_MAX_OWN_STATS 12u
unsigned virtio_mmio_backend_counters(struct virtio_mmio *v, const char *const **names, uint64_t *values);

/* ---- virtio-net (device ID 1; docs/devices.md): queue 0 receives, queue 1 transmits ---- */
#define VIRTIO_NET_HDR_LEN 12u	    /* struct virtio_net_hdr with num_buffers (VERSION_1) */
#define VIRTIO_NET_MAX_FRAME 65550u /* an Ethernet frame the device takes at most (64 KiB GSO + header) */
#define VIRTIO_NET_MAX 4u	    /* devices of a VM */
#define VIRTIO_NET_IFNAMSIZ 16u
/* Offload feature bits the device offers when the tap takes them (virtio 1.x, 5.1.3). */
#define VIRTIO_NET_F_CSUM (1ULL << 0)
#define VIRTIO_NET_F_GUEST_CSUM (1ULL << 1)
#define VIRTIO_NET_F_MAC (1ULL << 5)
#define VIRTIO_NET_F_GUEST_TSO4 (1ULL << 7)
#define VIRTIO_NET_F_GUEST_TSO6 (1ULL << 8)
#define VIRTIO_NET_F_HOST_TSO4 (1ULL << 11)
#define VIRTIO_NET_F_HOST_TSO6 (1ULL << 12)
#define VIRTIO_NET_F_MRG_RXBUF \
	(1ULL << 15) /* offered with mrg_rxbuf: a frame may fill several receive chains */
#define VIRTIO_NET_F_STATUS (1ULL << 16)
#define VIRTIO_NET_OFFLOADS                                                                                \
	(VIRTIO_NET_F_CSUM | VIRTIO_NET_F_GUEST_CSUM | VIRTIO_NET_F_GUEST_TSO4 | VIRTIO_NET_F_GUEST_TSO6 | \
	 VIRTIO_NET_F_HOST_TSO4 | VIRTIO_NET_F_HOST_TSO6)

struct iovec;

/* Where frames go and come from: the VM's tap (vmm/vm_net.c), or a test's fake. */
struct virtio_net_io {
	void *opaque;
	/* Read one frame (header first) into iov: its length, -EAGAIN when none waits, or -errno. I/O thread. */
	long (*rx)(void *opaque, const struct iovec *iov, int n);
	/* Write one frame (header first): its length or -errno. I/O thread. */
	long (*tx)(void *opaque, const struct iovec *iov, int n);
	/* The guest takes these offloads (VIRTIO_NET_F_GUEST_*, 0 at a reset). NULL: none. Any thread. */
	void (*set_offloads)(void *opaque, uint64_t guest_features);
};

struct virtio_net_params {
	uint8_t mac[6];
	uint64_t offloads;  /* VIRTIO_NET_OFFLOADS bits the tap takes: offered */
	const char *ifname; /* the tap's name, kept for the snapshot */
	const char *name;   /* in its log lines ("virtio-net0"; NULL: "virtio-net"); must outlive it */
	bool mrg_rxbuf;	    /* offer VIRTIO_NET_F_MRG_RXBUF (--net mrg=on) */
	/* Interrupt coalescing (--net rx-usecs=, tx-usecs=): the host applies it
	 * (virtio_mmio_defer_irqs); the device keeps it for the snapshot. */
	uint32_t rx_usecs, tx_usecs;
	struct virtio_net_io io;
};
#define VIRTIO_NET_USECS_MAX 10000 /* the longest rx-usecs= or tx-usecs=, in µs */

/* virtio-net's own counters (statistics virtio.netN.*), in this order. */
struct virtio_net_counters {
	uint64_t rx_packets, rx_bytes, rx_dropped, tx_packets, tx_bytes, tx_errors;
};

/* A virtio-net device: 0, -ENOMEM or -EINVAL (a multicast or zero MAC). Setup thread. */
int virtio_net_create(struct virtio_mmio **out, const struct dev_host *host,
		      const struct virtio_net_params *p);
/* "; interrupts coalesced over R us receiving, T us sending", or "" when both are 0: the words
 * --verbose and snapshot-info use. Pure. */
void virtio_net_coalescing_words(uint32_t rx_usecs, uint32_t tx_usecs, char *buf, size_t len);

/* virtio-net's saved state: the transport's, its MAC, link, tap name, counters and coalescing. */
struct virtio_net_state {
	struct virtio_mmio_state t;
	uint8_t mac[6];
	uint16_t mac_len; /* 6 */
	uint8_t ifname[VIRTIO_NET_IFNAMSIZ];
	uint16_t ifname_len;
	uint32_t link_up;
	struct virtio_net_counters nc;
	uint32_t rx_usecs, tx_usecs; /* 0 from a snapshot older than them */
};
/* Copy out / load (-EINVAL, changing nothing, if invalid or its MAC differs). Any thread / setup. */
void virtio_net_save(struct virtio_mmio *v, struct virtio_net_state *st);
int virtio_net_load(struct virtio_mmio *v, const struct virtio_net_state *st);
/* The snapshot parts of the virtio-net devices: nodes "virtio-net0" ... "virtio-net3". */
extern const struct snap_part virtio_net_parts[VIRTIO_NET_MAX];

/* ---- declaring a device: one table entry each (devices/table.c) ----------- */
/* What the VM tells a device when it makes it. */
struct dev_config {
	unsigned nr_cpus;
	uint64_t mem_size;
};

/* One guest access to one of a device's ranges, as the bus hands it over. */
struct dev_io {
	uint64_t addr;	 /* the port (or guest-physical address) accessed */
	uint64_t offset; /* addr - the range's base */
	uint32_t len;	 /* bytes in data: 1, 2, 4 (or 8) */
	bool is_write;
	uint8_t *data; /* in for writes, out for reads */
};

#define DEV_MAX_RANGES 8

struct dev_range {
	uint64_t base, len;
	const char *name; /* the bus range, and its statistics field io.NAME (docs/stats-abi.md) */
};

/*
 * A device as the VM composes it: where it sits, how it is made, how it
 * answers an access, and what of it a snapshot keeps. The VM registers
 * each range on the bus, hands `create` a dev_host whose set_irq drives
 * ISA line `irq`, and saves and restores `state` through save and load.
 * A new device is its file (state machine and this entry) and one line in
 * devices/table.c; its part is SNAP_PART_OPTIONAL, so the snapshots taken
 * before it existed still restore.
 */
struct dev_desc {
	const char *name;
	struct dev_range pio[DEV_MAX_RANGES];
	unsigned nr_pio;
	int irq; /* the ISA line its set_irq drives, or -1 */
	/* Make one: 0 or -errno. `host` (and its opaque) outlives the device. Setup thread. */
	int (*create)(void **dev, const struct dev_host *host, const struct dev_config *cfg);
	void (*destroy)(void *dev);
	/* A guest access: 0, or -errno. Any vCPU thread: the device serializes itself. */
	int (*io)(void *dev, struct dev_io *io);
	/* Its saved state (NULL: nothing to keep): the state file's node and fields. */
	const struct snap_part *state;
	/* Copy the state out (VM paused), or back in (before the vCPUs run): -EINVAL if it cannot be. */
	void (*save)(void *dev, void *state);
	int (*load)(void *dev, const void *state);
};

/* The devices other code names (the main loop feeds the UART; tests look at their parts). */
extern const struct dev_desc dev_serial, dev_testdev, dev_debugexit, dev_i8042, dev_fwcfg, dev_rtc,
	dev_port92, dev_acpipm, dev_absent;

/* Every device of the machine, in the order the VM makes them (devices/table.c). */
extern const struct dev_desc *const dev_table[];
extern const unsigned dev_table_len;

#endif
