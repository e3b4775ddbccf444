// SPDX-License-Identifier: MIT
/*
 * stats-check built against a frozen ABI header (tests/abi/vN): the same
 * checker and reader sources, compiled with -Itests/abi/vN first, so an old
 * reader is tested against the current producer (tests/integration).
 */
#include "stats/stats.h"

int main(int argc, char **argv)
{
	argv[0] = "stats-check";
	return stats_cmd_check(argc, argv);
}
