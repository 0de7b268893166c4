# shellcheck shell=bash
# Shared helpers of the in-L1 acceptance (l1-checks.sh) and the demo
# (l1-demo.sh).  Sourced inside L1, where the root file system is the host's
# over virtio-9p with a tmpfs overlay: every write here stays in L1.
#
# Environment: TOP (repository), BUILD (default $TOP/build), DMEMFS_2M_MOUNT /
# DMEMFS_1G_MOUNT (mounted here if they are not dmemfs yet), DMEMFS_SYSFS_ROOT,
# L2_KERNEL (default $BUILD/bzImage), L2_INITRD (default
# $BUILD/l2/initramfs.cpio.gz).

TOP=${TOP:?TOP is not set}
BUILD=${BUILD:-$TOP/build}
ACC_DIR=$TOP/nested-test/l1/acceptance
SYSFS=${DMEMFS_SYSFS_ROOT:-/sys/kernel/mm/dmem}
M2=${DMEMFS_2M_MOUNT:-/run/dmemfs/2M}
M1G=${DMEMFS_1G_MOUNT:-/run/dmemfs/1G}
PREFIX=/usr/local
WRAPPER=$PREFIX/bin/qemu-memdev-wrapper
HOOK=/etc/libvirt/hooks/qemu.d/dmemfs
SETUP=$PREFIX/sbin/dmemfs-host-setup
IMAGES=/var/lib/libvirt/images
SERIAL_DIR=/var/log/libvirt/qemu
L2_KERNEL=${L2_KERNEL:-$BUILD/bzImage}
L2_INITRD=${L2_INITRD:-$BUILD/l2/initramfs.cpio.gz}
L2_CMDLINE_BASE="console=ttyS0 earlyprintk=ttyS0 panic=-1 quiet loglevel=3 tsc=reliable kunit.enable=0"
MiB=$((1 << 20))
# shellcheck source=nested-test/l1/l1-common.sh
. "$TOP/nested-test/l1/l1-common.sh"
export LC_ALL=C
virsh() { command virsh -q -c qemu:///system "$@"; }

acc_log() { printf '[accept] %s\n' "$*" >&2; }
now_ms() { local s; s=$(cut -d' ' -f1 /proc/uptime); echo $(( ${s%.*} * 1000 + 10#${s#*.} * 10 )); }
ms_to_s() { printf '%d.%d' $(($1 / 1000)) $((($1 % 1000) / 100)); }

# ---- dmem pool
pool_free_all() { echo "$(pool_bytes 0 free) $(pool_bytes 1 free)"; }
pool_mib() { echo "node0 free $(($(pool_bytes 0 free) / MiB)) MiB used $(($(pool_bytes 0 used) / MiB)) MiB, node1 free $(($(pool_bytes 1 free) / MiB)) MiB used $(($(pool_bytes 1 used) / MiB)) MiB"; }
pool_table() {
	local n f
	printf '%-6s %12s %12s %12s\n' node total_MiB used_MiB free_MiB
	for f in "$SYSFS"/node*; do
		n=${f##*/node}
		printf '%-6s %12d %12d %12d\n' "node$n" $(($(pool_bytes "$n" total) / MiB)) \
			$(($(pool_bytes "$n" used) / MiB)) $(($(pool_bytes "$n" free) / MiB))
	done
}


# ---- setup: dmemfs, install, libvirt
ACC_MOUNTED=()
acc_mount_dmemfs() {
	local ps dir
	for ps in 2M 1G; do
		dir=$M2
		[ "$ps" = 1G ] && dir=$M1G
		is_dmemfs "$dir" && continue
		mkdir -p "$dir"
		mount -t dmemfs -o "pagesize=$ps" none "$dir" || return 1
		ACC_MOUNTED+=("$dir")
	done
}

# make install DESTDIR= into the overlay root, then the configuration.
acc_install() {
	make -C "$TOP" --no-print-directory -o userspace -o capacity install DESTDIR= PREFIX="$PREFIX" \
		> /tmp/acc-install.log 2>&1 || { tail -3 /tmp/acc-install.log; return 1; }
	cat > /etc/dmemfs-host.conf <<-CONF
		# written by nested-test/l1/l2-lib.sh
		[mounts]
		2M=$M2
		1G=$M1G
		[qemu]
		binary=/usr/bin/qemu-system-x86_64
		user=libvirt-qemu
		[sysfs]
		root=$SYSFS
	CONF
	[ -x "$HOOK" ] && [ -x "$WRAPPER" ]
}

# virtlogd + libvirtd without systemd (research/environment.md).
acc_libvirt_config() {
	mkdir -p /run/libvirt /var/log/libvirt/qemu /var/lib/libvirt/qemu /var/cache/libvirt/qemu "$IMAGES"
	chgrp kvm /dev/kvm && chmod 0660 /dev/kvm
	grep -q '^namespaces' /etc/libvirt/qemu.conf 2> /dev/null || cat >> /etc/libvirt/qemu.conf <<-'CONF'
		# nested-test/l1/acceptance: no private /dev (no udev in L1); AppArmor
		# as on a Debian host, named so that a missing driver fails the start
		namespaces = [ ]
		security_driver = "apparmor"
	CONF
	acc_apparmor || return 1
	grep -q '^log_outputs' /etc/libvirt/libvirtd.conf 2> /dev/null ||
		echo 'log_outputs = "3:file:/var/log/libvirt/libvirtd.log"' >> /etc/libvirt/libvirtd.conf
	# no default network in L1 (no netfilter in the test kernel)
	rm -f /etc/libvirt/qemu/networks/autostart/*.xml
	# the L2 images local to L1 (libvirt's DAC labelling chowns them)
	install -m 0644 "$L2_KERNEL" "$IMAGES/l2-bzImage" &&
		install -m 0644 "$L2_INITRD" "$IMAGES/l2-initramfs.cpio.gz"
}

# As a Debian host runs: libvirtd and virt-aa-helper confined, each QEMU in
# the libvirt-<uuid> profile virt-aa-helper writes for it, which includes our
# snippet (make install).  libvirt's AppArmor driver needs libvirtd's own
# profile in enforce mode; load it before libvirtd starts.
acc_apparmor() {
	[ -r /sys/kernel/security/apparmor/profiles ] ||
		{ acc_log "AppArmor is not enabled in this kernel (/sys/kernel/security/apparmor)"; return 1; }
	apparmor_parser -r -K /etc/apparmor.d/usr.sbin.libvirtd \
		/etc/apparmor.d/usr.lib.libvirt.virt-aa-helper > /tmp/acc-apparmor.log 2>&1 ||
		{ acc_log "apparmor_parser: $(tail -1 /tmp/acc-apparmor.log)"; return 1; }
	grep -q '^libvirtd (enforce)' /sys/kernel/security/apparmor/profiles
}

libvirtd_pid() { local p; p=$(cat /run/libvirtd.pid 2> /dev/null) && kill -0 "$p" 2> /dev/null && echo "$p"; }

acc_libvirtd_start() {
	[ -n "$(cat /run/virtlogd.pid 2> /dev/null)" ] && kill -0 "$(cat /run/virtlogd.pid)" 2> /dev/null ||
		virtlogd -d || return 1
	libvirtd -d || return 1
	for _ in $(seq 1 120); do
		virsh list --all > /dev/null 2>&1 && return 0
		sleep 0.5
	done
	return 1
}

acc_libvirtd_stop() {
	local p
	p=$(libvirtd_pid) || return 0
	stop_pid "$p"
}

# acc_setup: the L2 images, dmemfs, hook and wrapper, libvirtd.  On failure
# $ACC_STEP says which step failed.
ACC_STEP=
acc_setup() {
	ACC_STEP="the L2 images $L2_KERNEL, $L2_INITRD"
	[ -r "$L2_KERNEL" ] && [ -r "$L2_INITRD" ] || return 1
	ACC_STEP="mount dmemfs 2M/1G on $M2, $M1G"
	acc_mount_dmemfs || return 1
	ACC_STEP="make install DESTDIR= of hook and wrapper (/tmp/acc-install.log)"
	acc_install || return 1
	ACC_STEP="libvirt configuration and L2 images"
	acc_libvirt_config || return 1
	ACC_STEP="start virtlogd and libvirtd"
	acc_libvirtd_start || return 1
}

acc_stop_all() { # destroy and undefine our domains, stop the daemons, unmount
	local d p
	for d in $(virsh list --all --name 2> /dev/null); do
		virsh destroy "$d" > /dev/null 2>&1
		virsh undefine "$d" > /dev/null 2>&1
	done
	acc_libvirtd_stop
	p=$(cat /run/virtlogd.pid 2> /dev/null) && kill "$p" 2> /dev/null
	for d in "${ACC_MOUNTED[@]}"; do umount "$d"; done
	ACC_MOUNTED=()
}

# ---- domains
new_uuid() { cat /proc/sys/kernel/random/uuid; }
serial_of() { echo "$SERIAL_DIR/$1.serial"; }
last_serial() { tr -d '\r' < "$(serial_of "$1")" 2> /dev/null | grep -v '^\s*$' | tail -1 | cut -c1-160; }

# mkdomain NAME UUID CELL0_MIB CELL1_MIB [CMDLINE-EXTRA [EXTRA-BACKING-XML [PAGESIZE]]]
mkdomain() {
	local name=$1 uuid=$2 c0=$3 c1=$4 extra=${5:-} backing=${6:-} ps=${7:-2M}
	sed -e "s|@NAME@|$name|" -e "s|@UUID@|$uuid|" -e "s|@PAGESIZE@|$ps|" \
		-e "s|@TOTAL_MIB@|$((c0 + c1))|" -e "s|@CELL0_MIB@|$c0|" -e "s|@CELL1_MIB@|$c1|" \
		-e "s|@EXTRA_BACKING@|$backing|" -e "s|@KERNEL@|$IMAGES/l2-bzImage|" \
		-e "s|@INITRD@|$IMAGES/l2-initramfs.cpio.gz|" \
		-e "s|@CMDLINE@|$L2_CMDLINE_BASE${extra:+ $extra}|" \
		-e "s|@WRAPPER@|$WRAPPER|" -e "s|@SERIAL@|$(serial_of "$name")|" \
		"$ACC_DIR/domain.xml.in"
}

domstate() { virsh domstate "$1" 2> /dev/null | head -1; }
# dom_ended NAME: shut off, or libvirt answers that it has no such domain
# (a transient one that stopped), not merely no answer; one virsh call
dom_ended() { virsh domstate "$1" 2>&1 | grep -qE '^shut off$|failed to get domain'; }
wait_state() { # wait_state NAME STATE TIMEOUT_S
	local end=$((SECONDS + $3))
	while [ $SECONDS -lt $end ]; do
		[ "$(domstate "$1")" = "$2" ] && return 0
		sleep 0.5
	done
	return 1
}
# the whole lines of a serial log FILE, without \r: QEMU may be halfway
# through writing the last one (read fails on a line without its newline)
serial_whole() { local l; while IFS= read -r l; do printf '%s\n' "${l//$'\r'/}"; done < "$1" 2> /dev/null; }
wait_serial() { # wait_serial FILE REGEX TIMEOUT_S [NAME] -> prints the first matching line
	# Only whole lines: QEMU may be halfway through writing the last one
	# (read fails on a last line without its newline).  With NAME, no
	# longer than domain NAME runs (dom_ended: a reset stops it, as the
	# template has on_reboot destroy).
	local end=$((SECONDS + $3)) l
	while [ $SECONDS -lt $end ]; do
		while IFS= read -r l; do
			l=${l//$'\r'/}
			[[ $l =~ $2 ]] && { printf '%s\n' "$l"; return 0; }
		done < "$1" 2> /dev/null
		[ -n "${4:-}" ] && dom_ended "$4" && return 1
		sleep 0.5
	done
	return 1
}
qemu_pid() { local p; p=$(cat "/run/libvirt/qemu/$1.pid" 2> /dev/null) && kill -0 "$p" 2> /dev/null && echo "$p"; }
# qemu_diag NAME: where a silent guest's QEMU spends its time, on one line:
# each vCPU thread's user and system ticks and its kernel stack's top, and
# the guest's instruction pointer (a guest loop, or KVM looping in L1)
qemu_diag() {
	local p t st l
	p=$(qemu_pid "$1") || {
		# how it ended: libvirt's state and reason, QEMU's SHUTDOWN events
		# (l2_watch), the serial's size, QEMU's last words, and what L1's
		# kernel said of a killed or faulting task
		echo "no QEMU (domain '$(virsh domstate --reason "$1" 2> /dev/null | head -1)');" \
			"serial $(stat -c %s "$(serial_of "$1")" 2> /dev/null || echo none) bytes;" \
			"QEMU events: $(tr -s '\n' ' ' < "/tmp/$1.qemu-events" 2> /dev/null | cut -c1-300);" \
			"QEMU log: $(tail -3 "/var/log/libvirt/qemu/$1.log" 2> /dev/null | tr -s '\n' ' ' | cut -c1-400);" \
			"L1 kernel: $(dmesg | grep -iE 'qemu|segfault|killed process|oom|traps:' | tail -2 | tr -s '\n' ' ' | cut -c1-300)"
		return
	}
	for t in /proc/"$p"/task/*; do
		grep -q '^CPU' "$t/comm" 2> /dev/null || continue
		# the fields after "(comm)", which has spaces ("CPU 0/KVM"): state
		# first, utime (guest time included) 11th, stime 12th, in ticks
		read -r l < "$t/stat"
		read -ra st <<< "${l##*) }"
		printf '%s: state %s, utime %s stime %s ticks, kernel: %s; ' "$(cat "$t/comm")" "${st[0]}" "${st[11]}" "${st[12]}" \
			"$(head -4 "$t/stack" 2> /dev/null | sed 's/^\[<0>\] //' | tr '\n' ' ')"
	done
	# where the guest is: instruction pointer, mode, halted, and the bytes
	# at RIP (zeros there: it runs in memory that lost its contents).  Both
	# need the vCPU out of KVM_RUN, which a vCPU stuck in L1's KVM never
	# leaves: 10 s each, and "no answer" says so
	local regs rip
	regs=$(timeout 10 virsh qemu-monitor-command --hmp "$1" "info registers" 2> /dev/null)
	[ $? = 124 ] && printf 'registers: no answer from QEMU in 10 s; '
	printf '%s\n' "$regs" | grep -o -E '(RIP|CR0|EFER|HLT)=[0-9a-f]*' | tr '\n' ' '
	# a RIP in L1's own text is no guest's code (TCG wrote L1's state over
	# it): named, and sampled once more a second later, in the form that
	# l1_state_evidence reads
	rip=$(rip_of "$regs")
	if [ -n "$rip" ]; then
		printf 'rip 0x%s (L1: %s); ' "$rip" "$(l1_symbol "$rip")"
		sleep 1
		rip=$(rip_of "$(timeout 10 virsh qemu-monitor-command --hmp "$1" "info registers" 2> /dev/null)")
		[ -n "$rip" ] && printf 'then rip 0x%s (L1: %s); ' "$rip" "$(l1_symbol "$rip")"
	fi
	printf 'code at RIP: %s' "$(timeout 10 virsh qemu-monitor-command --hmp "$1" 'x/16xb $pc' 2> /dev/null |
		sed 's/^[0-9a-f]*: *//' | tr -s ' \r\n' ' ' | cut -c1-100)"
}
# rip_of REGS: the 16 hex digits of RIP in HMP's "info registers"
rip_of() { printf '%s\n' "$1" | grep -o -m1 -E 'RIP=[0-9a-f]{16}' | cut -d= -f2; }
# l1_symbol HEX16: "SYMBOL+0xOFF" of L1's text for a 16-digit address, or
# "-" (kallsyms' addresses are 16 digits too: as strings they sort as numbers)
l1_symbol() {
	local a=${1,,} sym
	sym=$(awk -v a="$a" '($2 == "t" || $2 == "T") && $1 <= a && $1 > b { b = $1; n = $3 }
		END { if (b != "") print b, n }' /proc/kallsyms 2> /dev/null)
	if [ -n "$sym" ] && [ $((16#$a - 16#${sym%% *})) -lt 65536 ] && [ "${sym%% *}" != 0000000000000000 ]; then
		printf '%s+0x%x\n' "${sym#* }" $((16#$a - 16#${sym%% *}))
	else
		echo -
	fi
}
# gone_diag NAME: why a domain that should run does not, on one line:
# its serial's last lines, QEMU's SHUTDOWN events (l2_watch), QEMU's log,
# what libvirtd logged of it and the L2 triple faults L1's KVM recorded
# (l1-common.sh's l2_fault_trace: a count and the last records, with the
# guest's RIP where it took the intercept)
gone_diag() {
	printf '; serial: %s; QEMU events: %s; QEMU log: %s; libvirtd.log: %s; L2 triple faults L1 recorded: %s' \
		"$(tr -d '\r' < "$(serial_of "$1")" 2> /dev/null | grep -v '^\s*$' | tail -3 | tr -s '\n' '|' | cut -c1-400)" \
		"$(tr -s '\n' ' ' < "/tmp/$1.qemu-events" 2> /dev/null | cut -c1-300)" \
		"$(tail -4 "/var/log/libvirt/qemu/$1.log" 2> /dev/null | tr -s '\n' ' ' | cut -c1-500)" \
		"$(grep -E "$1|error" /var/log/libvirt/libvirtd.log 2> /dev/null | tail -4 | tr -s '\n' ' ' | cut -c1-600)" \
		"$(l2_fault_count) (last: $(l2_triple_faults | tail -2 | tr -s '\n' '|' | cut -c1-300))"
}
# l2_afresh NAME N: before attempt N (> 1) of a retry_loop, NAME's guest
# destroyed and its serial kept as .attempt(N-1), so that the old guest's
# lines never pass for the new one's
l2_afresh() {
	virsh destroy "$1" > /dev/null 2>&1
	mv -f "$(serial_of "$1")" "$(serial_of "$1").attempt$(($2 - 1))" 2> /dev/null
}
# l2_watch NAME: record the SHUTDOWN events of NAME's QEMU (why it stopped:
# guest-reset, guest-shutdown, host-signal...) in /tmp/NAME.qemu-events for
# qemu_diag; call right after virsh start, ends by itself after 15 minutes
# (a second l2_watch of NAME ends the first one's listener, which would
# write on at its old offset into the new file)
declare -gA L2_WATCH=()
l2_watch() {
	[ -n "${L2_WATCH[$1]:-}" ] && kill "${L2_WATCH[$1]}" 2> /dev/null
	virsh qemu-monitor-event "$1" --event SHUTDOWN --loop --timestamp --timeout 900 \
		> "/tmp/$1.qemu-events" 2>&1 < /dev/null &
	L2_WATCH[$1]=$!
}
# dmemfs files of a domain (by UUID) under every mount, one per line
# domdir MOUNT UUID: the domain's directory, named after its AppArmor profile
# (libdmemfs-host/model/domaindir.h)
domdir() { echo "$1/libvirt-$2"; }
dom_files() { ls -d "$(domdir "$M2" "$1")" "$(domdir "$M1G" "$1")" 2> /dev/null; }
agent_field() { # agent_field LINE KEY
	printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}
# nodepool_state N: the storage pool dmem-node<N> as "STATE/AUTOSTART"
# ("running/yes"), or "none"
nodepool_state() {
	virsh pool-info "dmem-node$1" 2> /dev/null |
		awk '/^State:/ {s=$2} /^Autostart:/ {a=$2} END {print (s ? s "/" a : "none")}'
}
# the last whole L2-CARRY-CHECK line of a guest booted with l2.carry=1
carry_line() { serial_whole "$(serial_of "$1")" | grep '^L2-CARRY-CHECK' | tail -1; }
# wait_pass NAME MIN_PASS TIMEOUT: such a line with pass > MIN_PASS
wait_pass() {
	local end=$((SECONDS + $3)) l i=0
	while [ $SECONDS -lt $end ]; do
		l=$(carry_line "$1")
		[ -n "$l" ] && [ "$(agent_field "$l" pass)" -gt "$2" ] && { echo "$l"; return 0; }
		# a guest that stopped, or that is gone (a transient one), will
		# not write it: no waiting out the timeout
		i=$((i + 1))
		[ $((i % 10)) = 0 ] && dom_ended "$1" && return 1
		sleep 1
	done
	return 1
}
