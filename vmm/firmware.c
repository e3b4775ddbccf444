// SPDX-License-Identifier: MIT
/*
 * The interrupt controllers and timer as a PC firmware leaves them, for the
 * guests that expect a BIOS before them (multiboot, PVH, Linux): both 8259
 * PICs initialized (vectors 0x20 and 0x28, off the exception range, every
 * line masked but the cascade) and PIT channel 0 in mode 3 at 18.2 Hz.
 * perfvisor's own ELF64 guests keep KVM's reset state.
 */
#include "x86.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

static int set_pic(int vm_fd, uint32_t chip, uint8_t base, uint8_t imr, struct errbuf *err)
{
	struct kvm_irqchip c = { .chip_id = chip };
	struct kvm_pic_state *p = &c.chip.pic;

	if (ioctl(vm_fd, KVM_GET_IRQCHIP, &c) < 0)
		return errbuf_set(err, -errno, "KVM_GET_IRQCHIP (PIC %u): %s", chip, strerror(errno));
	p->irq_base = base;
	p->imr = imr;
	p->init_state = 0; /* the ICW sequence is over */
	p->init4 = 1;	   /* ICW4 given: 8086 mode */
	p->auto_eoi = 0;
	p->special_fully_nested_mode = 0;
	p->irr = p->isr = 0;
	if (ioctl(vm_fd, KVM_SET_IRQCHIP, &c) < 0)
		return errbuf_set(err, -errno, "KVM_SET_IRQCHIP (PIC %u): %s", chip, strerror(errno));
	return 0;
}

int x86_setup_firmware_state(int vm_fd, struct errbuf *err)
{
	struct kvm_pit_state2 pit;
	int rc = set_pic(vm_fd, KVM_IRQCHIP_PIC_MASTER, 0x20, 0xfb, err);

	if (!rc)
		rc = set_pic(vm_fd, KVM_IRQCHIP_PIC_SLAVE, 0x28, 0xff, err);
	if (rc)
		return rc;
	if (ioctl(vm_fd, KVM_GET_PIT2, &pit) < 0)
		return errbuf_set(err, -errno, "KVM_GET_PIT2: %s", strerror(errno));
	pit.channels[0].count = 0x10000; /* a count of 0 means 65536: 18.2 Hz */
	pit.channels[0].mode = 3;	 /* square wave */
	pit.channels[0].rw_mode = 3;	 /* low byte, then high byte */
	pit.channels[0].gate = 1;
	if (ioctl(vm_fd, KVM_SET_PIT2, &pit) < 0)
		return errbuf_set(err, -errno, "KVM_SET_PIT2: %s", strerror(errno));
	return 0;
}
