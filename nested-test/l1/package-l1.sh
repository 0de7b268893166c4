#!/bin/bash
# Inside L1: dmemfs-host's packages as an operator meets them (make deb's
# build/deb/, issue 31).  L1 has no systemd: where a unit would run a
# command, this script runs the unit's own ExecStart line, read from the
# installed unit file.
#
#   stage 1  dpkg -i the kernel and dmemfs-host packages; what they put
#            where; systemd-analyze verify of the units; the grub snippet
#            seeded from dmem-capacity --recommend; the mount unit's
#            command, libvirtd, the pools unit's command; the metrics
#            timer's service into node_exporter's directory; a dmem guest
#            started with virsh runs; dpkg -r (the pools and everything of
#            the package go, the config stays, the guest's mount stays);
#            dpkg -P (the config goes; nothing of the package is left);
#            then kexec into the packaged kernel
#   stage 2  the packaged kernel runs, with dmem on both nodes and a clean
#            kernel log
#
# --list prints the checks.
set -u
checks="installed units-verify grub-seed setup-mount setup-up metrics l2-start removed guest-survives-remove purged kexec packaged-kernel"
if [ "${1:-}" = --list ]; then
	for c in $checks; do echo "package.$c"; done
	exit 0
fi
TOP=${TOP:?TOP is not set}
# shellcheck source=nested-test/l1/l2-lib.sh
. "$TOP/nested-test/l1/l2-lib.sh"
l1_channel
result_area package
WRAPPER=/usr/bin/qemu-memdev-wrapper
SETUP=/usr/sbin/dmemfs-host-setup
DEB=$BUILD/deb
stage=1
for a in "$@"; do case $a in stage=*) stage=${a#*=} ;; esac; done
why=
not_run() { fail_from "$1" "$why" $checks; res "L1-DONE"; exit 0; }
# unit_value UNIT KEY: the value of a .service key (ExecStart=, Environment=)
unit_value() { sed -n "s/^$2=//p" "/lib/systemd/system/$1.service"; }
# what the package owns outside /usr/share/doc, and where units and links go;
# not libvirt's own files: the domain and pool XML, and the AppArmor profile
# libvirt-<uuid> virt-aa-helper writes for each domain and keeps after it
# stops (libvirt 9.0's virt-aa-helper -D unlinks only the .files; a domain
# without dmem leaves it just the same)
snapshot() {
	find /etc /usr/bin /usr/sbin /lib/systemd/system /usr/share/man -xdev \
		\( -type f -o -type l \) 2> /dev/null |
		grep -v '^/etc/libvirt/qemu/\|^/etc/libvirt/storage/\|^/etc/apparmor\.d/libvirt/libvirt-[0-9a-f-]*$' | sort
}

case $stage in
1)
	img=$(ls "$DEB"/linux-image-*dmemfs*.deb 2> /dev/null | head -1)
	pkg=$(ls "$DEB"/dmemfs-host_*_amd64.deb 2> /dev/null | head -1)
	[ -n "$img" ] && [ -n "$pkg" ] || { why="no packages in $DEB (make deb)"; not_run installed; }
	snapshot > /tmp/pkg-before.txt
	# man-db's trigger rebuilds the whole man index from nothing on the
	# read-only host root's overlay: some 3 minutes under TCG, at dpkg -i
	# and again at dpkg -r, for a step of Debian's, not of the package
	rm -f /var/lib/man-db/auto-update
	out=$(dpkg -i "$img" "$pkg" 2>&1)
	rc=$?
	kver=$(dpkg-deb -f "$img" Package | sed 's/^linux-image-//')
	missing=
	for f in /usr/sbin/dmemfs-host-setup /usr/sbin/dmemfs-hook /usr/sbin/dmem-liveupdate \
		/usr/bin/dmem-capacity /usr/bin/qemu-memdev-wrapper /etc/dmemfs-host.conf \
		/lib/systemd/system/dmemfs-host-mount.service /lib/systemd/system/dmemfs-host-pools.service \
		/lib/systemd/system/dmemfs-host-metrics.timer /etc/default/grub.d/dmemfs-host.cfg \
		/usr/share/man/man8/dmemfs-host-setup.8.gz "/boot/vmlinuz-$kver"; do
		[ -e "$f" ] || missing="$missing $f"
	done
	[ "$(readlink /etc/libvirt/hooks/qemu.d/dmemfs)" = /usr/sbin/dmemfs-hook ] || missing="$missing hook-link"
	grep -qxF 'include if exists <local/abstractions/dmemfs-host>' \
		/etc/apparmor.d/local/abstractions/libvirt-qemu 2> /dev/null || missing="$missing apparmor-include"
	[ -L /etc/systemd/system/multi-user.target.wants/dmemfs-host-mount.service ] ||
		missing="$missing mount-unit-enabled"
	check installed "dpkg -i rc $rc ($(echo "$out" | tail -2 | tr -s '\n' ' ')); missing:$missing" \
		eval '[ "$rc" = 0 ] && [ -z "$missing" ]'
	[ "$rc" = 0 ] || { why="dpkg -i failed"; not_run units-verify; }

	out=$(systemd-analyze verify --man=no /lib/systemd/system/dmemfs-host-mount.service \
		/lib/systemd/system/dmemfs-host-pools.service /lib/systemd/system/dmemfs-host-metrics.service \
		/lib/systemd/system/dmemfs-host-metrics.timer 2>&1 | grep -v 'sysinit.target\|is not executable: No such file.*bin/sh')
	check units-verify "$(echo "$out" | head -3 | tr -s '\n' ' ')" [ -z "$out" ]

	# the dmem= of the next boot, as dmem-capacity recommends it for this host
	out=$(/usr/sbin/dmemfs-host-setup grub --recommend --guest 256M 2>&1)
	rc=$?
	line=$(grep '^DMEM=' /etc/default/grub.d/dmemfs-host.cfg)
	check grub-seed "rc $rc, '$out'; snippet: '$line'" \
		eval '[ "$rc" = 0 ] && [[ "$line" =~ ^DMEM=\"!?[0-9]+[KMG]?(:[0-9]+[KMG]?)?\"$ ]] && [ "$line" != "DMEM=\"\"" ]'

	# the mount unit: before libvirtd
	cmd=$(unit_value dmemfs-host-mount ExecStart)
	out=$($cmd 2>&1)
	rc=$?
	bad=
	for m in /run/dmemfs/4K /run/dmemfs/2M /run/dmemfs/1G /run/dmemfs-stats/node0 /run/dmemfs-stats/node1; do
		is_dmemfs "$m" || bad="$bad $m"
	done
	check setup-mount "'$cmd': rc $rc, '$out'; not dmemfs:$bad" eval '[ "$rc" = 0 ] && [ -z "$bad" ]'

	acc_libvirt_config && acc_libvirtd_start || { why="libvirtd did not start"; not_run setup-up; }
	# the pools unit: after libvirtd
	cmd=$(unit_value dmemfs-host-pools ExecStart)
	out=$($cmd 2>&1)
	rc=$?
	st="$(nodepool_state 0) $(nodepool_state 1)"
	check setup-up "'$cmd': rc $rc, '$out'; pools: $st" eval '[ "$rc" = 0 ] && [ "$st" = "running/yes running/yes" ]'

	# the metrics timer's service, as systemd runs it: its Environment=,
	# then its ExecStart= line through the shell, with node_exporter's
	# textfile directory present
	tdir=/var/lib/prometheus/node-exporter
	mkdir -p "$tdir"
	env=$(unit_value dmemfs-host-metrics Environment)
	cmd=$(unit_value dmemfs-host-metrics ExecStart)
	out=$(env "$env" bash -c "$cmd" 2>&1)
	rc=$?
	free=$(grep -c '^dmem_pool_free_bytes{node="[01]"} [0-9]' "$tdir/dmem.prom" 2> /dev/null)
	mode=$(stat -c %a "$tdir/dmem.prom" 2> /dev/null)
	check metrics "'$env' '$cmd': rc $rc, '$out'; $tdir/dmem.prom mode ${mode:-none}, $free free-bytes series for 2 nodes, $(ls "$tdir" | tr '\n' ' ')" \
		eval '[ "$rc" = 0 ] && [ "$free" = 2 ] && [ "$mode" = 644 ] && [ ! -e "$tdir/dmem.prom.tmp" ]'
	rm -rf /var/lib/prometheus

	# a dmem guest through the packaged hook and wrapper
	name=pkg-l2
	mkdomain "$name" "$(new_uuid)" 64 128 l2.carry=1 > "/tmp/$name.xml"
	virsh define "/tmp/$name.xml" > /dev/null 2>&1
	err=$(virsh start "$name" 2>&1)
	l2_watch "$name"
	l=$(wait_pass "$name" 0 300)
	check l2-start "virsh start: '$err'; agent: '$l' (serial: $(last_serial "$name"); $(qemu_diag "$name"))" \
		eval '[ -n "$l" ] && [ "$(agent_field "$l" errors)" = 0 ]'
	pass0=$(agent_field "$l" pass)

	# dpkg -r: the package goes, its pools too (prerm), the config stays
	out=$(dpkg -r dmemfs-host 2>&1)
	rc=$?
	left=
	for f in /usr/sbin/dmemfs-host-setup /usr/bin/qemu-memdev-wrapper /etc/libvirt/hooks/qemu.d/dmemfs \
		/lib/systemd/system/dmemfs-host-mount.service; do
		[ -e "$f" ] || [ -L "$f" ] && left="$left $f"
	done
	grep -qF 'dmemfs-host' /etc/apparmor.d/local/abstractions/libvirt-qemu 2> /dev/null && left="$left apparmor-include"
	for n in 0 1; do virsh pool-info dmem-node$n > /dev/null 2>&1 && left="$left pool dmem-node$n"; done
	is_dmemfs /run/dmemfs-stats/node0 && left="$left /run/dmemfs-stats/node0 mounted"
	check removed "dpkg -r rc $rc ($(echo "$out" | tail -1)); left:$left; config kept: $(ls /etc/dmemfs-host.conf 2>&1)" \
		eval '[ "$rc" = 0 ] && [ -z "$left" ] && [ -e /etc/dmemfs-host.conf ]'
	# the guest that ran through the removal runs on, on its mount
	l=$(wait_pass "$name" "${pass0:-0}" 300)
	gone=
	for m in /run/dmemfs/2M /run/dmemfs/1G /run/dmemfs/4K; do is_dmemfs "$m" || gone="$gone $m"; done
	st=$(domstate "$name") # (check has a local "name")
	check guest-survives-remove "domain '$st', agent after the removal: '$l'; unmounted:$gone" \
		eval '[ "$st" = running ] && [ -n "$l" ] && [ "$(agent_field "$l" errors)" = 0 ] && [ -z "$gone" ]'
	virsh destroy "$name" > /dev/null 2>&1
	virsh undefine "$name" > /dev/null 2>&1

	# dpkg -P: the config goes too; nothing of the package is left
	out=$(dpkg -P dmemfs-host 2>&1)
	rc=$?
	snapshot > /tmp/pkg-after.txt
	extra=$(comm -13 /tmp/pkg-before.txt /tmp/pkg-after.txt | grep -v "$kver\|^/etc/kernel/" | tr '\n' ' ')
	lost=$(comm -23 /tmp/pkg-before.txt /tmp/pkg-after.txt | tr '\n' ' ')
	check purged "dpkg -P rc $rc ($(echo "$out" | tail -1)); left: '$extra'; gone that was there before: '$lost'" \
		eval '[ "$rc" = 0 ] && [ -z "$extra" ] && [ -z "$lost" ] && [ ! -e /etc/dmemfs-host.conf ]'
	acc_libvirtd_stop

	# the packaged kernel, as a reboot would run it
	base=$(for w in $(cat /proc/cmdline); do case $w in l1.args=*) ;; *) printf '%s ' "$w" ;; esac; done)
	if ! out=$(kexec -l "/boot/vmlinuz-$kver" --initrd="$BUILD/guest/initramfs.cpio.gz" \
		--command-line="${base}l1.args=stage=2,kver=$kver" 2>&1); then
		why="kexec -l: $out"
		not_run kexec
	fi
	pass kexec "into /boot/vmlinuz-$kver"
	sync
	kexec -e
	fail packaged-kernel "kexec -e returned"
	;;
2)
	kver=
	for a in "$@"; do case $a in kver=*) kver=${a#*=} ;; esac; done
	nodes=$(dmesg | grep -cE 'dmem: node [0-9]+: reserved')
	bad=$(kernel_splats)
	check packaged-kernel "running $(uname -r), the package's $kver; dmem reserved on $nodes of 2 nodes; kernel log: $bad" \
		eval '[ "$(uname -r)" = "$kver" ] && [ "$nodes" -eq 2 ] && [ -z "$bad" ]'
	;;
esac
res "L1-DONE"
results_exit
