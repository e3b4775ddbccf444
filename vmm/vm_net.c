// SPDX-License-Identifier: MIT
/*
 * A virtio-net device's tap: attach to an existing interface by name,
 * with the virtio_net_hdr passed through (IFF_VNET_HDR, 12 bytes), and
 * the frame I/O the I/O thread does on it. Errors name the tap and say
 * what to do; nothing here creates or configures an interface.
 */
#include "vm_net.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

int vm_tap_open(struct vm_tap *t, const char *name, struct errbuf *err)
{
	struct ifreq ifr = { 0 };
	int hdr = VIRTIO_NET_HDR_LEN, e;

	*t = (struct vm_tap){ .fd = -1 };
	snprintf(t->name, sizeof(t->name), "%s", name);
	/* TUNSETIFF would create a missing tap (with CAP_NET_ADMIN): perfvisor only attaches. */
	if (!if_nametoindex(name))
		return errbuf_set(err, -ENODEV,
				  "--net tap=%s: no such interface; create it first, e.g. "
				  "ip tuntap add %s mode tap user $USER && ip link set %s up",
				  name, name, name);
	t->fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (t->fd < 0)
		return errbuf_set(err, -errno, "--net tap=%s: cannot open /dev/net/tun: %s%s", name,
				  strerror(errno),
				  errno == ENOENT ? " (load the tun module: modprobe tun)" : "");
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	memcpy(ifr.ifr_name, t->name, sizeof(t->name));
	if (ioctl(t->fd, TUNSETIFF, &ifr) < 0) {
		e = errno;
		vm_tap_close(t);
		if (e == EPERM)
			return errbuf_set(err, -EPERM,
					  "--net tap=%s: not permitted (TUNSETIFF: EPERM): perfvisor has "
					  "no CAP_NET_ADMIN and the tap's owner and group are not this "
					  "user's; create it with ip tuntap add %s mode tap user $USER",
					  name, name);
		if (e == EINVAL)
			return errbuf_set(err, -EINVAL,
					  "--net tap=%s: not a tap interface (a tun, a multi-queue tap or "
					  "another kind of interface)",
					  name);
		if (e == EBUSY)
			return errbuf_set(err, -EBUSY, "--net tap=%s: in use by another process", name);
		return errbuf_set(err, -e, "--net tap=%s: TUNSETIFF: %s", name, strerror(e));
	}
	if (ioctl(t->fd, TUNSETVNETHDRSZ, &hdr) < 0) {
		e = errno;
		vm_tap_close(t);
		return errbuf_set(err, -e, "--net tap=%s: TUNSETVNETHDRSZ: %s", name, strerror(e));
	}
	/* Offer the offloads only if the tap takes them; the guest starts with none. */
	if (ioctl(t->fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6) == 0)
		t->offloads = VIRTIO_NET_OFFLOADS;
	(void)ioctl(t->fd, TUNSETOFFLOAD, 0);
	return 0;
}

void vm_tap_close(struct vm_tap *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
}

static long tap_rx(void *opaque, const struct iovec *iov, int n)
{
	struct vm_tap *t = opaque;
	ssize_t r;

	do
		r = readv(t->fd, iov, n);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -(errno == EWOULDBLOCK ? EAGAIN : errno) : r;
}

static long tap_tx(void *opaque, const struct iovec *iov, int n)
{
	struct vm_tap *t = opaque;
	ssize_t r;

	do
		r = writev(t->fd, iov, n);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

/* Called under the device's lock, maybe on a vCPU thread: the I/O thread does the ioctl. */
static void tap_set_offloads(void *opaque, uint64_t guest)
{
	struct vm_tap *t = opaque;

	__atomic_store_n(&t->want, guest, __ATOMIC_RELEASE);
}

struct virtio_net_io vm_tap_io(struct vm_tap *t)
{
	return (struct virtio_net_io){ t, tap_rx, tap_tx, tap_set_offloads };
}

void vm_tap_apply(struct vm_tap *t)
{
	uint64_t want = __atomic_load_n(&t->want, __ATOMIC_ACQUIRE);
	unsigned flags = 0;

	if (want == t->applied)
		return;
	t->applied = want;
	/* What the tap may hand the guest: partial checksums, then TSO on top of them. */
	if (want & VIRTIO_NET_F_GUEST_CSUM) {
		flags |= TUN_F_CSUM;
		if (want & VIRTIO_NET_F_GUEST_TSO4)
			flags |= TUN_F_TSO4;
		if (want & VIRTIO_NET_F_GUEST_TSO6)
			flags |= TUN_F_TSO6;
	}
	if (ioctl(t->fd, TUNSETOFFLOAD, flags) < 0)
		vm_log("virtio-net: tap %s: TUNSETOFFLOAD 0x%x: %s", t->name, flags, strerror(errno));
}

void vm_net_default_mac(const char *vm_name, unsigned long pid, unsigned index, uint8_t mac[6])
{
	uint32_t h = 2166136261u; /* FNV-1a */
	char buf[64];

	if (vm_name)
		snprintf(buf, sizeof(buf), "%s", vm_name);
	else
		snprintf(buf, sizeof(buf), "pid %lu", pid);
	for (const char *p = buf; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	mac[0] = 0x52; /* locally administered (bit 1), unicast (bit 0 clear) */
	mac[1] = 0x56;
	mac[2] = (uint8_t)(h >> 16);
	mac[3] = (uint8_t)(h >> 8);
	mac[4] = (uint8_t)h;
	mac[5] = (uint8_t)index;
}
