// SPDX-License-Identifier: MIT
/*
 * `perfvisor exporter --listen ADDR:PORT [--socket-dir DIR]`: serve the
 * statistics of every perfvisor VM whose control socket is in DIR at
 * http://ADDR:PORT/metrics in the Prometheus text format, for a monitoring
 * stack to scrape. HTTP is libmicrohttpd's; each scrape looks at DIR
 * afresh, so VMs come and go without a restart. The text is stats/prom.c's.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stats/stats.h"
#include "stats/tools_internal.h"

#define EXPORTER_DEFAULT_DIR "/run/perfvisor"
#define EXPORTER_MAX_VMS 1024
#define EXPORTER_VM_TIMEOUT_MS 2000 /* a VM's control socket must answer within this */

static const char exporter_usage[] =
	"Usage: perfvisor exporter --listen ADDR:PORT [--socket-dir DIR]\n"
	"Serve the statistics of every perfvisor VM whose control socket (run --api-socket)\n"
	"is in DIR at http://ADDR:PORT/metrics, in the Prometheus text exposition format,\n"
	"with vm (PID), name (run --name) and vcpu labels. DIR is read again at every scrape:\n"
	"VMs come and go without a restart. Runs until SIGINT or SIGTERM.\n"
	"\n"
	"Options:\n"
	"  --listen ADDR:PORT   where to listen: 127.0.0.1:9101, [::1]:9101, :9101 (every\n"
	"                       IPv4 address); port 0 picks a free one (printed at start)\n"
	"  --socket-dir DIR     the VMs' control sockets (default " EXPORTER_DEFAULT_DIR ")\n"
	"  --help               show this help\n"
	"Exit status: 0 after SIGINT/SIGTERM, 1 if it cannot listen, 2 on bad usage.\n";

struct exporter {
	const char *dir;
	struct ratelimit rl; /* log lines about VMs that gave no statistics */
};

/* One VM found in the directory. */
struct found_vm {
	struct stats_view *v;
	struct stats_snap *s;
	pid_t pid;
	char name[PV_STATS_VM_NAME_MAX];
};

#define usage_err(...) stats_usage_err("exporter", __VA_ARGS__)

/* A copy of s safe to print on one line: printable ASCII only, at most len - 1 bytes. */
static void printable(char *buf, size_t len, const char *s)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	buf[i] = '\0';
}

/* Open the region behind control socket `path`; 0, or -errno with err set. */
static int open_vm(const char *path, struct found_vm *vm, struct errbuf *err)
{
	const struct pv_stats_header *h;
	int fd = stats_socket_fd(path, EXPORTER_VM_TIMEOUT_MS, err), rc;

	if (fd < 0)
		return fd;
	rc = stats_view_open_fd(&vm->v, fd, err);
	close(fd);
	if (rc)
		return rc;
	if (stats_snap_create(&vm->s, vm->v)) {
		stats_view_close(vm->v);
		return errbuf_set(err, -ENOMEM, "out of memory");
	}
	stats_snap_take(vm->s);
	h = stats_view_header(vm->v);
	vm->pid = (pid_t)h->producer_pid;
	/* A producer's name is used only if it is one run --name accepts. */
	memcpy(vm->name, h->name, sizeof(vm->name));
	vm->name[sizeof(vm->name) - 1] = '\0';
	if (vm->name[0] && !stats_vm_name_ok(vm->name))
		vm->name[0] = '\0';
	return 0;
}

