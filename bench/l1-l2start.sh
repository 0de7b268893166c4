#!/bin/bash
# Inside L1, from bench/l1-bench.sh: L2 start time through libvirt with the
# guest memory on dmemfs 2M (our hook + wrapper), hugetlbfs 2M
# (<hugepages/>) and anonymous memory, the same 2-cell domain otherwise,
# rounds interleaved.  One line per start on stdout:
#
#   L2START backing=B round=N start_ms=T agent_ms=T guest_boot_s=S status=PASS|FAIL
#
# start_ms: `virsh start` until it returns (hook, QEMU launch, memory
# allocation); agent_ms: `virsh start` until the L2 agent's result line
# (it writes a pattern over all guest RAM).  Nothing here passes or fails.
# Usage: l1-l2start.sh ROUNDS CELL_MIB
set -u
rounds=${1:-2} cell=${2:-256}
TOP=${TOP:?TOP is not set}
export DMEMFS_2M_MOUNT=/run/dmemfs/2M DMEMFS_1G_MOUNT=/run/dmemfs/1G
# shellcheck source=nested-test/acceptance/l1-lib.sh
. "$TOP/nested-test/acceptance/l1-lib.sh"
say() { printf '[l2start] %s\n' "$*" >&2; }

# libvirt finds hugetlbfs mounts when it starts; /dev/hugepages is its default
mkdir -p /dev/hugepages
mountpoint -q /dev/hugepages || mount -t hugetlbfs -o pagesize=2M none /dev/hugepages
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
	dmem-2M) ;;
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

for r in $(seq 1 "$rounds"); do
	for b in dmem-2M hugetlb-2M anon; do
		name=bench-$b uuid=$(new_uuid)
		xml_for "$b" "$name" "$uuid"
		rm -f "$(serial_of "$name")"
		if ! err=$(virsh define "/tmp/$name.xml" 2>&1); then
			echo "L2START backing=$b round=$r status=FAIL reason=define:$(echo "$err" | tr -s ' \n' '_' | cut -c1-120)"
			continue
		fi
		t0=$(now_ms)
		if ! err=$(virsh start "$name" 2>&1); then
			echo "L2START backing=$b round=$r status=FAIL reason=start:$(echo "$err" | tr -s ' \n' '_' | cut -c1-120)"
			virsh undefine "$name" > /dev/null 2>&1
			continue
		fi
		t1=$(now_ms)
		line=$(wait_serial "$(serial_of "$name")" '^L2-AGENT-RESULT' 300)
		t2=$(now_ms)
		echo "L2START backing=$b round=$r start_ms=$((t1 - t0)) agent_ms=$((t2 - t0)) guest_boot_s=$(agent_field "$line" boot_s) status=$(agent_field "$line" status)"
		wait_state "$name" "shut off" 60 || virsh destroy "$name" > /dev/null 2>&1
		virsh undefine "$name" > /dev/null 2>&1
	done
done
