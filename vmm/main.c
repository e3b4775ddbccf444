// SPDX-License-Identifier: MIT
/*
 * perfvisor: the command line. Parses arguments, composes the VM from the
 * vmm/ API, and turns errors into one message and an exit status. Nothing
 * else lives here.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "vmm/vmm.h"

static const char main_usage[] =
	"Usage: perfvisor COMMAND [options]\n"
	"A compact KVM virtual machine monitor for running and measuring small guests.\n"
	"\n"
	"Commands:\n"
	"  run       boot a guest (perfvisor run --help)\n"
	"  help      show this help\n";

static int cmd_run(int argc, char **argv)
{
	struct vm_config cfg;
	struct errbuf err = { "" };
	struct vm *vm;
	sigset_t sigs;
	int rc;

	rc = cli_parse_run(argc, argv, &cfg, &err, stdout);
	if (rc == 1)
		return 0;
	if (rc) {
		fprintf(stderr, "perfvisor run: %s\n", err.msg);
		return PV_EXIT_USAGE;
	}
	/*
	 * Block SIGINT/SIGTERM everywhere; vm_run() takes them from a signalfd.
	 * A shell starts background jobs with SIGINT ignored, and an ignored
	 * signal never reaches the signalfd: restore the default first.
	 */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	rc = vm_create(&vm, &cfg, &err);
	if (rc) {
		fprintf(stderr, "perfvisor run: %s\n", err.msg);
		return PV_EXIT_VMM_ERROR;
	}
	rc = vm_run(vm, &err);
	vm_destroy(vm);
	if (rc != 0 || cfg.verbose)
		fprintf(stderr, "perfvisor: %s (exit status %d)\n", err.msg, rc);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(main_usage, stderr);
		return PV_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(main_usage, stdout);
		return 0;
	}
	fprintf(stderr, "perfvisor: unknown command '%s' (see perfvisor --help)\n", argv[1]);
	return PV_EXIT_USAGE;
}
