#!/bin/bash
# make deb: dmemfs-host's packages, built with Debian's own tools, into
# build/deb/, each checked with lintian:
#   dmemfs-host_VERSION_amd64.deb   the userspace (debian/, dpkg-buildpackage)
#   linux-image-*-dmemfs_*.deb      the kernel of build/linux, the tree that
#   linux-headers-*-dmemfs_*.deb    make kernel built (bindeb-pkg: only what
#                                   the release name touches is rebuilt)
# One "PASS:/FAIL: deb.NAME" line a package; lintian's tags go to
# build/deb/lintian-NAME.txt.  Tags still shown for the kernel are
# explained in debian/README.packaging.
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
if make -C "$tree" -j"$(nproc)" CC="ccache gcc" LOCALVERSION=-dmemfs KDEB_PKGVERSION="$ver" \
	bindeb-pkg > "$out/linux-build.log" 2>&1; then
	mv "$top"/build/linux-image-*-dmemfs_*.deb "$top"/build/linux-headers-*-dmemfs_*.deb "$out/"
	rm -f "$top"/build/linux-libc-dev_*.deb "$top"/build/linux-upstream_* "$top"/build/linux-image-*-dbg_*.deb
	img=$(ls "$out"/linux-image-*-dmemfs_*.deb)
	lintian "$img" "$out"/linux-headers-*-dmemfs_*.deb > "$out/lintian-linux.txt" 2>&1
	echo "PASS: deb.linux-image: build/deb/$(basename "$img") ($(grep -cE '^[EW]: ' "$out/lintian-linux.txt") lintian tags, debian/README.packaging)"
else
	echo "FAIL: deb.linux-image: bindeb-pkg failed (build/deb/linux-build.log)"
	rc=1
fi
exit $rc
