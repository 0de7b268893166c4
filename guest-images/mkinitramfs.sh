#!/bin/bash
# Build a busybox-static initramfs as a gzip'd newc cpio.  By default the
# L1 one (guest-images/init); no downloads: L1's root file system comes from
# the host over virtio-9p at boot (see init).
#
#   guest-images/mkinitramfs.sh OUT.cpio.gz [--init FILE] [SRC=DEST]...
#
#   --init FILE   the /init to use (default guest-images/init)
#   SRC=DEST      also install SRC (mode kept) as DEST inside the image
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: mkinitramfs.sh OUT.cpio.gz [--init FILE] [SRC=DEST]...}
shift
init=$here/init
extra=()
while [ $# -gt 0 ]; do
	case $1 in
	--init) init=${2:?--init needs a file}; shift 2 ;;
	*=*) extra+=("$1"); shift ;;
	*) echo "mkinitramfs: bad argument $1" >&2; exit 2 ;;
	esac
done
busybox=${BUSYBOX:-/bin/busybox}

# A static binary has no program interpreter.
[ -x "$busybox" ] && ! readelf -l "$busybox" 2>/dev/null | grep -q 'interpreter' || {
	echo "mkinitramfs: $busybox is not a static busybox (apt-get install busybox-static)" >&2
	exit 1
}
stage=$(mktemp -d "${TMPDIR:-/tmp}/initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,dev,proc,sys,lower,upper,newroot}
cp "$busybox" "$stage/bin/busybox"
ln -s busybox "$stage/bin/sh"
install -m 0755 "$init" "$stage/init"
for e in "${extra[@]}"; do
	mkdir -p "$stage/$(dirname "${e#*=}")"
	cp -p "${e%%=*}" "$stage/${e#*=}"
done
mkdir -p "$(dirname "$out")"
(cd "$stage" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --owner=0:0 --quiet) | gzip -9n > "$out.tmp"
mv "$out.tmp" "$out"
echo "[guest] initramfs: ${out} ($(stat -c %s "$out") bytes)"
