// SPDX-License-Identifier: MIT
/*
 * perfvisor: the command line. Parses arguments, composes the VM from the
 * vmm/ API, and turns errors into one message and an exit status. Nothing
 * else lives here.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "stats/stats.h"
#include "vmm/migrate.h"
#include "vmm/vmm.h"

static const char main_usage[] =
	"Usage: perfvisor COMMAND [options]\n"
	"A compact KVM virtual machine monitor for running and measuring small guests.\n"
	"\n"
	"Commands:\n"
	"  run          boot a guest, or restore a snapshot (perfvisor run --help)\n"
	"  api          send requests to a VM's control socket: perfvisor api SOCKET JSON...\n"
	"  stat         show a running VM's statistics (perfvisor stat --help)\n"
	"  stats-check  check a running VM's statistics region (perfvisor stats-check --help)\n"
	"  snapshot     save a running VM into a directory (perfvisor snapshot --help)\n"
	"  snapshot-info  check a snapshot and show what it holds (perfvisor snapshot-info --help)\n"
	"  exporter     serve VMs' statistics to Prometheus over HTTP (perfvisor exporter --help)\n"
	"  profile      show a profile of perfvisor run --profile (perfvisor profile --help)\n"
	"  host         which kind of KVM host this is (perfvisor host --help)\n"
	"  migrate      move a running VM to another perfvisor (perfvisor migrate --help)\n"
	"  help         show this help\n";

static int cmd_run(int argc, char **argv)
{
	struct vm_config cfg;
	struct mig_incoming incoming = {
		.conn.fd = -1, .mem = { .fd = -1, .src_fd = -1 }, .kvm.fd = -1, .vm_fd = -1
	};
	struct errbuf err = { "" };
	struct vm *vm;
	sigset_t sigs;
	int rc;

	rc = cli_parse_run(argc, argv, &cfg, &err, stdout);
	if (rc == 1)
		return 0;
	if (!rc && cfg.prof.n)
		rc = prof_spec_check_host(&cfg.prof, &err);
	if (rc) {
		fprintf(stderr, "perfvisor run: %s\n", err.msg);
		return PV_EXIT_USAGE;
	}
	/*
	 * The signals that stop the VM cleanly (vm_stop_signals: INT, TERM,
	 * HUP, QUIT, ALRM, USR2) are blocked everywhere; vm_run() takes them
	 * from a signalfd. A shell starts background jobs with SIGINT ignored,
	 * and an ignored signal never reaches the signalfd: restore the default
	 * first. SIGPIPE is ignored: a closed console or client is an EPIPE to
	 * handle, not the end of the VM (docs/security.md, "Signals").
	 */
	vm_stop_signals(&sigs);
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&sigs, s) == 1)
			signal(s, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	/*
	 * A migration's destination: the machine, its memory and its state come
	 * first. Until they have, a stop signal ends the wait at once (nothing
	 * runs yet; the source sees the connection lost and runs on).
	 */
	if (cfg.incoming &&
	    mig_incoming_receive(&cfg, cfg.incoming_max_cpus, cfg.incoming_max_mem, &incoming, &err)) {
		fprintf(stderr, "perfvisor run: %s\n", err.msg);
		mig_incoming_fini(&incoming);
		return PV_EXIT_VMM_ERROR;
	}
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	rc = vm_create(&vm, &cfg, &err);
	/* The guest runs here only after the source's GO: until then the source may resume it. */
	if (cfg.incoming && mig_incoming_ready(&incoming, rc, err.msg, &err) && !rc) {
		vm_destroy(vm);
		rc = -1;
	}
	if (rc) {
		fprintf(stderr, "perfvisor run: %s\n", err.msg);
		mig_incoming_fini(&incoming);
		return PV_EXIT_VMM_ERROR;
	}
	rc = vm_run(vm, &err);
	vm_destroy(vm);
	mig_incoming_fini(&incoming);
	if (rc != 0 || cfg.verbose)
		fprintf(stderr, "perfvisor: %s (exit status %d)\n", err.msg, rc);
	return rc;
}

static const char api_usage[] =
	"Usage: perfvisor api SOCKET REQUEST...\n"
	"Send each REQUEST (one JSON line, e.g. '{\"cmd\":\"query\"}') to the control socket of a VM\n"
	"started with --api-socket SOCKET and print each reply line (docs/api.md). Exit status 0\n"
	"if every reply says \"ok\":true, 1 if one does not, 2 on usage or connection errors.\n";

