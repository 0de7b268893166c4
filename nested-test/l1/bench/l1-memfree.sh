#!/bin/bash
# In-L1 script of `make bench` (bench/run-bench.sh): what a host keeps for
# itself with a VM pool set aside at boot.  run-bench.sh boots the same
# kernel three times, 8 GiB of L1 on two nodes: no pool, a 5 GiB dmem=
# pool, and 5 GiB of hugetlbfs 1G pages with HVO (hugetlb_free_vmemmap=on).
#
#   l1-memfree.sh --list        no checks: nothing here passes or fails
#   l1-memfree.sh VARIANT       once the boot settled (caches dropped,
#       MemFree still), one line on the results channel:
#       MEMFREE variant=VARIANT memfree_kb=K memtotal_kb=K pool_kb=K
#       (pool_kb: dmem's total, or the hugetlb pages of every size)
#       then L1-DONE.  Nothing here passes or fails.
set -u
export LC_ALL=C
[ "${1:-}" = --list ] && exit 0
TOP=${TOP:?TOP is not set}
# shellcheck source=nested-test/l1/l1-common.sh
. "$TOP/nested-test/l1/l1-common.sh"
l1_channel
variant=${1:?usage: l1-memfree.sh VARIANT}

# Settle: drop the page cache and wait until MemFree moves by less than
# 256 KiB over a second (at most 30 s).
prev=-1
for _ in $(seq 30); do
	sync
	echo 3 > /proc/sys/vm/drop_caches
	sleep 1
	cur=$(meminfo_kb MemFree)
	[ "$prev" -ge 0 ] && [ $((cur > prev ? cur - prev : prev - cur)) -le 256 ] && break
	prev=$cur
done
if [ "$variant" = dmem ]; then
	# a pool that is not there says so ("absent!"), never 0
	pool=$(pool_sum total)
	case $pool in *[!0-9]*) ;; *) pool=$((pool / 1024)) ;; esac
else
	# every hugetlb size (meminfo's HugePages_* count the default size only)
	pool=0
	for h in /sys/kernel/mm/hugepages/hugepages-*kB; do
		[ -r "$h/nr_hugepages" ] || continue
		sz=${h##*hugepages-}
		pool=$((pool + $(cat "$h/nr_hugepages") * ${sz%kB}))
	done
fi
res "MEMFREE variant=$variant memfree_kb=$(meminfo_kb MemFree) memtotal_kb=$(meminfo_kb MemTotal) pool_kb=$pool"
bad=$(kernel_splats | tr ' ' '_')
res "META memfree_${variant}_dmesg=${bad:-clean}"
res L1-DONE
exec 3>&-
