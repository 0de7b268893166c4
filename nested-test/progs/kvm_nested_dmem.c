// SPDX-License-Identifier: GPL-2.0
/*
 * kvm_nested_dmem: nested SVM with its state in dmem.  Runs inside L1.
 *
 *   kvm_nested_dmem DIR [RUNS]
 *
 * A VM made with the KVM selftest library (tools/testing/selftests/kvm,
 * libkvm objects of the 6.12 tree) gets a second memslot: one dpage of a
 * dmemfs file created in DIR (a dmemfs mount), at GPA = GVA = 1 GiB.  Its
 * vCPU is a nested hypervisor: the VMCB, the host save area, the MSR
 * permission map, the nested guest's stack and a data page all live in that
 * dpage.  The vCPU runs the nested guest RUNS times (default 64); the nested
 * guest adds one to a counter in the data page and leaves with VMMCALL.
 *
 * What it proves: KVM maps the VMCB a guest hands to VMRUN with
 * kvm_vcpu_map() on every VMRUN and #VMEXIT.  For a pfn without struct page
 * that is memremap(), which failed for dmem until try_ram_remap() learnt
 * about it; KVM then skips the VMRUN without a word.  The checks:
 *   - every VMRUN reached the nested guest: the counter is RUNS;
 *   - KVM wrote each #VMEXIT back into the dmem VMCB: the host reads
 *     exit_code SVM_EXIT_VMMCALL there, through its own mapping of the file;
 *   - the memory was dmem: the file holds one dpage (st_blocks) and the
 *     slot's host range is a MAP_SHARED mapping of it (/proc/self/maps).
 *
 * Prints one line "nested-svm: ..." with the numbers; exits 0 only if all
 * checks hold (the library's TEST_ASSERT exits non-zero with a reason, and a
 * CPU without SVM is a failure here, not a skip).
 *
 *   kvm_nested_dmem DIR --hold
 *
 * KVM holding the VMCB's dpage across a punch hole, deterministically: the
 * nested guest's MSR permission map lives in a third memslot whose memory
 * is registered with userfaultfd, untouched.  VMRUN maps the VMCB
 * (kvm_vcpu_map()), then reads the MSR map and blocks in that fault, map
 * held.  Meanwhile the host punches the VMCB's dpage out of its file and
 * gives the pool's next dpage to a victim file.  The dpage must stay out of
 * the pool while KVM holds it (pinned_bytes 4096, free_bytes unchanged, the
 * victim gets another dpage); once the fault is served and the nested guest
 * has run, the pin is gone and the pool is back.  Prints "hold: ...".
 *
 *   kvm_nested_dmem DIR --race SECONDS
 *
 * KVM holding a dpage that its file lets go of.  The vCPU runs the nested
 * guest in a loop (every #VMEXIT writes the VMCB through kvm_vcpu_map())
 * while a second thread punches the VM's dpage out of its file, gives the
 * pool's next dpage to a victim file, and checks, right away and again
 * after it let the vCPU thread run, that the victim's pages stay zero; a
 * third thread keeps the CPUs busy so that the vCPU thread is preempted
 * inside KVM, map held.  A write of KVM's into a dpage it no longer owns
 * shows up in the victim: "race: ... leaks N" with N > 0, exit 1.  The
 * vCPU builds each VMCB in slot 0 and publishes it into the dpage in an
 * order that no punch can tear into a VMCB VMRUN accepts (publish_vmcb()),
 * and a vCPU that does not stop within 60 s of the end is a FAIL line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

/* kvm_util.h brings the library's test_util.h (not nested-test/progs/test_util.h) */
#include "kvm_util.h"
#include "processor.h"
#include "svm_util.h"

#define DMEM_SLOT	1
#define DMEM_GPA	(1UL << 30)	/* GVA too: identity-mapped */
#define DMEM_PAGES	8		/* 4K pages used of the dpage */
/* page indexes inside the dpage */
#define PG_SVM		0		/* struct svm_test_data */
#define PG_VMCB		1
#define PG_HSAVE	2
#define PG_MSRPM	3		/* and 4: the MSR map is 8 KiB */
#define PG_STACK	5		/* the nested guest's stack */
#define PG_DATA		6		/* the counter */
#define GVA(pg)		(DMEM_GPA + (pg) * 4096UL)

