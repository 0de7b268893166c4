#!/bin/bash
# Boot L1 (nested-test/host/boot-l1.sh) with only the nested acceptance
# (l1-accept.sh) and print its results.  `make accept`.
#
#   ACC_RESULTS  where the results go (default build/results/accept)
#   ACCEL, L1_NODE_MEM, DMEM, L1_TIMEOUT, KERNEL ... as boot-l1.sh reads them
# Results: $ACC_RESULTS/accept.results (the accept.* checks and the L1
# boot's own accept.l1-boot, ...); the L1 console in $ACC_RESULTS/accept-l1/.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export TOP=${TOP:-$(cd "$here/../.." && pwd)}
export BUILD=${BUILD:-$TOP/build}
out=${ACC_RESULTS:-$BUILD/results/accept}
mkdir -p "$out"
RESULTS=$out L1_TIMEOUT=${L1_TIMEOUT:-900} "$here/boot-l1.sh" --area=accept "$TOP/nested-test/l1/acceptance/l1-accept.sh"
cat "$out/accept.results"
echo "accept: $(grep -c '^PASS' "$out/accept.results") passed, $(grep -c '^FAIL' "$out/accept.results") failed"
! grep -q '^FAIL' "$out/accept.results"
