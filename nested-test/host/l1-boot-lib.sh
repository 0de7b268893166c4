#!/bin/bash
# nested-test/host/l1-boot-lib.sh: the host's side of an L1 boot, sourced
# by boot-l1.sh (one script, one boot) and run-l1.sh (the trunk's three
# boots): QEMU's command line, the accelerator probe, the boot and its
# limits, and the results file (add, finish, expect_missing, the merge of a
# resumed run).  Call l1_area AREA before anything that writes results.
#
l1_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=${TOP:-$(cd "$l1_here/../.." && pwd)}
BUILD=${BUILD:-$TOP/build}
# shellcheck source=nested-test/l1/l1-common.sh
. "$l1_here/../l1/l1-common.sh" # result names, the splat scan: shared with L1
RESULTS=${RESULTS:-$BUILD/results}
KERNEL=${KERNEL:-$BUILD/bzImage}
INITRD=${INITRD:-$BUILD/guest/initramfs.cpio.gz}
DMEM=${DMEM-2G:1G} # per node; empty: no dmem= at all
# 5G a node with 2G of dmem (1G-aligned) on each: on q35 node 0 is 0-2G +
# 4G-7G and node 1 7G-12G, so 2 aligned GiB stay free below the NODE_DATA the
# kernel puts at the top of each node (3G nodes leave node 0 without any),
# 2 GiB a node let the 1G-page checks run, and L1 keeps 6G of normal memory.
L1_NODE_MEM=${L1_NODE_MEM:-5G}
L1_SMP=${L1_SMP:-2}
ACCEL=${ACCEL:-auto}
# the CPU model under TCG: max emulates SVM, so L2s run with KVM in L1.
# Without ERMS/FSRM: TCG emulates rep stosb/movsb a byte a store, so the
# kernel's clear_page and memset of an ERMS CPU run about 7 times slower
# than rep stosq (measured in L1: 64 MiB stosb 0.21 s, stosq 0.03 s), and
# on pages that hold translated code (the first memblock allocations of a
# kexec'd kernel) each such store takes QEMU's self-modifying-code path.
# Hardware has neither cost; nothing of ours depends on the feature.
L1_CPU=${L1_CPU:-max,-erms,-fsrm}
KVM_PROBE_TIMEOUT=${KVM_PROBE_TIMEOUT:-15}
L1_BASE_TIMEOUT=${L1_BASE_TIMEOUT:-240}
L1_TIMEOUT=${L1_TIMEOUT:-1800}
L1_POWEROFF_GRACE=${L1_POWEROFF_GRACE:-30}
# KASLR on, as hosts boot: the decompressor keeps the kernel image out of
# dmem='s ranges (the x86/boot/compressed/kaslr patch), and l1.dmem-reserved
# checks that each node got all it asked for (requested_bytes) on every boot.
L1_APPEND=${L1_APPEND-}
# L1_KUNIT=1: the test boot runs the built-in KUnit suites (the trunk checks
# them); every other boot has kunit.enable=0, since dmem_zero alone waits up
# to 15 s under TCG for the background zeroer, on each of some 30 boots
L1_KUNIT=${L1_KUNIT:-0}
L1_DISK=${L1_DISK-} # a raw image L1 sees as /dev/vda (state that outlives a kexec)
QEMU=${QEMU:-qemu-system-x86_64}
# l1_area AREA: the results file ($RESULTS/AREA.results) and the names of
# the boot's own checks (AREA.l1-boot, ...); consoles in $RESULTS/l1/ for
# the trunk's area, nested, else in $RESULTS/AREA-l1/
l1_area() {
	[[ $1 =~ ^[a-z][a-z0-9-]*$ ]] || { echo "boot-l1.sh: bad area '$1'" >&2; exit 2; }
	area=$1
	out=$RESULTS/$area.results
	work=$RESULTS/l1
	[ "$area" = nested ] || work=$RESULTS/$area-l1
	mkdir -p "$RESULTS" "$work"
}

say() { printf '[nested] %s\n' "$*" >&2; }

