#!/bin/bash
# Check the order of the series where a bisection could land on a kernel
# that leaks memory between tenants: every patch up to the one that lets
# dmemfs files be mapped must already have KVM and VFIO pin the dpages
# they hold, or a truncate hands a dpage that KVM (kvm_vcpu_map()) or an
# IOMMU still writes to another file.  Reads the patch files, so it needs
# no kernel tree.
#
#   kernel/series-order.sh [DIR]   DIR: the patches (kernel/patches)
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$top/kernel/patches}

# first_adding FILE REGEX: number of the first patch whose diff of FILE
# adds a line matching REGEX, or nothing
first_adding() {
	local p
	for p in "$dir"/[0-9][0-9][0-9][0-9]-*.patch; do
		if awk -v f="+++ b/$1" -v re="$2" '
			/^\+\+\+ / { in_file = ($0 == f); next }
			/^diff --git / { in_file = 0 }
			# an added line of code (not a comment) that matches
			in_file && /^\+/ && $0 !~ /^\+[[:space:]]*(\/\*|\*|\/\/)/ && $0 ~ re { found = 1; exit }
			END { exit !found }' "$p"; then
			basename "$p" | cut -c1-4
			return
		fi
	done
}

mmap=$(first_adding fs/dmemfs/inode.c '\.mmap[[:space:]]*=[[:space:]]*dmemfs_mmap')
if [ -z "$mmap" ]; then
	echo "FAIL: series-order: no patch gives dmemfs files an mmap"
	exit 1
fi
rc=0
for holder in "KVM virt/kvm/kvm_main.c" "VFIO drivers/vfio/vfio_iommu_type1.c"; do
	name=${holder%% *} file=${holder#* }
	pin=$(first_adding "$file" 'dmemfs_pin_pfns[(]')
	if [ -n "$pin" ] && [ "$((10#$pin))" -lt "$((10#$mmap))" ]; then
		echo "PASS: series-order: $name pins dmem ($pin) before dmemfs maps files ($mmap)"
	else
		echo "FAIL: series-order: dmemfs maps files at $mmap, $name pins dmem at ${pin:-no patch}: a bisection between them leaks dpages $name still holds"
		rc=1
	fi
done
exit $rc
