#!/bin/bash
# Inside L1, from nested-test/l1/bench/l1-bench.sh: L2 start time through libvirt with the
# guest memory on dmemfs 2M (our hook + wrapper) from a pool the background
# zeroers cleaned, dmemfs 2M with background zeroing off (every dpage is
# zeroed while the hook preallocates), hugetlbfs 2M (<hugepages/>) and
# anonymous memory, the same 2-cell domain otherwise, at each cell size,
# rounds interleaved.  One line per start on stdout:
#
#   L2START backing=B cell_mib=M round=N start_ms=T agent_ms=T guest_boot_s=S status=PASS|FAIL
#
# start_ms: `virsh start` until it returns (hook, QEMU launch, memory
# allocation); agent_ms: `virsh start` until the L2 agent's result line
# (it writes a pattern over all guest RAM).  Nothing here passes or fails.
# Usage: l1-l2start.sh ROUNDS CELL_MIB[,CELL_MIB...]
set -u
# no checks of its own: its lines are l1-bench.sh's
[ "${1:-}" = --list ] && exit 0
rounds=${1:-2} cells=${2:-256}
zeroing=/sys/kernel/mm/dmem/background_zeroing
TOP=${TOP:?TOP is not set}
export DMEMFS_2M_MOUNT=/run/dmemfs/2M DMEMFS_1G_MOUNT=/run/dmemfs/1G
# shellcheck source=nested-test/l1/l2-lib.sh
. "$TOP/nested-test/l1/l2-lib.sh"
l1_only
say() { printf '[l2start] %s\n' "$*" >&2; }

# libvirt finds hugetlbfs mounts when it starts; /dev/hugepages is its default
mkdir -p /dev/hugepages
mountpoint -q /dev/hugepages || mount -t hugetlbfs -o pagesize=2M none /dev/hugepages
# 1 GiB hugetlb pages (the populate benchmark's) are not used here: give
# them back so that the anonymous guest of the largest size fits
echo 0 > /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages 2> /dev/null
# the largest guest on hugetlbfs 2M: two cells, half of the pool on each node
big=$(tr , '\n' <<< "$cells" | sort -n | tail -1)
h=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
[ "$(cat "$h")" -ge $((big * 2 / 2)) ] || echo $((big * 2 / 2)) > "$h"
say "hugetlbfs 2M pool: $(cat "$h") pages for cells of up to $big MiB"
if ! acc_setup; then
	say "libvirt setup failed: $ACC_STEP"
	echo "L2START backing=all round=0 status=FAIL reason=libvirt-setup"
	acc_stop_all
	exit 0
fi
trap 'acc_stop_all' EXIT

# xml_for BACKING NAME UUID: the acceptance domain, re-pointed for BACKING
xml_for() {
	mkdomain "$2" "$3" "$cell" "$cell" > "/tmp/$2.xml"
	case $1 in
	dmem-2M*) ;;
	hugetlb-2M | anon)
		local mb='<memoryBacking><hugepages/></memoryBacking>'
		[ "$1" = anon ] && mb=
		# plain QEMU, no dmemfs metadata: libvirt's own memory backends
		sed -i -e '/<metadata>/,/<\/metadata>/d' \
			-e '/<memoryBacking>/,/<\/memoryBacking>/d' \
			-e "s|<emulator>.*</emulator>|<emulator>/usr/bin/qemu-system-x86_64</emulator>|" \
			-e "s|</numatune>|</numatune>$mb|" "/tmp/$2.xml"
		;;
	esac
}

for cell in ${cells//,/ }; do
for r in $(seq 1 "$rounds"); do
	for b in dmem-2M dmem-2M-zeroing-off hugetlb-2M anon; do
		name=bench-$b uuid=$(new_uuid)
		xml_for "$b" "$name" "$uuid"
		rm -f "$(serial_of "$name")"
		if ! err=$(virsh define "/tmp/$name.xml" 2>&1); then
			echo "L2START backing=$b cell_mib=$cell round=$r status=FAIL reason=define:$(echo "$err" | tr -s ' \n' '_' | cut -c1-120)"
			continue
		fi
		# dmem-2M: the pool as the zeroers leave it between guests
		w=0
		while [ "$b" = dmem-2M ] && [ "$(pool_sum dirty)" != 0 ] && [ $w -lt 600 ]; do sleep 0.1; w=$((w + 1)); done
		[ "$b" = dmem-2M-zeroing-off ] && echo 0 > "$zeroing"
		t0=$(now_ms)
		if ! err=$(virsh start "$name" 2>&1); then
			echo 1 > "$zeroing"
			echo "L2START backing=$b cell_mib=$cell round=$r status=FAIL reason=start:$(echo "$err" | tr -s ' \n' '_' | cut -c1-120)"
			virsh undefine "$name" > /dev/null 2>&1
			continue
		fi
		t1=$(now_ms)
		echo 1 > "$zeroing"
		line=$(wait_serial "$(serial_of "$name")" '^L2-AGENT-RESULT' 300)
		t2=$(now_ms)
		echo "L2START backing=$b cell_mib=$cell round=$r start_ms=$((t1 - t0)) agent_ms=$((t2 - t0)) guest_boot_s=$(agent_field "$line" boot_s) clean_wait_ms=$((w * 100)) status=$(agent_field "$line" status)"
		wait_state "$name" "shut off" 60 || virsh destroy "$name" > /dev/null 2>&1
		virsh undefine "$name" > /dev/null 2>&1
	done
done
done
