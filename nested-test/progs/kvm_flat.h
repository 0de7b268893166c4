/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvm_flat.h: the smallest KVM VM the in-L1 tests need, on the raw KVM API
 * (no selftest library): one vCPU in flat 32-bit protected mode without
 * paging, its code in 64 KiB of anonymous memory at GPA 0 (slot 0), and
 * memslots the test adds (a dmemfs mapping).  The reader the VM starts
 * with loops over
 *     mov eax, [GPA]; mov edx, KVM_FLAT_PORT; out dx, eax; jmp loop
 * so that every KVM_RUN returns a KVM_EXIT_IO with the 32-bit word the
 * guest read at GPA.  Used by kvm_dmem_test.c and hwpoison_test.c.
 */
#ifndef KVM_FLAT_H
#define KVM_FLAT_H

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define KVM_FLAT_CODE_SIZE	(64UL << 10)
#define KVM_FLAT_CODE_GPA	0x1000UL
#define KVM_FLAT_PORT		0x10

struct kvm_flat {
	int kvm_fd, vm_fd, vcpu_fd;
	struct kvm_run *run;
	size_t run_size;
	uint8_t *code;		/* slot 0: GPA 0 .. KVM_FLAT_CODE_SIZE */
};

static void kvm_flat_seg(struct kvm_segment *s, uint16_t sel, uint8_t type)
{
	memset(s, 0, sizeof(*s));
	s->limit = 0xffffffff;
	s->selector = sel;
	s->type = type;
	s->present = 1;
	s->db = 1;
	s->s = 1;
	s->g = 1;
}

/* Put CODE (LEN bytes) at KVM_FLAT_CODE_GPA and the vCPU at its start. */
static int kvm_flat_code(struct kvm_flat *k, const void *code, size_t len)
{
	struct kvm_regs regs;

	memcpy(k->code + KVM_FLAT_CODE_GPA, code, len);
	memset(&regs, 0, sizeof(regs));
	regs.rip = KVM_FLAT_CODE_GPA;
	regs.rflags = 2;
	return ioctl(k->vcpu_fd, KVM_SET_REGS, &regs);
}

/* Make the vCPU read the word at GPA from now on (the reader, from its start). */
static int kvm_flat_reader(struct kvm_flat *k, uint32_t gpa)
{
	uint8_t reader[] = {
		0xa1, 0, 0, 0, 0,		/* mov eax, [gpa] (moffs32 at 1) */
		0xba, KVM_FLAT_PORT, 0, 0, 0,	/* mov edx, KVM_FLAT_PORT */
		0xef,				/* out dx, eax */
		0xeb, 0xf3,			/* jmp -13 */
	};

	memcpy(reader + 1, &gpa, sizeof(gpa));
	return kvm_flat_code(k, reader, sizeof(reader));
}

/* Memslot SLOT: LEN bytes at HVA seen by the guest at GPA. */
static int kvm_flat_slot(struct kvm_flat *k, unsigned int slot, uint64_t gpa, void *hva,
			 size_t len)
{
	struct kvm_userspace_memory_region r = {
		.slot = slot, .guest_phys_addr = gpa, .memory_size = len,
		.userspace_addr = (uintptr_t)hva,
	};

	return ioctl(k->vm_fd, KVM_SET_USER_MEMORY_REGION, &r);
}

/* undo what kvm_flat_create() made; safe on a zeroed or closed one */
static void kvm_flat_close(struct kvm_flat *k)
{
	if (k->run && k->run != MAP_FAILED)
		munmap(k->run, k->run_size);
	if (k->code && k->code != MAP_FAILED)
		munmap(k->code, KVM_FLAT_CODE_SIZE);
	if (k->vcpu_fd > 0)
		close(k->vcpu_fd);
	if (k->vm_fd > 0)
		close(k->vm_fd);
	if (k->kvm_fd > 0)
		close(k->kvm_fd);
	memset(k, 0, sizeof(*k));
}

