#!/bin/bash
# Build every patch of the series on its own, with the test kernel's full
# configuration (WERROR on): a whole bzImage (compiled and linked) at each
# patch that touches mm, KVM, VFIO or a shared header, where a bisection
# would boot to chase a memory bug; the C files a patch touches at the
# others (Documentation-only patches need nothing).  ccache keeps the
# incremental builds short.
#
#   kernel/bisect-check.sh        one "PASS:/FAIL: bisect: NNNN subject" line a patch
#
# Works in a worktree of build/linux (build/bisect-src) with objects in
# build/bisect-obj, so build/linux and its objects stay as they are.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
tree=$top/build/linux src=$top/build/bisect-src obj=$top/build/bisect-obj
"$top/kernel/build.sh" tree > /dev/null || { echo "FAIL: bisect: the series does not apply"; exit 1; }
[ -f "$tree/.config" ] || { echo "FAIL: bisect: no build/linux/.config (run kernel/build.sh first)"; exit 1; }
git -C "$tree" worktree remove --force "$src" 2> /dev/null
rm -rf "$src"
git -C "$tree" worktree add -q --detach "$src" HEAD || exit 1
mkdir -p "$obj"
rc=0 n=0
for c in $(git -C "$tree" rev-list --reverse base..HEAD); do
	n=$((n + 1))
	subj=$(git -C "$tree" log --format=%s -1 "$c")
	git -C "$src" checkout -q "$c"
	files=$(git -C "$tree" show --name-only --format= "$c")
	objs=$(echo "$files" | grep '\.c$' |
		grep -v '^tools/\|^Documentation/\|^samples/' | sed 's/\.c$/.o/')
	# where a bisection boots: a whole kernel, linked
	if echo "$files" | grep -q '^mm/\|^virt/kvm/\|^arch/x86/kvm/\|^drivers/vfio/\|^include/'; then
		objs=bzImage
	fi
	if [ -z "$objs" ]; then
		echo "PASS: bisect: $(printf %04d $n) $subj (no C files)"
		continue
	fi
	# the decompressor (arch/x86/boot) has no single-object targets in
	# kbuild: it builds only as part of bzImage.  Where the code at this
	# patch is the tip's, kernel/build.sh's bzImage is that build.
	if printf '%s\n' $objs | grep '^arch/x86/boot/' > /dev/null; then
		if git -C "$tree" diff --quiet "$c" HEAD -- '*.c' '*.h' '*.S' '*Makefile*' '*Kconfig*' &&
		   [ -s "$top/build/bzImage" ]; then
			echo "PASS: bisect: $(printf %04d $n) $subj (code as at the tip: built as kernel/build.sh's bzImage)"
			continue
		fi
		objs=bzImage
	fi
	# the full configuration at every step: an early patch's Kconfig
	# would otherwise drop the options of later ones for good
	cp "$tree/.config" "$obj/.config"
	make -s -C "$src" O="$obj" olddefconfig > /dev/null 2>&1
	# shellcheck disable=SC2086
	if make -s -C "$src" O="$obj" -j"$(nproc)" CC="ccache gcc" $objs > "$obj/patch-$n.log" 2>&1; then
		echo "PASS: bisect: $(printf %04d $n) $subj$([ "$objs" = bzImage ] && echo ' (bzImage)')"
	else
		echo "FAIL: bisect: $(printf %04d $n) $subj: $(grep -m1 'error' "$obj/patch-$n.log" | cut -c1-200)"
		rc=1
	fi
done
git -C "$tree" worktree remove --force "$src"
exit $rc
