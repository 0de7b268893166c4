#!/bin/bash
# In-L1 script of `make bench`, started by guest-images/init through
# nested-test/host/boot-l1.sh --baseline (run-bench.sh), with TOP set.
#
#   l1-bench.sh --list             no checks: nothing here passes or fails
#   l1-bench.sh --build=DIR --base=MEMTOTAL_KB:PRESENT_PAGES:PHYS_KB:RESERVED_KB
#       mount dmemfs 4K/2M/1G and hugetlbfs 2M/1G, run
#       DIR/bench/dmem-bench and DIR/guest/vfio_dmem_test --bench (VFIO
#       MAP_DMA timing), the L2 start and virtio-mem benchmarks, then
#       dmem-bench --hvo; send their lines plus META key=value lines
#       to the results channel (ttyS1), then L1-DONE.
#
# Knobs from the kernel command line (run-bench.sh puts them there):
# bench.mib=N (size of each run, MiB), bench.reps=R, bench.budget=S (seconds
# after which no new round starts).  Nothing here passes or fails.
set -u
export LC_ALL=C
[ "${1:-}" = --list ] && exit 0
TOP=${TOP:?TOP is not set}
build=$TOP/build base=
for a in "$@"; do
	case $a in
	--build=*) build=${a#--build=} ;;
	--base=*) base=${a#--base=} ;;
	esac
done
mib=1024 reps=3 budget=180
for w in $(cat /proc/cmdline); do
	case $w in
	bench.mib=*) mib=${w#bench.mib=} ;;
	bench.reps=*) reps=${w#bench.reps=} ;;
	bench.budget=*) budget=${w#bench.budget=} ;;
	esac
done

# shellcheck source=nested-test/l1/l1-common.sh
. "$TOP/nested-test/l1/l1-common.sh"
l1_channel
out() { res "$@"; }
meta() { out "META $1=$2"; }
trap 'st=$?; [ -n "${finished:-}" ] || { out "META aborted=status-$st-line-$LINENO"; out L1-DONE; }' EXIT

bin=$build/bench/dmem-bench
sysfs=/sys/kernel/mm/dmem

meta kernel "$(uname -r | tr ' ' _)"
meta kernel_build "$(uname -v | tr ' ' _)"
meta cpus "$(nproc)"
meta mib "$mib"
meta reps "$reps"
meta budget_s "$budget"
meta thp_enabled "$(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled)"
meta shmem_thp "$(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/shmem_enabled)"
meta cmdline_hugetlb "$(tr ' ' '\n' < /proc/cmdline | grep -E '^(hugepage|hugetlb|dmem=)' | tr '\n' ,)"

# ---- memmap of normal RAM versus dmem: this boot against the baseline boot
memtotal_kb=$(meminfo_kb MemTotal)
present=$(awk '$1 == "present" {s += $2} END {print s + 0}' /proc/zoneinfo)
memline=$(dmesg | grep -m1 -o 'Memory: [0-9]*K/[0-9]*K available.*')
reserved_kb=$(echo "$memline" | sed -n 's|.*[ (]\([0-9]*\)K reserved.*|\1|p')
dmem_total=$(pool_sum total)
meta dmem_total_bytes "$dmem_total"
meta dmem_memmap_saved_bytes_sysfs "$(cat "$sysfs/memmap_saved_bytes" 2> /dev/null || echo -1)"
if [ -n "$base" ]; then
	IFS=: read -r b_memtotal b_present _ b_reserved <<< "$base"
	meta memtotal_delta_bytes $(((b_memtotal - memtotal_kb) * 1024))
	meta present_delta_bytes $(((b_present - present) * 4096))
	meta boot_reserved_delta_bytes $(((b_reserved - ${reserved_kb:-0}) * 1024))
fi
# The kernel's own HVO figures ("HugeTLB: N KiB vmemmap can be freed for a S page").
dmesg | sed -n 's/.*HugeTLB: \([0-9]*\) KiB vmemmap can be freed for a \([0-9.]*\) \([GM]\)iB page.*/\1 \2\3/p' |
	while read -r k s; do meta "kernel_hvo_freeable_kib_${s%.00*}${s: -1}" "$k"; done

# ---- mounts
mnt=/run/bench
declare -A dirs
for ps in 4K 2M 1G; do
	mkdir -p "$mnt/dmem-$ps"
	mount -t dmemfs -o "pagesize=$ps" none "$mnt/dmem-$ps" && dirs[dmem${ps,,}]=$mnt/dmem-$ps
done
for ps in 2M 1G; do
	mkdir -p "$mnt/huge-$ps"
	mount -t hugetlbfs -o "pagesize=$ps" none "$mnt/huge-$ps" && dirs[huge${ps,,}]=$mnt/huge-$ps
done
# Each hugetlbfs run needs $mib MiB of free pages: top up what the boot gave.
for kbsz in 2048 1048576; do
	h=/sys/kernel/mm/hugepages/hugepages-${kbsz}kB
	[ -d "$h" ] || continue
	need=$(((mib * 1024 + kbsz - 1) / kbsz))
	[ "$(cat "$h/nr_hugepages")" -ge "$need" ] || echo "$need" > "$h/nr_hugepages"
	meta "hugetlb_${kbsz}kB_pool" "$(cat "$h/nr_hugepages")"
done

# ---- populate timing
args=(--mib "$mib" --reps "$reps" --budget "$budget")
for k in "${!dirs[@]}"; do args+=("--$k" "${dirs[$k]}"); done
free0=$(pool_sum free)
echo "== $bin ${args[*]}"
t0=$SECONDS
"$bin" "${args[@]}" | while IFS= read -r l; do out "$l"; done
meta bench_seconds $((SECONDS - t0))
meta dmem_free_before_after "$free0/$(pool_sum free)"

# ---- VFIO: MAP_DMA + UNMAP_DMA of $mib MiB per backing, through the vIOMMU
# and the edu device of boot-l1.sh (nested-test/progs/vfio_dmem_test.c --bench).
vbin=$build/guest/vfio_dmem_test
# shellcheck source=nested-test/l1/vfio-lib.sh
. "$TOP/nested-test/l1/vfio-lib.sh"
if [ ! -x "$vbin" ]; then
	out "VFIOSKIP variant=all reason=$vbin not built"
elif ! bdf=$(vfio_edu_bdf); then
	out "VFIOSKIP variant=all reason=no edu device (1234:11e8) in L1"
elif ! grp=$(vfio_bind "$bdf" 2> /tmp/vfio-bind.err); then
	out "VFIOSKIP variant=all reason=binding $bdf to vfio-pci: $(tr -s '\n' ' ' < /tmp/vfio-bind.err)"
else
	meta vfio_device "$bdf/group$grp"
	echo "== $vbin --bench (device $bdf, group $grp)"
	t1=$SECONDS
	VFIO_BDF=$bdf "$vbin" --bench --mib "$mib" --reps "$reps" \
		--dmem-2M "${dirs[dmem2m]:-}" --dmem-1G "${dirs[dmem1g]:-}" \
		--huge-2M "${dirs[huge2m]:-}" --huge-1G "${dirs[huge1g]:-}" |
		while IFS= read -r l; do echo "$l"; case $l in VFIO*) out "$l" ;; esac; done
	meta vfio_bench_seconds $((SECONDS - t1))
	vfio_unbind "$bdf"
