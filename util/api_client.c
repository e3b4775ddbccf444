// SPDX-License-Identifier: MIT
/*
 * Client side of perfvisor's control socket (docs/api.md): send one JSON
 * line, read one reply line and the file descriptor it may carry. Used by
 * `perfvisor api` and by the stats tools to fetch the read-only stats fd.
 */
#include "util.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int util_api_connect(const char *path, struct errbuf *err)
{
	struct sockaddr_un sa;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path))
		return errbuf_set(err, -ENAMETOOLONG, "socket path '%s' is too long", path);
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errbuf_set(err, -errno, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		/* Only a missing or dead socket means "no VM"; a permission error is the user's. */
		int rc = errno == EACCES || errno == EPERM
				 ? errbuf_set(err, -errno,
					      "cannot connect to %s: %s (the socket is its owner's only)",
					      path, strerror(errno))
				 : errbuf_set(
					   err, -errno,
					   "cannot connect to %s: %s (is a VM running with --api-socket %s?)",
					   path, strerror(errno), path);

		close(fd);
		return rc;
	}
	return fd;
}

int util_api_request(int sock, const char *line, char *reply, size_t reply_len, int *fd_out, int timeout_ms,
		     struct errbuf *err)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	size_t len = strlen(line), got = 0;
	/*
	 * The request and its newline in one message (a line that already
	 * ends in '\n' is sent as is), so a reader sees the whole line at once.
	 */
	struct iovec req[2] = { { (void *)line, len }, { (void *)"\n", 1 } };
	struct msghdr rq = { .msg_iov = req, .msg_iovlen = len && line[len - 1] == '\n' ? 1 : 2 };

	if (fd_out)
		*fd_out = -1;
	if (reply_len == 0)
		return errbuf_set(err, -EINVAL, "no reply buffer");
	if (sendmsg(sock, &rq, MSG_NOSIGNAL) < 0) {
		/*
		 * The server may have answered and closed before taking the
		 * whole line (it refuses overlong requests): read its reply.
		 */
		if (errno != EPIPE && errno != ECONNRESET)
			return errbuf_set(err, -errno, "sending the request: %s", strerror(errno));
	}
	while (got < reply_len - 1) {
		struct pollfd p = { .fd = sock, .events = POLLIN };
		struct iovec iov = { reply + got, 1 };
		struct msghdr msg = { 0 };
		struct cmsghdr *c;
		ssize_t n;

		if (poll(&p, 1, timeout_ms) <= 0)
			return errbuf_set(err, -ETIMEDOUT, "no reply within %d ms", timeout_ms);
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		/* One byte at a time, so a passed fd arrives with the byte it rides on. */
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
		if (n <= 0)
			return errbuf_set(err, n < 0 ? -errno : -ECONNRESET, "reading the reply: %s",
					  n < 0 ? strerror(errno) : "connection closed");
		for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
				int fd;

				memcpy(&fd, CMSG_DATA(c), sizeof(int));
				if (fd_out && *fd_out < 0)
					*fd_out = fd;
				else
					close(fd);
			}
		if (reply[got++] == '\n')
			break;
	}
	reply[got] = '\0';
	return 0;
}