static int cmd_api(int argc, char **argv)
{
	struct errbuf err = { "" };
	char reply[8192];
	int sock, status = 0;

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(api_usage, stdout);
		return 0;
	}
	if (argc < 3) {
		fprintf(stderr,
			"perfvisor api: needs a socket path and at least one request (see perfvisor api --help)\n");
		return PV_EXIT_USAGE;
	}
	sock = util_api_connect(argv[1], &err);
	if (sock < 0) {
		fprintf(stderr, "perfvisor api: %s\n", err.msg);
		return PV_EXIT_USAGE;
	}
	for (int i = 2; i < argc; i++) {
		int fd;

		if (util_api_request(sock, argv[i], reply, sizeof(reply), &fd, 10000, &err)) {
			fprintf(stderr, "perfvisor api: %s\n", err.msg);
			close(sock);
			return PV_EXIT_USAGE;
		}
		fputs(reply, stdout);
		if (fd >= 0) {
			printf("(received a file descriptor)\n");
			close(fd);
		}
		if (!strstr(reply, "\"ok\":true"))
			status = 1;
	}
	close(sock);
	return status;
}

static const char host_usage[] =
	"Usage: perfvisor host [--kind|--number]\n"
	"Print which kind of KVM host this machine is, as guests see it in their boot\n"
	"information (docs/boot.md): kvm_intel, kvm_amd, kvm_pvm or unknown, and whether\n"
	"the host is itself a VM. --kind prints only the name, --number only the value\n"
	"of enum pv_host_kind.\n";

static int cmd_host(int argc, char **argv)
{
	struct host_info h;
	char line[128];

	if (argc > 2 || (argc == 2 && strcmp(argv[1], "--kind") && strcmp(argv[1], "--number") &&
			 strcmp(argv[1], "--help") && strcmp(argv[1], "-h"))) {
		fprintf(stderr, "perfvisor host: unknown argument '%s' (see perfvisor host --help)\n",
			argc > 2 ? argv[2] : argv[1]);
		return PV_EXIT_USAGE;
	}
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(host_usage, stdout);
		return 0;
	}
	host_detect("", &h);
	if (argc == 2 && !strcmp(argv[1], "--kind"))
		printf("%s\n", host_kind_name(h.kind));
	else if (argc == 2)
		printf("%u\n", h.kind);
	else if (host_describe(&h, line, sizeof(line)) >= 0)
		printf("%s%s\n", line, access("/dev/kvm", F_OK) ? ", /dev/kvm missing" : "");
	return 0;
}

/*
 * The exporter is a binary of its own next to this one (build/ or wherever
 * both are installed): it links libmicrohttpd and GnuTLS, which a VM must
 * not pay for at every start. exec keeps the PID.
 */
static int cmd_exporter(char **argv)
{
	char self[4096], path[4200];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n <= 0) {
		fprintf(stderr, "perfvisor exporter: cannot find perfvisor's own path: %s\n",
			strerror(errno));
		return PV_EXIT_VMM_ERROR;
	}
	self[n] = '\0';
	slash = strrchr(self, '/');
	snprintf(path, sizeof(path), "%.*s/perfvisor-exporter", slash ? (int)(slash - self) : 1,
		 slash ? self : ".");
	execv(path, argv);
	fprintf(stderr, "perfvisor exporter: cannot run %s (it is installed next to perfvisor): %s\n", path,
		strerror(errno));
	return PV_EXIT_VMM_ERROR;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(main_usage, stderr);
		return PV_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "api"))
		return cmd_api(argc - 1, argv + 1);
	if (!strcmp(argv[1], "stat"))
		return stats_cmd_stat(argc - 1, argv + 1);
	if (!strcmp(argv[1], "stats-check"))
		return stats_cmd_check(argc - 1, argv + 1);
	if (!strcmp(argv[1], "exporter"))
		return cmd_exporter(argv + 1);
	if (!strcmp(argv[1], "host"))
		return cmd_host(argc - 1, argv + 1);
	if (!strcmp(argv[1], "migrate"))
		return mig_cmd_migrate(argc - 1, argv + 1);
	if (!strcmp(argv[1], "profile"))
		return prof_cmd_profile(argc - 1, argv + 1);
	if (!strcmp(argv[1], "snapshot"))
		return snap_cmd_snapshot(argc - 1, argv + 1);
	if (!strcmp(argv[1], "snapshot-info"))
		return snap_cmd_info(argc - 1, argv + 1);
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(main_usage, stdout);
		return 0;
	}
	fprintf(stderr, "perfvisor: unknown command '%s' (see perfvisor --help)\n", argv[1]);
	return PV_EXIT_USAGE;
}
