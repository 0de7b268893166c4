#!/bin/bash
# make test's step test-liveupdate: nested-test/l1/liveupdate-l1.sh in an L1 of
# its own with a fresh disk, into $RESULTS/liveupdate.results.
#
# An L1 that failed is tried again in a fresh one only under the one retry
# rule (l1-common.sh: TCG, a named crash signature on its console), up to 3
# attempts, each retried one a SKIP line with the evidence; the last counts.
# A stage that failed after an L2 triple fault, with everything else clean,
# says so on the console (liveupdate-l1.sh's done_l1): that line is this
# boot's second signature (l2_fault_retry_evidence).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=nested-test/l1/l1-common.sh
. "$here/../l1/l1-common.sh"
TOP=${TOP:-$(cd "$here/../.." && pwd)}
BUILD=${BUILD:-$TOP/build}
RESULTS=${RESULTS:-$BUILD/results}
disk=$BUILD/l1-liveupdate.img
out=$RESULTS/liveupdate.results
skips=()
for attempt in 1 2 3; do
	rm -rf "$RESULTS/liveupdate" "$disk"
	truncate -s 6G "$disk"
	L1_DISK=$disk RESULTS=$RESULTS/liveupdate "$here/boot-l1.sh" --area=liveupdate "$here/../l1/liveupdate-l1.sh"
	rm -f "$disk"
	accel=$(sed -n 's/^# accelerator: -accel \([a-z]*\).*/\1/p' "$RESULTS/liveupdate/liveupdate.results" 2> /dev/null | head -1)
	if grep -qs '^FAIL' "$RESULTS/liveupdate/liveupdate.results" && [ "$attempt" -lt 3 ] &&
		{ evidence=$(retry_evidence "$accel" "$RESULTS/liveupdate/liveupdate-l1/test-console.log" \
			"$(grep -c '^SKIP: .*retried: .*stack guard page was hit' "$RESULTS/liveupdate/liveupdate.results")") ||
			# the line of a stage that failed after an L2 triple fault (liveupdate-l1.sh)
			evidence=$(l2_fault_retry_evidence "$accel" "$RESULTS/liveupdate/liveupdate-l1/test-console.log"); }; then
		cp "$RESULTS/liveupdate/liveupdate-l1/test-console.log" "$RESULTS/l1-liveupdate-attempt$attempt-console.log"
		skips+=("SKIP: liveupdate.attempt$attempt: retried in a fresh L1: $evidence (console: l1-liveupdate-attempt$attempt-console.log)")
		continue
	fi
	break
done
{
	printf '%s\n' "${skips[@]}"
	cat "$RESULTS/liveupdate/liveupdate.results" 2> /dev/null
} | sed '/^$/d' > "$out"
grep -qs '^\(PASS\|FAIL\)' "$out" || echo "FAIL: liveupdate: boot-l1.sh wrote no results (build/liveupdate.log)" >> "$out"
exit 0
