// SPDX-License-Identifier: GPL-2.0
/*
 * l2-agent: the test payload of the L2 guest (static, run by /init).
 *
 * 1. For every guest NUMA node: allocate most of its free memory, bound to
 *    that node (mbind MPOL_BIND), write an address-dependent pattern into
 *    every word, then verify it.  On a dmem-backed guest this is the host's
 *    dmemfs file behind each guest cell.
 * 2. Steal time: the KVM CPUID feature bit and the steal column of
 *    /proc/stat before and after the work (must not exceed elapsed time).
 *    With --steal SECONDS (init passes l2.steal=SECONDS from the kernel
 *    command line) it then prints "L2-STEAL-SPIN seconds=N", spins on the
 *    CPU for that long and reports the steal ticks gained over the spin
 *    (steal_delta): the L1 side runs a CPU hog on the host CPU of the vCPU
 *    meanwhile, so the delta must be positive.
 * 3. kvmclock: current clocksource, CPUID feature bit, a burst of
 *    CLOCK_MONOTONIC reads that must never go backwards, and a 200 ms sleep
 *    measured against it.
 *
 * Prints exactly one line starting with "L2-AGENT-RESULT " (key=value pairs,
 * no spaces inside values) on stdout, which /init points at the serial
 * console, and exits 0 if every check passed.
 *
 * With --watch (l2.watch=1) it instead runs for ever: whenever node 0's
 * MemTotal has changed and then held for a second (virtio-mem plugged or
 * unplugged memory), it runs the pattern over node 0's free memory and
 * prints "L2-MEM-CHECK node0_total_kib=N tested_kib=N errors=N status=..".
 *
 * With --carry (l2.carry=1) it fills most of every node's free memory with
 * the pattern once, prints "L2-CARRY-READY uptime_s=.. kib=..", then checks
 * all of it again, for ever: "L2-CARRY-CHECK uptime_s=.. kib=.. errors=..
 * pass=N".  Between passes it sleeps four times as long as the pass took
 * (2 s at least, 60 s at most): an L2 under TCG's emulated SVM is at risk while it runs
 * without exits (nested-test/README.md, "Retries"), and an idle one takes
 * its interrupts and halts again.  A guest carried over a host kexec (dmem-
 * liveupdate) goes on in the same process: its uptime keeps growing, the
 * pass count keeps counting and the pattern stays.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_NODES 8
#define MPOL_BIND 2
#define KVM_FEATURE_CLOCKSOURCE2 3
#define KVM_FEATURE_STEAL_TIME 5

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* first number after "KEY" in FILE, or -1 */
static long long read_kv(const char *file, const char *key)
{
	char line[256];
	long long v = -1;
	FILE *f = fopen(file, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, key);

		if (p) {
			p += strlen(key);
			while (*p && (*p < '0' || *p > '9'))
				p++;
			v = strtoll(p, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

/* steal ticks (USER_HZ) summed over CPUs: 8th value of the "cpu" line */
static long long steal_ticks(void)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		   &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	return n == 8 ? (long long)v[7] : -1;
}

static uint64_t pattern(uint64_t i, unsigned int node)
{
	return (i * 0x9E3779B97F4A7C15ull) ^ (0xd3e0000000000000ull | node) ^ (i << 17);
}

struct node_result {
	long long free_kib, tested_kib, errors;
	double secs;
	int ok;
};

static void test_node(unsigned int node, struct node_result *r)
{
	char path[96];
	long long free_kib, want;
	size_t len, words, i;
	unsigned long mask = 1ul << node;
	uint64_t *p;
	double t0;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%u/meminfo", node);
	free_kib = read_kv(path, "MemFree:");
	r->free_kib = free_kib;
	/* leave the kernel its watermarks and page tables: 1/16 of free + 2 MiB */
	want = free_kib - free_kib / 16 - 2048;
	if (want < 1024) {
		r->ok = free_kib >= 0;
		return;
	}
	len = (size_t)want << 10;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (p == MAP_FAILED)
		return;
	if (syscall(SYS_mbind, p, len, MPOL_BIND, &mask, MAX_NODES + 1, 0) != 0) {
		munmap(p, len);
		return;
	}
	words = len / sizeof(*p);
	t0 = now(CLOCK_MONOTONIC);
	for (i = 0; i < words; i++)
		p[i] = pattern(i, node);
	for (i = 0; i < words; i++)
		if (p[i] != pattern(i, node))
			r->errors++;
	r->secs = now(CLOCK_MONOTONIC) - t0;
	r->tested_kib = want;
	r->ok = r->errors == 0;
	munmap(p, len);
}

/* busy-loop for SECS seconds of CLOCK_MONOTONIC; steal ticks gained */
static long long steal_spin(long secs)
{
	long long s0, s1;
	double end;
	volatile unsigned long spins = 0;

	printf("L2-STEAL-SPIN seconds=%ld\n", secs);
	fflush(stdout);
	s0 = steal_ticks();
	end = now(CLOCK_MONOTONIC) + secs;
	while (now(CLOCK_MONOTONIC) < end)
		spins++;
	s1 = steal_ticks();
	return s0 < 0 || s1 < 0 ? -1 : s1 - s0;
}

/* --watch: check node 0's memory each time its size settles at a new value */
static int watch(void)
{
	const char *mi = "/sys/devices/system/node/node0/meminfo";
	long long last = -2, seen;

	for (;;) {
		struct node_result r = { 0 };

		seen = read_kv(mi, "MemTotal:");
		if (seen == last) {
			usleep(250000);
			continue;
		}
		sleep(1);
		if (read_kv(mi, "MemTotal:") != seen)
			continue; /* still moving */
		test_node(0, &r);
		printf("L2-MEM-CHECK node0_total_kib=%lld node0_free_kib=%lld tested_kib=%lld"
		       " errors=%lld pattern_s=%.2f status=%s\n",
		       seen, r.free_kib, r.tested_kib, r.errors, r.secs, r.ok ? "PASS" : "FAIL");
		fflush(stdout);
		last = seen;
	}
	return 0;
}

static double uptime(void)
{
	double up = -1;
	FILE *f = fopen("/proc/uptime", "r");

	if (f) {
		if (fscanf(f, "%lf", &up) != 1)
			up = -1;
		fclose(f);
	}
	return up;
}

/* --carry: the pattern in memory that stays mapped, checked for ever */
static int carry(void)
{
	uint64_t *p[MAX_NODES] = { 0 };
	size_t words[MAX_NODES] = { 0 }, i;
	long long kib = 0, errors;
	unsigned int node;
	long pass;

	for (node = 0; node < MAX_NODES; node++) {
		char path[96];
		unsigned long mask = 1ul << node;
		long long free_kib, want;

		snprintf(path, sizeof(path), "/sys/devices/system/node/node%u/meminfo", node);
		free_kib = read_kv(path, "MemFree:");
		want = free_kib - free_kib / 8 - 4096;
		if (free_kib < 0 || want < 1024)
			continue;
		p[node] = mmap(NULL, (size_t)want << 10, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p[node] == MAP_FAILED ||
		    syscall(SYS_mbind, p[node], (size_t)want << 10, MPOL_BIND, &mask,
			    MAX_NODES + 1, 0)) {
			p[node] = NULL;
			continue;
		}
		words[node] = ((size_t)want << 10) / sizeof(uint64_t);
		for (i = 0; i < words[node]; i++)
			p[node][i] = pattern(i, node);
		kib += want;
	}
	printf("L2-CARRY-READY uptime_s=%.1f kib=%lld\n", uptime(), kib);
	fflush(stdout);
	for (pass = 1;; pass++) {
		double t0 = now(CLOCK_MONOTONIC), idle;
		struct timespec nap;

		errors = 0;
		for (node = 0; node < MAX_NODES; node++)
			for (i = 0; i < words[node]; i++)
				errors += p[node][i] != pattern(i, node);
		printf("L2-CARRY-CHECK uptime_s=%.1f kib=%lld errors=%lld pass=%ld\n", uptime(),
		       kib, errors, pass);
		fflush(stdout);
		idle = 4 * (now(CLOCK_MONOTONIC) - t0);
		idle = idle < 2 ? 2 : idle > 60 ? 60 : idle;
		nap.tv_sec = (time_t)idle;
		nap.tv_nsec = (long)((idle - nap.tv_sec) * 1e9);
		nanosleep(&nap, NULL);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct node_result res[MAX_NODES] = { 0 };
	unsigned int a, b, c, d, kvm_base = 0, feat = 0, nodes = 0, node;
	char clocksource[32] = "none", sig[13] = { 0 }, line[2048], *o = line;
	long long steal0, steal1, mem_total, tested = 0, errors = 0;
	double up0, t_start, t_end, mono_prev, mono, sleep_ms, work_s, pattern_s = 0;
	long backwards = 0, reads, spin_s = 0;
	long long steal_delta = 0;
	int nodes_ok = 1, clock_ok, steal_ok, ok;
	FILE *f;

	if (argc == 2 && !strcmp(argv[1], "--watch"))
		return watch();
	if (argc == 2 && !strcmp(argv[1], "--carry"))
		return carry();
	if (argc == 3 && !strcmp(argv[1], "--steal"))
		spin_s = strtol(argv[2], NULL, 10);
	t_start = now(CLOCK_MONOTONIC);
	up0 = -1;
	f = fopen("/proc/uptime", "r");
	if (f) {
		if (fscanf(f, "%lf", &up0) != 1)
			up0 = -1;
		fclose(f);
	}
	mem_total = read_kv("/proc/meminfo", "MemTotal:");
	steal0 = steal_ticks();

	/* KVM paravirt CPUID leaves */
	__cpuid(0x40000000, a, b, c, d);
	memcpy(sig, &b, 4);
	memcpy(sig + 4, &c, 4);
	memcpy(sig + 8, &d, 4);
	if (!strcmp(sig, "KVMKVMKVM")) {
		kvm_base = 1;
		__cpuid(0x40000001, a, b, c, d);
		feat = a;
	}
	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
	if (f) {
		if (fscanf(f, "%31s", clocksource) != 1)
			strcpy(clocksource, "unknown");
		fclose(f);
	}

	/* memory pattern, node by node */
	for (node = 0; node < MAX_NODES; node++) {
		char path[64];

		snprintf(path, sizeof(path), "/sys/devices/system/node/node%u", node);
		if (access(path, F_OK))
			continue;
		nodes = node + 1;
		test_node(node, &res[node]);
		nodes_ok &= res[node].ok;
		tested += res[node].tested_kib;
		errors += res[node].errors;
		pattern_s += res[node].secs;
	}
	if (!nodes) { /* kernel without NUMA: one pass over everything */
		nodes = 1;
		test_node(0, &res[0]);
		nodes_ok = res[0].ok;
		tested = res[0].tested_kib;
		errors = res[0].errors;
		pattern_s = res[0].secs;
	}

	if (spin_s > 0)
		steal_delta = steal_spin(spin_s);

	/* kvmclock: monotonic burst and a measured sleep */
	mono_prev = now(CLOCK_MONOTONIC);
	for (reads = 0; reads < 200000; reads++) {
		mono = now(CLOCK_MONOTONIC);
		if (mono < mono_prev)
			backwards++;
		mono_prev = mono;
	}
	mono = now(CLOCK_MONOTONIC);
	usleep(200000);
	sleep_ms = (now(CLOCK_MONOTONIC) - mono) * 1000;
	clock_ok = !strcmp(clocksource, "kvm-clock") && kvm_base &&
		   (feat & (1u << KVM_FEATURE_CLOCKSOURCE2)) && backwards == 0 && sleep_ms >= 199.0 &&
		   sleep_ms < 5000.0;

	steal1 = steal_ticks();
	t_end = now(CLOCK_MONOTONIC);
	work_s = t_end - t_start;
	/* steal may not exceed the elapsed time of all CPUs since boot */
	steal_ok = kvm_base && (feat & (1u << KVM_FEATURE_STEAL_TIME)) && steal0 >= 0 &&
		   steal1 >= steal0 &&
		   steal1 <= (long long)((up0 + work_s + 1) * sysconf(_SC_CLK_TCK) *
					 sysconf(_SC_NPROCESSORS_ONLN));

	ok = nodes_ok && errors == 0 && tested > 0 && clock_ok && steal_ok;
	o += sprintf(o, "L2-AGENT-RESULT status=%s mem_total_kib=%lld nodes=%u", ok ? "PASS" : "FAIL",
		     mem_total, nodes);
	for (node = 0; node < nodes; node++)
		o += sprintf(o, " node%u_free_kib=%lld node%u_tested_kib=%lld", node,
			     res[node].free_kib, node, res[node].tested_kib);
	o += sprintf(o,
		     " tested_kib=%lld tested_pct=%lld pattern_errors=%lld pattern_s=%.2f"
		     " kvm=%d steal_feature=%d steal_ticks=%lld steal_ok=%d"
		     " clocksource=%s kvmclock_feature=%d clock_reads=%ld clock_backwards=%ld"
		     " sleep200_ms=%.1f clock_ok=%d boot_s=%.2f agent_s=%.2f"
		     " steal_spin_s=%ld steal_delta=%lld",
		     tested, mem_total > 0 ? tested * 100 / mem_total : 0, errors, pattern_s,
		     kvm_base, !!(feat & (1u << KVM_FEATURE_STEAL_TIME)), steal1, steal_ok,
		     clocksource, !!(feat & (1u << KVM_FEATURE_CLOCKSOURCE2)), reads, backwards,
		     sleep_ms, clock_ok, up0, work_s, spin_s, steal_delta);
	printf("%s\n", line);
	fflush(stdout);
	return ok ? 0 : 1;
}
