#!/bin/bash
# Inside L1: VFIO type1 on dmem (issue 5), run by nested-test/l1/l1-trunk.sh like
# every */tests/l1-*.sh (env TOP, BUILD, DMEMFS_2M_MOUNT, DMEMFS_1G_MOUNT).
#
#  1. bind the edu device (PCI 1234:11e8, L1's spare device behind the
#     vIOMMU, see boot-l1.sh) to vfio-pci;
#  2. build/guest/vfio_dmem_test (nested-test/progs/vfio_dmem_test.c): MAP_DMA /
#     UNMAP_DMA of dmemfs files and the pin accounting (pinned_bytes, the
#     debugfs pins list, truncate/unlink while pinned, container close).
#
# The product path, an L2 with the device assigned through libvirt, runs in
# an L1 of its own: nested-test/l1/vfio-l2.sh (run-l1.sh's third boot).
#
# Prints "PASS: vfio.<check>" / "FAIL: vfio.<check>: reason" and the C test's
# "PASS|FAIL: vfio_dmem_test.<test>" lines; exits non-zero on any failure;
# leaves the pool and the device as it found them.  --list prints the checks.
set -u
here=$(cd "$(dirname "$0")" && pwd)
export TOP=${TOP:-$(cd "$here/../../.." && pwd)}
export BUILD=${BUILD:-$TOP/build}
# shellcheck source=nested-test/l1/vfio-lib.sh
. "$TOP/nested-test/l1/vfio-lib.sh"
# shellcheck source=nested-test/l1/l2-lib.sh
. "$TOP/nested-test/l1/l2-lib.sh"

result_area vfio
bin=$BUILD/guest/vfio_dmem_test
if [ "${1:-}" = --list ]; then
	echo vfio.bind
	[ -x "$bin" ] && "$bin" --list | sed 's/^/vfio_dmem_test./'
	echo vfio_dmem_test.complete
	echo vfio.c-test
	exit 0
fi
l1_only
log() { echo "[vfio] $*" >&2; }
pins_now() { echo "pinned_bytes $(vfio_pinned_all), pins (dpages pages orphaned) $(vfio_pins_summary)"; }
FREE0=$(pool_free_all)
log "start: pool free $FREE0 B; $(pins_now)"

# ---- 1. the device on vfio-pci
if ! bdf=$(vfio_edu_bdf); then
	fail bind "no PCI device 1234:11e8 in L1 (boot-l1.sh gives -device edu)"
	fail c-test "not run (no device)"
	results_exit
fi
if ! grp=$(vfio_bind "$bdf" 2> /tmp/vfio-bind.err); then
	fail bind "$bdf: $(tr -s '\n' ' ' < /tmp/vfio-bind.err)"
	fail c-test "not run (bind failed)"
	results_exit
fi
pass bind "$bdf in IOMMU group $grp on vfio-pci, /dev/vfio/$grp"

cleanup() { vfio_unbind "$bdf" 2> /dev/null; }
trap cleanup EXIT

# ---- 2. the C test (TAP; failures' reasons from the harness diagnostics)
tap=/tmp/vfio_dmem_test.log
if [ -x "$bin" ]; then
	t=$SECONDS
	# shellcheck disable=SC2086 # VFIO_CTEST_ARGS: harness filters (-v 2M, -t map_unmap)
	VFIO_BDF=$bdf timeout -k 5 420 "$bin" ${VFIO_CTEST_ARGS:-} > "$tap" 2>&1
	cst=$?
	cat "$tap" >&2
	log "vfio_dmem_test exit $cst after $((SECONDS - t)) s"
	tap_results vfio_dmem_test "$tap"
	if [ "$(pool_free_all)" != "$FREE0" ]; then
		fail c-test "pool free $(pool_free_all) B after the C test, $FREE0 B before"
	else
		pass c-test "exit $cst, pool back to baseline"
	fi
else
	fail c-test "$bin not built"
fi

cleanup
trap - EXIT
log "end: pool free $(pool_free_all) B (start $FREE0 B); $(pins_now)"
results_exit
