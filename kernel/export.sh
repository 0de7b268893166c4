#!/bin/bash
# Developer helper: turn the commits on top of "base" in build/linux into
# kernel/patches/NNNN-*.patch (the form the repository keeps).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
patchdir=$top/kernel/patches
tree=$top/build/linux
mkdir -p "$patchdir"
rm -f "$patchdir"/*.patch
git -C "$tree" format-patch -q --no-signature --zero-commit -N \
	-o "$patchdir" base..HEAD
# Record the applied state so build.sh does not re-apply what is there.
: > "$tree/.dmemfs-applied"
for p in "$patchdir"/*.patch; do
	n=$(basename "$p" | cut -c1-4)
	c=$(git -C "$tree" rev-list --reverse base..HEAD | sed -n "$((10#$n))p")
	echo "$(sha256sum < "$p" | cut -c1-64) $c" >> "$tree/.dmemfs-applied"
done
ls "$patchdir"
