// SPDX-License-Identifier: MIT
/*
 * The control socket (--api-socket, docs/api.md): a Unix stream socket
 * speaking JSON lines. The main thread polls it with everything else, so
 * requests are served between guest events without another thread.
 */
#include "api.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int fill_addr(struct sockaddr_un *sa, const char *path, struct errbuf *err)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return errbuf_set(err, -ENAMETOOLONG, "--api-socket path is longer than %zu bytes",
				  sizeof(sa->sun_path) - 1);
	strcpy(sa->sun_path, path);
	return 0;
}

int api_init(struct api *api, const char *path, struct errbuf *err)
{
	struct sockaddr_un sa;
	struct stat st;
	mode_t old;
	int rc, probe;

	memset(api, 0, sizeof(*api));
	api->listen_fd = -1;
	api->reserve_fd = -1;
	for (int i = 0; i < API_MAX_CLIENTS; i++)
		api->client[i].fd = -1;
	if (!path)
		return 0;
	rc = fill_addr(&sa, path, err);
	if (rc)
		return rc;
	/* Something else at the path (a file given by mistake) is never deleted. */
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
		return errbuf_set(err, -EEXIST,
				  "--api-socket %s exists and is not a socket: refusing to replace it", path);
	/* A live VM answers on the path: refuse. A dead one left a stale socket: replace it. */
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(probe);
		return errbuf_set(err, -EADDRINUSE, "another VM is already serving the API socket %s", path);
	}
	if (probe >= 0)
		close(probe);
	if (unlink(path) < 0 && errno != ENOENT)
		return errbuf_set(err, -errno, "cannot remove stale API socket %s: %s", path,
				  strerror(errno));

	api->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (api->listen_fd < 0)
		return errbuf_set(err, -errno, "API socket: %s", strerror(errno));
	old = umask(0077); /* owner-only from the moment the file exists */
	rc = bind(api->listen_fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (rc < 0 || listen(api->listen_fd, 8) < 0) {
		rc = errbuf_set(err, -errno, "cannot listen on API socket %s: %s", path, strerror(errno));
		close(api->listen_fd);
		api->listen_fd = -1;
		return rc;
	}
	api->path = path;
	api->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return 0;
}

void api_fini(struct api *api)
{
	/* Clients exist only while it listens (a VM that failed before api_init has neither). */
	for (int i = 0; i < API_MAX_CLIENTS && api->listen_fd >= 0; i++)
		if (api->client[i].fd >= 0)
			close(api->client[i].fd);
	if (api->listen_fd >= 0) {
		close(api->listen_fd);
		unlink(api->path);
	}
	if (api->reserve_fd >= 0)
		close(api->reserve_fd);
	api->listen_fd = api->reserve_fd = -1;
}

/* Send one JSON line, with an fd attached if fd >= 0. Frees reply. */
static void api_send(int cfd, json_t *reply, int fd)
{
	char *text = json_dumps(reply, JSON_COMPACT);
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov;
	struct msghdr msg;
	size_t len;

	json_decref(reply);
	if (!text)
		return;
	len = strlen(text);
	text[len] = '\n'; /* json_dumps NUL-terminates; send the newline instead */
	iov = (struct iovec){ text, len + 1 };
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (fd >= 0) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	/*
	 * The VMM never blocks on a client. One that does not read its replies
	 * fills its socket buffer: the reply that does not fit whole is not
	 * sent, and the connection is shut down (the next read drops it), so
	 * the client never sees half a line followed by the next reply.
	 */
	if (sendmsg(cfd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)(len + 1))
		shutdown(cfd, SHUT_RDWR);
	free(text);
}

#define api_error api_error_reply

static json_t *api_query(const struct api_env *e)
{
	const struct vm_machine *m = &e->snap->machine;

	return json_pack("{s:b, s:I, s:s, s:s, s:i, s:I, s:s, s:I, s:s, s:b}", "ok", 1, "pid",
			 (json_int_t)getpid(), "name", e->name ? e->name : "", "kernel", m->kernel, "vcpus",
			 (int)m->nr_vcpus, "memory_bytes", (json_int_t)e->snap->mem->size, "state",
			 vmctl_paused(e->ctl) ? "paused" : "running", "uptime_ns",
			 (json_int_t)(util_now_ns() - vm_stats_start_ns(e->stats)), "host",
			 host_kind_name(m->host.kind), "host_nested", (m->host.flags & PV_HOST_NESTED) != 0);
}

