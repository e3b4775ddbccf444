// SPDX-License-Identifier: MIT
/*
 * The virtio-net tests' tap maker (root): `mktap NAME [UID]` makes a
 * persistent tap NAME (owned by UID if given, so that user may attach
 * without CAP_NET_ADMIN), `mktap -d NAME` deletes it. What
 * `ip tuntap add/del NAME mode tap [user U]` does, for userlands without it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	bool del = argc == 3 && !strcmp(argv[1], "-d");
	const char *name = del ? argv[2] : argv[1];
	struct ifreq ifr = { 0 };
	int fd;

	if (argc < 2 || argc > 3 || strlen(name) >= IFNAMSIZ) {
		fprintf(stderr, "usage: mktap NAME [UID] | mktap -d NAME\n");
		return 2;
	}
	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "mktap: /dev/net/tun: %s\n", strerror(errno));
		return 1;
	}
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	memcpy(ifr.ifr_name, name, strlen(name));
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		fprintf(stderr, "mktap: TUNSETIFF %s: %s\n", name, strerror(errno));
		return 1;
	}
	if (!del && argc == 3 && ioctl(fd, TUNSETOWNER, (unsigned long)strtoul(argv[2], NULL, 10)) < 0) {
		fprintf(stderr, "mktap: TUNSETOWNER: %s\n", strerror(errno));
		return 1;
	}
	if (ioctl(fd, TUNSETPERSIST, del ? 0 : 1) < 0) {
		fprintf(stderr, "mktap: TUNSETPERSIST: %s\n", strerror(errno));
		return 1;
	}
	close(fd);
	return 0;
}
