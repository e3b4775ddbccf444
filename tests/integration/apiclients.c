// SPDX-License-Identifier: MIT
/*
 * Test helper: open N connections to a control socket at once, hold them
 * silent (or send REQUEST on each), and for up to HOLD seconds collect
 * what the server says and whether it closes them. Prints one line per
 * connection: "N: closed|open|refused: FIRST REPLY LINE". For the limits
 * on clients (count, idle time, out of fds). Usage:
 * apiclients SOCKET N HOLD_SECONDS [REQUEST]
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX 64

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n, fd[MAX], closed[MAX] = { 0 };
	char reply[MAX][256] = { { 0 } };
	size_t got[MAX] = { 0 };
	time_t end;

	if (argc < 4 || (n = atoi(argv[2])) < 1 || n > MAX) {
		fprintf(stderr, "usage: apiclients SOCKET N(1-%d) HOLD_SECONDS [REQUEST]\n", MAX);
		return 2;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	for (int i = 0; i < n; i++) {
		fd[i] = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd[i] < 0 || connect(fd[i], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			snprintf(reply[i], sizeof(reply[i]), "refused: %s", strerror(errno));
			closed[i] = 2;
			continue;
		}
		if (argc > 4) {
			(void)!write(fd[i], argv[4], strlen(argv[4]));
			(void)!write(fd[i], "\n", 1);
		}
	}
	end = time(NULL) + atoi(argv[3]);
	while (time(NULL) < end) {
		struct pollfd p[MAX];
		int open = 0;

		for (int i = 0; i < n; i++) {
			p[i] = (struct pollfd){ .fd = closed[i] ? -1 : fd[i], .events = POLLIN };
			open += !closed[i];
		}
		if (!open)
			break;
		if (poll(p, (nfds_t)n, 200) <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			ssize_t r;

			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = read(fd[i], reply[i] + got[i], sizeof(reply[i]) - 1 - got[i]);
			if (r <= 0)
				closed[i] = 1;
			else
				got[i] += (size_t)r;
		}
	}
	for (int i = 0; i < n; i++) {
		char *nl = strchr(reply[i], '\n');

		if (nl)
			*nl = '\0';
		printf("%d: %s: %s\n", i,
		       closed[i] == 2 ? "refused"
		       : closed[i]    ? "closed"
				      : "open",
		       reply[i]);
	}
	return 0;
}