static void l2_guest_code(void)
{
	(*(volatile uint64_t *)GVA(PG_DATA))++;
	__asm__ __volatile__("vmmcall");
}

/*
 * --race: the VMCB the vCPU builds for the nested guest, in slot 0.
 *
 * A punch between two of the guest's stores into the dmem VMCB leaves a
 * fresh zeroed dpage holding only the stores after it.  Such a torn VMCB
 * may still pass VMRUN's checks: generic_svm_setup() stores the segments
 * before EFER, the ASID and the intercepts, so losing only the segments
 * runs the nested guest with a null CS, in 16-bit code, where it may halt
 * or loop for good without an intercept, and the test hangs.  So the vCPU
 * builds the VMCB here and publishes it with publish_vmcb().
 */
static struct svm_test_data *race_tmpl;

/*
 * Copy the VMCB forward, 8 bytes a store, so that a torn copy holds the
 * stores from some offset on.  From offset 24 on it lacks the VMRUN
 * intercept (bit 32 of the intercept word at offset 12: byte 16) and VMRUN
 * refuses it (VMEXIT_INVALID); from 8 or 16 on it lacks only bytes that
 * generic_svm_setup() leaves zero.  Either way no torn VMCB runs.
 */
static void publish_vmcb(void *dst, const void *src)
{
	volatile uint64_t *d = dst;
	const uint64_t *s = src;
	size_t i;

	for (i = 0; i < sizeof(struct vmcb) / 8; i++)
		d[i] = s[i];
}

static void l1_guest_code(struct svm_test_data *svm, uint64_t runs,
			  uint64_t stop_gva)
{
	volatile uint64_t *stop = (volatile uint64_t *)stop_gva;
	uint64_t i;

	if (runs == 0) {	/* --hold: one VMRUN that reads the MSR map */
		generic_svm_setup(svm, l2_guest_code,
				  (void *)(GVA(PG_STACK) + 4096 - 8));
		svm->vmcb->control.intercept |= 1ULL << INTERCEPT_MSR_PROT;
		run_guest(svm->vmcb, svm->vmcb_gpa);
		GUEST_DONE();
	}

	if (stop) {
		GUEST_SYNC(0);
		while (!*stop) {
			generic_svm_setup(race_tmpl, l2_guest_code,
					  (void *)(GVA(PG_STACK) + 4096 - 8));
			publish_vmcb(svm->vmcb, race_tmpl->vmcb);
			run_guest(svm->vmcb, svm->vmcb_gpa);
		}
		GUEST_DONE();
	}
	for (i = 0; i < runs; i++) {
		generic_svm_setup(svm, l2_guest_code,
				  (void *)(GVA(PG_STACK) + 4096 - 8));
		run_guest(svm->vmcb, svm->vmcb_gpa);
		__GUEST_ASSERT(svm->vmcb->control.exit_code == SVM_EXIT_VMMCALL,
			       "run %lu: exit code 0x%lx", i,
			       (unsigned long)svm->vmcb->control.exit_code);
		__GUEST_ASSERT(*(volatile uint64_t *)GVA(PG_DATA) == i + 1,
			       "run %lu: data 0x%lx", i,
			       (unsigned long)*(volatile uint64_t *)GVA(PG_DATA));
	}
	GUEST_DONE();
}

/* the dpage size of the dmemfs mount DIR (its f_bsize) */
static size_t dmemfs_dpage(const char *dir)
{
	struct statfs sfs;

	TEST_ASSERT(statfs(dir, &sfs) == 0, "statfs %s: %m", dir);
	TEST_ASSERT((unsigned long)sfs.f_type == DMEMFS_MAGIC,
		    "%s is not a dmemfs mount (f_type 0x%lx)", dir,
		    (unsigned long)sfs.f_type);
	return sfs.f_bsize;
}

