/* SPDX-License-Identifier: MIT */
/*
 * The console sink: bytes from the UART and the test device's PRINT go to
 * stdout, a file, or nowhere. Calls nothing else in vmm/.
 */
#ifndef PERFVISOR_VMM_CONSOLE_H
#define PERFVISOR_VMM_CONSOLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/util.h"
#include "vmm.h"

struct console {
	int fd;	    /* -1 = discard */
	bool owned; /* close on fini */
	pthread_mutex_t lock;
};

/* Open the sink --console names (kind, and path for CONSOLE_FILE). 0 or -errno with a message. */
int console_init(struct console *c, enum console_kind kind, const char *path, struct errbuf *err);
void console_fini(struct console *c);
/* Write all of buf, whole: lines of different vCPUs never interleave within one write. Any thread. */
void console_write(struct console *c, const void *buf, size_t len);

#endif
