#!/bin/bash
# Inside L1: Debian's trinity syscall fuzzer against dmemfs, for a bounded
# time (make test-debug runs it: l1.trinity=SECONDS on the kernel command
# line; nested-test/l1/l1-trunk.sh calls this script).
#
#   trinity-l1.sh SECONDS
#
# Two private instances (4K and 2M dpages, size= limited) hold victim files
# of several sizes.  trinity runs as nobody (-X) with file descriptors of
# those files only (no sockets, pipes, perf, ...), on the memory and file
# system calls that reach dmemfs: mmap and friends, madvise, mbind and the
# other mempolicy calls, fallocate, truncate, read/write, splice, FIEMAP and
# other ioctls, rename and unlink.  Afterwards: no new warning in the kernel
# log, and after the unmount the pool is where it was.
#
# Prints "PASS: trinity.dmemfs: ..." or "FAIL: trinity.dmemfs: reason"
# (--list: that name).
set -u
[ "${1:-}" = --list ] && { echo trinity.dmemfs; exit 0; }
secs=${1:-60}
# shellcheck source=nested-test/l1/l1-common.sh
. "$(dirname "$0")/l1-common.sh"
l1_only
result_area trinity
if ! command -v trinity > /dev/null; then
	fail dmemfs "trinity is not installed (scripts/install-deps.sh)"
	results_exit
fi
free0=$(pool_sum free) used0=$(pool_sum used) mark=$(dmesg_mark)
work=$(mktemp -d /tmp/trinity.XXXXXX)
mounts=()
for ps in 4K 2M; do
	d=$work/$ps
	mkdir -p "$d"
	if ! mount -t dmemfs -o "pagesize=$ps,size=256M" none "$d"; then
		echo "FAIL: trinity.dmemfs: mount -t dmemfs -o pagesize=$ps,size=256M failed"
		exit 1
	fi
	mounts+=("$d")
	chmod 1777 "$d"
	# owners first: dmemfs keeps the owner of a file with a size
	chown nobody "$d"
	for n in 0 1 2 3; do
		f=$d/victim$n
		: > "$f"
		chown nobody "$f"
		chmod 666 "$f"
		truncate -s $((n * 3 + 1))M "$f"
	done
done
# trinity makes its own test files in its working directory: on dmemfs too
cd "${mounts[1]}" || exit 1
t0=$SECONDS
calls=(mmap munmap mremap mprotect madvise msync mlock munlock mincore
	remap_file_pages fallocate ftruncate truncate read write pread64 pwrite64
	readv writev lseek fsync fdatasync fadvise64 readahead splice sendfile
	mbind set_mempolicy get_mempolicy migrate_pages move_pages ioctl
	process_vm_readv open openat close rename unlink dup fcntl flock)
args=()
for c in "${calls[@]}"; do args+=(-c "$c"); done
out=/tmp/trinity-l1.out
timeout -k 10 "$secs" trinity -q -X -l off -C 2 -s 1 -V "$work" \
	--disable-fds=sockets,pipes,perf,epoll,eventfd,pseudo,timerfd,memfd,drm \
	"${args[@]}" > "$out" 2>&1
rc=$?
tail -5 "$out"
# what trinity did to dmemfs: its own test files there, and the dpages held
made=$(find "${mounts[1]}" -maxdepth 1 -name 'trinity-testfile*' | wc -l)
held=$(for d in "${mounts[@]}"; do stat -f -c '%b %f' "$d"; done | awk '{ s += $1 - $2 } END { print s + 0 }')
iters=$(grep -o '[0-9]* iterations' "$out" | tail -1)
cd /
for d in "${mounts[@]}"; do
	umount "$d" 2> /dev/null || umount -l "$d"
done
sleep 1
free1=$(pool_sum free) used1=$(pool_sum used) bad=$(kernel_splats "$mark")
why=
[ "$rc" -eq 124 ] || [ "$rc" -eq 0 ] || why="trinity exited $rc ($(tail -1 "$out" | cut -c1-120));"
[ -z "$bad" ] || why="$why kernel log: $(echo "$bad" | cut -c1-200);"
[ "$free1" = "$free0" ] && [ "$used1" = "$used0" ] || why="$why pool free $free0 -> $free1 B, used $used0 -> $used1 B after umount;"
[ "$made" -gt 0 ] || why="$why trinity made no test file on dmemfs;"
rm -rf "$work"
if [ -z "$why" ]; then
	pass dmemfs "$((SECONDS - t0)) s, ${iters:-? iterations} of ${#calls[@]} system calls as nobody on 2 instances ($made test files on dmemfs, $held dpages held at the end), kernel log clean, pool back after umount"
else
	fail dmemfs "$why"
fi
results_exit