/*
 * The VM, its code slot and its vCPU, reading GPA 0 until kvm_flat_reader()
 * says otherwise.  0, or -1 with errno and *WHAT naming the step that failed
 * (kvm_flat_close() undoes a half-made one).
 */
static int kvm_flat_create(struct kvm_flat *k, const char **what)
{
	struct kvm_sregs sregs;
	int ret;

	memset(k, 0, sizeof(*k));
	*what = "mmap the code";
	k->code = mmap(NULL, KVM_FLAT_CODE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (k->code == MAP_FAILED)
		return -1;
	*what = "open /dev/kvm";
	k->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (k->kvm_fd < 0)
		return -1;
	*what = "KVM_CREATE_VM";
	k->vm_fd = ioctl(k->kvm_fd, KVM_CREATE_VM, 0);
	if (k->vm_fd < 0)
		return -1;
	*what = "the code memslot";
	if (kvm_flat_slot(k, 0, 0, k->code, KVM_FLAT_CODE_SIZE))
		return -1;
	*what = "KVM_CREATE_VCPU";
	k->vcpu_fd = ioctl(k->vm_fd, KVM_CREATE_VCPU, 0);
	if (k->vcpu_fd < 0)
		return -1;
	*what = "KVM_GET_VCPU_MMAP_SIZE";
	ret = ioctl(k->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, NULL);
	if (ret <= 0)
		return -1;
	k->run_size = ret;
	*what = "mmap kvm_run";
	k->run = mmap(NULL, k->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, k->vcpu_fd, 0);
	if (k->run == MAP_FAILED)
		return -1;
	*what = "flat protected mode (sregs)";
	if (ioctl(k->vcpu_fd, KVM_GET_SREGS, &sregs))
		return -1;
	kvm_flat_seg(&sregs.cs, 0x08, 0x0b);	/* code, execute/read, accessed */
	kvm_flat_seg(&sregs.ds, 0x10, 0x03);	/* data, read/write, accessed */
	sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
	sregs.cr0 |= 1;				/* PE */
	sregs.cr0 &= ~(1UL << 31);		/* no PG */
	if (ioctl(k->vcpu_fd, KVM_SET_SREGS, &sregs))
		return -1;
	*what = "the reader";
	return kvm_flat_reader(k, 0);
}

static void kvm_flat_on_alarm(int sig)
{
	(void)sig;
}

/*
 * One KVM_RUN, bounded by a 60 s alarm.  Returns 0 and the word of an IO
 * exit on KVM_FLAT_PORT in *VAL; else -1 with *WHY set: KVM_RUN's errno
 * ("hung" when the alarm ended it), or the exit reason.
 */
static int kvm_flat_out(struct kvm_flat *k, uint32_t *val, char *why, size_t wlen)
{
	struct sigaction sa = { .sa_handler = kvm_flat_on_alarm };
	struct kvm_run *run = k->run;
	unsigned int left;
	int ret, err;

	sigaction(SIGALRM, &sa, NULL);	/* no SA_RESTART: KVM_RUN gets EINTR */
	alarm(60);
	ret = ioctl(k->vcpu_fd, KVM_RUN, NULL);
	err = errno;
	left = alarm(0);
	if (ret < 0) {
		snprintf(why, wlen, "KVM_RUN failed: %s%s", strerror(err),
			 err == EINTR && !left ? " (no exit within 60 s: hung)" : "");
		return -1;
	}
	if (run->exit_reason != KVM_EXIT_IO || run->io.port != KVM_FLAT_PORT ||
	    run->io.direction != KVM_EXIT_IO_OUT || run->io.size != 4) {
		snprintf(why, wlen, "exit reason %u (io port 0x%x dir %u size %u)",
			 run->exit_reason, run->io.port, run->io.direction, run->io.size);
		return -1;
	}
	memcpy(val, (uint8_t *)run + run->io.data_offset, sizeof(*val));
	return 0;
}

#endif /* KVM_FLAT_H */
