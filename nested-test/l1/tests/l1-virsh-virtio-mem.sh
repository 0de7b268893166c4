#!/bin/bash
# In-L1 test of elastic dmem guests (issue 15), picked up by
# nested-test/l1/l1-trunk.sh like every */tests/l1-*.sh: an L2 with a virtio-mem
# device on dmemfs 2M, started through libvirt with the hook and the wrapper,
# grows from its requested size to its maximum and back with
# `virsh update-memory-device` while its agent (l2.watch=1) runs a memory
# pattern over node 0 each time the size settles.  The pool's free_bytes must
# move by exactly each delta; a grow the pool cannot serve must leave the L2
# running at the size the pool allowed; destroy must give everything back.
# Hotplug: libvirt runs no hook on attach-device, so hot-added memory goes
# where qemu.conf's memory_backing_dir points: here a dmemfs 4K mount
# (QEMU gives hot-added backends no align=, and 2M/1G files need aligned
# mappings), with <allocation mode='immediate'/> so QEMU preallocates the
# DIMM under the cell's host-nodes/policy and refuses it when the pool
# cannot serve it.
#
# Prints "PASS: vmem.<check>[: numbers]" / "FAIL: vmem.<check>: reason".
# "virsh" in the name: make test-debug skips the libvirt scripts (l1.skip=virsh).
#   --list   the checks
set -u
here=$(cd "$(dirname "$0")" && pwd)
TOP=${TOP:-$(cd "$here/../../.." && pwd)}
# shellcheck source=nested-test/l1/l2-lib.sh
. "$TOP/nested-test/l1/l2-lib.sh"
result_area vmem
CHECKS=(setup start plugged-at-boot grow shrink hotplug-dimm hotplug-refused grow-past-pool destroy
	dmesg-clean)
if [ "${1:-}" = --list ]; then
	printf 'vmem.%s\n' "${CHECKS[@]}"
	exit 0
fi
l1_only
C0=64 C1=128      # guest cells (MiB) on host nodes 0 and 1
REQ=64 MAX=512    # the virtio-mem device on cell 0: requested at start, size
LEFT=128          # grow-past-pool: what the pool keeps free on node 0
name=vmem uuid=$(new_uuid)
serial=$(serial_of $name)
hog=$M2/vmem-hog
M4K=/run/dmemfs/4K
QCONF=/etc/libvirt/qemu.conf
mark=$(dmesg_mark)
MiB=$((1 << 20))

not_run() { # not_run REASON: FAIL every check not reported yet
	local c
	for c in "${CHECKS[@]:$1}"; do fail "$c" "not run ($2)"; done
	cleanup
	results_exit
}
cleanup() {
	virsh destroy $name > /dev/null 2>&1
	virsh undefine $name > /dev/null 2>&1
	rm -f "$hog"
	acc_stop_all
	sed -i "\\|^memory_backing_dir = \"$M4K\"\$|d" $QCONF
	umount $M4K 2> /dev/null
}

# the domain: the acceptance guest plus maxMemory and the virtio-mem device
domain_xml() {
	mkdomain $name "$uuid" $C0 $C1 "l2.watch=1 memhp_default_state=online_movable" \
		"<allocation mode='immediate'/>" |
		sed -e "s|^  <memory unit='MiB'>.*|  <maxMemory slots='3' unit='MiB'>2048</maxMemory>\n&|" \
			-e "s|^  </devices>|    <memory model='virtio-mem'>\n      <target>\n        <size unit='MiB'>$MAX</size>\n        <node>0</node>\n        <block unit='KiB'>2048</block>\n        <requested unit='MiB'>$REQ</requested>\n      </target>\n    </memory>\n&|"
}

