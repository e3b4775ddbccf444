// SPDX-License-Identifier: MIT
/*
 * The console sink: bytes from the UART and the test device's PRINT go to
 * stdout, a file, or nowhere. One lock keeps lines from different vCPUs
 * from interleaving inside a single write.
 */
#include "console.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int console_init(struct console *c, enum console_kind kind, const char *path, struct errbuf *err)
{
	c->fd = -1;
	c->owned = false;
	pthread_mutex_init(&c->lock, NULL);
	switch (kind) {
	case CONSOLE_STDIO:
		c->fd = STDOUT_FILENO;
		return 0;
	case CONSOLE_NONE:
		return 0;
	case CONSOLE_FILE:
		/*
		 * Non-blocking open: a FIFO without a reader is an error (ENXIO), not
		 * a hang before the signals are served; writes block again after.
		 */
		c->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0644);
		if (c->fd < 0 && errno == ENXIO)
			return errbuf_set(err, -ENXIO, "console '%s' is a FIFO that nobody reads", path);
		if (c->fd < 0)
			return errbuf_set(err, -errno, "cannot open console file '%s': %s", path,
					  strerror(errno));
		fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) & ~O_NONBLOCK);
		c->owned = true;
		return 0;
	}
	return errbuf_set(err, -EINVAL, "bad console kind");
}

void console_fini(struct console *c)
{
	if (c->owned && c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	pthread_mutex_destroy(&c->lock);
}

void console_write(struct console *c, const void *buf, size_t len)
{
	const char *p = buf;

	if (c->fd < 0)
		return;
	pthread_mutex_lock(&c->lock);
	while (len > 0) {
		ssize_t n = write(c->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* a closed stdout must not stop the guest */
		p += n;
		len -= (size_t)n;
	}
	pthread_mutex_unlock(&c->lock);
}
