#!/bin/bash
# make deb: dmemfs-host's packages, built with Debian's own tools, into
# build/deb/, each checked with lintian:
#   dmemfs-host_VERSION_amd64.deb   the userspace (debian/, dpkg-buildpackage)
#   linux-image-*-dmemfs*.deb       the kernel of build/linux, the tree that
#                                   make kernel built (bindeb-pkg: only what
#                                   the release name touches is rebuilt; a
#                                   linux-headers package only where the
#                                   configuration has modules)
# One "PASS:/FAIL: deb.NAME" line a package; lintian's output goes to
# build/deb/lintian-NAME.txt.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/deb
rc=0
mkdir -p "$out"
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
cd "$top" || exit 1

# ---- the userspace: dpkg-buildpackage writes next to the source tree
ver=$(dpkg-parsechangelog -S Version)
if dpkg-buildpackage -b -us -uc > "$out/dmemfs-host-build.log" 2>&1; then
	for f in ../dmemfs-host_"$ver"_amd64.deb ../dmemfs-host-dbgsym_"$ver"_amd64.deb \
		../dmemfs-host_"$ver"_amd64.changes ../dmemfs-host_"$ver"_amd64.buildinfo; do
		[ -e "$f" ] && mv "$f" "$out/"
	done
	lintian "$out/dmemfs-host_${ver}_amd64.changes" > "$out/lintian-dmemfs-host.txt" 2>&1
	tags=$(grep -cE '^[EW]: ' "$out/lintian-dmemfs-host.txt")
	if [ "$tags" -eq 0 ]; then
		echo "PASS: deb.dmemfs-host: build/deb/dmemfs-host_${ver}_amd64.deb, lintian clean"
	else
		echo "FAIL: deb.dmemfs-host: lintian: $(grep -m1 -E '^[EW]: ' "$out/lintian-dmemfs-host.txt")"
		rc=1
	fi
else
	echo "FAIL: deb.dmemfs-host: dpkg-buildpackage failed (build/deb/dmemfs-host-build.log)"
	rc=1
fi

# ---- the kernel: bindeb-pkg in the tree make kernel built
tree=$top/build/linux
if [ ! -f "$tree/.config" ] || [ ! -f "$top/build/bzImage" ]; then
	echo "FAIL: deb.linux-image: no kernel built (make kernel first)"
	exit 1
fi
rm -f "$top"/build/linux-image-*.deb "$top"/build/linux-headers-*.deb "$top"/build/linux-libc-dev_*.deb \
	"$top"/build/linux-upstream_*
if DEBFULLNAME=dmemfs-host DEBEMAIL=dev@dmemfs-host.invalid \
	make -C "$tree" -j"$(nproc)" CC="ccache gcc" LOCALVERSION=-dmemfs KDEB_PKGVERSION="$ver-1" \
	bindeb-pkg > "$out/linux-build.log" 2>&1; then
	shopt -s nullglob
	debs=("$top"/build/linux-image-*dmemfs*_"${ver}"-1_amd64.deb "$top"/build/linux-headers-*dmemfs*_"${ver}"-1_amd64.deb)
	shopt -u nullglob
	[ ${#debs[@]} -gt 0 ] && mv "${debs[@]}" "$out/"
	rm -f "$top"/build/linux-libc-dev_*.deb "$top"/build/linux-upstream_*
	img=$(ls "$out"/linux-image-*dmemfs*_"${ver}"-1_amd64.deb 2> /dev/null | head -1)
	if [ -z "$img" ]; then
		echo "FAIL: deb.linux-image: bindeb-pkg made no linux-image package (build/deb/linux-build.log)"
		rc=1
	else
		# initial-upload-closes-no-bugs: the changelog the kernel's mkdebian
		# writes closes no Debian bug, as no locally built kernel's can
		lintian --suppress-tags initial-upload-closes-no-bugs \
			"$out"/linux-*dmemfs*_"${ver}"-1_amd64.deb > "$out/lintian-linux.txt" 2>&1
		n=$(grep -cE '^[EW]: ' "$out/lintian-linux.txt")
		if [ "$n" -eq 0 ]; then
			echo "PASS: deb.linux-image: build/deb/$(basename "$img"), lintian clean (one tag suppressed, above)"
		else
			echo "FAIL: deb.linux-image: lintian: $(grep -m1 -E '^[EW]: ' "$out/lintian-linux.txt") ($n tags, build/deb/lintian-linux.txt)"
			rc=1
		fi
	fi
else
	echo "FAIL: deb.linux-image: bindeb-pkg failed (build/deb/linux-build.log)"
	rc=1
fi
exit $rc
