#!/bin/bash
# Inside L1, run by nested-test/l1/l1-trunk.sh after hwpoison_test (it poisons
# a page for good): a memory error in the memory of a running L2 guest on
# dmemfs 2M, started through libvirt with our hook and wrapper.  QEMU, an
# early-kill process, gets SIGBUS BUS_MCEERR_AO with the host address of
# the 4 KiB page inside the 2M dpage, turns it into a guest physical
# address and injects a vMCE there; L1 stays up.  What the guest kernel
# does with the vMCE is its own policy (ours, under TCG's AMD CPU model,
# treats it as fatal and reboots).  Prints PASS:/FAIL: hwpoison.l2-vmce
# (--list: that name).
set -u
[ "${1:-}" = --list ] && { echo hwpoison.l2-vmce; exit 0; }
TOP=${TOP:?TOP is not set}
export DMEMFS_2M_MOUNT=${DMEMFS_2M_MOUNT:-/run/dmemfs/2M} DMEMFS_1G_MOUNT=${DMEMFS_1G_MOUNT:-/run/dmemfs/1G}
# shellcheck source=nested-test/l1/l2-lib.sh
. "$TOP/nested-test/l1/l2-lib.sh"
l1_only
result_area hwpoison
die() { fail l2-vmce "$*"; results_exit; }

acc_setup || die "libvirt setup: $ACC_STEP failed"
trap 'acc_stop_all' EXIT
name=hwp-l2 uuid=$(new_uuid) cell=256
# a page of guest cell 0 (guest physical = file offset), 200 MiB + 20 KiB in
off=$(((200 << 20) + 5 * 4096))
mkdomain "$name" "$uuid" $cell $cell "l2.hold=1" > "/tmp/$name.xml"
rm -f "$(serial_of "$name")"
virsh define "/tmp/$name.xml" > /dev/null 2>&1 && virsh start "$name" > /tmp/$name.err 2>&1 ||
	die "virsh start: $(tr -s '\n' ' ' < /tmp/$name.err)"
wait_serial "$(serial_of "$name")" '^L2-HOLD' 180 > /dev/null || die "the L2 did not reach its init in 180 s (domain '$(domstate "$name")', last serial line: $(last_serial "$name"))"
file=$(domdir "$M2" "$uuid")/ram-node0
pfn=$("$BUILD/guest/hwpoison_test" --pfn "$file" "$off") || die "no pfn for $file at $off"
log=/var/log/libvirt/qemu/$name.log
echo "$pfn" > /sys/kernel/debug/hwpoison/corrupt-pfn || die "corrupt-pfn $pfn refused"
want=$(printf 'GUEST addr 0x%x of type BUS_MCEERR_AO injected' "$off")
for _ in $(seq 1 20); do
	grep -q "$want" "$log" && break
	sleep 0.5
done
line=$(grep -m1 'Guest MCE Memory Error' "$log")
sleep 3
state=$(domstate "$name")
guest=$(tr -d '\r' < "$(serial_of "$name")" | grep -iE -m2 'machine check|mce:|memory failure|panic' | tr -s '\n ' ' ' | cut -c1-200)
[ -n "$line" ] || die "no vMCE in $log after poisoning pfn $pfn (file offset $off); its last line: $(tail -1 "$log")"
case $line in *"$want"*) ;; *) die "QEMU injected at the wrong address: '$line', want '$want'" ;; esac
# What the guest kernel makes of the vMCE is its own policy; QEMU and L1 live.
[ -n "$(qemu_pid "$name")" ] || [ "$state" = "shut off" ] || die "QEMU gone, domain '$state'"
# A guest that resets after the vMCE stops (the template has on_reboot
# destroy); QEMU's log says how it ended
ended=
[ "$state" = "shut off" ] && ended=$(grep -m1 -E 'Could not remap|shutting down' "$log" | cut -c1-120)
pass l2-vmce "pfn $pfn (guest cell 0 offset $off on dmemfs 2M) -> QEMU: '${line#*: }'; guest then '$state'${ended:+ (QEMU: $ended)}${guest:+ (its console: $guest)}"
