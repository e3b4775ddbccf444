// SPDX-License-Identifier: MIT
/*
 * virtio-net (virtio 1.x, 5.1, device ID 1): queue 0 receives, queue 1
 * transmits; a frame is the 12-byte virtio_net_hdr then the Ethernet
 * frame, passed to and from the host (a tap opened with IFF_VNET_HDR) as
 * is, through struct virtio_net_io. Config space: the MAC and the link
 * status. With mergeable receive buffers (VIRTIO_NET_F_MRG_RXBUF) a frame
 * fills as many receive chains as it needs, read straight into them; without, one.
 */
#include "devices/virtio_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#define NET_QUEUE_MAX 256
#define RXQ 0
#define TXQ 1
#define ETH_HDR 14u
#define ETH_FRAME_NO_GSO 1518u /* the largest frame without GSO: 1500 bytes, Ethernet and VLAN headers */
#define NET_IOV_MAX 1024u      /* buffers of one readv() (UIO_MAXIOV) */
#define NUM_BUFFERS_OFF 10u    /* of num_buffers in the header */
#define STATUS_LINK_UP 1u

struct net {
	struct virtio_backend_ops ops; /* net_ops with the features this tap allows */
	struct virtio_net_params p;
	char ifname[VIRTIO_NET_IFNAMSIZ];
	bool link_up;
	uint64_t features; /* the driver's, from DRIVER_OK (0 after a reset); under the transport's lock */
	struct virtio_net_counters c;  /* each field accessed atomically */
	struct iovec iov[NET_IOV_MAX]; /* one mergeable frame's buffers */
};

#define NCOUNT(n, field, v) __atomic_add_fetch(&(n)->c.field, (v), __ATOMIC_RELAXED)

static const char *const net_stat_names[] = { "rx_packets", "rx_bytes", "rx_dropped",
					      "tx_packets", "tx_bytes", "tx_errors" };
_Static_assert(sizeof(struct virtio_net_counters) == sizeof(net_stat_names) / sizeof(net_stat_names[0]) * 8,
	       "one name per counter");

/* The chain's buffers from `first` on as an iovec; returns how many. */
static int chain_iov(const struct vq_chain *c, unsigned first, unsigned end, struct iovec *iov)
{
	int n = 0;

	for (unsigned i = first; i < end; i++)
		if (c->buf[i].len)
			iov[n++] = (struct iovec){ c->buf[i].p, c->buf[i].len };
	return n;
}

/* Write len bytes at byte offset off of the iovec (the header may be split across buffers). */
static void iov_put(const struct iovec *iov, int n, size_t off, const uint8_t *src, size_t len)
{
	for (int i = 0; i < n && len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		for (; off < iov[i].iov_len && len; off++, len--)
			((uint8_t *)iov[i].iov_base)[off] = *src++;
		off = 0;
	}
}

/* With mergeable buffers: how many bytes a receive request may need (the transport gathers that much). */
static uint32_t net_span(void *be, unsigned q)
{
	const struct net *n = be;

	if (q != RXQ || !(n->features & VIRTIO_NET_F_MRG_RXBUF))
		return 0;
	/* The tap sends GSO frames only when the guest took GUEST_TSO* (net_activate). */
	return VIRTIO_NET_HDR_LEN + (n->features & (VIRTIO_NET_F_GUEST_TSO4 | VIRTIO_NET_F_GUEST_TSO6)
					     ? VIRTIO_NET_MAX_FRAME
					     : ETH_FRAME_NO_GSO);
}

/* One frame from the host across receive chains c[0..nc-1]: how many it filled, num_buffers in its header. */
static int net_rx_span(void *be, unsigned q, const struct vq_chain *c, unsigned nc, uint32_t *written)
{
	struct net *n = be;
	uint64_t room = 0, left;
	uint8_t nb[2];
	unsigned used = 0;
	int cnt = 0;
	long len;

	(void)q;
	/* The header (and num_buffers) must lie in the first chain: one that cannot is given back empty. */
	if (c[0].write_len < VIRTIO_NET_HDR_LEN + ETH_HDR)
		return -EINVAL;
	for (unsigned i = 0; i < nc && cnt + (c[i].n - c[i].nr_read) <= NET_IOV_MAX; i++) {
		cnt += chain_iov(&c[i], c[i].nr_read, c[i].n, n->iov + cnt);
		room += c[i].write_len;
	}
	len = n->p.io.rx(n->p.io.opaque, n->iov, cnt);
	if (len < 0) {
		if (len != -EAGAIN)
			NCOUNT(n, rx_dropped, 1);
		return -EAGAIN;
	}
	if ((uint64_t)len > room || len < VIRTIO_NET_HDR_LEN) {
		/* Larger than every chain the driver gave (the tap truncated it): lost. */
		NCOUNT(n, rx_dropped, 1);
		return -EMSGSIZE;
	}
	for (left = (uint64_t)len; left; used++) {
		written[used] = (uint32_t)(left < c[used].write_len ? left : c[used].write_len);
		left -= written[used];
	}
	nb[0] = (uint8_t)used;
	nb[1] = (uint8_t)(used >> 8);
	iov_put(n->iov, cnt, NUM_BUFFERS_OFF, nb, sizeof(nb));
	NCOUNT(n, rx_packets, 1);
	NCOUNT(n, rx_bytes, (uint64_t)len - VIRTIO_NET_HDR_LEN);
	return (int)used;
}