fi
meta dmem_free_after_vfio "$(pool_sum free)"
for d in "${dirs[@]}"; do umount "$d"; done

# ---- L2 start time through libvirt: dmem vs hugetlbfs vs anonymous
echo "== nested-test/l1/bench/l1-l2start.sh"
t0=$SECONDS
meta l2start_cell_mib 256,1024
bash "$TOP/nested-test/l1/bench/l1-l2start.sh" 2 256,1024 2>&1 | while IFS= read -r l; do
	case $l in L2START*) out "$l" ;; *) echo "$l" ;; esac
done
meta l2start_seconds $((SECONDS - t0))

# ---- virtio-mem grow of a running L2: dmem vs hugetlbfs vs anonymous
echo "== nested-test/l1/bench/l1-vmemgrow.sh"
t0=$SECONDS
meta vmemgrow_mib 1024
bash "$TOP/nested-test/l1/bench/l1-vmemgrow.sh" 2 1024 2>&1 | while IFS= read -r l; do
	case $l in VMEMGROW*) out "$l" ;; *) echo "$l" ;; esac
done
meta vmemgrow_seconds $((SECONDS - t0))

# ---- HVO: the vmemmap each hugetlb size gives back, off versus on.  Last:
# the pages it allocates with HVO on stay in the pool, since freeing an
# optimised page corrupts its struct pages on 6.12.118 (dmem-bench.c, hvo())
echo "== $bin --hvo --mib $mib --reps $reps"
"$bin" --hvo --mib "$mib" --reps "$reps" | while IFS= read -r l; do out "$l"; done

bad=$(kernel_splats | tr ' ' '_')
meta dmesg "${bad:-clean}"
finished=1
out L1-DONE
exec 3>&-
