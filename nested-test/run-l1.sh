#!/bin/bash
# Boot the test kernel as L1 under QEMU and turn what its in-guest tests
# report into PASS:/FAIL: lines in $RESULTS/nested.results.
#
#   nested-test/run-l1.sh            probe KVM, boot (baseline, dmem=, VFIO L2), report
#   nested-test/run-l1.sh --probe    only say which accelerator would be used
#
# Two boots: the first without dmem= only reports its memory accounting; the
# second boots with dmem=$DMEM and runs nested-test/l1-trunk.sh, which gets
# the first boot's numbers to measure MemTotal and memmap changes.  With the
# trunk script, a third boot runs nested-test/vfio-l2.sh (an L2 with L1's
# edu device assigned), retried in a fresh L1 when it hits the TCG crash
# described there.
#
# L1: $L1_SMP vCPUs and 2 NUMA nodes of $L1_NODE_MEM each (memory-backend-ram
# + -numa node), the host root read-only over virtio-9p (guest-images/init),
# ttyS0 = console log, ttyS1 = results channel (no printk on it).
#
# Settings (environment): NESTED_BLOCKED (a reason: boot nothing, fail all),
# KERNEL INITRD DMEM L1_APPEND L1_NODE_MEM L1_SMP ACCEL
# (auto|kvm|tcg) KVM_PROBE_TIMEOUT L1_BASE_TIMEOUT L1_TIMEOUT L1_POWEROFF_GRACE
# L1_SCRIPT, VFIO_L2_SCRIPT (empty: no third boot) L1_VFIO_TIMEOUT.
# The script always exits 0 once results are written; hangs end in FAIL.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
TOP=${TOP:-$(cd "$here/.." && pwd)}
BUILD=${BUILD:-$TOP/build}
# shellcheck source=nested-test/l1-common.sh
. "$here/l1-common.sh" # result names (l1_script_check), shared with L1
RESULTS=${RESULTS:-$BUILD/results}
KERNEL=${KERNEL:-$BUILD/bzImage}
INITRD=${INITRD:-$BUILD/guest/initramfs.cpio.gz}
TESTBIN=${TESTBIN:-$BUILD/guest/dmemfs_test}
DMEM=${DMEM-2G:1G} # per node; empty: no dmem= at all
# 5G a node with 2G of dmem (1G-aligned) on each: on q35 node 0 is 0-2G +
# 4G-7G and node 1 7G-12G, so 2 aligned GiB stay free below the NODE_DATA the
# kernel puts at the top of each node (3G nodes leave node 0 without any),
# 2 GiB a node let the 1G-page checks of the other parts run, and L1 keeps
# 6G of normal memory.
L1_NODE_MEM=${L1_NODE_MEM:-5G}
L1_SMP=${L1_SMP:-2}
ACCEL=${ACCEL:-auto}
KVM_PROBE_TIMEOUT=${KVM_PROBE_TIMEOUT:-15}
L1_BASE_TIMEOUT=${L1_BASE_TIMEOUT:-240}
L1_TIMEOUT=${L1_TIMEOUT:-1800}
L1_POWEROFF_GRACE=${L1_POWEROFF_GRACE:-30}
# KASLR on, as hosts boot: the decompressor keeps the kernel image out of
# dmem='s ranges (the x86/boot/compressed/kaslr patch), and l1.dmem-reserved
# checks that each node got all it asked for (requested_bytes) on every boot.
L1_APPEND=${L1_APPEND-}
L1_SCRIPT=${L1_SCRIPT:-$TOP/nested-test/l1-trunk.sh}
QEMU=${QEMU:-qemu-system-x86_64}
out=$RESULTS/nested.results
work=$RESULTS/l1
mkdir -p "$RESULTS" "$work"

say() { printf '[nested] %s\n' "$*" >&2; }
# One L1 at a time on this machine: two would not fit in memory or CPU.
exec 9> "${L1_LOCK:-/tmp/dmemfs-host-l1.lock}"
flock -n 9 || { say "waiting for the L1 that is already running"; flock 9; }
lines=()
add() { lines+=("$*"); }
finish() {
	printf '%s\n' "${lines[@]}" > "$out.tmp" && mv "$out.tmp" "$out"
	say "results: ${out#$TOP/} ($(grep -c '^PASS:' "$out") passed, $(grep -c '^FAIL:' "$out") failed, $(grep -c '^SKIP:' "$out") skipped)"
	exit 0
}