/* {"cmd":"snapshot","dir":"/abs/path"[,"then":"resume"|"stop"]} (docs/api.md, docs/snapshot.md) */
static json_t *api_snapshot(const struct api_env *e, const struct api_request *r)
{
	const char *then = r->stop_after ? "stop" : "resume";
	struct vm_snapshot_result res;
	struct errbuf err;

	if (vm_snapshot(e->snap, r->dir, r->stop_after, &res, &err))
		return api_error("%s", err.msg);
	return json_pack("{s:b, s:s, s:s, s:I, s:I, s:I, s:I, s:s}", "ok", 1, "dir", r->dir, "then", then,
			 "paused_ns", (json_int_t)res.paused_ns, "memory_ns", (json_int_t)res.memory_ns,
			 "memory_bytes", (json_int_t)res.memory_bytes, "state_bytes",
			 (json_int_t)res.state_bytes, "memory_io", res.used_uring ? "io_uring" : "pwrite");
}

/* {"cmd":"profile"[,"top":N]}: the profile so far (docs/profiling.md, docs/api.md) */
static json_t *api_profile(const struct api_env *e, const struct api_request *r)
{
	json_t *p = vm_profile_json(e->prof), *top, *reply;

	if (!p)
		return vm_profile_on(e->prof)
			       ? api_error("profile: out of memory")
			       : api_error("this VM is not profiled (perfvisor run --profile)");
	top = prof_top_json(p, r->top);
	reply = json_pack("{s:b, s:O, s:O, s:O, s:O, s:O, s:o*}", "ok", 1, "spec", json_object_get(p, "spec"),
			  "samples", json_object_get(p, "samples"), "unknown", json_object_get(p, "unknown"),
			  "lost", json_object_get(p, "lost"), "vcpus", json_object_get(p, "vcpus"), "top",
			  top);
	/* A Linux guest: its top processes too (docs/profiling.md). */
	if (reply && json_object_get(p, "linux"))
		json_object_set_new(reply, "processes", prof_processes_json(p, r->top));
	json_decref(p);
	return reply ? reply : api_error("profile: out of memory");
}

/* {"cmd":"migrate","to":...}: the rounds, the pause; the VM then stops (docs/migration.md) */
static json_t *api_migrate(const struct api_env *e, const struct api_request *r)
{
	struct mig_request rq = { .max_downtime_ns = r->max_downtime_ns,
				  .timeout_ms = r->timeout_ms,
				  .max_bandwidth = r->max_bandwidth,
				  .stop_copy = r->stop_copy };
	struct mig_result *res = calloc(1, sizeof(*res));
	struct errbuf err;
	json_t *rounds, *reply;
	int rc;

	if (!res)
		return api_error("out of memory");
	snprintf(rq.to, sizeof(rq.to), "%s", r->to);
	rc = vm_migrate(e->snap, &rq, res, &err);
	rounds = json_array();
	for (unsigned i = 0; rounds && i < res->nr_rounds; i++) {
		const struct mig_round *m = &res->round[i];

		json_array_append_new(rounds,
				      json_pack("{s:I, s:I, s:I, s:I, s:I, s:b}", "pages",
						(json_int_t)m->pages, "zero_pages", (json_int_t)m->zero_pages,
						"bytes", (json_int_t)m->bytes, "ns", (json_int_t)m->ns,
						"dirty", (json_int_t)m->dirty, "paused",
						i + 1 == res->nr_rounds && rc == 0));
	}
	if (rc)
		reply = json_pack("{s:b, s:s, s:b, s:o}", "ok", 0, "error", err.msg, "committed",
				  res->committed, "rounds", rounds);
	else
		reply = json_pack("{s:b, s:s, s:I, s:I, s:I, s:I, s:I, s:b, s:o}", "ok", 1, "to", rq.to,
				  "downtime_ns", (json_int_t)res->downtime_ns, "total_ns",
				  (json_int_t)res->total_ns, "bytes", (json_int_t)res->bytes, "memory_bytes",
				  (json_int_t)res->mem_bytes, "state_bytes", (json_int_t)res->state_bytes,
				  "stop_copy", res->forced, "rounds", rounds);
	free(res);
	return reply ? reply : api_error("migrate: out of memory");
}

