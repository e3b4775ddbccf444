// SPDX-License-Identifier: MIT
/*
 * Test helper: open N connections to a control socket at once, hold them
 * silent (or send REQUEST on each), and for up to HOLD seconds collect
 * what the server says and whether it closes them. Prints one line per
 * connection: "N: closed|open|refused: FIRST REPLY LINE". For the limits
 * on clients (count, idle time, out of fds). Usage:
 * apiclients SOCKET N HOLD_SECONDS [REQUEST]
 *
 * apiclients SOCKET --flood: one client that sends requests and never
 * reads, until its writes stall for a second (the server stopped reading
 * or closed), then reads what it got. Prints "flood: sent N, got M whole
 * replies, K broken lines, closed|open". The server must never block on
 * it, and must never send half a reply.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX 64

static int flood(const struct sockaddr_un *sa)
{
	static const char req[] = "{\"cmd\":\"query\"}\n";
	static char in[1 << 22];
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	long sent = 0, whole = 0, broken = 0;
	size_t have = 0;
	time_t idle_since = time(NULL);
	int closed = 0;

	if (fd < 0 || connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0) {
		perror("connect");
		return 1;
	}
	fcntl(fd, F_SETFL, O_NONBLOCK);
	while (time(NULL) - idle_since < 2) {
		ssize_t w = send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL);

		if (w == (ssize_t)sizeof(req) - 1) {
			sent++;
			idle_since = time(NULL);
		} else if (w < 0 && errno != EAGAIN) {
			break; /* the server shut the connection */
		} else {
			usleep(10000);
		}
	}
	fcntl(fd, F_SETFL, 0);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, 3000) <= 0)
			break;
		r = read(fd, in + have, sizeof(in) - 1 - have);
		if (r <= 0) {
			closed = 1;
			break;
		}
		have += (size_t)r;
		if (have == sizeof(in) - 1)
			break;
	}
	in[have] = '\0';
	for (char *line = in, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
		*nl = '\0';
		if (line[0] == '{' && nl > line && nl[-1] == '}' && strstr(line, "\"ok\":true"))
			whole++;
		else
			broken++;
	}
	printf("flood: sent %ld, got %ld whole replies, %ld broken lines, %s\n", sent, whole, broken,
	       closed ? "closed" : "open");
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n, fd[MAX], closed[MAX] = { 0 };
	char reply[MAX][256] = { { 0 } };
	size_t got[MAX] = { 0 };
	time_t end;

	if (argc == 3 && !strcmp(argv[2], "--flood")) {
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
		return flood(&sa);
	}
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
