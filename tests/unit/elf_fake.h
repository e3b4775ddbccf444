/* SPDX-License-Identifier: MIT */
/*
 * What the unit tests that write an ELF of their own share: the file
 * header of a static ELF64 x86-64 executable, the tables' offsets and
 * counts left for the test to fill in.
 */
#ifndef PERFVISOR_TESTS_ELF_FAKE_H
#define PERFVISOR_TESTS_ELF_FAKE_H

#include <elf.h>
#include <string.h>

static inline void elf_fake_header(Elf64_Ehdr *eh)
{
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(*eh);
}

#endif
