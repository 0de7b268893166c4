# shellcheck shell=bash
# VFIO helpers for scripts inside L1 (nested-test/l1/tests/l1-vfio.sh,
# nested-test/l1/bench/l1-bench.sh).  L1 has a vIOMMU and the QEMU edu device (PCI
# 1234:11e8), see nested-test/host/boot-l1.sh.
#
#   vfio_edu_bdf             print the edu device's PCI address (0000:00:04.0)
#   vfio_bind BDF            bind it to vfio-pci; prints its IOMMU group number
#   vfio_unbind BDF          unbind it and clear driver_override (edu has no
#                            driver of its own: unbound is how L1 boots)
#   vfio_pinned_all          dmem pinned_bytes of all nodes (-1: no sysfs file)
#   vfio_pins_summary        "DPAGES PAGES ORPHANED" from debugfs dmem/pins
#                            ("-1 -1 -1" when there is no such file)

VFIO_PCI=/sys/bus/pci/devices

vfio_edu_bdf() {
	local d
	for d in "$VFIO_PCI"/*; do
		[ "$(cat "$d/vendor" 2> /dev/null)" = 0x1234 ] &&
			[ "$(cat "$d/device" 2> /dev/null)" = 0x11e8 ] && { echo "${d##*/}"; return 0; }
	done
	return 1
}

vfio_bind() {
	local bdf=$1 dev=$VFIO_PCI/$1 grp drv
	[ -e "$dev/iommu_group" ] || { echo "no $dev/iommu_group (no vIOMMU, intel_iommu=on?)" >&2; return 1; }
	grp=$(basename "$(readlink "$dev/iommu_group")")
	drv=$(basename "$(readlink "$dev/driver" 2> /dev/null)" 2> /dev/null)
	if [ "$drv" != vfio-pci ]; then
		[ -n "$drv" ] && echo "$bdf" > "$dev/driver/unbind"
		echo vfio-pci > "$dev/driver_override" &&
			echo "$bdf" > "$VFIO_PCI/../drivers_probe" || return 1
	fi
	# No udev in L1: devtmpfs makes the node, wait for it.
	for _ in $(seq 1 20); do
		[ -c "/dev/vfio/$grp" ] && { echo "$grp"; return 0; }
		sleep 0.1
	done
	echo "/dev/vfio/$grp did not appear after binding $bdf to vfio-pci" >&2
	return 1
}

vfio_unbind() {
	local dev=$VFIO_PCI/$1
	[ -e "$dev/driver" ] && echo "$1" > "$dev/driver/unbind"
	echo > "$dev/driver_override"
}

vfio_pinned_all() {
	local t=0 f n=0
	for f in /sys/kernel/mm/dmem/node*/pinned_bytes; do
		[ -r "$f" ] || continue
		t=$((t + $(cat "$f")))
		n=$((n + 1))
	done
	[ "$n" -gt 0 ] && echo "$t" || echo -1
}

vfio_pins_summary() {
	local f=/sys/kernel/debug/dmem/pins
	[ -r "$f" ] || { echo "-1 -1 -1"; return; }
	awk 'NR > 1 && NF >= 5 { n++; p += $4; o += ($5 != 0) } END { print n + 0, p + 0, o + 0 }' "$f"
}
