#!/bin/bash
# Inside L1, in a boot of its own with an Intel CPU model (make test's step
# test-mce, through nested-test/host/boot-l1.sh): machine checks raised for
# real by the legacy injector (/dev/mcelog), nested-test/progs/mce_test.c:
# action-required data loads on 4K, 2M and 1G dmemfs mappings, the
# repeated error, and action-optional errors on a GiB that a fault or the
# background zeroer is clearing.  Then the kernel log: no splat.
#
# The CPU model makes the kernel grade errors with Intel's severity table
# (QEMU gives it MCG_SER_P); the AMD model of the other L1 boots grades by
# SUCCOR, which QEMU 7.2 lacks.  No KVM is needed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=nested-test/l1/l1-common.sh
. "$here/l1-common.sh"
BUILD=${BUILD:-$TOP/build}
bin=$BUILD/guest/mce_test
result_area mce
if [ "${1:-}" = --list ]; then
	"$bin" --list | sed 's/^/mce./'
	echo mce.complete
	echo mce.intel-model
	echo mce.kernel-log
	exit 0
fi
l1_channel
mark=$(dmesg_mark)
vendor=$(sed -n 's/^vendor_id\s*:\s*//p' /proc/cpuinfo | head -1)
check intel-model "vendor '$vendor', /dev/mcelog $([ -c /dev/mcelog ] && echo present || echo missing)" \
	eval '[ "$vendor" = GenuineIntel ] && [ -c /dev/mcelog ]'
log=/tmp/mce_test.log
timeout -k 5 400 "$bin" > "$log" 2>&1
echo "== mce_test exit $?"
cat "$log"
tap_results mce "$log"
dmesg | tail -n +"$((mark + 1))" | grep -E 'mce:|Memory failure|memory error|dmem' | head -40
bad=$(kernel_splats "$mark")
check kernel-log "$bad" [ -z "$bad" ]
res "L1-DONE"
