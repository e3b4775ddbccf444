// SPDX-License-Identifier: MIT
/*
 * A live migration's connection (migrate.h, docs/migration.md): the
 * addresses, connecting and accepting one source, and records sent and
 * received whole, each wait bounded by the connection's deadline. The
 * socket is non-blocking and every transfer polls, so a peer that stops
 * reading or writing costs at most the time left.
 */
#include "migrate.h"
#include "control.h"
#include "vmm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int mig_addr_parse(const char *s, struct mig_addr *a, struct errbuf *err)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->text, sizeof(a->text), "%s", s);
	if (!strncmp(s, "unix:", 5)) {
		struct sockaddr_un *un = (struct sockaddr_un *)&a->sa;

		if (!s[5] || strlen(s + 5) >= sizeof(un->sun_path))
			return errbuf_set(err, -EINVAL,
					  "'%s': a unix: address needs a path of 1 to %zu bytes", s,
					  sizeof(un->sun_path) - 1);
		un->sun_family = AF_UNIX;
		memcpy(un->sun_path, s + 5, strlen(s + 5));
		a->len = sizeof(*un);
		return 0;
	}
	if (!strncmp(s, "tcp:", 4)) {
		char host[128];
		const char *h = s + 4, *colon;
		uint64_t port;
		size_t hl;

		if (*h == '[') { /* [IPv6]:PORT */
			const char *close = strchr(h, ']');

			if (!close || close[1] != ':')
				return errbuf_set(err, -EINVAL,
						  "'%s': write an IPv6 address as tcp:[ADDR]:PORT", s);
			h++;
			hl = (size_t)(close - h);
			colon = close + 1;
		} else {
			colon = strrchr(h, ':');
			if (!colon)
				return errbuf_set(err, -EINVAL, "'%s': a tcp: address is tcp:HOST:PORT", s);
			hl = (size_t)(colon - h);
		}
		if (!hl || hl >= sizeof(host))
			return errbuf_set(err, -EINVAL, "'%s': no host", s);
		memcpy(host, h, hl);
		host[hl] = '\0';
		if (util_parse_u64(colon + 1, 0, 65535, &port))
			return errbuf_set(err, -EINVAL, "'%s': the port must be 0 to 65535", s);
		struct sockaddr_in *in4 = (struct sockaddr_in *)&a->sa;
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a->sa;

		if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
			in4->sin_family = AF_INET;
			in4->sin_port = htons((uint16_t)port);
			a->len = sizeof(*in4);
		} else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
			in6->sin6_family = AF_INET6;
			in6->sin6_port = htons((uint16_t)port);
			a->len = sizeof(*in6);
		} else {
			return errbuf_set(err, -EINVAL, "'%s': '%s' is not a numeric IP address", s, host);
		}
		return 0;
	}
	return errbuf_set(err, -EINVAL, "'%s': an address is tcp:HOST:PORT or unix:PATH", s);
}

int mig_addr_resolve(const char *s, char *out, size_t len, struct errbuf *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	struct mig_addr a;
	char host[128], num[INET6_ADDRSTRLEN];
	const char *colon;
	int rc;

	if (strncmp(s, "tcp:", 4) || s[4] == '[' || !mig_addr_parse(s, &a, NULL)) {
		snprintf(out, len, "%s", s); /* unix:, IPv6, numeric, or wrong: mig_addr_parse says */
		return 0;
	}
	colon = strrchr(s + 4, ':');
	if (!colon || (size_t)(colon - s - 4) >= sizeof(host) || colon == s + 4)
		return mig_addr_parse(s, &a, err);
	memcpy(host, s + 4, (size_t)(colon - s - 4));
	host[colon - s - 4] = '\0';
	rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc || !res)
		return errbuf_set(err, -EINVAL, "'%s': cannot resolve '%s': %s", s, host, gai_strerror(rc));
	if (res->ai_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr, num, sizeof(num));
	else
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)res->ai_addr)->sin6_addr, num, sizeof(num));
	snprintf(out, len, res->ai_family == AF_INET ? "tcp:%s%s" : "tcp:[%s]%s", num, colon);
	freeaddrinfo(res);
	return 0;
}

/* Milliseconds left before the deadline (at least 0). */
static int left_ms(const struct mig_conn *c)
{
	uint64_t now = util_now_ns();

	return now >= c->deadline_ns ? 0 : (int)((c->deadline_ns - now + 999999) / 1000000);
}