# L2-MEM-CHECK lines of the agent after serial line $1; wait_check FROM KIB
# TIMEOUT prints the first whose node0_total_kib is KIB
serial_lines() { tr -d '\r' < "$serial" 2> /dev/null | wc -l; }
wait_check() {
	local end=$((SECONDS + $3)) l
	while [ $SECONDS -lt $end ]; do
		l=$(serial_whole "$serial" | tail -n +"$(($1 + 1))" |
			grep "^L2-MEM-CHECK node0_total_kib=$2 " | head -1)
		[ -n "$l" ] && { echo "$l"; return 0; }
		sleep 1
	done
	return 1
}
last_check() { serial_whole "$serial" | grep '^L2-MEM-CHECK' | tail -1; }
# libvirt's view: <current> of the device (KiB), from QEMU's size events
current_kib() {
	virsh dumpxml $name | sed -n '/<memory model=.virtio-mem./,/<\/memory>/s|.*<current unit=.KiB.>\([0-9]*\)<.*|\1|p'
}
resize() { virsh update-memory-device $name --alias virtiomem0 --requested-size "$(($1 * 1024))" --live; }
free0() { pool_bytes 0 free; }
mib() { echo $(($1 / MiB)); }

dimm_xml() { # dimm_xml MIB
	printf "<memory model='dimm'><target><size unit='MiB'>%s</size><node>0</node></target></memory>\n" "$1"
}
# hot-added memory: what libvirt put under memory_backing_dir
backing_files() { find "$M4K/libvirt/qemu" -type f 2> /dev/null | tr '\n' ' '; }

# ---- setup
setup_vmem() {
	mkdir -p $M4K
	ACC_STEP="mount -t dmemfs -o pagesize=4K none $M4K"
	mount -t dmemfs -o pagesize=4K none $M4K && is_dmemfs $M4K || return 1
	ACC_STEP="$QCONF already sets memory_backing_dir"
	! grep -q '^memory_backing_dir' $QCONF || return 1
	echo "memory_backing_dir = \"$M4K\"" >> $QCONF
	acc_setup
}
if setup_vmem; then
	pass setup "dmemfs, hook, wrapper, libvirtd"
else
	fail setup "$ACC_STEP failed"
	not_run 1 "setup failed"
fi
BASE=$(pool_free_all)

# ---- start: the hook admits cells + requested, the file of the device stays sparse
domain_xml > /tmp/$name.xml
rm -f "$serial"
u0=$(pool_bytes 0 used) u1=$(pool_bytes 1 used)
if ! err=$(virsh define /tmp/$name.xml 2>&1 && virsh start $name 2>&1); then
	fail start "$(echo "$err" | tr -s '\n' ' ')"
	not_run 2 "start failed"
fi
f=$(domdir "$M2" "$uuid")/memvirtiomem0
blocks=$(stat -c %b "$f" 2> /dev/null)
pass start "$f is $(($(stat -c %s "$f" 2> /dev/null) / MiB)) MiB, $((${blocks:-0} * 512 / MiB)) MiB allocated before the guest plugs"

# ---- the guest plugs <requested> at boot
line=$(wait_check 0 '[0-9]*' 180)
boot_total=$(agent_field "$line" node0_total_kib)
d0=$(($(pool_bytes 0 used) - u0)) d1=$(($(pool_bytes 1 used) - u1))
cur=$(current_kib)
why="node0 used +$(mib $d0) MiB (want cell $C0 + requested $REQ), node1 +$(mib $d1) MiB (want $C1), libvirt current ${cur:-?} KiB (want $((REQ * 1024))), agent: ${line:-no L2-MEM-CHECK line; last serial: $(last_serial $name)}"
if [ "$(agent_field "$line" status)" = PASS ] && [ "$d0" -eq $(((C0 + REQ) * MiB)) ] &&
	[ "$d1" -eq $((C1 * MiB)) ] && [ "${cur:-0}" -eq $((REQ * 1024)) ]; then
	pass plugged-at-boot "$why"
else
	fail plugged-at-boot "$why"
	not_run 3 "the guest did not come up with its requested size"
fi

