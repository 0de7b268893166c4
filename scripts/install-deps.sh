#!/bin/bash
# Install the Debian 12 packages that build, demo and test need, and
# those named as arguments.
# Idempotent and quick when everything is already there.
set -euo pipefail
pkgs=(
	linux-source-6.12 build-essential flex bison bc libelf-dev libssl-dev cpio dwarves ccache rsync
	qemu-system-x86 qemu-utils busybox-static kexec-tools
	libvirt-daemon-system libvirt-clients libvirt-dev virtinst apparmor
	libglib2.0-dev libxml2-dev libnuma-dev pkg-config libjson-glib-dev
	clang libclang-rt-14-dev trinity
	debhelper lintian kmod fakeroot
	"$@"
)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' > /dev/null || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: need root to install: ${missing[*]}" >&2
	exit 1
fi
echo "[deps] installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
