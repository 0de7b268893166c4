#!/bin/bash
# Build the L2 guest initramfs: busybox-static, guest-images/l2/init and the
# static agent (guest-images/l2/agent.c), as a gzip'd newc cpio.
#
#   guest-images/l2/mkinitramfs.sh AGENT OUT.cpio.gz
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
agent=${1:?usage: mkinitramfs.sh AGENT OUT.cpio.gz}
out=${2:?usage: mkinitramfs.sh AGENT OUT.cpio.gz}
busybox=${BUSYBOX:-/bin/busybox}

for b in "$busybox" "$agent"; do
	[ -x "$b" ] && ! readelf -l "$b" 2>/dev/null | grep -q interpreter || {
		echo "l2 mkinitramfs: $b is not a static executable (busybox-static, cc -static)" >&2
		exit 1
	}
done
stage=$(mktemp -d "${TMPDIR:-/tmp}/l2-initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,dev,proc,sys}
cp "$busybox" "$stage/bin/busybox"
ln -s busybox "$stage/bin/sh"
install -m 0755 "$here/init" "$stage/init"
install -m 0755 "$agent" "$stage/agent"
mkdir -p "$(dirname "$out")"
(cd "$stage" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --owner=0:0 --quiet) | gzip -9n > "$out.tmp"
mv "$out.tmp" "$out"
echo "[l2] initramfs: ${out} ($(stat -c %s "$out") bytes)"
