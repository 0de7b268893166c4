#!/bin/bash
# Inside L1: the upstream 6.12 selftest tools/testing/selftests/mm/gup_test,
# unmodified, on dmemfs files of each page size (CONFIG_GUP_TEST).  GUP and
# PUP on VM_PFNMAP fail (the ioctl says EFAULT: exit 1) or work (exit 0);
# what must never happen is a crash of the test or a splat in the kernel:
# -u and -a run GUP-fast over the special PMD/PUD leaves.
#
# Checks: gup.<size>-<op> for each page size and gup_test operation, and
# gup.kernel-log; --list prints them.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=nested-test/l1/l1-common.sh
. "$here/../l1-common.sh"
result_area gup
sizes="4K 2M 1G" ops="-u -a -b -L -U"
if [ "${1:-}" = --list ]; then
	for ps in $sizes; do for op in $ops; do echo "gup.$ps$op"; done; done
	echo gup.kernel-log
	exit 0
fi
l1_only
bin=$BUILD/guest/gup_test
[ -x "$bin" ] || { fail build "no $bin"; results_exit; }
[ -e /sys/kernel/debug/gup_test ] || { fail config "no /sys/kernel/debug/gup_test"; results_exit; }

mark=$(dmesg_mark)
mnt4k=/run/dmemfs/4K
mkdir -p "$mnt4k" && mount -t dmemfs -o pagesize=4K none "$mnt4k"
for spec in "4K:$mnt4k:8" "2M:${DMEMFS_2M_MOUNT:-}:8" "1G:${DMEMFS_1G_MOUNT:-}:1024"; do
	IFS=: read -r ps mnt mib <<< "$spec"
	# on anything but dmemfs every line below would pass for nothing
	if [ -z "$mnt" ] || ! is_dmemfs "$mnt"; then
		for op in $ops; do fail "$ps$op" "'$mnt' is not a dmemfs mount"; done
		continue
	fi
	f=$mnt/gup-test
	for op in $ops; do
		truncate -s "${mib}M" "$f"
		out=$(timeout 120 "$bin" -S -f "$f" -m "$mib" "$op" 2>&1)
		rc=$?
		rm -f "$f"
		if [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]; then
			pass "$ps$op" "exit $rc ($(echo "$out" | tail -1 | tr -s ' \n' ' '))"
		else
			fail "$ps$op" "exit $rc: $(echo "$out" | tail -2 | tr -s ' \n' ' ')"
		fi
	done
done
umount "$mnt4k"
bad=$(kernel_splats "$mark")
check kernel-log "$bad" [ -z "$bad" ]
results_exit