static int cmp_vm(const void *a, const void *b)
{
	const struct found_vm *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Every VM in the directory, sorted by PID; *errors counts the sockets that gave none. */
static unsigned find_vms(struct exporter *x, FILE *out, struct found_vm *vms, unsigned *errors)
{
	DIR *d = opendir(x->dir);
	struct dirent *de;
	unsigned n = 0;

	*errors = 0;
	if (!d) {
		fprintf(out, "# perfvisor exporter: cannot read %s: %s\n", x->dir, strerror(errno));
		(*errors)++;
		return 0;
	}
	while ((de = readdir(d)) && n < EXPORTER_MAX_VMS) {
		char path[4096], safe[256];
		struct errbuf err = { "" };
		struct stat st;

		if (snprintf(path, sizeof(path), "%s/%s", x->dir, de->d_name) >= (int)sizeof(path) ||
		    lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
			continue;
		memset(&vms[n], 0, sizeof(vms[n]));
		if (open_vm(path, &vms[n], &err) == 0) {
			n++;
			continue;
		}
		(*errors)++;
		printable(safe, sizeof(safe), err.msg);
		fprintf(out, "# perfvisor exporter: %s: %s\n", de->d_name, safe);
		if (ratelimit_allow(&x->rl))
			fprintf(stderr, "perfvisor exporter: %s: %s\n", path, safe);
	}
	closedir(d);
	qsort(vms, n, sizeof(*vms), cmp_vm);
	return n;
}

/* The body of /metrics: every VM's statistics, then the exporter's own two gauges. */
static char *scrape(struct exporter *x, size_t *len)
{
	struct found_vm *vms = calloc(EXPORTER_MAX_VMS, sizeof(*vms));
	struct stats_prom_vm *pv = calloc(EXPORTER_MAX_VMS, sizeof(*pv));
	char *buf = NULL;
	FILE *out = open_memstream(&buf, len);
	unsigned n = 0, errors = 0, i;

	if (!out || !vms || !pv) {
		if (out)
			fclose(out);
		free(buf);
		free(vms);
		free(pv);
		return NULL;
	}
	n = find_vms(x, out, vms, &errors);
	for (i = 0; i < n; i++)
		pv[i] = (struct stats_prom_vm){
			.v = vms[i].v, .s = vms[i].s, .pid = vms[i].pid, .name = vms[i].name
		};
	stats_prom_write(out, pv, n);
	fprintf(out,
		"# HELP perfvisor_exporter_vms VMs whose statistics this scrape read\n"
		"# TYPE perfvisor_exporter_vms gauge\n"
		"perfvisor_exporter_vms %u\n"
		"# HELP perfvisor_exporter_errors control sockets in the directory that gave no statistics this scrape\n"
		"# TYPE perfvisor_exporter_errors gauge\n"
		"perfvisor_exporter_errors %u\n",
		n, errors);
	for (i = 0; i < n; i++) {
		stats_snap_destroy(vms[i].s);
		stats_view_close(vms[i].v);
	}
	free(vms);
	free(pv);
	if (fclose(out)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, char *body,
			     size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result rc;

	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

__attribute__((format(printf, 3, 4))) static enum MHD_Result reply_text(struct MHD_Connection *c,
									unsigned status, const char *fmt, ...)
{
	char *body = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&body, fmt, ap);
	va_end(ap);
	if (n < 0)
		return MHD_NO;
	return reply(c, status, "text/plain; charset=utf-8", body, (size_t)n);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct exporter *x = cls;
	char safe[128];
	size_t len = 0;
	char *body;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)con_cls;
	printable(safe, sizeof(safe), url);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "perfvisor exporter: method %.16s is not allowed: GET %s or HEAD it\n",
				  method, strcmp(url, "/metrics") ? "/metrics" : safe);
	if (!strcmp(url, "/"))
		return reply_text(c, MHD_HTTP_OK, "perfvisor exporter: the metrics are at /metrics\n");
	if (strcmp(url, "/metrics"))
		return reply_text(c, MHD_HTTP_NOT_FOUND,
				  "perfvisor exporter: no page '%s' here: the metrics are at /metrics\n",
				  safe);
	body = scrape(x, &len);
	if (!body)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "perfvisor exporter: out of memory\n");
	return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len);
}

/* ADDR:PORT -> a socket address: 127.0.0.1:9101, [::1]:9101, :9101 (any IPv4). 0 or -EINVAL. */
static int parse_listen(const char *arg, struct sockaddr_storage *ss, socklen_t *sslen)
{
	const char *colon = strrchr(arg, ':');
	char host[64];
	uint64_t port;
	size_t hl;

	if (!colon || util_parse_u64(colon + 1, 0, 65535, &port))
		return -EINVAL;
	hl = (size_t)(colon - arg);
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, arg, hl);
	host[hl] = '\0';
	memset(ss, 0, sizeof(*ss));
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		host[hl - 1] = '\0';
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		*sslen = sizeof(*a);
		return inet_pton(AF_INET6, host + 1, &a->sin6_addr) == 1 ? 0 : -EINVAL;
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;

	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	*sslen = sizeof(*a);
	if (!hl) {
		a->sin_addr.s_addr = htonl(INADDR_ANY);
		return 0;
	}
	return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? 0 : -EINVAL;
}