# ---- the results file: add LINE, finish writes it and exits 0
lines=()
expected=()
# earlier: name -> index in lines of each result of an earlier boot of a
# resumed run (resume_mark); the same check from a later boot replaces it
declare -A earlier=()
result_re='^(PASS|FAIL|SKIP): ([^:]*)'
add() {
	if [ ${#earlier[@]} -gt 0 ] && [[ $* =~ $result_re ]] && [ -n "${earlier[${BASH_REMATCH[2]}]+x}" ]; then
		lines[${earlier[${BASH_REMATCH[2]}]}]=
		unset "earlier[${BASH_REMATCH[2]}]"
	fi
	lines+=("$*")
}
resume_mark() {
	local i
	for i in "${!lines[@]}"; do
		[[ ${lines[$i]} =~ $result_re ]] && earlier[${BASH_REMATCH[2]}]=$i
	done
	return 0
}
finish() {
	printf '%s\n' "${lines[@]}" | sed '/^$/d' > "$out.tmp" && mv "$out.tmp" "$out"
	say "results: ${out#"$TOP"/} ($(grep -c '^PASS:' "$out") passed, $(grep -c '^FAIL:' "$out") failed, $(grep -c '^SKIP:' "$out") skipped)"
	exit 0
}
# fail_all REASON: one FAIL per expected result, plus the boot itself
fail_all() {
	add "FAIL: $area.l1-boot: $1"
	add "FAIL: $area.l1-poweroff: not run ($1)"
	add "FAIL: $area.console-clean: not run ($1)"
	local e
	for e in "${expected[@]}"; do add "FAIL: $e: not run ($1)"; done
	finish
}
# expect_missing WHY: a FAIL for each expected check that never reported
expect_missing() {
	local e
	for e in "${expected[@]}"; do
		# grep reads all (no -q): with pipefail, an early exit fails printf (SIGPIPE)
		printf '%s\n' "${lines[@]}" | grep -E "^(PASS|FAIL|SKIP): $(printf '%s' "$e" | sed 's/[.[\*^$/]/\\&/g')(:|\$)" > /dev/null ||
			add "FAIL: $e: no result ($1)"
	done
}
# console_clean NAME: $area.console-clean on boot NAME's console
console_clean() {
	local bad
	bad=$(tr -d '\r' < "$work/$1-console.log" | grep -E "$L1_SPLAT_RE" | grep -vE "$L1_SPLAT_NOT_RE" | head -2 | tr -s ' \n' ' ')
	if [ -z "$bad" ]; then add "PASS: $area.console-clean"; else add "FAIL: $area.console-clean: $bad"; fi
}

# ---- the L1 machine
esc() { printf '%s' "${1//,/,,}"; } # comma-escape a QEMU option value
l1_half=$((L1_SMP / 2))
numa=(-object "memory-backend-ram,id=m0,size=$L1_NODE_MEM"
	-object "memory-backend-ram,id=m1,size=$L1_NODE_MEM"
	-numa "node,nodeid=0,memdev=m0,cpus=0-$((l1_half - 1))"
	-numa "node,nodeid=1,memdev=m1,cpus=$l1_half-$((L1_SMP - 1))")
# A vIOMMU and a spare DMA-capable PCI device (edu, 1234:11e8) for the VFIO
# tests (nested-test/l1/tests/l1-vfio.sh): L1 binds edu to vfio-pci and maps
# dmem into its IOMMU domain, or hands it to an L2.  Interrupt remapping
# needs the split irqchip under KVM (TCG ignores the setting); without it
# available to L1, VFIO refuses the container unless
# vfio_iommu_type1.allow_unsafe_interrupts=1.  Every boot gets the same
# devices and command line (memory accounting must differ only in dmem=).
viommu=(-device intel-iommu,intremap=on -device edu)
# no_timer_check: the IO-APIC timer check through interrupt remapping times
# out on a loaded host under TCG (seen with the KASAN kernel: "timer doesn't
# work through Interrupt-remapped IO-APIC" panic at boot).
VIOMMU_APPEND="intel_iommu=on vfio_iommu_type1.allow_unsafe_interrupts=1 no_timer_check"

# l1_ready: what every boot needs is there (else fail_all)
l1_ready() {
	local f
	for f in "$KERNEL" "$INITRD" "$@"; do
		[ -e "$f" ] || fail_all "missing ${f#"$TOP"/}"
	done
	command -v "$QEMU" > /dev/null || fail_all "$QEMU not installed"
	case $TOP in *[[:space:],]*) fail_all "repository path '$TOP' has a space or comma" ;; esac
	node_mib=$(numfmt --from=iec "$L1_NODE_MEM") || fail_all "bad L1_NODE_MEM $L1_NODE_MEM"
	node_mib=$((node_mib >> 20))
	# One L1 at a time on this machine: two would not fit in memory or CPU.
	exec 9> "${L1_LOCK:-/tmp/dmemfs-host-l1.lock}"
	flock -n 9 || { say "waiting for the L1 that is already running"; flock 9; }
}

# l1_append SCRIPT EXTRA [ARG...]: the kernel command line of a boot
# running SCRIPT with ARGS (l1.args=, comma-joined) and EXTRA (dmem=...)
l1_append() {
	local script=$1 extra=$2 args
	shift 2
	args=$(IFS=,; printf '%s' "$*")
	[ "$L1_KUNIT" = 1 ] || extra="kunit.enable=0${extra:+ $extra}"
	printf '%s' "console=ttyS0 panic=-1 $VIOMMU_APPEND $L1_APPEND l1.top=$TOP l1.accel=$(accel_name) l1.kernel=$(kernel_release "$KERNEL") l1.script=$script${extra:+ $extra}${args:+ l1.args=$args}"
}
# kernel_release IMAGE: the release a bzImage reports (uname -r), from its
# setup header: the 16-bit kernel_version at 0x20e points, less 0x200, at
# "RELEASE (builder) #1 ..." (Documentation/arch/x86/boot.rst); "none"
# when IMAGE has none, which no kernel's uname -r matches
kernel_release() {
	local off v=
	off=$(od -An -tu2 -j $((0x20e)) -N2 "$1" 2> /dev/null | tr -d ' ')
	[ -n "$off" ] && [ "$off" -gt 0 ] &&
		v=$(dd if="$1" bs=1 skip=$((off + 0x200)) count=128 2> /dev/null | tr '\0' '\n' | head -1 | cut -d' ' -f1)
	case $v in [0-9]*.[0-9]*) printf '%s' "$v" ;; *) printf none ;; esac
}