/* Wait until fd is ready for `events` or the deadline passes. */
static int wait_fd(struct mig_conn *c, short events, const char *doing, struct errbuf *err)
{
	struct pollfd p = { .fd = c->fd, .events = events };

	for (;;) {
		int ms = left_ms(c), n;

		if (!ms)
			return errbuf_set(err, -ETIMEDOUT, "%s %s: timed out", doing, c->peer);
		n = poll(&p, 1, ms);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return errbuf_set(err, -errno, "%s %s: poll: %s", doing, c->peer, strerror(errno));
	}
}

static void tune(int fd, int family)
{
	int one = 1, buf = 4 << 20;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	if (family != AF_UNIX)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
}

int mig_connect(struct mig_conn *c, const struct mig_addr *a, struct errbuf *err)
{
	int fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), soerr = 0;
	socklen_t sl = sizeof(soerr);

	c->fd = fd;
	c->peer = a->text;
	if (fd < 0)
		return errbuf_set(err, -errno, "migration to %s: socket: %s", a->text, strerror(errno));
	if (connect(fd, (const struct sockaddr *)&a->sa, a->len) < 0) {
		int rc;

		if (errno != EINPROGRESS && errno != EAGAIN)
			return errbuf_set(err, -errno, "cannot connect to %s: %s", a->text, strerror(errno));
		rc = wait_fd(c, POLLOUT, "connecting to", err);
		if (rc)
			return rc;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
			soerr = errno;
		if (soerr)
			return errbuf_set(err, -soerr, "cannot connect to %s: %s", a->text, strerror(soerr));
	}
	tune(fd, a->sa.ss_family);
	return 0;
}

/* A unix socket left by a destination that was killed: nobody listens, so it goes. */
static void unlink_stale(const struct mig_addr *a)
{
	const char *path = ((const struct sockaddr_un *)&a->sa)->sun_path;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct stat st;

	if (fd >= 0 && !lstat(path, &st) && S_ISSOCK(st.st_mode) &&
	    connect(fd, (const struct sockaddr *)&a->sa, a->len) < 0 && errno == ECONNREFUSED)
		unlink(path);
	if (fd >= 0)
		close(fd);
}