/* a MAP_SHARED mapping of FD, SIZE bytes, aligned to SIZE */
static void *map_aligned(int fd, size_t size)
{
	char *r, *p;

	r = mmap(NULL, 2 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	TEST_ASSERT(r != MAP_FAILED, "mmap reserve: %m");
	p = (char *)(((uintptr_t)r + size - 1) & ~(size - 1));
	TEST_ASSERT(mmap(p, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			 fd, 0) == p, "mmap of the dmemfs file: %m");
	if (p > r)
		munmap(r, p - r);
	munmap(p + size, r + size - p);
	return p;
}

/* does /proc/self/maps show HVA inside a shared mapping of PATH? */
static int mapped_from(void *hva, const char *path)
{
	unsigned long lo, hi;
	char line[512], perm[8], file[256];
	int found = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	TEST_ASSERT(f, "/proc/self/maps: %m");
	while (fgets(line, sizeof(line), f)) {
		file[0] = '\0';
		/* the file is unlinked: "PATH (deleted)" */
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &lo, &hi, perm, file) < 3)
			continue;
		if ((uintptr_t)hva >= lo && (uintptr_t)hva < hi)
			found = perm[3] == 's' && !strcmp(file, path);
	}
	fclose(f);
	return found;
}

struct race {
	int vm_fd, dir_fd;
	size_t dpage;
	volatile int stop;
	long rounds, leaks, reused;
	char victim[64];
};

static int nonzero(const char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i += 8)
		if (*(const uint64_t *)(p + i))
			return 1;
	return 0;
}

/* punch the VM's dpage, hand the pool's next one to a victim, watch it */
static void *racer(void *arg)
{
	struct race *r = arg;
	size_t look = DMEM_PAGES * 4096;
	char *v;
	int fd;

	while (!r->stop) {
		TEST_ASSERT(!fallocate(r->vm_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				       0, r->dpage), "punch: %m");
		fd = openat(r->dir_fd, r->victim, O_RDWR | O_CREAT | O_EXCL, 0600);
		TEST_ASSERT(fd >= 0, "victim: %m");
		/* nothing is left behind if any thread's assertion ends us */
		TEST_ASSERT(!unlinkat(r->dir_fd, r->victim, 0), "unlink victim: %m");
		TEST_ASSERT(!ftruncate(fd, r->dpage), "victim ftruncate: %m");
		if (fallocate(fd, 0, 0, r->dpage)) {
			close(fd);	/* the vCPU took the dpage back first */
			continue;
		}
		v = mmap(NULL, look, PROT_READ, MAP_SHARED, fd, 0);
		TEST_ASSERT(v != MAP_FAILED, "victim mmap: %m");
		r->leaks += nonzero(v, look);
		usleep(2000);		/* the vCPU thread runs on */
		r->leaks += nonzero(v, look);
		munmap(v, look);
		close(fd);
		r->rounds++;
	}
	return NULL;
}

static void *spinner(void *arg)
{
	struct race *r = arg;

	while (!r->stop)
		;
	return NULL;
}

#define UFFD_SLOT	2
#define UFFD_GPA	(2UL << 30)

static uint64_t sum_stat(const char *what)
{
	char path[96], buf[64];
	uint64_t t = 0;
	int n, fd;

	for (n = 0; n < 64; n++) {
		snprintf(path, sizeof(path), "/sys/kernel/mm/dmem/node%d/%s_bytes", n, what);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		memset(buf, 0, sizeof(buf));
		if (read(fd, buf, sizeof(buf) - 1) > 0)
			t += strtoull(buf, NULL, 10);
		close(fd);
	}
	return t;
}

/* physical address of the dpage behind offset 0 of @fd, 0 if none */
static uint64_t phys0(int fd)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent fe[1];
	} q = { .fm = { .fm_length = 1, .fm_extent_count = 1 } };

	if (ioctl(fd, FS_IOC_FIEMAP, &q) || q.fm.fm_mapped_extents != 1)
		return 0;
	return q.fe[0].fe_physical;
}

/*
 * Where a vCPU that does not stop stands: the main thread sets dump_req and
 * kicks the vCPU thread with SIGUSR1; KVM_RUN returns -EINTR, and the vCPU
 * thread, which owns the vCPU, samples it twice 100 ms apart into
 * dump_buf: nested guest mode (the nested guest's registers are then the
 * vCPU's), RIP and the MP state (3: halted).  The same RIP twice in guest
 * mode is a nested guest that loops or halts without an intercept; outside
 * it, the vCPU's own loop.
 */
