#!/bin/bash
# make demo, after `make kernel userspace capacity guest`: boot our kernel as
# L1 under QEMU (nested-test/host/boot-l1.sh) with nested-test/l1/acceptance/l1-demo.sh
# as its script, and show what it does as it happens: dmem per node, dmemfs,
# libvirtd with the dmemfs hook and qemu-memdev-wrapper, one dmem-backed L2
# started with virsh and its console result, the per-node pool, the live
# capacity report, a clean shutdown.
#
# Logs: build/results/demo/l1/ (L1 console: test-console.log).  Knobs are
# boot-l1.sh's (ACCEL, L1_NODE_MEM, DMEM, ...); DEMO_TIMEOUT (s, default 600).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export TOP=${TOP:-$(cd "$here/.." && pwd)}
export BUILD=${BUILD:-$TOP/build}
out=$BUILD/results/demo
res=$out/l1/test-results.log
for f in "$BUILD/bzImage" "$BUILD/l2/initramfs.cpio.gz" "$BUILD/bin/dmemfs-hook" \
	"$BUILD/bin/qemu-memdev-wrapper" "$BUILD/bin/dmem-capacity"; do
	[ -e "$f" ] || { echo "[demo] missing ${f#$TOP/}: run make kernel userspace capacity guest" >&2; exit 1; }
done
mkdir -p "$out/l1"
rm -f "$res"
echo "[demo] booting build/bzImage as L1 (2 NUMA nodes, dmem= on both) under QEMU;"
echo "[demo] inside it: libvirtd, the dmemfs hook and one L2 guest.  A few minutes under TCG."
start=$SECONDS
RESULTS=$out L1_TIMEOUT=${DEMO_TIMEOUT:-600} \
	"$TOP/nested-test/host/boot-l1.sh" "$TOP/nested-test/l1/acceptance/l1-demo.sh" 2> >(grep --line-buffered -E '\] (accelerator|booting|L1 .* reached)' >&2) &
pid=$!
# The L1 writes everything meant for the user to its results channel.
tail -n +1 -F --pid="$pid" "$res" 2> /dev/null | tr -d '\r' | grep --line-buffered -v '^L1-DONE$' |
	sed -u 's/^/  | /'
wait "$pid"
echo
if grep -q '^DEMO-RESULT ok' "$res" 2> /dev/null; then
	echo "[demo] done in $((SECONDS - start)) s: L1 booted on dmem, an L2 ran on dmemfs under libvirt, L1 shut down cleanly."
	echo "[demo] L1 console: ${out#$TOP/}/l1/test-console.log"
	exit 0
fi
echo "[demo] FAILED after $((SECONDS - start)) s; last L1 console lines (${out#$TOP/}/l1/test-console.log):" >&2
tr -d '\r' < "$out/l1/test-console.log" 2> /dev/null | grep -v '^\s*$' | tail -15 | sed 's/^/  /' >&2
exit 1
