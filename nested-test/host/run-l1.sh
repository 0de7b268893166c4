#!/bin/bash
# The trunk driver of make test: boot the test kernel as L1 (through
# nested-test/host/boot-l1.sh) and turn what its in-guest tests report into
# PASS:/FAIL:/SKIP: lines in $RESULTS/nested.results.
#
#   nested-test/host/run-l1.sh            probe KVM, boot (baseline, dmem=, VFIO L2), report
#   nested-test/host/run-l1.sh --probe    only say which accelerator would be used
#
# It owns the trunk's list of expected checks, its three boots and the
# retries of the third.  The first boot, without dmem=, only reports its
# memory accounting; the second boots with dmem=$DMEM and runs
# nested-test/l1/l1-trunk.sh, which gets the first boot's numbers to measure
# MemTotal and memmap changes.  A third boot runs nested-test/l1/vfio-l2.sh (an
# L2 with L1's edu device assigned), retried in a fresh L1 when it hits the
# TCG crash described there.
#
# Settings (environment): boot-l1.sh's, and L1_MODE (--boot-check: the reservation
# checks only), VFIO_L2_SCRIPT (empty: no third boot), L1_VFIO_TIMEOUT.
# The script always exits 0 once results are written; hangs end in FAIL.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# The trunk's boot runs every in-L1 test, the acceptance under AppArmor
# included: about 31 min under TCG on 2 host cores (stop 38: 1880 s), and a
# CI host can be a third slower (stop 37's timed out at 2400 s).  A hang
# costs 45 min, which still leaves make test under CI's 90.
: "${L1_TIMEOUT:=2700}"
# shellcheck source=nested-test/host/l1-boot-lib.sh
. "$here/l1-boot-lib.sh"
l1_area nested
L1_SCRIPT=$TOP/nested-test/l1/l1-trunk.sh