# boot_l1 NAME TIMEOUT APPEND: boots, waits, sets boot_rc, boot_secs (until
# init runs the script), boot_total, kernel_secs and powered_off; console
# in $work/NAME-console.log, results channel in $work/NAME-results.log.
boot_l1() {
	local name=$1 tmo=$2 append=$3 con=$work/$1-console.log res=$work/$1-results.log
	local start=$SECONDS pid done_at=
	rm -f "$con" "$res"
	: > "$con"; : > "$res"
	say "booting L1 ($name, $accel, timeout ${tmo}s)"
	# shellcheck disable=SC2086
	timeout -k 5 "$tmo" "$QEMU" -machine q35,kernel-irqchip=split $accel \
		"${viommu[@]}" -smp "$L1_SMP,sockets=$L1_SMP,cores=1,threads=1" -m "$((2 * node_mib))M" \
		"${numa[@]}" -nodefaults -display none -no-reboot -no-user-config \
		-kernel "$KERNEL" -initrd "$INITRD" -append "$append" \
		-chardev "file,id=con,path=$(esc "$con")" -serial chardev:con \
		-chardev "file,id=res,path=$(esc "$res")" -serial chardev:res \
		-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap" \
		${L1_DISK:+-drive "file=$(esc "$L1_DISK"),if=virtio,format=raw,cache=unsafe"} \
		> "$work/$name-qemu.log" 2>&1 < /dev/null &
	pid=$!
	boot_secs=
	powered_off=1
	while kill -0 "$pid" 2> /dev/null; do
		if [ -z "$boot_secs" ] && grep -q 'l1-init: running' "$con"; then
			boot_secs=$((SECONDS - start))
			say "L1 ($name) reached its test script after ${boot_secs}s"
		fi
		# Results are in: give the power-off $L1_POWEROFF_GRACE seconds.
		if [ -z "$done_at" ] && grep -q '^L1-DONE' "$res"; then
			done_at=$SECONDS
		elif [ -n "$done_at" ] && [ $((SECONDS - done_at)) -gt "$L1_POWEROFF_GRACE" ]; then
			say "L1 ($name) did not power off ${L1_POWEROFF_GRACE}s after its results; stopping it"
			powered_off=
			kill "$pid"
			break
		fi
		sleep 0.5
	done
	wait "$pid"
	boot_rc=$?
	[ -z "$boot_secs" ] && grep -q 'l1-init: running' "$con" && boot_secs=$((SECONDS - start))
	boot_total=$((SECONDS - start))
	say "L1 ($name) ended after ${boot_total}s (rc $boot_rc)"
	# The kernel's own view: timestamp of starting /init.
	kernel_secs=$(sed -n 's/^\[ *\([0-9.]*\)\] Run \/init as init process.*/\1/p' "$con" | head -1)
}

results_of() { tr -d '\r' < "$work/$1-results.log"; }
last_console() { tr -d '\r' < "$work/$1-console.log" | grep -v '^\s*$' | tail -1 | cut -c1-160; }
# add_results LINE...: a boot's PASS:/FAIL:/SKIP: lines and notes into the
# results; true when L1-DONE was among them
add_results() {
	local l seen=1
	for l in "$@"; do
		case $l in
		PASS:* | FAIL:* | SKIP:*) add "$l" ;;
		"#"* | MEMORY:*) add "# ${l#\# }" ;;
		L1-DONE) seen=0 ;;
		esac
	done
	return $seen
}
# boot_verdict NAME: $area.l1-boot and $area.l1-poweroff of the boot that
# just ended, from its results (already added: pass DONE=1); sets why, the
# reason given to checks that never reported
boot_verdict() {
	local name=$1 done=$2
	if [ -n "$done" ]; then
		add "PASS: $area.l1-boot"
		if [ -n "$powered_off" ]; then
			add "PASS: $area.l1-poweroff"
		else
			add "FAIL: $area.l1-poweroff: no power-off ${L1_POWEROFF_GRACE}s after the results; last console line: $(last_console "$name")"
		fi
		why="missing from the results channel"
		return
	fi
	if [ "$boot_rc" -eq 124 ] || [ "$boot_rc" -eq 137 ]; then
		why="L1 timed out after ${boot_total}s"
	else
		why="L1 stopped before the end (rc $boot_rc)"
	fi
	add "FAIL: $area.l1-boot: $why; last console line: $(last_console "$name")"
	add "FAIL: $area.l1-poweroff: not reached ($why)"
}

