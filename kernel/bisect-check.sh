#!/bin/bash
# Build and boot the kernel at every patch of the series, with the test
# kernel's full configuration (WERROR on): a bisection must land only on
# kernels that build, boot and do what they have so far.
#
#   kernel/bisect-check.sh     one "PASS:/FAIL: bisect: NNNN subject" line a patch
#
# Each patch that changes code gets a whole bzImage (ccache keeps the
# incremental builds short), booted under QEMU (TCG, KASLR on, dmem= on both
# nodes) with nested-test/l1/bisect-l1.sh: dmem= reserved memory, dmemfs
# mounts, refuses a misspelt option and maps a file where the patch has
# them, and the kernel log stays clean.  A patch that changes no code
# (Documentation, MAINTAINERS) leaves the kernel of the patch before it.
# kernel/series-order.sh runs first: no patch maps dmem before KVM and VFIO
# pin it.
#
# Works in a worktree of build/linux (build/bisect-src) with objects in
# build/bisect-obj (patch-N.log the build, boot-N/ the boot), so build/linux
# and its objects stay as they are.  Needs the guest initramfs and programs
# (make guest).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
tree=$top/build/linux src=$top/build/bisect-src obj=$top/build/bisect-obj
"$top/kernel/build.sh" tree > /dev/null || { echo "FAIL: bisect: the series does not apply"; exit 1; }
[ -f "$tree/.config" ] || { echo "FAIL: bisect: no build/linux/.config (run kernel/build.sh first)"; exit 1; }
"$top/kernel/series-order.sh" || exit 1
git -C "$tree" worktree remove --force "$src" 2> /dev/null
rm -rf "$src"
git -C "$tree" worktree add -q --detach "$src" HEAD || exit 1
mkdir -p "$obj"
rc=0 n=0
for c in $(git -C "$tree" rev-list --reverse base..HEAD); do
	n=$((n + 1))
	name="$(printf %04d $n) $(git -C "$tree" log --format=%s -1 "$c")"
	git -C "$src" checkout -q "$c"
	if ! git -C "$tree" show --name-only --format= "$c" |
		grep -qvE '^(Documentation/|MAINTAINERS$)'; then
		echo "PASS: bisect: $name (no code: the kernel of the patch before)"
		continue
	fi
	# the full configuration at every step: an early patch's Kconfig
	# would otherwise drop the options of later ones for good
	cp "$tree/.config" "$obj/.config"
	make -s -C "$src" O="$obj" olddefconfig > /dev/null 2>&1
	if ! make -s -C "$src" O="$obj" -j"$(nproc)" CC="ccache gcc" bzImage > "$obj/patch-$n.log" 2>&1; then
		echo "FAIL: bisect: $name: $(grep -m1 'error' "$obj/patch-$n.log" | cut -c1-200)"
		rc=1
		continue
	fi
	# what the kernel at this patch has, for the boot check
	features=()
	grep -q total_bytes "$src/mm/dmem.c" 2> /dev/null && features+=(sysfs)
	[ -d "$src/fs/dmemfs" ] && features+=(dmemfs)
	grep -qs 'dmemfs_mmap' "$src/fs/dmemfs/inode.c" && features+=(mmap)
	res=$obj/boot-$n
	rm -rf "$res"
	ACCEL=tcg L1_TIMEOUT=300 RESULTS=$res KERNEL=$obj/arch/x86/boot/bzImage \
		"$top/nested-test/host/boot-l1.sh" --area=bisect "$top/nested-test/l1/bisect-l1.sh" \
		"${features[@]}" > "$res.log" 2>&1
	bad=$(grep -m1 '^FAIL:' "$res/bisect.results" 2> /dev/null ||
		echo "no boot results (${res#"$top"/}.log)")
	if grep -q '^PASS: bisect.l1-boot' "$res/bisect.results" 2> /dev/null && ! grep -q '^FAIL:' "$res/bisect.results"; then
		echo "PASS: bisect: $name (bzImage, booted: $(grep -c '^PASS:' "$res/bisect.results") checks${features[*]:+, has ${features[*]}})"
	else
		echo "FAIL: bisect: $name: boot: $(echo "$bad" | cut -c1-200)"
		rc=1
	fi
done
git -C "$tree" worktree remove --force "$src"
exit $rc
