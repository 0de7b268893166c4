#!/bin/bash
# Inside L1: the upstream 6.1 selftest tools/testing/selftests/vm/gup_test,
# unmodified, on dmemfs files of each page size (CONFIG_GUP_TEST).  GUP and
# PUP on VM_PFNMAP fail (the ioctl says EFAULT: exit 1) or work (exit 0);
# what must never happen is a crash of the test or a splat in the kernel:
# -u and -a run GUP-fast over the special PMD/PUD leaves.
set -u
bin=$BUILD/guest/gup_test
pass() { echo "PASS: gup_test: $1"; }
fail() { echo "FAIL: gup_test: $1: $2"; }
[ -x "$bin" ] || { fail build "no $bin"; exit 1; }
[ -e /sys/kernel/debug/gup_test ] || { fail config "no /sys/kernel/debug/gup_test"; exit 1; }

dmesg_mark=$(dmesg | wc -l)
mnt4k=/run/dmemfs/4K
mkdir -p "$mnt4k" && mount -t dmemfs -o pagesize=4K none "$mnt4k"
rc_all=0
for spec in "4K:$mnt4k:8" "2M:${DMEMFS_2M_MOUNT:-}:8" "1G:${DMEMFS_1G_MOUNT:-}:1024"; do
	IFS=: read -r ps mnt mib <<< "$spec"
	# on anything but dmemfs every line below would pass for nothing
	if [ -z "$mnt" ] || [ "$(stat -f -c %t "$mnt" 2> /dev/null)" != 2ace90c6 ]; then
		fail "$ps mount" "'$mnt' is not a dmemfs mount"
		rc_all=1
		continue
	fi
	f=$mnt/gup-test
	for op in -u -a -b -L -U; do
		truncate -s "${mib}M" "$f"
		out=$(timeout 120 "$bin" -S -f "$f" -m "$mib" "$op" 2>&1)
		rc=$?
		rm -f "$f"
		if [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]; then
			pass "$ps $op exit $rc ($(echo "$out" | tail -1 | tr -s ' \n' ' '))"
		else
			fail "$ps $op" "exit $rc: $(echo "$out" | tail -2 | tr -s ' \n' ' ')"
			rc_all=1
		fi
	done
done
umount "$mnt4k"
bad=$(dmesg | tail -n +"$((dmesg_mark + 1))" | grep -E 'WARNING:|BUG:|Oops|Call Trace|bad p[mu]d' | head -2 | tr -s ' \n' ' ')
if [ -z "$bad" ]; then pass "kernel log clean"; else fail "kernel log" "$bad"; rc_all=1; fi
exit $rc_all
