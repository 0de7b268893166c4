#!/bin/bash
# Build the dmemfs-host test kernel out of Debian's linux-source-6.12.
#
#   kernel/build.sh            extract (once), apply kernel/patches, configure, build bzImage
#   kernel/build.sh tree       extract and apply only (for checkpatch / patch work)
#   FLAVOR=debug kernel/build.sh
#                              the same with kernel/debug.config on top (KASAN,
#                              PROVE_LOCKING, DEBUG_VM) in build/linux-debug,
#                              giving build/bzImage-debug
#   FLAVOR=modular kernel/build.sh
#                              kernel/modular.config on top: KVM, VFIO and
#                              hwpoison-inject as modules, as distributions
#                              build them; bzImage and modules (modpost
#                              refuses symbols the series forgot to export)
#
# The tree lives in build/linux (git, ignored by our repo); a tree of another
# source (the 6.1 of earlier checkouts) is extracted again.  Patches are applied
# with "git am" on top of the tag "base"; only the patches after the first one
# that changed are re-applied, so unchanged files keep their mtimes and make
# rebuilds incrementally (ccache catches the rest).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
src=/usr/src/linux-source-6.12.tar.xz
patchdir=$top/kernel/patches
flavor=${FLAVOR:-}
tree=$top/build/linux${flavor:+-$flavor}
log=$top/build/kernel-build${flavor:+-$flavor}.log
image=$top/build/bzImage${flavor:+-$flavor}
mode=${1:-all}

say() { printf '[kernel] %s\n' "$*"; }

extract() {
	local name
	name=$(basename "$src" .tar.xz)
	[ -e "$tree/.git/refs/tags/base" ] &&
		[ "$(git -C "$tree" log -1 --format=%s base)" = "$name (Debian) pristine" ] &&
		return 0
	say "extracting $src (once, ~1 min)"
	[ -r "$src" ] || { say "no $src: apt-get install $name"; exit 1; }
	# a tree of another source: the uapi headers and the KVM selftest
	# objects built from it go too (the tarball's old mtimes would not
	# tell make to rebuild them)
	[ -d "$tree/.git" ] && [ -z "$flavor" ] &&
		rm -rf "$top/build/kvm-hdr" "$top/build/guest/kvm-selftests"
	rm -rf "$tree" "$top/build/$name"
	mkdir -p "$top/build"
	tar -C "$top/build" -xf "$src"
	mv "$top/build/$name" "$tree"
	# Debian's top-level .gitignore ends in "/*"; drop it for a usable base.
	sed -i '/^\/\*$/d' "$tree/.gitignore"
	git -C "$tree" init -q
	git -C "$tree" add -Af .
	git -C "$tree" -c user.name=base -c user.email=base@localhost \
		commit -qm "$name (Debian) pristine"
	git -C "$tree" tag base
}

apply_patches() {
	local state=$tree/.dmemfs-applied new i=0 keep=0 commit=base
	local -a patches old
	patches=("$patchdir"/*.patch)
	[ -e "${patches[0]}" ] || patches=()
	mapfile -t old < <(cat "$state" 2>/dev/null || true)
	# old[i] = "<sha256 of patch> <commit after applying it>"
	for ((i = 0; i < ${#patches[@]} && i < ${#old[@]}; i++)); do
		[ "$(sha256sum < "${patches[i]}" | cut -c1-64)" = "${old[i]%% *}" ] || break
		commit=${old[i]##* }
		keep=$((i + 1))
	done
	if [ "$keep" -eq "${#patches[@]}" ] && [ "$keep" -eq "${#old[@]}" ]; then
		say "patches unchanged (${#patches[@]} applied)"
		return 0
	fi
	git -C "$tree" am --abort >/dev/null 2>&1 || true
	git -C "$tree" reset -q --hard "$commit"
	head -n "$keep" "$state" > "$state.tmp" 2>/dev/null || : > "$state.tmp"
	for ((i = keep; i < ${#patches[@]}; i++)); do
		say "applying $(basename "${patches[i]}")"
		git -C "$tree" -c user.name=dmemfs -c user.email=dmemfs@localhost \
			am -q --committer-date-is-author-date "${patches[i]}"
		echo "$(sha256sum < "${patches[i]}" | cut -c1-64) $(git -C "$tree" rev-parse HEAD)" >> "$state.tmp"
	done
	mv "$state.tmp" "$state"
}

configure() {
	local frag=$top/kernel/dmemfs-host.config
	say "configuring (x86_64_defconfig + kvm_guest.config + $(basename "$frag"))"
	make -C "$tree" -s O= x86_64_defconfig >/dev/null
	make -C "$tree" -s kvm_guest.config >/dev/null
	(cd "$tree" && scripts/kconfig/merge_config.sh -m .config "$frag" \
		${flavor:+"$top/kernel/$flavor.config"} >/dev/null)
	make -C "$tree" -s olddefconfig >/dev/null
	# Refuse silently-dropped options: every "=y" or "=m" of the fragments
	# must stick (the flavor's fragment wins where both set an option).
	local bad
	bad=$(cat "$frag" ${flavor:+"$top/kernel/$flavor.config"} |
		grep -E '^CONFIG_[A-Z0-9_]+=[ym]$' | tac | awk -F= '!seen[$1]++' |
		while read -r l; do
		grep -qx "$l" "$tree/.config" || echo "${l%%=*}"; done)
	if [ -n "$bad" ]; then
		say "config options not taken: $(echo $bad)"; exit 1
	fi
	grep -q '^# CONFIG_JUMP_LABEL is not set' "$tree/.config" || { say "JUMP_LABEL still on"; exit 1; }
}

build() {
	local start=$SECONDS n=0 total=2600
	say "building bzImage with ccache, log in ${log#$top/} (cold ~12 min on 2 cores)"
	export CCACHE_BASEDIR=$tree KBUILD_BUILD_TIMESTAMP='Thu Jan  1 00:00:00 UTC 2026'
	export KBUILD_BUILD_USER=dmemfs KBUILD_BUILD_HOST=dmemfs-host
	set +e
	# a modular flavor builds its modules too: modpost finds the symbols
	# that a module uses and vmlinux does not export
	local targets=bzImage
	grep -q '^CONFIG_MODULES=y' "$tree/.config" && targets="bzImage modules"
	# shellcheck disable=SC2086
	make -C "$tree" -j"$(($(nproc) + 1))" CC="ccache gcc" $targets 2>&1 | tee "$log" |
		while IFS= read -r line; do
			case $line in
			*" CC "*) n=$((n + 1))
				if ((n % 200 == 0)); then
					say "$(printf '%4ds' $((SECONDS - start))) ~$((n * 100 / total))% compiled ($n objects)"
				fi ;;
			*error:*|*Error\ *|*ERROR:*) echo "$line" ;;
			esac
		done
	local rc=${PIPESTATUS[0]}
	set -e
	if [ "$rc" -ne 0 ]; then
		say "build FAILED after $((SECONDS - start)) s; last lines of the log:"
		tail -n 30 "$log"; exit 1
	fi
	cp "$tree/arch/x86/boot/bzImage" "$image.tmp" && mv "$image.tmp" "$image"
	say "bzImage ready: ${image#$top/} ($(stat -c %s "$image") bytes, $((SECONDS - start)) s)"
}

extract
apply_patches
[ "$mode" = tree ] && exit 0
configure
build
