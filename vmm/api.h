/* SPDX-License-Identifier: MIT */
/*
 * The control socket (--api-socket, docs/api.md): a Unix stream socket
 * speaking JSON lines, polled by the main thread with everything else.
 * Calls control (pause, resume), the snapshot, the profiler and the
 * statistics; nothing calls back into it but the main loop.
 */
#ifndef PERFVISOR_VMM_API_H
#define PERFVISOR_VMM_API_H

#include <poll.h>
#include <stdint.h>

#include "control.h"
#include "snapshot.h"
#include "vm_profile.h"
#include "vm_stats.h"

#define API_MAX_CLIENTS 8
#define API_IDLE_TIMEOUT_MS 10000 /* a client silent this long is closed: it holds a slot */

struct api_client {
	int fd; /* -1 = free */
	size_t len;
	uint64_t last_ns; /* connected or last request */
	char buf[4096];
};

struct api {
	int listen_fd;	/* -1 = no --api-socket */
	int reserve_fd; /* /dev/null, given up to accept and refuse a client when out of fds */
	const char *path;
	struct api_client client[API_MAX_CLIENTS];
	uint64_t requests, bad_requests;
};

/* What the requests act on: the VM's parts, stable while it runs. */
struct api_env {
	struct vmctl *ctl;
	const struct vm_snapshot_env *snap;
	struct vm_profile *prof;
	struct vm_stats *stats;
	const char *name; /* NULL = none */
};

/* Listen on `path` (NULL: no socket). 0 or -errno with a message; fini is safe after a failure. */
int api_init(struct api *api, const char *path, struct errbuf *err);
void api_fini(struct api *api);
/* Fill pollfds for the socket and its clients; returns how many. */
int api_pollfds(struct api *api, struct pollfd *p, int max);
/* Serve whatever those pollfds reported. Main thread. */
void api_service(struct api *api, const struct api_env *e, const struct pollfd *p, int n);

#endif