static volatile sig_atomic_t dump_req, dump_done;
static char dump_buf[384];

static void on_kick(int sig)
{
	(void)sig;
}

/*
 * "SYMBOL+0xOFF" of L1's kernel for @addr (/proc/kallsyms, root), or "-":
 * a guest RIP that is an address of L1's own text is no guest's code.
 */
static const char *l1_symbol(uint64_t addr)
{
	static char out[96];
	char line[256], name[128], best[128] = "";
	unsigned long long a, best_a = 0;
	char type;
	FILE *f = fopen("/proc/kallsyms", "r");

	snprintf(out, sizeof(out), "-");
	if (!f)
		return out;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %127s", &a, &type, name) != 3 || !a)
			continue;
		if ((type == 't' || type == 'T') && a <= addr && a > best_a) {
			best_a = a;
			snprintf(best, sizeof(best), "%s", name);
		}
	}
	fclose(f);
	if (best_a && addr - best_a < 0x10000)
		snprintf(out, sizeof(out), "%s+%#llx", best, (unsigned long long)(addr - best_a));
	return out;
}

static void dump_vcpu(struct kvm_vcpu *vcpu)
{
	static union {
		struct kvm_nested_state st;
		char buf[16384];
	} ns;
	struct kvm_mp_state mp;
	struct kvm_regs regs;
	size_t n = 0;
	int i;

	for (i = 0; i < 2; i++) {
		ns.st.size = sizeof(ns);
		vcpu_nested_state_get(vcpu, &ns.st);
		vcpu_regs_get(vcpu, &regs);
		vcpu_ioctl(vcpu, KVM_GET_MP_STATE, &mp);
		n += snprintf(dump_buf + n, sizeof(dump_buf) - n,
			      "%sguest mode %d, rip %#llx (L1: %s), mp_state %u", i ? "; then " : "",
			      !!(ns.st.flags & KVM_STATE_NESTED_GUEST_MODE),
			      (unsigned long long)regs.rip, l1_symbol(regs.rip), mp.mp_state);
		if (!i)
			usleep(100000);
	}
	dump_done = 1;
}

/* Run @arg's vCPU on until the guest is done (GUEST_DONE). */
static void *vcpu_done_thread(void *arg)
{
	struct kvm_vcpu *vcpu = arg;
	struct ucall uc;
	int rc;

	for (;;) {
		rc = __vcpu_run(vcpu);
		if (rc == -1 && errno == EINTR) {
			if (dump_req && !dump_done)
				dump_vcpu(vcpu);
			continue;
		}
		TEST_ASSERT(!rc, "KVM_RUN: %m");
		break;
	}
	TEST_ASSERT(vcpu->run->exit_reason == KVM_EXIT_IO, "exit reason %u (%s)",
		    vcpu->run->exit_reason, exit_reason_str(vcpu->run->exit_reason));
	if (get_ucall(vcpu, &uc) == UCALL_ABORT)
		REPORT_GUEST_ASSERT(uc);
	TEST_ASSERT(uc.cmd == UCALL_DONE, "ucall %lu", uc.cmd);
	return NULL;
}