# ---- what must come back
# L1_MODE=--boot-check (nested-test/boot-matrix.sh): the trunk script checks
# the reservation and its accounting only
L1_MODE=${L1_MODE:-}
expected=(kunit.dmem_parse kunit.dmem_alloc kunit.dmem_zero kunit.all-suites-ok
	l1.dmem-reserved l1.dmem-requested-per-node l1.memtotal-shrinks l1.mount-2M l1.mount-1G l1.no-struct-page l1.memmap-saved)
if [ -x "$TESTBIN" ]; then
	mapfile -t -O ${#expected[@]} expected < <("$TESTBIN" --list | sed 's/^/dmemfs_test./')
else
	expected+=(dmemfs_test.complete)
fi
skip=$(printf '%s\n' $L1_APPEND | sed -n 's/^l1\.skip=//p')
for s in "$TOP"/*/tests/l1-*.sh; do
	rel=${s#"$TOP"/}
	# l1-trunk.sh does not run scripts that l1.skip= names
	[ -n "$skip" ] && [ "${rel#*"$skip"}" != "$rel" ] && continue
	[ -e "$s" ] || continue
	# its own checks (--list), and the one on the script as a whole
	mapfile -t -O ${#expected[@]} expected < <(TOP=$TOP BUILD=$BUILD bash "$s" --list)
	expected+=("$(l1_script_check "$s")")
done
STRESS_BIN=${STRESS_BIN:-$BUILD/guest/dmemfs_stress}
if [ -x "$STRESS_BIN" ]; then
	mapfile -t -O ${#expected[@]} expected < <("$STRESS_BIN" --list --seeds 1,2,3)
else
	expected+=(stress.built)
fi
case " $L1_APPEND " in *" l1.trinity="*) mapfile -t -O ${#expected[@]} expected < <(bash "$here/trinity-l1.sh" --list) ;; esac
HWPOISON_BIN=${HWPOISON_BIN:-$BUILD/guest/hwpoison_test}
if [ -x "$HWPOISON_BIN" ]; then
	mapfile -t -O ${#expected[@]} expected < <("$HWPOISON_BIN" --list | sed 's/^/hwpoison_test./')
fi
mapfile -t -O ${#expected[@]} expected < <(bash "$here/hwpoison-l2.sh" --list)
expected+=(l1.hwpoison-quarantine l1.dmesg-clean)
[ "$L1_MODE" = --boot-check ] && expected=(l1.dmem-reserved l1.dmem-requested-per-node
	l1.memtotal-shrinks l1.no-struct-page l1.memmap-saved)
# boot 3 (the L2 with a device assigned) has its own list; it comes with
# the trunk run only (not with make accept/bench/demo's L1 scripts)
vfio_default=
[ "$L1_SCRIPT" = "$TOP/nested-test/l1-trunk.sh" ] && vfio_default=$TOP/nested-test/vfio-l2.sh
VFIO_L2_SCRIPT=${VFIO_L2_SCRIPT-$vfio_default}
if [ -n "$VFIO_L2_SCRIPT" ]; then
	mapfile -t -O ${#expected[@]} expected < <(bash "$VFIO_L2_SCRIPT" --list)
	expected+=(nested.vfio-l2-boot)
fi

# fail_all REASON: one FAIL per expected result, plus the boot itself
fail_all() {
	add "FAIL: nested.l1-boot: $1"
	add "FAIL: nested.l1-poweroff: not run ($1)"
	add "FAIL: nested.console-clean: not run ($1)"
	local e
	for e in "${expected[@]}"; do add "FAIL: $e: not run ($1)"; done
	finish
}

[ -n "${NESTED_BLOCKED:-}" ] && fail_all "$NESTED_BLOCKED"
for f in "$KERNEL" "$INITRD" "$TESTBIN" "$L1_SCRIPT"; do
	[ -e "$f" ] || fail_all "missing ${f#$TOP/}"
done
command -v "$QEMU" > /dev/null || fail_all "$QEMU not installed"
case $TOP in *[[:space:],]*) fail_all "repository path '$TOP' has a space or comma" ;; esac

# ---- QEMU command line
esc() { printf '%s' "${1//,/,,}"; } # comma-escape a QEMU option value
half=$((L1_SMP / 2))
numa=(-object "memory-backend-ram,id=m0,size=$L1_NODE_MEM"
	-object "memory-backend-ram,id=m1,size=$L1_NODE_MEM"
	-numa "node,nodeid=0,memdev=m0,cpus=0-$((half - 1))"
	-numa "node,nodeid=1,memdev=m1,cpus=$half-$((L1_SMP - 1))")
# A vIOMMU and a spare DMA-capable PCI device (edu, 1234:11e8) for the VFIO
# tests (nested-test/tests/l1-vfio.sh): L1 binds edu to vfio-pci and maps
# dmem into its IOMMU domain, or hands it to an L2.  Interrupt remapping
# needs the split irqchip under KVM (TCG ignores the setting); without it
# available to L1, VFIO refuses the container unless
# vfio_iommu_type1.allow_unsafe_interrupts=1.  Both boots get the same
# devices and command line (memory accounting must differ only in dmem=).
viommu=(-device intel-iommu,intremap=on -device edu)
# no_timer_check: the IO-APIC timer check through interrupt remapping times
# out on a loaded host under TCG (seen with the KASAN kernel: "timer doesn't
# work through Interrupt-remapped IO-APIC" panic at boot).
VIOMMU_APPEND="intel_iommu=on vfio_iommu_type1.allow_unsafe_interrupts=1 no_timer_check"
node_mib=$(numfmt --from=iec "$L1_NODE_MEM") || fail_all "bad L1_NODE_MEM $L1_NODE_MEM"
node_mib=$((node_mib >> 20))

# boot_l1 NAME TIMEOUT ACCEL-ARGS APPEND: boots, waits, sets boot_rc and
# boot_secs (until init runs the script); console in $work/NAME-console.log,
# results channel in $work/NAME-results.log.
boot_l1() {
	local name=$1 tmo=$2 accel=$3 append=$4 con=$work/$1-console.log res=$work/$1-results.log
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
# add_results LINE...: a boot's PASS:/FAIL: lines and notes into the
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
last_console() { tr -d '\r' < "$work/$1-console.log" | grep -v '^\s*$' | tail -1 | cut -c1-160; }

# ---- accelerator: KVM only when a short boot under it really works
kvm_probe() {
	local log=$work/kvm-probe.log
	[ -r /dev/kvm ] && [ -w /dev/kvm ] || { probe_why="no usable /dev/kvm"; return 1; }
	rm -f "$log"
	timeout -k 2 "$KVM_PROBE_TIMEOUT" "$QEMU" -machine q35 -accel kvm -cpu host -m 512 -smp 1 \
		-nodefaults -display none -no-reboot -no-user-config \
		-kernel "$KERNEL" -initrd "$INITRD" -append "console=ttyS0 panic=-1 l1.probe=1" \
		-serial "file:$log" > "$work/kvm-probe-qemu.log" 2>&1 < /dev/null
	local rc=$?
	if grep -q L1-PROBE-OK "$log" 2> /dev/null; then return 0; fi
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		probe_why="KVM boot hung for ${KVM_PROBE_TIMEOUT}s"
	else
		probe_why="KVM boot failed (rc $rc: $(grep -v '^\s*$' "$work/kvm-probe-qemu.log" | head -1 | cut -c1-120))"
	fi
	return 1
}
probe_why=
case $ACCEL in
kvm) accel="-accel kvm -cpu host" ;;
tcg) accel="-accel tcg -cpu max" probe_why="ACCEL=tcg" ;;
*)
	t0=$SECONDS
	if kvm_probe; then accel="-accel kvm -cpu host"; probe_why="KVM probe booted"; else accel="-accel tcg -cpu max"; fi
	say "accelerator: ${accel} (${probe_why}; probe took $((SECONDS - t0))s)"
	;;
esac
if [ "${1:-}" = --probe ]; then
	echo "$accel ($probe_why)"
	exit 0
fi
add "# accelerator: $accel ($probe_why)"

common="console=ttyS0 panic=-1 $VIOMMU_APPEND $L1_APPEND l1.top=$TOP l1.script=$L1_SCRIPT"

# ---- boot 1: no dmem=, memory accounting only
boot_l1 base "$L1_BASE_TIMEOUT" "$accel" "$common l1.args=--meminfo-only"
base=$(results_of base | sed -n 's/^MEMINFO: //p' | tail -1)
add "# baseline boot (no dmem=): $(results_of base | sed -n 's/^# boot: //p' | head -1)"
if [ -z "$base" ]; then
	why="baseline L1 boot gave no MEMINFO (rc $boot_rc after ${boot_total}s; console: $(last_console base))"
	[ "$boot_rc" -eq 124 ] || [ "$boot_rc" -eq 137 ] && why="baseline L1 boot timed out after ${L1_BASE_TIMEOUT}s (console: $(last_console base))"
	fail_all "$why"
fi

# ---- boot 2: dmem=, all trunk checks
boot_l1 test "$L1_TIMEOUT" "$accel" "$common ${DMEM:+dmem=$DMEM} l1.args=--build=$BUILD,--base=$base${L1_MODE:+,$L1_MODE}"
cp "$work/test-console.log" "$RESULTS/l1-console.log"
add "# L1 boot: ${boot_secs:-?}s to the test script (kernel: ${kernel_secs:-?}s to /init), whole run ${boot_total}s, $accel"
mapfile -t got < <(results_of test)
done=
add_results "${got[@]}" && done=1
if [ -n "$done" ]; then
	add "PASS: nested.l1-boot"
	if [ -n "$powered_off" ]; then
		add "PASS: nested.l1-poweroff"
	else
		add "FAIL: nested.l1-poweroff: no power-off ${L1_POWEROFF_GRACE}s after the results; last console line: $(last_console test)"
	fi
	why="missing from the results channel"
else
	if [ "$boot_rc" -eq 124 ] || [ "$boot_rc" -eq 137 ]; then
		why="L1 timed out after ${L1_TIMEOUT}s"
	else
		why="L1 stopped before the end (rc $boot_rc)"
	fi
	add "FAIL: nested.l1-boot: $why; last console line: $(last_console test)"
	add "FAIL: nested.l1-poweroff: not reached ($why)"
fi

# ---- boot 3: an L2 with L1's edu device assigned (nested-test/vfio-l2.sh),
# in an L1 of its own.  Under TCG a change of this QEMU's memory map (the
# L2's PCI probing switches the device's BAR) can crash L1's KVM vCPU thread,
# stop the L2 or hang L1 (measurements in vfio-l2.sh).  When the script
# says RETRY, or L1 dies with that crash or hangs without finishing, a fresh
# L1 tries again: 3 attempts, each retried one a SKIP line (listed in the
# closing summary); the last one counts.
if [ -n "$VFIO_L2_SCRIPT" ]; then
	vfio_done=
	for attempt in 1 2 3; do
		last=
		[ "$attempt" = 3 ] && last=" l1.vfio-last=1"
		boot_l1 vfio-l2 "${L1_VFIO_TIMEOUT:-300}" "$accel" \
			"console=ttyS0 panic=-1 $VIOMMU_APPEND $L1_APPEND l1.top=$TOP l1.script=$VFIO_L2_SCRIPT ${DMEM:+dmem=$DMEM}$last"
		cp "$work/vfio-l2-console.log" "$RESULTS/l1-vfio-l2-console.log"
		cp "$work/vfio-l2-console.log" "$RESULTS/l1-vfio-l2-attempt$attempt-console.log"
		mapfile -t vgot < <(results_of vfio-l2)
		retry=$(printf '%s\n' "${vgot[@]}" | sed -n 's/^RETRY: //p' | head -1)
		crash=$(tr -d '\r' < "$work/vfio-l2-console.log" | grep -m1 'stack guard page was hit')
		if [ -z "$retry" ] && ! printf '%s\n' "${vgot[@]}" | grep '^L1-DONE' > /dev/null; then
			if [ -n "$crash" ]; then
				retry="L1 died: $crash"
			elif [ "$boot_rc" -eq 124 ] || [ "$boot_rc" -eq 137 ]; then
				retry="L1 hung for ${L1_VFIO_TIMEOUT:-300}s; last console line: $(last_console vfio-l2)"
			fi
		fi
		if [ -n "$retry" ] && [ "$attempt" -lt 3 ]; then
			# a skip, not a comment: the closing summary lists every retry
			add "SKIP: nested.vfio-l2-attempt$attempt: retried (console: l1-vfio-l2-attempt$attempt-console.log): $(printf '%s' "$retry" | cut -c1-300)"
			continue
		fi
		add_results "${vgot[@]}" && vfio_done=1
		break
	done
	if [ -n "$vfio_done" ]; then
		add "PASS: nested.vfio-l2-boot: attempt $attempt of 3, ${boot_total}s"
	else
		add "FAIL: nested.vfio-l2-boot: attempt $attempt: no L1-DONE (rc $boot_rc after ${boot_total}s; console: $(last_console vfio-l2))"
	fi
fi

for e in "${expected[@]}"; do
	# grep reads all (no -q): with pipefail, an early exit fails printf (SIGPIPE)
	printf '%s\n' "${lines[@]}" | grep -E "^(PASS|FAIL|SKIP): $(printf '%s' "$e" | sed 's/[.[\*^$/]/\\&/g')(:|\$)" > /dev/null ||
		add "FAIL: $e: no result ($why)"
done
bad=$(tr -d '\r' < "$work/test-console.log" |
	grep -E "$L1_SPLAT_RE" | head -2 | tr -s ' \n' ' ')
if [ -z "$bad" ]; then add "PASS: nested.console-clean"; else add "FAIL: nested.console-clean: $bad"; fi
finish
