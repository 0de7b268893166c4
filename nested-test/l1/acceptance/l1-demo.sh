#!/bin/bash
# L1 script of `make demo` (scripts/demo.sh boots L1 with this file through
# nested-test/host/boot-l1.sh).  Everything meant for the user goes to the results
# channel (ttyS1, no kernel messages), which scripts/demo.sh shows live:
# dmem reserved per node, dmemfs mounted, libvirtd with the hook and the
# wrapper, one dmem-backed L2 started with virsh and its console result, the
# per-node pool while it runs and after, the live dmem-capacity report, a
# clean shutdown.  The last line is DEMO-RESULT ok|failed, then L1-DONE.
set -u
[ "${1:-}" = --list ] && exit 0 # no checks: demo.sh reads DEMO-RESULT
TOP=${TOP:?TOP is not set}
export DMEMFS_2M_MOUNT=/run/dmemfs/2M DMEMFS_1G_MOUNT=/run/dmemfs/1G
# shellcheck source=nested-test/l1/l2-lib.sh
. "$TOP/nested-test/l1/l2-lib.sh"
l1_channel
show() { printf '%s\n' "$*" >&3; printf 'DEMO %s\n' "$*"; }
show_cmd() { # show_cmd CMD...: print "$ CMD", run it, show its output indented
	local out rc
	show "\$ $*"
	out=$("$@" 2>&1)
	rc=$?
	[ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/    /' >&3 && printf '%s\n' "$out"
	return $rc
}
section() { show ""; show "== $*"; }
ok=1
finish() {
	acc_stop_all
	section "shutdown"
	show "libvirtd stopped, dmemfs unmounted; pool: $(pool_mib)"
	show "DEMO-RESULT $([ -n "$ok" ] && echo ok || echo failed)"
	printf 'L1-DONE\n' >&3
	exit 0
}
die() { show "demo: FAILED: $*"; ok=; finish; }

section "L1: our kernel, $(nproc) CPUs, 2 NUMA nodes"
show "$(uname -r); command line: $(grep -o 'dmem=[^ ]*' /proc/cmdline)"
dmesg | grep -E '^\[ *[0-9.]+\] dmem: node' | sed 's/^\[[^]]*\] //' | while IFS= read -r l; do show "$l"; done
show "MemTotal $(awk '/MemTotal/ {print $2}' /proc/meminfo) kB; memmap not allocated for dmem: $(($(cat "$SYSFS/memmap_saved_bytes" 2> /dev/null || echo 0) / MiB)) MiB"
show_cmd pool_table

section "dmemfs mounts, hook and wrapper (make install DESTDIR= into L1's overlay), libvirtd"
acc_mount_dmemfs || die "cannot mount dmemfs"
grep dmemfs /proc/mounts | while IFS= read -r l; do show "$l"; done
acc_install || die "make install failed: $(tail -2 /tmp/acc-install.log | tr '\n' ' ')"
show "installed $HOOK, $WRAPPER, /etc/dmemfs-host.conf"
acc_libvirt_config || die "libvirt configuration failed"
t=$SECONDS
acc_libvirtd_start || die "libvirtd did not start ($(tail -1 /var/log/libvirt/libvirtd.log 2> /dev/null))"
show "virtlogd and libvirtd running ($((SECONDS - t)) s)"

section "one L2 guest on dmem: cell 0 (64 MiB) on host node 0, cell 1 (128 MiB) on host node 1"
name=demo-l2 uuid=$(new_uuid)
mkdomain "$name" "$uuid" 64 128 > /tmp/$name.xml
show "domain XML (excerpt):"
grep -E 'dmemfs:dmemfs|<source type|<access|memnode|<cell|<emulator' /tmp/$name.xml | sed 's/^ */    /' |
	while IFS= read -r l; do show "$l"; done
show_cmd "$HOOK" --plan --check < /tmp/$name.xml || die "the hook refuses the domain"
show_cmd virsh define /tmp/$name.xml || die "virsh define failed"
rm -f "$(serial_of $name)"
t0=$(now_ms)
show_cmd virsh start "$name" || die "virsh start failed"
pid=$(qemu_pid "$name")
show "QEMU (pid $pid, $(tr '\0' '\n' < "/proc/$pid/cmdline" | head -1) exec'd by the wrapper) has its guest RAM on dmemfs:"
tr '\0' '\n' < "/proc/$pid/cmdline" | grep '"qom-type":"memory-backend-file"' |
	while IFS= read -r l; do show "    -object $l"; done
show "files the hook preallocated on the nodes of <numatune> (prepare begin):"
ls -l "$(domdir "$M2" "$uuid")" | tail -n +2 | while IFS= read -r l; do show "    $l"; done
show "dmem pool while the guest runs:"
show_cmd pool_table
line=$(wait_serial "$(serial_of "$name")" '^L2-AGENT-RESULT' 300)
[ -n "$line" ] || die "no result line from the L2 agent in $(serial_of "$name")"
section "the L2 console result ($(ms_to_s $(($(now_ms) - t0))) s after virsh start)"
show "$line"
[ "$(agent_field "$line" status)" = PASS ] || ok=
show "guest RAM pattern: $(($(agent_field "$line" tested_kib) / 1024)) MiB written and verified on $(agent_field "$line" nodes) guest nodes, $(agent_field "$line" pattern_errors) errors; clocksource $(agent_field "$line" clocksource), steal time $(agent_field "$line" steal_ticks) ticks"
wait_state "$name" "shut off" 60 || virsh destroy "$name" > /dev/null 2>&1
show_cmd virsh domstate "$name"
show "dmem pool after the guest powered off (the hook's release freed it):"
show_cmd pool_table

section "capacity report (dmem-capacity, live in L1)"
# no --reserve: every model leaves each node what this host keeps as booted
show_cmd "$BUILD/bin/dmem-capacity" --dmem-pagesize 2M --guest 64M@0+128M@1 --guest 1G@0+1G@1 --recommend ||
	{ ok=; show "dmem-capacity failed"; }

section "the same host as a fleet sees it (dmem-capacity --connect, over libvirt)"
show "each node's pool as a libvirt storage pool dmem-nodeN, on a dmemfs nodes=N instance (dmemfs-host-setup)"
show_cmd "$SETUP" up || ok=
show_cmd "$BUILD/bin/dmem-capacity" --dmem-pagesize 2M --guest 64M@0+128M@1 --guest 1G@0+1G@1 \
	--connect qemu:///system --connect test:///default || { ok=; show "dmem-capacity --connect failed"; }
show_cmd "$SETUP" down || ok=
virsh undefine "$name" > /dev/null 2>&1
finish