/* One frame from a TX chain's readable buffers to the host. */
static int net_tx(struct net *n, const struct vq_chain *c)
{
	struct iovec iov[VQ_MAX_BUFS];
	int cnt = chain_iov(c, 0, c->nr_read, iov);
	long len;

	if (c->read_len < VIRTIO_NET_HDR_LEN + ETH_HDR ||
	    c->read_len > VIRTIO_NET_HDR_LEN + VIRTIO_NET_MAX_FRAME) {
		NCOUNT(n, tx_errors, 1);
		return -EINVAL;
	}
	len = n->p.io.tx(n->p.io.opaque, iov, cnt);
	if (len < 0) {
		NCOUNT(n, tx_errors, 1); /* the tap refused it (a bad GSO header, the link down) */
		return (int)len;
	}
	NCOUNT(n, tx_packets, 1);
	NCOUNT(n, tx_bytes, c->read_len - VIRTIO_NET_HDR_LEN);
	return 0;
}

/* Without mergeable buffers: one frame into one chain (num_buffers 1). */
static int net_rx(struct net *n, const struct vq_chain *c, uint32_t *written)
{
	int rc = net_rx_span(n, RXQ, c, 1, written);

	return rc < 0 ? rc : 0;
}

static int net_handle(void *be, unsigned q, const struct vq_chain *c, uint32_t *written)
{
	struct net *n = be;

	*written = 0;
	return q == RXQ ? net_rx(n, c, written) : net_tx(n, c);
}

static void net_read_config(void *be, uint32_t off, uint8_t *buf, uint32_t len)
{
	const struct net *n = be;
	uint8_t cfg[8];

	memcpy(cfg, n->p.mac, 6);
	cfg[6] = n->link_up ? STATUS_LINK_UP : 0;
	cfg[7] = 0;
	memcpy(buf, cfg + off, len);
}

static void net_activate(void *be, uint64_t features)
{
	struct net *n = be;

	n->features = features;
	if (n->p.io.set_offloads)
		n->p.io.set_offloads(n->p.io.opaque, features & n->p.offloads);
}

static void net_reset(void *be)
{
	net_activate(be, 0);
}

static void net_read_stats(void *be, uint64_t *values)
{
	const uint64_t *c = (const uint64_t *)&((struct net *)be)->c;

	for (size_t i = 0; i < sizeof(struct virtio_net_counters) / 8; i++)
		values[i] = __atomic_load_n(&c[i], __ATOMIC_RELAXED);
}

/* Queue 0 receives, queue 1 transmits: virtio.netN.rx_notifications, ... */
static const char *const net_queue_names[] = { "rx", "tx" };

static const struct virtio_backend_ops net_ops = {
	.name = "virtio-net",
	.device_id = 1,
	.nr_queues = 2,
	.queue_max = NET_QUEUE_MAX,
	.config_len = 8,
	.read_config = net_read_config,
	.handle = net_handle,
	.span = net_span,
	.handle_span = net_rx_span,
	.reset = net_reset,
	.activate = net_activate,
	.nr_stats = sizeof(net_stat_names) / sizeof(net_stat_names[0]),
	.stat_names = net_stat_names,
	.read_stats = net_read_stats,
	.queue_names = net_queue_names,
};

/* A unicast MAC that is not all zeros. */
static bool mac_ok(const uint8_t *mac)
{
	static const uint8_t zero[6];

	return !(mac[0] & 1) && memcmp(mac, zero, 6);
}

int virtio_net_create(struct virtio_mmio **out, const struct dev_host *host,
		      const struct virtio_net_params *p)
{
	struct net *n;

	*out = NULL;
	if (!mac_ok(p->mac) || !p->io.rx || !p->io.tx || (p->offloads & ~VIRTIO_NET_OFFLOADS) ||
	    p->rx_usecs > VIRTIO_NET_USECS_MAX || p->tx_usecs > VIRTIO_NET_USECS_MAX)
		return -EINVAL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->p = *p;
	n->link_up = true;
	snprintf(n->ifname, sizeof(n->ifname), "%s", p->ifname ? p->ifname : "");
	n->p.ifname = n->ifname;
	/* The offered features depend on the tap: the table lives in the backend, freed with it. */
	n->ops = net_ops;
	n->ops.features = VIRTIO_NET_F_MAC | VIRTIO_NET_F_STATUS | p->offloads |
			  (p->mrg_rxbuf ? VIRTIO_NET_F_MRG_RXBUF : 0);
	if (p->name)
		n->ops.name = p->name;
	return virtio_mmio_create_backend(out, &n->ops, n, host);
}

/* ---- its snapshot part ----------------------------------------------------------------- */

