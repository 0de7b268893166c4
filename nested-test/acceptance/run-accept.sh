#!/bin/bash
# Boot L1 (nested-test/run-l1.sh) with only the nested acceptance
# (l1-accept.sh) and print its results.  `make accept`.
#
#   ACC_RESULTS  where run-l1.sh writes (default build/results/accept)
#   ACCEL, L1_NODE_MEM, DMEM, L1_TIMEOUT, KERNEL ... as run-l1.sh reads them
# Results: $ACC_RESULTS/accept.results (only this run's accept.* lines and
# the L1 boot/poweroff lines); the L1 console in $ACC_RESULTS/l1/.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export TOP=${TOP:-$(cd "$here/../.." && pwd)}
export BUILD=${BUILD:-$TOP/build}
out=${ACC_RESULTS:-$BUILD/results/accept}
mkdir -p "$out"
L1_SCRIPT=$here/l1-accept.sh RESULTS=$out L1_TIMEOUT=${L1_TIMEOUT:-900} "$TOP/nested-test/run-l1.sh"
grep -E '^(# accept|# accelerator|# L1 boot|(PASS|FAIL): (accept\.|nested\.l1-boot|nested\.l1-poweroff|nested\.console-clean))' \
	"$out/nested.results" > "$out/accept.results"
grep -q '^PASS: accept\.' "$out/accept.results" || echo "FAIL: accept: no acceptance results (see ${out#$TOP/}/l1/test-console.log)" >> "$out/accept.results"
cat "$out/accept.results"
echo "accept: $(grep -c '^PASS' "$out/accept.results") passed, $(grep -c '^FAIL' "$out/accept.results") failed"
! grep -q '^FAIL' "$out/accept.results"
