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
# shellcheck disable=SC2317 # run by retry_loop
lu_run() {
	rm -rf "$RESULTS/liveupdate" "$disk"
	truncate -s 6G "$disk"
	L1_DISK=$disk RESULTS=$RESULTS/liveupdate "$here/boot-l1.sh" --area=liveupdate "$here/../l1/liveupdate-l1.sh"
	rm -f "$disk"
	! grep -qs '^FAIL' "$RESULTS/liveupdate/liveupdate.results"
}
# shellcheck disable=SC2317 # run by retry_loop
lu_evidence() {
	local accel ev console=$RESULTS/liveupdate/liveupdate-l1/test-console.log
	accel=$(sed -n 's/^# accelerator: -accel \([a-z]*\).*/\1/p' "$RESULTS/liveupdate/liveupdate.results" 2> /dev/null | head -1)
	ev=$(retry_evidence "$accel" "$console" \
		"$(grep -c '^SKIP: .*retried: .*stack guard page was hit' "$RESULTS/liveupdate/liveupdate.results")") ||
		# the line of a stage that failed after an L2 triple fault (liveupdate-l1.sh)
		ev=$(l2_fault_retry_evidence "$accel" "$console") || return 1
	cp "$console" "$RESULTS/l1-liveupdate-attempt$1-console.log"
	echo "in a fresh L1: $ev (console: l1-liveupdate-attempt$1-console.log)"
}
# shellcheck disable=SC2317 # run by retry_loop
lu_skip() { skips+=("SKIP: liveupdate.$1: $2"); }
retry_loop l1 3 lu_run lu_evidence lu_skip
{
	printf '%s\n' "${skips[@]}"
	cat "$RESULTS/liveupdate/liveupdate.results" 2> /dev/null
} | sed '/^$/d' > "$out"
grep -qs '^\(PASS\|FAIL\)' "$out" || echo "FAIL: liveupdate: boot-l1.sh wrote no results (build/liveupdate.log)" >> "$out"
exit 0