static int hold(const char *dir, int fd, size_t dpage, struct kvm_vcpu *vcpu, int uffd,
		void *msrpm, size_t msrpm_len)
{
	uint64_t free0, free1, pins, vmcb_phys, victim_phys;
	struct uffd_msg msg;
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };
	struct uffdio_zeropage zp;
	char victim[320];
	pthread_t t;
	int vfd, bad = 0;

	vmcb_phys = phys0(fd);
	TEST_ASSERT(vmcb_phys, "no dpage behind the VM's file");
	pthread_create(&t, NULL, vcpu_done_thread, vcpu);
	/* VMRUN has the VMCB mapped and waits for the MSR map */
	TEST_ASSERT(poll(&pfd, 1, 120000) == 1, "VMRUN never read the MSR map");
	TEST_ASSERT(read(uffd, &msg, sizeof(msg)) == sizeof(msg), "uffd read: %m");
	TEST_ASSERT(msg.event == UFFD_EVENT_PAGEFAULT, "uffd event %u", msg.event);

	free0 = sum_stat("free");
	TEST_ASSERT(!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, dpage),
		    "punch: %m");
	free1 = sum_stat("free");
	pins = sum_stat("pinned");
	snprintf(victim, sizeof(victim), "%s/victim.%d", dir, getpid());
	vfd = open(victim, O_RDWR | O_CREAT | O_EXCL, 0600);
	TEST_ASSERT(vfd >= 0, "victim: %m");
	unlink(victim);		/* nothing is left behind if we die */
	TEST_ASSERT(!fallocate(vfd, 0, 0, dpage), "victim fallocate: %m");
	victim_phys = phys0(vfd);
	printf("hold: KVM maps the VMCB at %#lx, blocked in the MSR map read; after the punch: pinned_bytes %lu, free_bytes %+ld; the victim file got %#lx\n",
	       (unsigned long)vmcb_phys, (unsigned long)pins, (long)(free1 - free0),
	       (unsigned long)victim_phys);
	if (free1 != free0) {
		printf("hold: FAIL: the punch gave the dpage KVM holds back to the pool\n");
		bad = 1;
	}
	if (pins != 4096) {
		printf("hold: FAIL: pinned_bytes %lu while KVM holds one page, want 4096\n",
		       (unsigned long)pins);
		bad = 1;
	}
	if ((victim_phys & ~(dpage - 1)) == (vmcb_phys & ~(dpage - 1))) {
		printf("hold: FAIL: another file got the dpage KVM still maps\n");
		bad = 1;
	}

	/* serve the fault, the whole MSR map: the guest runs, KVM unmaps */
	zp.range.start = (uintptr_t)msrpm;
	zp.range.len = msrpm_len;
	zp.mode = 0;
	TEST_ASSERT(!ioctl(uffd, UFFDIO_ZEROPAGE, &zp), "UFFDIO_ZEROPAGE: %m");
	pthread_join(t, NULL);
	close(vfd);
	pins = sum_stat("pinned");
	printf("hold: after the VMRUN: pinned_bytes %lu\n", (unsigned long)pins);
	if (pins) {
		printf("hold: FAIL: a pin outlived KVM's map\n");
		bad = 1;
	}
	return bad;
}

static int race(const char *dir, int fd, size_t dpage, struct kvm_vm *vm,
		struct kvm_vcpu *vcpu, vm_vaddr_t stop_gva, int seconds)
{
	struct race r = { .vm_fd = fd, .dpage = dpage };
	pthread_t t[4];
	struct timespec ts;
	time_t end;
	int i;

	struct ucall uc;

	snprintf(r.victim, sizeof(r.victim), "victim.%d", getpid());
	r.dir_fd = open(dir, O_RDONLY | O_DIRECTORY);
	TEST_ASSERT(r.dir_fd >= 0, "open %s: %m", dir);
	vcpu_run(vcpu);
	if (get_ucall(vcpu, &uc) != UCALL_SYNC)
		TEST_FAIL("before the race: exit reason %u (%s)", vcpu->run->exit_reason,
			  exit_reason_str(vcpu->run->exit_reason));
	pthread_create(&t[0], NULL, vcpu_done_thread, vcpu);
	pthread_create(&t[1], NULL, racer, &r);
	pthread_create(&t[2], NULL, spinner, &r);
	pthread_create(&t[3], NULL, spinner, &r);
	end = time(NULL) + seconds;
	while (time(NULL) < end)
		usleep(100000);
	r.stop = 1;
	for (i = 1; i < 4; i++)
		pthread_join(t[i], NULL);
	*(volatile uint64_t *)addr_gva2hva(vm, stop_gva) = 1;
	/* a reason, not the runner's timeout, if the vCPU never gets there */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 60;
	if (pthread_timedjoin_np(t[0], NULL, &ts)) {
		struct sigaction sa = { .sa_handler = on_kick };

		sigaction(SIGUSR1, &sa, NULL);
		dump_req = 1;
		for (i = 0; i < 50 && !dump_done; i++) {
			pthread_kill(t[0], SIGUSR1);
			usleep(100000);
		}
		printf("race: FAIL: the vCPU ran on 60 s after the stop (%ld rounds, leaks %ld): the nested guest hangs; %s\n",
		       r.rounds, r.leaks, dump_done ? dump_buf : "no answer to SIGUSR1 in 5 s");
		exit(1);	/* the files are unlinked: nothing stays behind */
	}
	close(r.dir_fd);
	printf("race: %d s, %ld rounds of punch + victim allocation, victim pages written by KVM (leaks) %ld\n",
	       seconds, r.rounds, r.leaks);
	return r.leaks ? 1 : 0;
}

