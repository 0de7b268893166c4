#!/bin/bash
# Count result lines written by every test step into build/results/*.results:
#   PASS: <name>
#   FAIL: <name>: <reason>
# Prints the failures, then the closing "N passed, N failed" line.
set -u
dir=${1:-build/results}
pass=0 fail=0
shopt -s nullglob
for f in "$dir"/*.results; do
	while IFS= read -r line; do
		case $line in
		PASS:*) pass=$((pass + 1)) ;;
		FAIL:*) fail=$((fail + 1)); echo "  $(basename "$f" .results): $line" ;;
		esac
	done < "$f"
done
[ $((pass + fail)) -eq 0 ] && { echo "no results were written"; fail=1; }
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
