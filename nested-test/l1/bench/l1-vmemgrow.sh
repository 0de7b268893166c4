#!/bin/bash
# Inside L1, from nested-test/l1/bench/l1-bench.sh: the time of a virtio-mem grow of a
# running L2 through libvirt, with the device's memory on dmemfs 2M (our hook
# and wrapper), hugetlbfs 2M (<hugepages/>) and anonymous memory; the same
# 2-cell domain otherwise, QEMU preallocating each plugged block in all three
# (<allocation mode='immediate'/>), rounds interleaved.  One line per grow:
#
#   VMEMGROW backing=B grow_mib=M round=N grow_ms=T status=PASS|FAIL
#
# grow_ms: from `virsh update-memory-device --requested-size` until QEMU
# reports the device at that size (HMP info memory-devices, polled every
# 100 ms): the guest driver's plug requests, QEMU's preallocation of every
# block and, for dmem, the zeroing of dpages the zeroers had not cleaned.
# Nothing here passes or fails.  Usage: l1-vmemgrow.sh ROUNDS GROW_MIB
set -u
# no checks of its own: its lines are l1-bench.sh's
[ "${1:-}" = --list ] && exit 0
rounds=${1:-2} grow=${2:-1024}
TOP=${TOP:?TOP is not set}
export DMEMFS_2M_MOUNT=/run/dmemfs/2M DMEMFS_1G_MOUNT=/run/dmemfs/1G
# shellcheck source=nested-test/l1/l2-lib.sh
. "$TOP/nested-test/l1/l2-lib.sh"
l1_only
say() { printf '[vmemgrow] %s\n' "$*" >&2; }
C0=64 C1=128

# hugetlbfs 2M: cell 0 and the device on node 0, cell 1 on node 1
mkdir -p /dev/hugepages
mountpoint -q /dev/hugepages || mount -t hugetlbfs -o pagesize=2M none /dev/hugepages
hp=/sys/devices/system/node/node%s/hugepages/hugepages-2048kB/nr_hugepages
# shellcheck disable=SC2059
{
	echo $(((C0 + grow) / 2)) > "$(printf "$hp" 0)"
	echo $((C1 / 2)) > "$(printf "$hp" 1)"
	say "hugetlbfs 2M pool: node0 $(cat "$(printf "$hp" 0)"), node1 $(cat "$(printf "$hp" 1)") pages"
}
if ! acc_setup; then
	say "libvirt setup failed: $ACC_STEP"
	echo "VMEMGROW backing=all round=0 status=FAIL reason=libvirt-setup"
	acc_stop_all
	exit 0
fi
trap 'acc_stop_all' EXIT

# xml_for BACKING NAME UUID: the acceptance domain with a virtio-mem device
# of GROW MiB on cell 0, requested 0, re-pointed for BACKING
xml_for() {
	mkdomain "$2" "$3" $C0 $C1 "l2.watch=1 memhp_default_state=online_movable" \
		"<allocation mode='immediate'/>" |
		sed -e "s|^  <memory unit='MiB'>.*|  <maxMemory slots='1' unit='MiB'>$((C0 + C1 + grow + 1024))</maxMemory>\n&|" \
			-e "s|^  </devices>|    <memory model='virtio-mem'><target><size unit='MiB'>$grow</size><node>0</node><block unit='KiB'>2048</block><requested unit='KiB'>0</requested></target></memory>\n&|" \
			> "/tmp/$2.xml"
	case $1 in
	dmem-2M) ;;
	hugetlb-2M | anon)
		local mb="<memoryBacking><hugepages/><allocation mode='immediate'/></memoryBacking>"
		[ "$1" = anon ] && mb="<memoryBacking><allocation mode='immediate'/></memoryBacking>"
		# plain QEMU, no dmemfs metadata: libvirt's own memory backends
		sed -i -e '/<metadata>/,/<\/metadata>/d' \
			-e '/<memoryBacking>/,/<\/memoryBacking>/d' \
			-e "s|<emulator>.*</emulator>|<emulator>/usr/bin/qemu-system-x86_64</emulator>|" \
			-e "s|</numatune>|</numatune>$mb|" "/tmp/$2.xml"
		;;
	esac
}
dev_size() { # the virtio-mem device's plugged size in bytes, as QEMU has it
	virsh qemu-monitor-command "$1" --hmp 'info memory-devices' 2> /dev/null |
		tr -d '\r' | sed -n 's/^ *size: \([0-9]*\).*/\1/p' | head -1
}

for r in $(seq 1 "$rounds"); do
	for b in dmem-2M hugetlb-2M anon; do
		name=grow-$b uuid=$(new_uuid)
		xml_for "$b" "$name" "$uuid"
		rm -f "$(serial_of "$name")"
		if ! err=$( (virsh define "/tmp/$name.xml" && virsh start "$name") 2>&1); then
			echo "VMEMGROW backing=$b grow_mib=$grow round=$r status=FAIL reason=start:$(echo "$err" | tr -s ' \n' '_' | cut -c1-160)"
			virsh undefine "$name" > /dev/null 2>&1
			continue
		fi
		# the guest is up and its agent has checked node 0 once
		line=$(wait_serial "$(serial_of "$name")" '^L2-MEM-CHECK' 300)
		# dmem: from a pool the background zeroers cleaned, as a host has it
		w=0
		while [ "$(pool_sum dirty)" != 0 ] && [ $w -lt 600 ]; do sleep 0.1; w=$((w + 1)); done
		want=$((grow * MiB)) size=
		t0=$(now_ms)
		if ! err=$(virsh update-memory-device "$name" --alias virtiomem0 --requested-size "$((grow * 1024))" --live 2>&1); then
			echo "VMEMGROW backing=$b grow_mib=$grow round=$r status=FAIL reason=update:$(echo "$err" | tr -s ' \n' '_' | cut -c1-160)"
		else
			end=$((SECONDS + 300))
			while size=$(dev_size "$name") && [ "${size:-0}" != "$want" ] && [ $SECONDS -lt $end ]; do
				sleep 0.1
			done
			t1=$(now_ms)
			st=PASS
			[ "${size:-0}" = "$want" ] && [ -n "$line" ] || st=FAIL
			echo "VMEMGROW backing=$b grow_mib=$grow round=$r grow_ms=$((t1 - t0)) plugged_bytes=${size:-0} status=$st"
		fi
		virsh destroy "$name" > /dev/null 2>&1
		virsh undefine "$name" > /dev/null 2>&1
	done
done