void virtio_net_save(struct virtio_mmio *v, struct virtio_net_state *st)
{
	struct net *n = virtio_mmio_backend(v, NULL);

	memset(st, 0, sizeof(*st));
	virtio_mmio_save(v, &st->t);
	memcpy(st->mac, n->p.mac, 6);
	st->mac_len = 6;
	st->ifname_len = (uint16_t)strlen(n->ifname);
	memcpy(st->ifname, n->ifname, st->ifname_len);
	st->link_up = n->link_up;
	net_read_stats(n, (uint64_t *)&st->nc);
	st->rx_usecs = n->p.rx_usecs;
	st->tx_usecs = n->p.tx_usecs;
}

static const char *net_check(const struct snap *s, const void *state, const char **prop)
{
	const struct virtio_net_state *st = state;

	(void)s;
	if (!virtio_mmio_state_valid(&st->t))
		return "not a state a virtio-mmio device can be in";
	*prop = "mac";
	if (st->mac_len != 6 || !mac_ok(st->mac))
		return "not a unicast MAC address of 6 bytes";
	*prop = "tap";
	if (!st->ifname_len || st->ifname_len >= VIRTIO_NET_IFNAMSIZ || memchr(st->ifname, 0, st->ifname_len))
		return "not an interface name";
	*prop = NULL;
	return NULL;
}

int virtio_net_load(struct virtio_mmio *v, const struct virtio_net_state *st)
{
	struct net *n = virtio_mmio_backend(v, NULL);
	const char *prop = NULL;
	int rc;

	if (net_check(NULL, st, &prop) || memcmp(st->mac, n->p.mac, 6))
		return -EINVAL;
	rc = virtio_mmio_load(v, &st->t);
	if (rc)
		return rc;
	n->link_up = st->link_up;
	for (size_t i = 0; i < sizeof(n->c) / 8; i++)
		__atomic_store_n(&((uint64_t *)&n->c)[i], ((const uint64_t *)&st->nc)[i], __ATOMIC_RELAXED);
	return 0;
}

void virtio_net_coalescing_words(uint32_t rx_usecs, uint32_t tx_usecs, char *buf, size_t len)
{
	if (rx_usecs || tx_usecs)
		snprintf(buf, len, "; interrupts coalesced over %u us receiving, %u us sending", rx_usecs,
			 tx_usecs);
	else if (len)
		buf[0] = '\0';
}

static void net_describe(const void *state, char *buf, size_t len)
{
	const struct virtio_net_state *st = state;
	char coal[80];

	virtio_net_coalescing_words(st->rx_usecs, st->tx_usecs, coal, sizeof(coal));
	snprintf(buf, len,
		 "virtio-net on tap %.*s, MAC %02x:%02x:%02x:%02x:%02x:%02x (status 0x%x, %llu frames "
		 "received, %llu sent%s)",
		 (int)st->ifname_len, (const char *)st->ifname, st->mac[0], st->mac[1], st->mac[2],
		 st->mac[3], st->mac[4], st->mac[5], st->t.status, (unsigned long long)st->nc.rx_packets,
		 (unsigned long long)st->nc.tx_packets, coal);
}

#define NF(prop, type, member, max) SNAP_FIELD(struct virtio_net_state, prop, type, member, max)

static const struct snap_field net_fields[] = {
	VIRTIO_MMIO_SNAP_FIELDS(struct virtio_net_state, t.),
	SNAP_FIELD_BYTES(struct virtio_net_state, "mac", mac, mac_len),
	SNAP_FIELD_BYTES(struct virtio_net_state, "tap", ifname, ifname_len),
	NF("link-up", SNAP_F_U32, link_up, 1),
	NF("rx-packets", SNAP_F_U64, nc.rx_packets, 0),
	NF("rx-bytes", SNAP_F_U64, nc.rx_bytes, 0),
	NF("rx-dropped", SNAP_F_U64, nc.rx_dropped, 0),
	NF("tx-packets", SNAP_F_U64, nc.tx_packets, 0),
	NF("tx-bytes", SNAP_F_U64, nc.tx_bytes, 0),
	NF("tx-errors", SNAP_F_U64, nc.tx_errors, 0),
	/* Added within format 1: an older snapshot's device coalesces nothing. */
	SNAP_FIELD_OPT(struct virtio_net_state, "rx-usecs", SNAP_F_U32, rx_usecs, VIRTIO_NET_USECS_MAX),
	SNAP_FIELD_OPT(struct virtio_net_state, "tx-usecs", SNAP_F_U32, tx_usecs, VIRTIO_NET_USECS_MAX),
};

#define NET_PART(name)                                                                             \
	{                                                                                          \
		name, sizeof(struct virtio_net_state), net_fields,                                 \
			sizeof(net_fields) / sizeof(net_fields[0]), SNAP_PART_OPTIONAL, net_check, \
			net_describe                                                               \
	}

const struct snap_part virtio_net_parts[VIRTIO_NET_MAX] = {
	NET_PART("virtio-net0"),
	NET_PART("virtio-net1"),
	NET_PART("virtio-net2"),
	NET_PART("virtio-net3"),
};
