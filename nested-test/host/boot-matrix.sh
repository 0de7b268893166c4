#!/bin/bash
# make test-boot: every form of dmem= booted BOOT_MATRIX_BOOTS times (default
# 3) in the two-node L1 of run-l1.sh, with KASLR on, each boot checking that
# every node reserved exactly what the form asks (total_bytes and
# requested_bytes), that the sum matches, and that MemTotal, the zone
# present pages and the memmap moved by what was reserved (l1-trunk.sh
# --boot-check against a baseline boot).
#
# L1 RAM: node 0 = 0-2G + 4G-7G, node 1 = 7G-12G (L1_NODE_MEM=5G).
#
#   nested-test/host/boot-matrix.sh     PASS:/FAIL: lines in $RESULTS/boot.results
set -u
here=$(cd "$(dirname "$0")" && pwd)
TOP=${TOP:-$(cd "$here/../.." && pwd)}
BUILD=${BUILD:-$TOP/build}
RESULTS=${RESULTS:-$BUILD/results}
boots=${BOOT_MATRIX_BOOTS:-3}
G=$((1 << 30)) M=$((1 << 20))
# name | dmem= value(s) | what each node must reserve
forms=(
	"per-node|2G:1G|0:$((2 * G)),1:$((2 * G))"
	"keep|!2G:1G|0:$((2 * G)),1:$((3 * G))"
	"fixed-low|512M@1G|0:$((512 * M))"
	"fixed-high|2G@4G:1G|0:$((2 * G))"
	"fixed-top-of-ram|2G@10G:1G|1:$((2 * G))"
	"several|512M@1G dmem=2G@10G:1G dmem=1G:1G|0:$((512 * M + G)),1:$((3 * G))"
)
out=$RESULTS/boot.results
base=
work=$BUILD/boot-matrix
mkdir -p "$RESULTS"
rm -rf "$work"
mkdir -p "$work"
: > "$out"
for f in "${forms[@]}"; do
	IFS='|' read -r name dmem want <<< "$f"
	for b in $(seq 1 "$boots"); do
		r=$work/$name-$b
		RESULTS=$r DMEM="$dmem" L1_APPEND="l1.want=$want" L1_MODE=--boot-check VFIO_L2_SCRIPT= \
			L1_BASE="$base" "$TOP/nested-test/host/run-l1.sh" > "$r.log" 2>&1
		# the first run's baseline boot (no dmem=) serves every later one:
		# same kernel, same L1 memory layout
		[ -n "$base" ] || base=$(tr -d '\r' < "$r/l1/base-results.log" 2> /dev/null | sed -n 's/^MEMINFO: //p' | tail -1)
		sed -n -E "s/^(PASS|FAIL|SKIP): /\\1: boot.$name.$b: /p" "$r/nested.results" >> "$out"
		echo "[boot-matrix] dmem=$dmem boot $b: $(grep -c '^PASS' "$r/nested.results" 2> /dev/null) passed," \
			"$(grep -c '^FAIL' "$r/nested.results" 2> /dev/null) failed; kernel image at $(grep -o '[0-9a-f]*-[0-9a-f]* : Kernel code' "$r/nested.results" | head -1 | cut -d' ' -f1)" >&2
	done
done
[ -s "$out" ] || echo "FAIL: boot: the matrix wrote no results" > "$out"
! grep -q '^FAIL' "$out"
