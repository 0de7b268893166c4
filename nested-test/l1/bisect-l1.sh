#!/bin/bash
# Inside L1: the boot check of one patch of the series.  kernel/bisect-check.sh
# builds the kernel at every patch and boots each with this script, so that a
# bisection lands only on kernels that boot and do what they have so far.
#
#   bisect-l1.sh [FEATURE...]
#
# FEATURE says what the kernel at this patch has (bisect-check.sh reads it
# from the tree): sysfs (the pool's counters), dmemfs (the file system),
# mmap (its files can be mapped).  A check of a feature the patch does not
# have yet is a SKIP that says so.
#
#   bisect.dmem        dmem= reserved memory on every node (kernel log),
#                      and the pool counts it (sysfs)
#   bisect.dmemfs      a 2M instance mounts, takes a 64 MiB file, unlinks
#                      it and unmounts; a misspelt option fails the mount
#   bisect.mmap        the file's pattern, written through one mapping,
#                      reads back through another
#   bisect.kernel-log  no warning, BUG or oops in the kernel log
set -u
checks="dmem dmemfs mmap kernel-log"
if [ "${1:-}" = --list ]; then
	for c in $checks; do echo "bisect.$c"; done
	exit 0
fi
# shellcheck source=nested-test/l1/l1-common.sh
. "$(dirname "$0")/l1-common.sh"
l1_channel
result_area bisect
BUILD=${BUILD:-$TOP/build}
PAT=$BUILD/guest/dmem_pattern
has() { case " $FEATURES " in *" $1 "*) return 0 ;; esac; return 1; }
FEATURES="$*"

nodes=$(dmesg | grep -cE 'dmem: node [0-9]+: reserved')
if [ "$nodes" -lt 2 ]; then
	fail dmem "dmem= reserved memory on $nodes of 2 nodes: $(dmesg | grep -m2 'dmem:' | tr -s ' \n' ' ')"
elif ! has sysfs; then
	pass dmem "$nodes nodes (no pool counters at this patch)"
else
	total=$(pool_sum total)
	check dmem "the pool counts $total bytes" [ "$total" -gt 0 ] 2> /dev/null
fi

if ! has dmemfs; then
	skip dmemfs "no dmemfs at this patch"
	skip mmap "no dmemfs at this patch"
else
	d=$(mktemp -d /tmp/bisect.XXXXXX)
	why=
	if mount -t dmemfs -o pagesize=2M,sise=1G none "$d" 2> /dev/null; then
		why="a misspelt option (sise=) mounted"
		umount "$d"
	fi
	if ! mount -t dmemfs -o pagesize=2M none "$d"; then
		why="mount -t dmemfs -o pagesize=2M failed"
	elif ! truncate -s 64M "$d/f"; then
		why="truncate of a file to 64M failed"
	fi
	if has mmap && [ -e "$d/f" ]; then
		if ! "$PAT" fill "$d/f" 7; then
			fail mmap "dmem_pattern fill failed"
		else
			check mmap "the pattern did not read back" "$PAT" check "$d/f" 7
		fi
	elif ! has mmap; then
		skip mmap "dmemfs files cannot be mapped at this patch"
	else
		fail mmap "no file to map: $why"
	fi
	if [ -e "$d/f" ] && ! rm "$d/f"; then
		why=${why:-"unlink failed"}
	fi
	if is_dmemfs "$d" && ! umount "$d"; then
		why=${why:-"umount failed"}
	fi
	rmdir "$d"
	if [ -n "$why" ]; then fail dmemfs "$why"; else pass dmemfs; fi
fi

splats=$(kernel_splats 0)
if [ -z "$splats" ]; then pass kernel-log; else fail kernel-log "$splats"; fi
res "L1-DONE"
results_exit