# step NAME TO_MIB: resize to TO_MIB and check the guest, libvirt and the pool
step() {
	local check=$1 to=$2 from=$3 n f_before f_after want line why t=$SECONDS
	n=$(serial_lines) f_before=$(free0)
	want=$((boot_total + (to - REQ) * 1024))
	if ! err=$(resize "$to" 2>&1); then
		fail "$check" "virsh update-memory-device: $err"
		return 1
	fi
	line=$(wait_check "$n" "$want" 240)
	sleep 1 # QEMU's size event reaches libvirt after the guest's last (un)plug
	f_after=$(free0)
	why="$from -> $to MiB in $((SECONDS - t)) s: node0 free $(mib "$f_before") -> $(mib "$f_after") MiB (want $(mib $((f_before - (to - from) * MiB))) MiB), libvirt current $(current_kib) KiB, agent: ${line:-no L2-MEM-CHECK line with node0_total_kib=$want; last: $(last_check); $(qemu_diag $name)}"
	if [ -n "$line" ] && [ "$(agent_field "$line" status)" = PASS ] &&
		[ $((f_before - f_after)) -eq $(((to - from) * MiB)) ] &&
		[ "$(current_kib)" -eq $((to * 1024)) ]; then
		pass "$check" "$why"
	else
		fail "$check" "$why"
	fi
}
step grow $MAX $REQ
step shrink $REQ $MAX

# ---- a DIMM hot-added while it runs lands in dmem, bound to node 0 (128 MiB:
# Linux hot-adds whole memory blocks)
DIMM=128
n=$(serial_lines) f_before=$(free0) t=$SECONDS
dimm_xml $DIMM > /tmp/vmem-dimm.xml
err=$(virsh attach-device $name /tmp/vmem-dimm.xml --live 2>&1)
rc=$?
line=$(wait_check "$n" $((boot_total + DIMM * 1024)) 120)
files=$(backing_files)
why="attach-device rc $rc${err:+ ($err)} in $((SECONDS - t)) s: node0 free $(mib "$f_before") -> $(mib "$(free0)") MiB (want -$DIMM), files under $M4K: ${files:-none}; agent: ${line:-no L2-MEM-CHECK line with node0_total_kib=$((boot_total + DIMM * 1024)); last: $(last_check); $(qemu_diag $name)}"
if [ "$rc" -eq 0 ] && [ $((f_before - $(free0))) -eq $((DIMM * MiB)) ] && [ -n "$files" ] &&
	[ "$(agent_field "$line" status)" = PASS ]; then
	pass hotplug-dimm "$why"
	boot_total=$((boot_total + DIMM * 1024))
else
	fail hotplug-dimm "$why"
fi

# ---- with $LEFT MiB left on node 0: a bigger DIMM is refused, and a grow
# the pool cannot serve leaves the guest up with what fitted
n=$(serial_lines)
keep=$(($(free0) - LEFT * MiB))
python3 -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
mask = ctypes.c_ulong(1)  # MPOL_BIND to node 0: the file policy of a fallocate is the task one
if libc.syscall(238, 2, ctypes.byref(mask), 64) != 0: sys.exit("set_mempolicy: %s" % os.strerror(ctypes.get_errno()))
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
os.posix_fallocate(fd, 0, int(sys.argv[2]))' "$hog" "$keep" 2> /tmp/vmem-hog.err
left=$(free0)
if [ "$left" -ne $((LEFT * MiB)) ]; then
	fail hotplug-refused "could not leave $LEFT MiB free on node 0: $(mib "$left") MiB free ($(cat /tmp/vmem-hog.err))"
	fail grow-past-pool "not run (no exhausted pool)"
