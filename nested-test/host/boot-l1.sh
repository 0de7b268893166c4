#!/bin/bash
# Boot the test kernel as L1 under QEMU with one in-L1 script and collect
# what it reports on its results channel: the generic tool under every L1
# run (make accept, demo and bench, the kexec, machine-check, package and
# live-update boots); the functions are l1-boot-lib.sh's, which the trunk
# (run-l1.sh) sources too.
#
#   nested-test/host/boot-l1.sh [--area=AREA] [--baseline] SCRIPT [ARG...]
#       one boot with dmem=$DMEM running SCRIPT ARG... (l1.script=,
#       l1.args=).  $RESULTS/AREA.results (AREA: nested unless given) gets
#       its PASS:/FAIL:/SKIP: lines and notes, AREA.l1-boot,
#       AREA.l1-poweroff and AREA.console-clean, and a FAIL for each check
#       of `SCRIPT --list` that never reported; the consoles go to
#       $RESULTS/l1/ (AREA nested) or $RESULTS/AREA-l1/.  --baseline first
#       boots without dmem= for the memory accounting (l1-trunk.sh
#       --meminfo-only) and hands its numbers to SCRIPT as --base=... (what
#       make bench compares against).
#   nested-test/host/boot-l1.sh --probe
#       say which accelerator would be used
#
# L1: $L1_SMP vCPUs and 2 NUMA nodes of $L1_NODE_MEM each (memory-backend-ram
# + -numa node), the host root read-only over virtio-9p (guest-images/init),
# ttyS0 = console log, ttyS1 = results channel (no printk on it).  The L1
# protocol is in nested-test/README.md.
#
# Settings (environment): KERNEL INITRD DMEM L1_APPEND L1_DISK L1_NODE_MEM L1_SMP
# ACCEL (auto|kvm|tcg) L1_CPU KVM_PROBE_TIMEOUT L1_BASE_TIMEOUT L1_BASE L1_TIMEOUT
# L1_POWEROFF_GRACE L1_KUNIT RESULTS L1_LOCK.  Exits 0 once results are written
# (hangs end in FAIL lines); the results say whether anything failed.
set -uo pipefail
# shellcheck source=nested-test/host/l1-boot-lib.sh
. "$(cd "$(dirname "$0")" && pwd)/l1-boot-lib.sh"
area=nested
if [[ ${1:-} = --area=* ]]; then
	area=${1#--area=}
	shift
fi
l1_area "$area"

# ---- the command: one script, one boot (after the baseline with --baseline)
baseline=
[ "${1:-}" = --baseline ] && { baseline=1; shift; }
if [ "${1:-}" = --probe ]; then
	node_mib=0
	l1_accel
	echo "$accel ($probe_why)"
	exit 0
fi
[ $# -ge 1 ] || { echo "usage: $0 [--area=AREA] [--baseline] SCRIPT [ARG...] | --probe" >&2; exit 2; }
script=$1
shift
l1_ready "$script"
# its checks; a script may have none (demo, bench), but must answer --list
list=$(TOP=$TOP BUILD=$BUILD bash "$script" --list < /dev/null) ||
	fail_all "${script#"$TOP"/} --list failed"
mapfile -t expected < <(printf '%s' "$list" | sed '/^$/d')
l1_accel
add "# accelerator: $accel ($probe_why)"
args=("$@")
if [ -n "$baseline" ]; then
	l1_baseline
	args=(--build="$BUILD" --base="$base" "${args[@]}")
fi
l1_test_boot "$script" "${args[@]}"
expect_missing "$why"
console_clean test
finish
