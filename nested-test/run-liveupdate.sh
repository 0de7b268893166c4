#!/bin/bash
# make test's step test-liveupdate: nested-test/liveupdate-l1.sh in an L1 of
# its own with a fresh disk, into $RESULTS/liveupdate.results.
#
# Under TCG, L1's KVM vCPU threads sometimes die with "stack guard page was
# hit" while L2s run (the crash run-l1.sh retries the VFIO boot for).  An L1
# where that happened is no witness of anything: a fresh one tries again,
# 3 attempts, each retried one a SKIP line; the last one counts.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
TOP=${TOP:-$(cd "$here/.." && pwd)}
BUILD=${BUILD:-$TOP/build}
RESULTS=${RESULTS:-$BUILD/results}
disk=$BUILD/l1-liveupdate.img
out=$RESULTS/liveupdate.results
skips=()
for attempt in 1 2 3; do
	rm -rf "$RESULTS/liveupdate" "$disk"
	truncate -s 6G "$disk"
	L1_DISK=$disk RESULTS=$RESULTS/liveupdate "$here/boot-l1.sh" "$here/liveupdate-l1.sh"
	rm -f "$disk"
	crash=$(tr -d '\r' < "$RESULTS/liveupdate/l1/test-console.log" 2> /dev/null |
		grep -m1 'stack guard page was hit' | cut -c1-200)
	if [ -n "$crash" ] && grep -qs '^FAIL' "$RESULTS/liveupdate/nested.results" && [ "$attempt" -lt 3 ]; then
		cp "$RESULTS/liveupdate/l1/test-console.log" "$RESULTS/l1-liveupdate-attempt$attempt-console.log"
		skips+=("SKIP: liveupdate.attempt$attempt: retried in a fresh L1: TCG crashed L1's KVM vCPU thread ($crash; console: l1-liveupdate-attempt$attempt-console.log)")
		continue
	fi
	break
done
{
	printf '%s\n' "${skips[@]}"
	sed 's/^\(PASS\|FAIL\|SKIP\): nested\./\1: liveupdate./' "$RESULTS/liveupdate/nested.results" 2> /dev/null
} | sed '/^$/d' > "$out"
grep -qs '^\(PASS\|FAIL\)' "$out" || echo "FAIL: liveupdate: boot-l1.sh wrote no results (build/liveupdate.log)" >> "$out"
exit 0
