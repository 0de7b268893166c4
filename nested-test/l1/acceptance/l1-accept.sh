#!/bin/bash
# L1 script of make accept (run-accept.sh boots it through boot-l1.sh): mount
# dmemfs, run l1-checks.sh, forward its PASS:/FAIL: lines to the results
# channel (ttyS1) as they come, scan the kernel log, end with L1-DONE.
#   --list   the checks: l1-checks.sh's and this script's own
set -u
TOP=${TOP:?TOP is not set}
if [ "${1:-}" = --list ]; then
	printf 'accept.%s\n' mount-2M mount-1G l1-checks l1-dmesg-clean
	exec bash "$TOP/nested-test/l1/acceptance/l1-checks.sh" --list
fi
export TOP BUILD=$TOP/build DMEMFS_SYSFS_ROOT=/sys/kernel/mm/dmem
export DMEMFS_2M_MOUNT=/run/dmemfs/2M DMEMFS_1G_MOUNT=/run/dmemfs/1G
# shellcheck source=nested-test/l1/l2-lib.sh
. "$TOP/nested-test/l1/l2-lib.sh"
l1_channel
result_area accept
for ps in 2M 1G; do
	mkdir -p "/run/dmemfs/$ps"
	mount -t dmemfs -o "pagesize=$ps" none "/run/dmemfs/$ps"
	check "mount-$ps" "/run/dmemfs/$ps is not dmemfs after mount -t dmemfs -o pagesize=$ps" \
		is_dmemfs "/run/dmemfs/$ps"
done
res "# accept: $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {print $2}' /proc/meminfo) kB MemTotal, dmem: $(for n in /sys/kernel/mm/dmem/node*; do printf '%s %s MiB ' "${n##*/}" $(($(cat "$n/total_bytes") >> 20)); done)"
t=$SECONDS
timeout -k 5 ${ACC_TIMEOUT:-840} bash "$TOP/nested-test/l1/acceptance/l1-checks.sh" 2>&1 |
	while IFS= read -r l; do
		printf '%s\n' "$l"
		case $l in PASS:* | FAIL:* | SKIP:*) printf '%s\n' "$l" >&3 ;; esac
	done
rc=${PIPESTATUS[0]}
check l1-checks "exit status $rc after $((SECONDS - t)) s (124: timed out)" [ "$rc" -eq 0 ]
res "# accept: l1-checks.sh took $((SECONDS - t)) s"
umount /run/dmemfs/2M /run/dmemfs/1G 2> /dev/null
bad=$(kernel_splats)
check l1-dmesg-clean "$bad" [ -z "$bad" ]
res "L1-DONE"
exec 3>&-