/* The listening socket, or -1 with a message printed. */
static int listen_on(const char *arg, const struct sockaddr_storage *ss, socklen_t sslen, char *where,
		     size_t wlen)
{
	struct sockaddr_storage got;
	socklen_t glen = sizeof(got);
	char addr[INET6_ADDRSTRLEN];
	int one = 1, fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (const struct sockaddr *)ss, sslen) < 0 || listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&got, &glen) < 0) {
		fprintf(stderr, "perfvisor exporter: cannot listen on %s: %s\n", arg, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (got.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&got;

		inet_ntop(AF_INET6, &a->sin6_addr, addr, sizeof(addr));
		snprintf(where, wlen, "[%s]:%u", addr, ntohs(a->sin6_port));
	} else {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&got;

		inet_ntop(AF_INET, &a->sin_addr, addr, sizeof(addr));
		snprintf(where, wlen, "%s:%u", addr, ntohs(a->sin_port));
	}
	return fd;
}

static int check_dir(const char *dir)
{
	struct stat st;

	if (!*dir)
		return usage_err("--socket-dir needs a directory");
	if (stat(dir, &st) < 0)
		return usage_err(
			"--socket-dir %s: %s (create it, and start VMs with --api-socket %s/NAME.sock)", dir,
			strerror(errno), dir);
	if (!S_ISDIR(st.st_mode))
		return usage_err("--socket-dir %s is not a directory", dir);
	if (access(dir, R_OK | X_OK) < 0)
		return usage_err("--socket-dir %s: %s", dir, strerror(errno));
	return 0;
}

int stats_cmd_exporter(int argc, char **argv)
{
	enum {
		O_LISTEN = 256,
		O_DIR,
		O_HELP
	};
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "socket-dir", required_argument, NULL, O_DIR },
		{ "help", no_argument, NULL, O_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct exporter x = { .dir = EXPORTER_DEFAULT_DIR, .rl = RATELIMIT_INIT(1000000000ULL, 10) };
	struct sockaddr_storage ss;
	socklen_t sslen = 0;
	const char *listen_arg = NULL;
	struct MHD_Daemon *d;
	char where[INET6_ADDRSTRLEN + 16];
	sigset_t sigs;
	int opt, fd, sig, rc;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (opt) {
		case O_LISTEN:
			listen_arg = optarg;
			if (parse_listen(optarg, &ss, &sslen))
				return usage_err(
					"--listen '%s' is not ADDR:PORT (127.0.0.1:9101, [::1]:9101, :9101)",
					optarg);
			break;
		case O_DIR:
			x.dir = optarg;
			break;
		case O_HELP:
			fputs(exporter_usage, stdout);
			return 0;
		case ':':
			return usage_err("option '%s' needs a value", argv[optind - 1]);
		default:
			return usage_err("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_err("unexpected argument '%s'", argv[optind]);
	if (!listen_arg)
		return usage_err("--listen ADDR:PORT is required");
	rc = check_dir(x.dir);
	if (rc)
		return rc;
	fd = listen_on(listen_arg, &ss, sslen, where, sizeof(where));
	if (fd < 0)
		return 1;
	/* Blocked before libmicrohttpd starts its thread, which inherits the mask: only sigwait takes them. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
				     (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
			     0, NULL, NULL, handle, &x, MHD_OPTION_LISTEN_SOCKET, fd,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_CONNECTION_LIMIT,
			     (unsigned)64, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "perfvisor exporter: the HTTP server (libmicrohttpd) did not start\n");
		close(fd);
		return 1;
	}
	fprintf(stderr,
		"perfvisor exporter: serving http://%s/metrics for the VMs whose control sockets are in %s\n",
		where, x.dir);
	sigwait(&sigs, &sig);
	MHD_stop_daemon(d); /* closes the listening socket too */
	fprintf(stderr, "perfvisor exporter: stopped by signal %s\n", strsignal(sig));
	return 0;
}

/* The perfvisor-exporter binary, which `perfvisor exporter` execs (argv[0] "exporter"). */
int main(int argc, char **argv)
{
	return stats_cmd_exporter(argc, argv);
}
