// SPDX-License-Identifier: MIT
/*
 * How the stats tools find a running VM's region: a TARGET argument (a PID
 * or a control socket path) becomes a read-only fd, through /proc/PID/fd
 * or the control socket's stats-fd request (docs/stats-abi.md).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stats/stats.h"
#include "stats/tools_internal.h"

int stats_usage_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "perfvisor %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see perfvisor %s --help)\n", cmd);
	return 2;
}

int stats_pid_fd(pid_t pid, struct errbuf *err)
{
	static const char want[] = "/memfd:" STATS_MEMFD_NAME " (deleted)";
	char path[64], link[sizeof(want) + 1];
	struct dirent *de;
	DIR *dir;
	int fd = -1;

	if (pid <= 0)
		return errbuf_set(err, -EINVAL, "%d is not a process id", (int)pid);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	if (!dir) {
		if (errno == ENOENT)
			return errbuf_set(err, -ESRCH, "no such process %d", (int)pid);
		if (errno == EACCES || errno == EPERM)
			return errbuf_set(err, -EACCES,
					  "permission denied reading %s (run as the VMM's user or as root)",
					  path);
		return errbuf_set(err, -errno, "%s: %s", path, strerror(errno));
	}
	while ((de = readdir(dir))) {
		char fdpath[sizeof(path) + sizeof(de->d_name) + 1];
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(fdpath, sizeof(fdpath), "%s/%s", path, de->d_name);
		n = readlink(fdpath, link, sizeof(link));
		if (n != (ssize_t)sizeof(want) - 1 || memcmp(link, want, (size_t)n))
			continue;
		fd = open(fdpath, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;

			closedir(dir);
			if (e == EACCES || e == EPERM)
				return errbuf_set(err, -EACCES, "permission denied opening %s", fdpath);
			return errbuf_set(err, -e, "%s: %s", fdpath, strerror(e));
		}
		break;
	}
	closedir(dir);
	if (fd < 0)
		return errbuf_set(err, -ENOENT, "process %d has no perfvisor statistics region", (int)pid);
	return fd;
}

int stats_view_open_pid(struct stats_view **out, pid_t pid, struct errbuf *err)
{
	int fd = stats_pid_fd(pid, err);
	int rc;

	*out = NULL;
	if (fd < 0)
		return fd;
	rc = stats_view_open_fd(out, fd, err);
	close(fd);
	return rc;
}

/*
 * The control socket protocol: send {"cmd":"stats-fd"}\n, receive one JSON
 * line with the fd attached (SCM_RIGHTS). Without an fd, the line is the
 * error. The reply is not parsed further: the fd is the answer.
 */
int stats_socket_fd(const char *path, int timeout_ms, struct errbuf *err)
{
	char line[256];
	int s, fd, rc;
	size_t n;

	s = util_api_connect(path, err);
	if (s < 0)
		return s;
	rc = util_api_request(s, "{\"cmd\":\"stats-fd\"}", line, sizeof(line), &fd, timeout_ms, err);
	close(s);
	if (rc)
		return rc;
	if (fd >= 0)
		return fd;
	n = strlen(line);
	for (size_t i = 0; i < n; i++) /* keep the message printable */
		if ((unsigned char)line[i] < 0x20 || (unsigned char)line[i] > 0x7e)
			line[i] = i + 1 == n ? 0 : ' ';
	return errbuf_set(err, -EPROTO, "%s sent no stats fd%s%s", path, n ? ": " : "", line);
}

int stats_target_fd(const char *target, pid_t *pid, struct errbuf *err)
{
	struct stat st;
	uint64_t v;

	*pid = 0;
	if (target[0] >= '0' && target[0] <= '9' && util_parse_u64(target, 1, INT_MAX, &v) == 0) {
		*pid = (pid_t)v;
		return stats_pid_fd(*pid, err);
	}
	if (stat(target, &st) < 0)
		return errbuf_set(err, -ENOENT,
				  "TARGET %s is neither a process id nor an existing socket path", target);
	if (!S_ISSOCK(st.st_mode))
		return errbuf_set(err, -EINVAL,
				  "TARGET %s is not a Unix socket (give a PID or --api-socket path)", target);
	return stats_socket_fd(target, 10000, err);
}