static void api_handle_line(struct api *api, const struct api_env *e, int cfd, const char *line)
{
	struct api_request r;
	json_t *err = api_parse_request(line, &r);

	api->requests++;
	if (err) {
		api->bad_requests++;
		api_send(cfd, err, -1);
		return;
	}
	switch (r.cmd) {
	case API_QUERY:
		api_send(cfd, api_query(e), -1);
		break;
	case API_STATS_FD: {
		int fd = stats_region_open_ro(vm_stats_region(e->stats));

		if (fd < 0) {
			api_send(cfd, api_error("cannot open the statistics region: %s", strerror(errno)),
				 -1);
			break;
		}
		api_send(cfd, json_pack("{s:b, s:s}", "ok", 1, "fd", "attached (SCM_RIGHTS), read-only"), fd);
		close(fd);
		break;
	}
	case API_PAUSE:
		vmctl_pause(e->ctl);
		api_send(cfd, json_pack("{s:b, s:s}", "ok", 1, "state", "paused"), -1);
		break;
	case API_RESUME:
		vmctl_resume(e->ctl);
		api_send(cfd, json_pack("{s:b, s:s}", "ok", 1, "state", "running"), -1);
		break;
	case API_SNAPSHOT:
		api_send(cfd, api_snapshot(e, &r), -1);
		break;
	case API_PROFILE:
		api_send(cfd, api_profile(e, &r), -1);
		break;
	case API_MIGRATE:
		api_send(cfd, api_migrate(e, &r), -1);
		break;
	case API_BAD:
		break;
	}
}

static void api_drop(struct api_client *c)
{
	close(c->fd);
	c->fd = -1;
	c->len = 0;
}

static void api_read_client(struct api *api, const struct api_env *e, struct api_client *c)
{
	ssize_t n = read(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
	char *nl;

	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			api_drop(c);
		return;
	}
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	while ((nl = memchr(c->buf, '\n', c->len))) {
		size_t used = (size_t)(nl - c->buf) + 1;

		*nl = '\0';
		if (nl > c->buf)
			api_handle_line(api, e, c->fd, c->buf);
		memmove(c->buf, c->buf + used, c->len - used);
		c->len -= used;
	}
	if (c->len == sizeof(c->buf) - 1) {
		api->bad_requests++;
		api_send(c->fd, api_error("request longer than %zu bytes", sizeof(c->buf) - 1), -1);
		api_drop(c);
	}
}

int api_pollfds(struct api *api, struct pollfd *p, int max)
{
	int n = 0;

	if (api->listen_fd < 0 || max < 1)
		return 0;
	p[n++] = (struct pollfd){ .fd = api->listen_fd, .events = POLLIN };
	for (int i = 0; i < API_MAX_CLIENTS && n < max; i++)
		p[n++] = (struct pollfd){ .fd = api->client[i].fd, .events = POLLIN };
	return n;
}

/*
 * Out of file descriptors, accept4 fails and the connection stays queued:
 * poll would report it at once, forever. Give up the reserve fd, take the
 * connection, tell it why and close it, then take the reserve back.
 */
static int api_accept(struct api *api)
{
	int cfd = accept4(api->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (cfd >= 0 || (errno != EMFILE && errno != ENFILE) || api->reserve_fd < 0)
		return cfd;
	close(api->reserve_fd);
	cfd = accept4(api->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (cfd >= 0) {
		api->bad_requests++;
		api_send(cfd, api_error("perfvisor is out of file descriptors: try again later"), -1);
		close(cfd);
	}
	api->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return -1;
}

/* Close clients that sent nothing for API_IDLE_TIMEOUT_MS: each holds one of the few slots. */
static void api_expire(struct api *api, uint64_t now)
{
	for (int i = 0; i < API_MAX_CLIENTS; i++) {
		struct api_client *c = &api->client[i];

		if (c->fd < 0 || now - c->last_ns < API_IDLE_TIMEOUT_MS * 1000000ULL)
			continue;
		api_send(c->fd,
			 api_error("closing the connection: no request for %d s", API_IDLE_TIMEOUT_MS / 1000),
			 -1);
		api_drop(c);
	}
}

void api_service(struct api *api, const struct api_env *e, const struct pollfd *p, int n)
{
	uint64_t now = util_now_ns();

	if (n == 0)
		return;
	if (p[0].revents & POLLIN) {
		int cfd = api_accept(api);
		int slot = -1;

		for (int i = 0; i < API_MAX_CLIENTS && cfd >= 0; i++)
			if (api->client[i].fd < 0) {
				slot = i;
				break;
			}
		if (cfd >= 0 && slot < 0) {
			api_send(cfd, api_error("too many clients (at most %d)", API_MAX_CLIENTS), -1);
			close(cfd);
		} else if (cfd >= 0) {
			api->client[slot].fd = cfd;
			api->client[slot].len = 0;
			api->client[slot].last_ns = now;
		}
	}
	for (int i = 1; i < n; i++)
		if (p[i].fd >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR))) {
			api->client[i - 1].last_ns = now;
			api_read_client(api, e, &api->client[i - 1]);
		}
	api_expire(api, util_now_ns());
}