else
	# A DIMM the pool cannot serve: refused with QEMU's error, nothing
	# attached.  QEMU leaves what it preallocated before the pool ran dry in
	# the file it created (libvirt removes it only when the domain stops);
	# removing that file, which nothing maps, gives it back.
	f_before=$(free0) files0=$(backing_files)
	dimm_xml $((2 * LEFT)) > /tmp/vmem-dimm-big.xml
	err=$(virsh attach-device $name /tmp/vmem-dimm-big.xml --live 2>&1)
	rc=$?
	f_fail=$(free0) files=$(backing_files)
	ndimm=$(virsh dumpxml $name | grep -c "<memory model='dimm'")
	# shellcheck disable=SC2086 # one file name per word
	new=$(comm -13 <(printf '%s\n' $files0 | sort) <(printf '%s\n' $files | sort) | head -1)
	held=0
	[ -n "$new" ] && held=$(($(stat -c %b "$new") * 512))
	rm -f "$new"
	why="attach-device of $((2 * LEFT)) MiB with $(mib "$f_before") MiB free: rc $rc: $(echo "$err" | tr -s '\n' ' ' | cut -c1-220); domain $(domstate $name), $ndimm DIMM(s) attached (want 1); node0 free $(mib "$f_before") -> $(mib "$f_fail") MiB, of which $(mib "$held") MiB in the leftover ${new:-(none)}; after removing it $(mib "$(free0)") MiB"
	if [ "$rc" -ne 0 ] && [ "$(domstate $name)" = running ] && [ "$ndimm" -eq 1 ] &&
		[ $((f_before - f_fail)) -eq "$held" ] && [ "$(free0)" -eq "$f_before" ] &&
		[[ $err == *"preallocating memory failed"* ]]; then
		pass hotplug-refused "$why"
	else
		fail hotplug-refused "$why"
	fi
	nlog=$(wc -l < "/var/log/libvirt/qemu/$name.log")
	resize $MAX > /tmp/vmem-resize.err 2>&1
	rc=$?
	# the guest plugs what the pool serves, then keeps retrying the rest
	sleep 20
	line=$(last_check)
	cur=$(current_kib) st=$(domstate $name) left=$(free0)
	err=$(tail -n +$((nlog + 1)) "/var/log/libvirt/qemu/$name.log" |
		grep -m1 'preallocating memory failed' | cut -c1-160)
	# what a refused plug request had preallocated went back: free is
	# what was left minus exactly what the guest got
	want=$((LEFT * MiB - (cur - REQ * 1024) * 1024))
	why="asked $REQ -> $MAX MiB with $LEFT MiB free (virsh rc $rc): domain $st, libvirt current $((cur / 1024)) MiB, node0 free $(mib "$left") MiB (want $(mib "$want")), agent: $line; QEMU log: ${err:-nothing about prealloc}"
	if [ "$st" = running ] && [ "$cur" -gt $((REQ * 1024)) ] && [ "$cur" -lt $((MAX * 1024)) ] &&
		[ "$left" -eq "$want" ] && [ "$(agent_field "$line" status)" = PASS ] &&
		[ "$(agent_field "$line" node0_total_kib)" -eq $((boot_total + cur - REQ * 1024)) ] &&
		[ -n "$err" ]; then
		pass grow-past-pool "$why"
	else
		fail grow-past-pool "$why; $(qemu_diag $name)"
	fi
	resize $REQ > /dev/null 2>&1
	wait_check "$n" "$boot_total" 240 > /dev/null
fi
rm -f "$hog"

# ---- destroy gives back everything: cells, plugged blocks, files
virsh destroy $name > /dev/null 2>&1
virsh undefine $name > /dev/null 2>&1
end=$((SECONDS + 60))
until [ "$(pool_free_all)" = "$BASE" ] || [ $SECONDS -ge $end ]; do sleep 0.5; done
left="$(dom_files "$uuid")$(backing_files)"
check destroy "pool free $(pool_free_all) B, at start $BASE B; files left: ${left:-none}" \
	[ "$(pool_free_all)" = "$BASE" -a -z "$left" ]
cleanup
bad=$(kernel_splats "$mark")
check dmesg-clean "$bad" [ -z "$bad" ]
results_exit
