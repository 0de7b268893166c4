#!/bin/bash
# Host driver of `make bench`: one benchmark boot of L1 (through
# nested-test/host/boot-l1.sh --baseline, which first makes its short no-dmem=
# boot for the memory accounting), the live-update boot, three short boots
# of an 8 GiB L1 for host MemFree with a 5 GiB pool (none, dmem, hugetlbfs 1G
# with HVO: nested-test/l1/bench/l1-memfree.sh), then
# build/bench/report.{md,json,svg}.
#
# Knobs (environment): BENCH_MIB (1024: size of every run), BENCH_REPS (3),
# BENCH_BUDGET (150: seconds in L1 after which no new round starts),
# BENCH_L1_TIMEOUT (3600: under TCG each of the benchmark boot's 16
# libvirt L2 starts took about 2 minutes on 6.12, and 900 s ended the boot
# after the fourth; the live-update boot gets the same), plus boot-l1.sh's
# DMEM, L1_NODE_MEM (of the benchmark boot; the MemFree boots set their
# own) and ACCEL.
# Benchmarks never fail the build for their numbers; the script exits
# non-zero only when no benchmark line came back at all.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
TOP=${TOP:-$(cd "$here/.." && pwd)}
BUILD=${BUILD:-$TOP/build}
out=$BUILD/bench
mib=${BENCH_MIB:-1024}
reps=${BENCH_REPS:-3}
budget=${BENCH_BUDGET:-150}
export TOP BUILD
t0=$SECONDS

# The boot-time pools: enough for one run of each hugetlbfs size.
gig=$(((mib + 1023) / 1024))
append="hugepagesz=2M hugepages=$(((mib + 1) / 2)) hugepagesz=1G hugepages=$gig"
append="$append bench.mib=$mib bench.reps=$reps bench.budget=$budget"
mkdir -p "$out"
rm -rf "$out/run"
echo "[bench] L1 with $append"
[ -x "$out/dmem-bench" ] || { echo "[bench] missing ${out#"$TOP"/}/dmem-bench" >&2; exit 1; }
RESULTS=$out/run L1_APPEND="$append" L1_TIMEOUT=${BENCH_L1_TIMEOUT:-3600} \
	"$TOP/nested-test/host/boot-l1.sh" --baseline "$TOP/nested-test/l1/bench/l1-bench.sh"
raw=$out/run/l1/test-results.log
# The host kernel update: dmem-liveupdate against virsh save/restore, in an
# L1 of its own with a disk (nested-test/l1/liveupdate-l1.sh, also a test).
disk=$BUILD/l1-liveupdate.img
rm -rf "$out/run-lu" "$disk"
truncate -s 6G "$disk"
echo "[bench] L1 with a disk: dmem-liveupdate against virsh save/restore"
RESULTS=$out/run-lu L1_DISK=$disk L1_TIMEOUT=${BENCH_L1_TIMEOUT:-3600} \
	"$TOP/nested-test/host/boot-l1.sh" "$TOP/nested-test/l1/liveupdate-l1.sh" > "$out/liveupdate.log" 2>&1
rm -f "$disk"
# Host MemFree with a VM pool set aside at boot: 8 GiB of L1 (two nodes of
# 4 GiB), no pool, 5 GiB of dmem (dmem=2560M on each node) and 5 GiB of
# hugetlbfs 1G pages with HVO, the same kernel.  hugepages=5 takes the
# GiBs where it finds them: a node's aligned GiBs that the kernel image
# (KASLR) or early allocations touch cannot hold one, so the report shows
# the pool each boot got.
for v in none dmem hugetlb-1g-hvo; do
	case $v in
	none) d='' a='' ;;
	dmem) d=2560M a='' ;;
	hugetlb-1g-hvo) d='' a="hugepagesz=1G hugepages=5 hugetlb_free_vmemmap=on" ;;
	esac
	echo "[bench] L1 of 8 GiB for MemFree: $v"
	rm -rf "$out/run-memfree-$v"
	DMEM=$d L1_NODE_MEM=4G L1_APPEND="$a" L1_TIMEOUT=600 RESULTS=$out/run-memfree-$v \
		"$TOP/nested-test/host/boot-l1.sh" "$TOP/nested-test/l1/bench/l1-memfree.sh" "$v" \
		> "$out/memfree-$v.log" 2>&1
done
{
	sed -n 's/^# accelerator: /META accelerator=/p; s/^# L1 boot: /META l1_boot=/p' "$out/run/nested.results"
	echo "META host_seconds=$((SECONDS - t0))"
	tr -d '\r' < "$raw" 2> /dev/null
	tr -d '\r' < "$out/run-lu/l1/test-results.log" 2> /dev/null | grep -E '^(LIVEUPDATE|PLAINKEXEC|LUBREAKDOWN) '
	cat "$out"/run-memfree-*/l1/test-results.log 2> /dev/null | tr -d '\r' | grep -E '^(MEMFREE|META memfree_)'
} > "$out/raw.txt"
if ! grep -q '^BENCH ' "$out/raw.txt"; then
	echo "[bench] no benchmark results came back; see $out/run/l1/test-console.log" >&2
	exit 1
fi
"$TOP/bench/report.sh" "$out/raw.txt" "$out" || exit 1
# The capacity side, when the capacity tool is built: the same L1 as planned.
if [ -x "$BUILD/bin/dmem-capacity" ]; then
	"$BUILD/bin/dmem-capacity" --host node0=5G,node1=5G --dmem node0=2G,node1=2G \
		--svg "$out/capacity.svg" > "$out/capacity.txt" 2>&1 || true
fi
cat "$out/report.md"
echo "[bench] $out/report.md report.json report.svg ($((SECONDS - t0))s)"