# l1_test_boot SCRIPT [ARG...]: the boot with dmem=$DMEM that runs SCRIPT;
# its result lines, notes and verdict go into the results (sets why)
l1_test_boot() {
	local script=$1 got done=
	shift
	boot_l1 test "$L1_TIMEOUT" "$(l1_append "$script" "${DMEM:+dmem=$DMEM}" "$@")"
	add "# L1 boot: ${boot_secs:-?}s to the test script (kernel: ${kernel_secs:-?}s to /init), whole run ${boot_total}s, $accel"
	mapfile -t got < <(results_of test)
	add_results "${got[@]}" && done=1
	boot_verdict test "$done"
}

# ---- accelerator: KVM only when a short boot under it really works
kvm_probe() {
	local log=$work/kvm-probe.log rc
	[ -r /dev/kvm ] && [ -w /dev/kvm ] || { probe_why="no usable /dev/kvm"; return 1; }
	rm -f "$log"
	timeout -k 2 "$KVM_PROBE_TIMEOUT" "$QEMU" -machine q35 -accel kvm -cpu host -m 512 -smp 1 \
		-nodefaults -display none -no-reboot -no-user-config \
		-kernel "$KERNEL" -initrd "$INITRD" -append "console=ttyS0 panic=-1 l1.probe=1" \
		-serial "file:$log" > "$work/kvm-probe-qemu.log" 2>&1 < /dev/null
	rc=$?
	if grep -q L1-PROBE-OK "$log" 2> /dev/null; then return 0; fi
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		probe_why="KVM boot hung for ${KVM_PROBE_TIMEOUT}s"
	else
		probe_why="KVM boot failed (rc $rc: $(grep -v '^\s*$' "$work/kvm-probe-qemu.log" | head -1 | cut -c1-120))"
	fi
	return 1
}
# accel_name: tcg or kvm, what l1_accel chose (the retry rule needs it)
accel_name() { case ${accel:-} in *tcg*) echo tcg ;; *) echo kvm ;; esac; }

# l1_accel: sets accel (QEMU's options) and probe_why
l1_accel() {
	local t0=$SECONDS
	probe_why=
	case $ACCEL in
	kvm) accel="-accel kvm -cpu host" ;;
	tcg) accel="-accel tcg -cpu $L1_CPU" probe_why="ACCEL=tcg" ;;
	*)
		if kvm_probe; then accel="-accel kvm -cpu host"; probe_why="KVM probe booted"; else accel="-accel tcg -cpu $L1_CPU"; fi
		say "accelerator: ${accel} (${probe_why}; probe took $((SECONDS - t0))s)"
		;;
	esac
}

# l1_baseline: boot 1 of a run, without dmem=: l1-trunk.sh reports the
# memory accounting; sets base (MEMINFO's numbers) or fails everything
l1_baseline() {
	# L1_BASE: the MEMINFO of an earlier baseline boot of this kernel and
	# memory layout (boot-matrix.sh boots it once for all its forms)
	if [ -n "${L1_BASE:-}" ]; then
		base=$L1_BASE
		add "# baseline boot (no dmem=): reused, MEMINFO $base"
		return
	fi
	boot_l1 base "$L1_BASE_TIMEOUT" "$(L1_KUNIT=0 l1_append "$TOP/nested-test/l1/l1-trunk.sh" "" --meminfo-only)"
	base=$(results_of base | sed -n 's/^MEMINFO: //p' | tail -1)
	add "# baseline boot (no dmem=): $(results_of base | sed -n 's/^# boot: //p' | head -1)"
	[ -n "$base" ] && return
	local why
	why="baseline L1 boot gave no MEMINFO (rc $boot_rc after ${boot_total}s; console: $(last_console base))"
	[ "$boot_rc" -eq 124 ] || [ "$boot_rc" -eq 137 ] && why="baseline L1 boot timed out after ${L1_BASE_TIMEOUT}s (console: $(last_console base))"
	fail_all "$why"
}

