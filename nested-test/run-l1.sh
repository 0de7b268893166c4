#!/bin/bash
# The trunk driver of make test: boot the test kernel as L1 (through
# nested-test/boot-l1.sh) and turn what its in-guest tests report into
# PASS:/FAIL:/SKIP: lines in $RESULTS/nested.results.
#
#   nested-test/run-l1.sh            probe KVM, boot (baseline, dmem=, VFIO L2), report
#   nested-test/run-l1.sh --probe    only say which accelerator would be used
#
# It owns the trunk's list of expected checks, its three boots and the
# retries of the third.  The first boot, without dmem=, only reports its
# memory accounting; the second boots with dmem=$DMEM and runs
# nested-test/l1-trunk.sh, which gets the first boot's numbers to measure
# MemTotal and memmap changes.  A third boot runs nested-test/vfio-l2.sh (an
# L2 with L1's edu device assigned), retried in a fresh L1 when it hits the
# TCG crash described there.
#
# Settings (environment): boot-l1.sh's, and NESTED_BLOCKED (a reason: boot
# nothing, fail all), L1_MODE (--boot-check: the reservation
# checks only), VFIO_L2_SCRIPT (empty: no third boot), L1_VFIO_TIMEOUT.
# The script always exits 0 once results are written; hangs end in FAIL.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=nested-test/boot-l1.sh
. "$here/boot-l1.sh" --lib
L1_SCRIPT=$TOP/nested-test/l1-trunk.sh

# ---- what must come back: the trunk's own --list (the same lists it
# runs from), for this boot's command line
# L1_MODE=--boot-check (nested-test/boot-matrix.sh): the trunk script checks
# the reservation and its accounting only
L1_MODE=${L1_MODE:-}
mapfile -t expected < <(TOP=$TOP L1_APPEND="$L1_APPEND" bash "$L1_SCRIPT" --list --build="$BUILD" $L1_MODE)
[ ${#expected[@]} -gt 0 ] || fail_all "${L1_SCRIPT#"$TOP"/} --list printed nothing"
# boot 3 (the L2 with a device assigned) has its own list
VFIO_L2_SCRIPT=${VFIO_L2_SCRIPT-$TOP/nested-test/vfio-l2.sh}
if [ -n "$VFIO_L2_SCRIPT" ]; then
	mapfile -t -O ${#expected[@]} expected < <(bash "$VFIO_L2_SCRIPT" --list)
	expected+=(nested.vfio-l2-boot)
fi

[ -n "${NESTED_BLOCKED:-}" ] && fail_all "$NESTED_BLOCKED"
l1_ready "$BUILD/guest/dmemfs_test" "$L1_SCRIPT"
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
l1_test_boot "$L1_SCRIPT" --build="$BUILD" --base="$base" ${L1_MODE:+"$L1_MODE"}
cp "$work/test-console.log" "$RESULTS/l1-console.log"
trunk_why=$why

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
		boot_l1 vfio-l2 "${L1_VFIO_TIMEOUT:-300}" \
			"$(l1_append "$VFIO_L2_SCRIPT" "${DMEM:+dmem=$DMEM}$last")"
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

expect_missing "$trunk_why"
console_clean test
finish
