#!/bin/bash
# Run scripts/checkpatch.pl --strict on every patch of the series and
# print one PASS:/FAIL: line per patch.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
patchdir=$top/kernel/patches
tree=$top/build/linux
rc=0
for p in "$patchdir"/*.patch; do
	name=$(basename "$p")
	out=$(cd "$tree" && perl scripts/checkpatch.pl --strict --no-tree -q \
		--ignore FILE_PATH_CHANGES "$p" 2>&1)
	if [ -z "$out" ]; then
		echo "PASS: checkpatch --strict $name"
	else
		echo "FAIL: checkpatch --strict $name: $(echo "$out" | grep -m1 -E 'ERROR|WARNING|CHECK')"
		echo "$out" >&2
		rc=1
	fi
done
exit $rc