# ---- what must come back: the trunk's own --list (the same lists it
# runs from), for this boot's command line
# L1_MODE=--boot-check (nested-test/host/boot-matrix.sh): the trunk script checks
# the reservation and its accounting only
L1_MODE=${L1_MODE:-}
mapfile -t expected < <(TOP=$TOP L1_APPEND="$L1_APPEND" bash "$L1_SCRIPT" --list --build="$BUILD" $L1_MODE)
[ ${#expected[@]} -gt 0 ] || fail_all "${L1_SCRIPT#"$TOP"/} --list printed nothing"
# boot 3 (the L2 with a device assigned) has its own list
VFIO_L2_SCRIPT=${VFIO_L2_SCRIPT-$TOP/nested-test/l1/vfio-l2.sh}
if [ -n "$VFIO_L2_SCRIPT" ]; then
	mapfile -t -O ${#expected[@]} expected < <(bash "$VFIO_L2_SCRIPT" --list)
	expected+=(nested.vfio-l2-boot)
fi

# KUnit runs on the trunk's test boot only, when its list has the checks
# (no pipe into grep -q: under pipefail, printf's SIGPIPE would lose it)
trunk_kunit=0
for e in "${expected[@]}"; do [[ $e == kunit.* ]] && trunk_kunit=1; done

l1_ready "$BUILD/guest/dmemfs_test" "$BUILD/guest/dmemfs_vm_test" "$L1_SCRIPT"
if [ "${1:-}" = --probe ]; then
	l1_accel
	echo "$accel ($probe_why)"
	exit 0
fi
l1_accel
add "# accelerator: $accel ($probe_why)"

# ---- boot 1: no dmem=, memory accounting only
l1_baseline

# ---- boot 2: dmem=, all trunk checks
# The one retry rule of l1-common.sh, as a resume: under TCG, when L1 hits
# the named crash, l1-trunk.sh stops after the step it was in ("CRASH:
# STEP: line", before that step's results) and a fresh L1 runs that step
# and every later one (--from=STEP); the steps done keep their results.
# Up to 3 boots, each resumed one a SKIP line with the evidence.  A crash
# in the last one, or under KVM, leaves its steps without results: FAILs.
from='' crash=''
# shellcheck disable=SC2317 # run by retry_loop
trunk_run() {
	if [ "$1" != 1 ]; then
		from=${crash%%: *}
		resume_mark
	fi
	L1_KUNIT=$trunk_kunit l1_test_boot "$L1_SCRIPT" --build="$BUILD" --base="$base" ${L1_MODE:+"$L1_MODE"} \
		${from:+"--from=$from"}
	cp "$work/test-console.log" "$RESULTS/l1-console.log"
	trunk_why=$why
	crash=$(results_of test | sed -n 's/^CRASH: //p' | head -1)
	[ -n "$crash" ] || return 0
	cp "$work/test-console.log" "$RESULTS/l1-trunk-attempt$1-console.log"
	return 1
}
# shellcheck disable=SC2317 # run by retry_loop
trunk_evidence() {
	local ev
	ev=$(retry_evidence "$(accel_name)" "$work/test-console.log") &&
		echo "L1 crashed in ${crash%%: *}, which runs again with the rest in a fresh L1: $ev (console: l1-trunk-attempt$1-console.log)"
}
# shellcheck disable=SC2317 # run by retry_loop
nested_skip() { add "SKIP: nested.$1: $2"; }
retry_loop trunk 3 trunk_run trunk_evidence nested_skip
[ -z "$crash" ] ||
	add "FAIL: nested.trunk-crash: attempt $RETRY_ATTEMPT: L1 crashed in $crash (console: l1-trunk-attempt$RETRY_ATTEMPT-console.log)"

# ---- boot 3: an L2 with L1's edu device assigned (nested-test/l1/vfio-l2.sh),
# in an L1 of its own.  Under TCG a change of this QEMU's memory map (the
# L2's PCI probing switches the device's BAR) can crash L1's KVM vCPU
# thread (measurements in vfio-l2.sh).  The one retry rule of l1-common.sh
# applies: a fresh L1 tries again only when the console shows that crash
# (3 attempts, each retried one a SKIP line with the evidence); a hang or
# any other failure is a FAIL.  The boot's limit covers the script's own
# waits (240 s for the L2, after libvirtd and virsh start), so that an L2 that
# never comes up is reported by the script, with its serial, not cut short.
if [ -n "$VFIO_L2_SCRIPT" ]; then
	vfio_done=
	# shellcheck disable=SC2317 # run by retry_loop
	vfio_run() {
		boot_l1 vfio-l2 "${L1_VFIO_TIMEOUT:-480}" \
			"$(l1_append "$VFIO_L2_SCRIPT" "${DMEM:+dmem=$DMEM}")"
		cp "$work/vfio-l2-console.log" "$RESULTS/l1-vfio-l2-console.log"
		cp "$work/vfio-l2-console.log" "$RESULTS/l1-vfio-l2-attempt$1-console.log"
		mapfile -t vgot < <(results_of vfio-l2)
		# counted, not grep -q: pipefail and a printf cut short
		vdone=$(printf '%s\n' "${vgot[@]}" | grep -c '^L1-DONE')
		[ "$vdone" != 0 ] && [ "$(printf '%s\n' "${vgot[@]}" | grep -c '^FAIL')" = 0 ]
	}
	# shellcheck disable=SC2317 # run by retry_loop
	vfio_evidence() {
		local ev
		ev=$(retry_evidence "$(accel_name)" "$work/vfio-l2-console.log") &&
			echo "$ev (console: l1-vfio-l2-attempt$1-console.log)"
	}
	retry_loop vfio-l2 3 vfio_run vfio_evidence nested_skip
	attempt=$RETRY_ATTEMPT
	add_results "${vgot[@]}"
	[ "$vdone" = 0 ] || vfio_done=1
	if [ -n "$vfio_done" ]; then
		add "PASS: nested.vfio-l2-boot: attempt $attempt of 3, ${boot_total}s"
	else
		add "FAIL: nested.vfio-l2-boot: attempt $attempt: no L1-DONE (rc $boot_rc after ${boot_total}s; console: $(last_console vfio-l2))"
	fi
fi

expect_missing "$trunk_why"
console_clean test
finish