int mig_accept_one(struct mig_conn *c, const struct mig_addr *a, bool announce, struct errbuf *err)
{
	int lfd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1, rc;
	struct sockaddr_storage bound;
	socklen_t bl = sizeof(bound);
	struct mig_conn l = { .fd = lfd, .deadline_ns = c->deadline_ns, .peer = a->text };

	c->fd = -1;
	c->peer = a->text;
	if (lfd < 0)
		return errbuf_set(err, -errno, "--incoming %s: socket: %s", a->text, strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (a->sa.ss_family == AF_UNIX)
		unlink_stale(a);
	if (bind(lfd, (const struct sockaddr *)&a->sa, a->len) < 0 || listen(lfd, 1) < 0) {
		rc = errbuf_set(err, -errno, "--incoming %s: cannot listen: %s", a->text, strerror(errno));
		close(lfd);
		return rc;
	}
	if (announce) {
		/* The port the kernel chose for :0, for scripts; the line tests wait for. */
		if (a->sa.ss_family != AF_UNIX && !getsockname(lfd, (struct sockaddr *)&bound, &bl))
			vm_log("waiting for a migration on %s (port %u)", a->text,
			       ntohs(bound.ss_family == AF_INET
					     ? ((struct sockaddr_in *)&bound)->sin_port
					     : ((struct sockaddr_in6 *)&bound)->sin6_port));
		else
			vm_log("waiting for a migration on %s", a->text);
	}
	rc = wait_fd(&l, POLLIN, "waiting for a migration on", err);
	if (!rc) {
		c->fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (c->fd < 0)
			rc = errbuf_set(err, -errno, "--incoming %s: accept: %s", a->text, strerror(errno));
	}
	close(lfd); /* one migration: nobody else may connect */
	if (a->sa.ss_family == AF_UNIX)
		unlink(((const struct sockaddr_un *)&a->sa)->sun_path);
	if (!rc)
		tune(c->fd, a->sa.ss_family);
	return rc;
}

void mig_close(struct mig_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

void mig_conn_limit(struct mig_conn *c, uint64_t bps)
{
	c->max_bps = bps;
	c->rate_t0_ns = util_now_ns();
	c->rate_b0 = c->tx_bytes;
}

/*
 * A send or receive failed with e (ECONNRESET for end-of-file). A peer that
 * went away (it exited, or was killed) shows as EPIPE or ECONNRESET on one
 * side and end-of-file on the other, whichever this side happened to be
 * doing: word all of them alike.
 */
static int conn_lost(struct mig_conn *c, const char *doing, int e, struct errbuf *err)
{
	if (e == EPIPE || e == ECONNRESET)
		return errbuf_set(err, -ECONNRESET, "%s closed the connection", c->peer);
	return errbuf_set(err, -e, "%s %s: %s (the connection is lost)", doing, c->peer, strerror(e));
}

/* Under a limit: wait (bounded) until what was sent is due at the limit's rate. */
static int keep_to_limit(struct mig_conn *c, struct errbuf *err)
{
	for (;;) {
		uint64_t due = c->rate_t0_ns + (c->tx_bytes - c->rate_b0) * 1000000000ULL / c->max_bps,
			 now = util_now_ns();
		int ms;

		if (now + 1000000 > due)
			return 0; /* less than a millisecond ahead */
		ms = left_ms(c);
		if (!ms)
			return errbuf_set(err, -ETIMEDOUT,
					  "sending to %s: timed out (--max-bandwidth %" PRIu64 " bytes/s)",
					  c->peer, c->max_bps);
		if ((uint64_t)ms > (due - now) / 1000000)
			ms = (int)((due - now) / 1000000);
		poll(NULL, 0, ms);
	}
}

/* Write all of iov, waiting (bounded) when the socket is full or a limit says so. */
static int send_all(struct mig_conn *c, struct iovec *iov, int n, struct errbuf *err)
{
	if (c->max_bps) {
		int rc = keep_to_limit(c, err);

		if (rc)
			return rc;
	}
	while (n > 0) {
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t w = sendmsg(c->fd, &m, MSG_NOSIGNAL);
		int rc;

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return conn_lost(c, "sending to", errno, err);
			rc = wait_fd(c, POLLOUT, "sending to", err);
			if (rc)
				return rc;
			continue;
		}
		c->tx_bytes += (uint64_t)w;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

int mig_send(struct mig_conn *c, enum mig_type t, const void *a, uint32_t alen, const void *b, uint32_t blen,
	     struct errbuf *err)
{
	struct mig_hdr h;
	struct iovec iov[3];
	int n = 1;

	mig_hdr_make(&h, t, c->tx_seq, NULL, 0);
	h.len = alen + blen;
	h.hash = mig_hash2(t, c->tx_seq, a, alen, b, blen);
	iov[0] = (struct iovec){ &h, sizeof(h) };
	if (alen)
		iov[n++] = (struct iovec){ (void *)a, alen };
	if (blen)
		iov[n++] = (struct iovec){ (void *)b, blen };
	c->tx_seq++;
	return send_all(c, iov, n, err);
}

int mig_send_json(struct mig_conn *c, enum mig_type t, json_t *obj, struct errbuf *err)
{
	char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
	int rc;

	json_decref(obj);
	if (!text)
		return errbuf_set(err, -ENOMEM, "out of memory");
	rc = mig_send(c, t, text, (uint32_t)strlen(text), NULL, 0, err);
	free(text);
	return rc;
}

static int recv_all(struct mig_conn *c, void *buf, size_t len, struct errbuf *err)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t r = read(c->fd, p, len);
		int rc;

		if (r == 0)
			return conn_lost(c, "receiving from", ECONNRESET, err);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return conn_lost(c, "receiving from", errno, err);
			rc = wait_fd(c, POLLIN, "waiting for", err);
			if (rc)
				return rc;
			continue;
		}
		c->rx_bytes += (uint64_t)r;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

int mig_recv(struct mig_conn *c, struct mig_hdr *h, void **payload, uint32_t state_max, struct errbuf *err)
{
	void *p = NULL;
	int rc;

	*payload = NULL;
	rc = recv_all(c, h, sizeof(*h), err);
	if (!rc)
		rc = mig_hdr_check(h, c->rx_seq, state_max, err);
	if (rc)
		return rc;
	if (h->len) {
		p = malloc((size_t)h->len + 1); /* + 1: a control record's JSON ends in a NUL */
		if (!p)
			return errbuf_set(err, -ENOMEM, "out of memory for a %" PRIu32 "-byte record",
					  h->len);
		((char *)p)[h->len] = '\0';
		rc = recv_all(c, p, h->len, err);
	}
	if (!rc)
		rc = mig_payload_check(h, p, err);
	if (rc) {
		free(p);
		return rc;
	}
	c->rx_seq++;
	*payload = p;
	return 0;
}

int mig_recv_answer(struct mig_conn *c, enum mig_type want, json_t **reply, struct errbuf *err)
{
	struct mig_hdr h;
	void *p;
	json_t *j, *e;
	int rc = mig_recv(c, &h, &p, 0, err);

	if (reply)
		*reply = NULL;
	if (rc)
		return rc;
	j = p ? json_loads(p, JSON_REJECT_DUPLICATES, NULL) : json_object();
	free(p);
	if (!json_is_object(j)) {
		json_decref(j);
		return errbuf_set(err, -EPROTO, "%s sent a %s record that is not a JSON object", c->peer,
				  mig_type_name(h.type));
	}
	e = json_object_get(j, "error");
	if (h.type == MIG_ABORT || (h.type == want && json_is_false(json_object_get(j, "ok")))) {
		rc = errbuf_set(err, -ECANCELED, "%s: %s", c->peer,
				json_is_string(e) ? json_string_value(e) : "gave up (no reason given)");
	} else if (h.type != want) {
		rc = errbuf_set(err, -EPROTO, "%s sent %s where %s was due", c->peer, mig_type_name(h.type),
				mig_type_name(want));
	}
	if (!rc && reply)
		*reply = j;
	else
		json_decref(j);
	return rc;
}

/* ---- guest memory as PAGES and ZERO records ------------------------------------------------- */

struct runs {
	struct mig_conn *c;
	const struct gmem *mem;
	uint8_t *buf;		 /* the run's copy: the guest may write its pages meanwhile */
	uint64_t run_gpa, run_n; /* the run being built */
	bool run_zero;		 /* ... of zero pages (nothing copied) */
	struct mig_round *r;
	struct errbuf *err;
};

static int flush_run(struct runs *s)
{
	uint64_t hdr[2] = { s->run_gpa, s->run_n };
	int rc;

	if (!s->run_n)
		return 0;
	if (s->run_zero) {
		rc = mig_send(s->c, MIG_ZERO, hdr, sizeof(hdr), NULL, 0, s->err);
		s->r->zero_pages += s->run_n;
	} else {
		rc = mig_send(s->c, MIG_PAGES, hdr, sizeof(hdr), s->buf, (uint32_t)(s->run_n * MIG_PAGE),
			      s->err);
		s->r->pages += s->run_n;
	}
	s->run_n = 0;
	return rc;
}

static bool page_zero(const uint8_t *p)
{
	static const uint8_t zero[MIG_PAGE];

	return !memcmp(p, zero, MIG_PAGE);
}

/* Page pfn into the run (copied first, then judged); skip_zero: the destination has zeros already. */
static int add_page(struct runs *s, uint64_t pfn, bool skip_zero)
{
	uint8_t *slot;
	bool zero;
	int rc;

	/* A run ends at a gap or when it is full. */
	if (s->run_n && (s->run_gpa + s->run_n * MIG_PAGE != pfn * MIG_PAGE || s->run_n == MIG_MAX_RUN) &&
	    (rc = flush_run(s)))
		return rc;
	slot = s->buf + (s->run_n && !s->run_zero ? s->run_n : 0) * MIG_PAGE;
	memcpy(slot, s->mem->hva + pfn * MIG_PAGE, MIG_PAGE);
	zero = page_zero(slot);
	if (zero && skip_zero)
		return flush_run(s);
	if (s->run_n && zero != s->run_zero) {
		if ((rc = flush_run(s)))
			return rc;
		memmove(s->buf, slot, MIG_PAGE);
	}
	if (!s->run_n) {
		s->run_gpa = pfn * MIG_PAGE;
		s->run_zero = zero;
	}
	s->run_n++;
	return 0;
}

int mig_send_memory(struct mig_conn *c, const struct gmem *mem, const uint64_t *bitmap, uint8_t *buf,
		    struct mig_round *r, struct errbuf *err)
{
	struct runs s = { .c = c, .mem = mem, .buf = buf, .r = r, .err = err };
	uint64_t size = mem->size, off = 0, npages = mem->size / MIG_PAGE;
	int rc = 0;

	if (bitmap) {
		for (uint64_t w = 0; w < (npages + 63) / 64 && !rc; w++)
			for (uint64_t bits = bitmap[w]; bits && !rc; bits &= bits - 1) {
				uint64_t pfn = w * 64 + (uint64_t)__builtin_ctzll(bits);

				if (pfn < npages)
					rc = add_page(&s, pfn, false);
			}
		return rc ? rc : flush_run(&s);
	}
	/* A memfd knows its holes (never written: zero there and at the destination). */
	while (off < size && !rc) {
		uint64_t end = size;

		if (mem->fd >= 0) {
			off_t d = lseek(mem->fd, (off_t)off, SEEK_DATA), h;

			if (d < 0)
				break; /* no data after off */
			h = lseek(mem->fd, d, SEEK_HOLE);
			off = (uint64_t)d & ~(uint64_t)(MIG_PAGE - 1);
			end = h < 0 ? size : ((uint64_t)h + MIG_PAGE - 1) & ~(uint64_t)(MIG_PAGE - 1);
			if (end > size)
				end = size;
		}
		for (; off < end && !rc; off += MIG_PAGE)
			rc = add_page(&s, off / MIG_PAGE, true);
	}
	return rc ? rc : flush_run(&s);
}