int main(int argc, char *argv[])
{
	struct svm_test_data *svm;
	struct kvm_vcpu *vcpu;
	struct kvm_vm *vm;
	struct ucall uc;
	struct stat st;
	int race_secs = argc > 3 && !strcmp(argv[2], "--race") ? atoi(argv[3]) : 0;
	int hold_mode = argc > 2 && !strcmp(argv[2], "--hold");
	uint64_t runs = argc > 2 && !race_secs && !hold_mode ? strtoull(argv[2], NULL, 0) : 64;
	vm_vaddr_t stop_gva = 0, svm_gva;
	size_t dpage;
	char path[256];
	char *mem;
	int fd, i;

	TEST_ASSERT(argc >= 2, "usage: %s DMEMFS_DIR [RUNS | --race SECONDS]", argv[0]);
	TEST_ASSERT(kvm_cpu_has(X86_FEATURE_SVM),
		    "no SVM for KVM guests (kvm_amd nested=0?)");
	dpage = dmemfs_dpage(argv[1]);
	snprintf(path, sizeof(path), "%s/kvm_nested_dmem.%d", argv[1], getpid());
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	TEST_ASSERT(fd >= 0, "create %s: %m", path);
	TEST_ASSERT(ftruncate(fd, dpage) == 0, "ftruncate %s: %m", path);
	mem = map_aligned(fd, dpage);
	/* the mapping keeps the file: nothing is left behind if we die */
	TEST_ASSERT(unlink(path) == 0, "unlink %s: %m", path);

	vm = vm_create_with_one_vcpu(&vcpu, l1_guest_code);
	vm_set_user_memory_region(vm, DMEM_SLOT, 0, DMEM_GPA, dpage, mem);
	for (i = 0; i < DMEM_PAGES; i++)
		virt_pg_map(vm, GVA(i), GVA(i));

	/*
	 * vcpu_alloc_svm() with every page in the dpage; under --race the
	 * dpage comes and goes, so the pointers themselves stay in slot 0.
	 */
	svm_gva = GVA(PG_SVM);
	svm = (void *)(mem + PG_SVM * 4096);
	if (race_secs) {
		svm_gva = vm_vaddr_alloc_page(vm);
		svm = addr_gva2hva(vm, svm_gva);
	}
	svm->vmcb = (void *)GVA(PG_VMCB);
	svm->vmcb_hva = mem + PG_VMCB * 4096;
	svm->vmcb_gpa = GVA(PG_VMCB);
	svm->save_area = (void *)GVA(PG_HSAVE);
	svm->save_area_hva = mem + PG_HSAVE * 4096;
	svm->save_area_gpa = GVA(PG_HSAVE);
	svm->msr = (void *)GVA(PG_MSRPM);
	svm->msr_hva = mem + PG_MSRPM * 4096;
	svm->msr_gpa = GVA(PG_MSRPM);
	memset(svm->msr_hva, 0, 2 * 4096);
	if (hold_mode) {
		struct uffdio_api api = { .api = UFFD_API };
		struct uffdio_register reg;
		size_t len = 4 * 4096;
		int uffd, rc;
		char *u;

		/* the MSR map in a slot of its own, behind userfaultfd */
		u = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		TEST_ASSERT(u != MAP_FAILED, "mmap: %m");
		uffd = syscall(__NR_userfaultfd, O_CLOEXEC);
		TEST_ASSERT(uffd >= 0, "userfaultfd: %m (CONFIG_USERFAULTFD?)");
		TEST_ASSERT(!ioctl(uffd, UFFDIO_API, &api), "UFFDIO_API: %m");
		reg.range.start = (uintptr_t)u;
		reg.range.len = len;
		reg.mode = UFFDIO_REGISTER_MODE_MISSING;
		TEST_ASSERT(!ioctl(uffd, UFFDIO_REGISTER, &reg), "UFFDIO_REGISTER: %m");
		vm_set_user_memory_region(vm, UFFD_SLOT, 0, UFFD_GPA, len, u);
		virt_pg_map(vm, UFFD_GPA, UFFD_GPA);
		virt_pg_map(vm, UFFD_GPA + 4096, UFFD_GPA + 4096);
		svm->msr = (void *)UFFD_GPA;
		svm->msr_hva = u;
		svm->msr_gpa = UFFD_GPA;
		vcpu_args_set(vcpu, 3, GVA(PG_SVM), 0, 0);
		rc = hold(argv[1], fd, dpage, vcpu, uffd, u, len);
		kvm_vm_free(vm);
		munmap(mem, dpage);
		close(fd);
		return rc;
	}
	if (race_secs) {
		struct svm_test_data *tmpl;
		vm_vaddr_t tmpl_gva;
		int rc;

		stop_gva = vm_vaddr_alloc_page(vm);
		*(uint64_t *)addr_gva2hva(vm, stop_gva) = 0;
		/* the template: svm's pages but a VMCB of its own, in slot 0 */
		tmpl_gva = vm_vaddr_alloc_page(vm);
		tmpl = addr_gva2hva(vm, tmpl_gva);
		*tmpl = *svm;
		tmpl->vmcb = (void *)vm_vaddr_alloc_page(vm);
		tmpl->vmcb_hva = addr_gva2hva(vm, (vm_vaddr_t)tmpl->vmcb);
		tmpl->vmcb_gpa = addr_gva2gpa(vm, (vm_vaddr_t)tmpl->vmcb);
		race_tmpl = (void *)tmpl_gva;
		sync_global_to_guest(vm, race_tmpl);
		vcpu_args_set(vcpu, 3, svm_gva, runs, stop_gva);
		rc = race(argv[1], fd, dpage, vm, vcpu, stop_gva, race_secs);
		kvm_vm_free(vm);
		munmap(mem, dpage);
		close(fd);
		return rc;
	}
	vcpu_args_set(vcpu, 3, GVA(PG_SVM), runs, stop_gva);

	for (;;) {
		vcpu_run(vcpu);
		TEST_ASSERT(vcpu->run->exit_reason == KVM_EXIT_IO,
			    "exit reason %u (%s)", vcpu->run->exit_reason,
			    exit_reason_str(vcpu->run->exit_reason));
		switch (get_ucall(vcpu, &uc)) {
		case UCALL_ABORT:
			REPORT_GUEST_ASSERT(uc);
			break;
		case UCALL_DONE:
			goto done;
		default:
			TEST_FAIL("unexpected ucall %lu", uc.cmd);
		}
	}
done:
	{
		struct vmcb *vmcb = svm->vmcb_hva;
		uint64_t count = *(uint64_t *)(mem + PG_DATA * 4096);

		TEST_ASSERT(count == runs, "nested guest ran %lu times, not %lu",
			    count, runs);
		TEST_ASSERT(vmcb->control.exit_code == SVM_EXIT_VMMCALL,
			    "exit_code 0x%x in the dmem VMCB", vmcb->control.exit_code);
		TEST_ASSERT(fstat(fd, &st) == 0, "fstat: %m");
		TEST_ASSERT((size_t)st.st_blocks * 512 == dpage,
			    "file holds %ld bytes, not one dpage of %zu",
			    (long)st.st_blocks * 512, dpage);
		TEST_ASSERT(mapped_from(mem, path),
			    "slot %d's host range is not a shared mapping of %s",
			    DMEM_SLOT, path);
		printf("nested-svm: %lu VMRUNs with VMCB, host save area, MSR map, stack and data in one %zu KiB dpage of %s: counter %lu, exit_code 0x%x in the dmem VMCB\n",
		       runs, dpage >> 10, argv[1], count, vmcb->control.exit_code);
	}
	kvm_vm_free(vm);
	munmap(mem, dpage);
	close(fd);
	return 0;
}
