#!/bin/bash
# Build the L1 initramfs: busybox-static plus guest-images/init, as a gzip'd
# newc cpio.  No downloads: the root file system comes from the host over
# virtio-9p at boot (see init).
#
#   guest-images/mkinitramfs.sh OUT.cpio.gz
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: mkinitramfs.sh OUT.cpio.gz}
busybox=${BUSYBOX:-/bin/busybox}

# A static binary has no program interpreter.
[ -x "$busybox" ] && ! readelf -l "$busybox" 2>/dev/null | grep -q 'interpreter' || {
	echo "mkinitramfs: $busybox is not a static busybox (apt-get install busybox-static)" >&2
	exit 1
}
stage=$(mktemp -d "${TMPDIR:-/tmp}/l1-initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,dev,proc,sys,lower,upper,newroot}
cp "$busybox" "$stage/bin/busybox"
ln -s busybox "$stage/bin/sh"
install -m 0755 "$here/init" "$stage/init"
mkdir -p "$(dirname "$out")"
(cd "$stage" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --owner=0:0 --quiet) | gzip -9n > "$out.tmp"
mv "$out.tmp" "$out"
echo "[guest] initramfs: ${out} ($(stat -c %s "$out") bytes)"
