#!/bin/bash
# Count result lines written by every test step into build/results/*.results:
#   PASS: <name>
#   FAIL: <name>: <reason>
#   SKIP: <name>: <reason>   (neither passed nor failed; listed and counted)
# Prints the skips and the failures, "N skipped", then the closing
# "N passed, N failed" line.
#
#   scripts/summarize.sh DIR [STEP...]   each STEP must have written DIR/STEP.results
set -u
dir=${1:-build/results}
shift
pass=0 fail=0 skip=0
# the top-level list of steps: one that wrote nothing is a failure
for s in "$@"; do
	[ -s "$dir/$s.results" ] && continue
	fail=$((fail + 1))
	echo "  $s: FAIL: $s: the step wrote no results"
done
shopt -s nullglob
for f in "$dir"/*.results; do
	while IFS= read -r line; do
		case $line in
		PASS:*) pass=$((pass + 1)) ;;
		FAIL:*) fail=$((fail + 1)); echo "  $(basename "$f" .results): $line" ;;
		SKIP:*) skip=$((skip + 1)); echo "  $(basename "$f" .results): $line" ;;
		esac
	done < "$f"
done
[ $((pass + fail)) -eq 0 ] && { echo "no results were written"; fail=1; }
echo "$skip skipped"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
