#!/bin/bash
# In-L1 test script of the kernel trunk; started by guest-images/init
# (l1.script=) inside the overlay root, with TOP set to the repository.
#
#   l1-trunk.sh --meminfo-only
#       report the memory accounting of this boot (no dmem= expected) and exit
#   l1-trunk.sh --build=DIR [--base=MEMTOTAL_KB:PRESENT_PAGES:PHYS_KB:RESERVED_KB]
#       the trunk checks: dmemfs_test, dmemfs_vm_test, KUnit results, MemTotal and memmap
#       accounting against the --base boot, every nested-test/l1/tests/l1-*.sh (with
#       DMEMFS_2M_MOUNT and DMEMFS_1G_MOUNT set), and a final kernel log scan
#   l1-trunk.sh --build=DIR --base=... --from=STEP
#       the same, from STEP on (host: run-l1.sh's resume after a TCG crash):
#       the accounting and mounts again, then STEP (start: the kselftests
#       and KUnit; l1.script-NAME: that script; hwpoison: the memory
#       errors) and everything after it
#   l1-trunk.sh --boot-check --base=...
#       only the reservation and its accounting, against l1.want=N:BYTES,...
#       on the kernel command line (nested-test/host/boot-matrix.sh)
#   l1-trunk.sh --list [--boot-check] [--build=DIR]
#       on the host: the checks the trunk reports, a line each, for the L1
#       command line in $L1_APPEND (l1.skip=, l1.trinity=)
#
# Result lines ("PASS: name", "FAIL: name: reason", "# comment", and the
# final "L1-DONE") go to the results channel /dev/ttyS1, which carries no
# kernel messages; everything else goes to the console (ttyS0).
set -u
export LC_ALL=C
TOP=${TOP:?TOP is not set}
build=$TOP/build
base='' mode=full list= from=start
for a in "$@"; do
	case $a in
	--list) list=1 ;;
	--meminfo-only) mode=meminfo ;;
	--boot-check) mode=boot ;;
	--build=*) build=${a#--build=} ;;
	--base=*) base=${a#--base=} ;;
	--from=*) from=${a#--from=} ;;
	*) echo "l1-trunk: unknown argument $a" ;;
	esac
done

# shellcheck source=nested-test/l1/l1-common.sh
. "$(dirname "$0")/l1-common.sh"

# the checks of this script, from the same lists it runs
trunk_list() {
	local here skip_word what sc
	here=$(cd "$(dirname "$0")" && pwd)
	if [ "$mode" = boot ]; then
		printf '%s\n' l1.kernel l1.dmem-reserved l1.dmem-requested-per-node l1.memtotal-shrinks \
			l1.no-struct-page l1.memmap-saved
		return
	fi
	printf '%s\n' l1.kernel kunit.dmem_parse kunit.dmem_alloc kunit.dmem_zero kunit.complete \
		l1.dmem-reserved l1.dmem-requested-per-node l1.memtotal-shrinks l1.mount-2M \
		l1.mount-1G l1.no-struct-page l1.memmap-saved
	for prog in dmemfs_test dmemfs_vm_test; do
		[ -x "$build/guest/$prog" ] && "$build/guest/$prog" --list | sed "s/^/$prog./"
		echo "$prog.complete"
	done
	skip_word=$(printf '%s\n' ${L1_APPEND:-} | sed -n 's/^l1\.skip=//p')
	while read -r what sc; do
		# its own checks, unless l1.skip= keeps it from running, and the
		# one on the script as a whole (a SKIP when it does not run)
		[ "$what" = run ] && TOP=$TOP BUILD=$build bash "$sc" --list
		l1_script_check "$sc"
	done < <(l1_test_scripts "$TOP" "$skip_word")
	if [ -x "$build/guest/dmemfs_stress" ]; then
		"$build/guest/dmemfs_stress" --list --seeds 1,2,3
	else
		echo stress.built
	fi
	case " ${L1_APPEND:-} " in *" l1.trinity="*) bash "$here/trinity-l1.sh" --list ;; esac
	[ -x "$build/guest/hwpoison_test" ] && "$build/guest/hwpoison_test" --list | sed 's/^/hwpoison_test./'
	echo hwpoison_test.complete
	bash "$here/hwpoison-l2.sh" --list
	printf '%s\n' l1.hwpoison-quarantine l1.dmesg-clean
}
if [ -n "$list" ]; then
	trap - EXIT
	trunk_list
	exit 0
fi
l1_channel
# If this script dies early, say so on the results channel.
# shellcheck disable=SC2154
trap 'st=$?; [ -n "${finished:-}" ] || res "FAIL: l1.trunk-script: ended early (status $st, line $LINENO)"' EXIT

# ---- memory accounting of this boot
memtotal_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
present_pages=$(awk '$1 == "present" {s += $2} END {print s + 0}' /proc/zoneinfo)
# "Memory: 5937844K/6290932K available (... 352832K reserved, 0K cma-reserved)"
memline=$(dmesg | grep -m1 -o 'Memory: [0-9]*K/[0-9]*K available.*')
phys_kb=$(echo "$memline" | sed -n 's|.*Memory: [0-9]*K/\([0-9]*\)K.*|\1|p')
reserved_kb=$(echo "$memline" | sed -n 's|.*[ (]\([0-9]*\)K reserved.*|\1|p')
res "# boot: MemTotal ${memtotal_kb} kB, zone present pages ${present_pages}, $memline"

if [ "$mode" = meminfo ]; then
	res "MEMINFO: ${memtotal_kb:-0}:${present_pages:-0}:${phys_kb:-0}:${reserved_kb:-0}"
	finished=1
	res "L1-DONE"
	exit 0
fi

# ---- the kernel under test: the one the host booted (l1.kernel=, the
# release in its image's header), reported by name
kwant=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^l1\.kernel=//p')
if [ -n "$kwant" ] && [ "$(uname -r)" = "$kwant" ]; then
	pass l1.kernel "$(uname -r)"
else
	fail l1.kernel "uname -r is $(uname -r), the host booted ${kwant:-an image it did not name}"
fi
res "# kernel: $(uname -v)"

# ---- steps, and the one retry rule (l1-common.sh)
# step STEP: true when STEP runs in this boot (the first one run is --from's,
# and every step after it); it says so on the results channel.
reached=
step() {
	[ -n "$reached" ] || [ "$1" = "$from" ] || return 1
	reached=1
	res "# step $1"
}
# crash_stop STEP: under TCG, a crash of L1 named by the retry rule ends
# this boot after STEP, before STEP's results: a "CRASH: STEP: line"
# result, and the host (run-l1.sh) runs STEP and the rest in a fresh L1.
# Under KVM the boot goes on, and the crash fails l1.dmesg-clean.
crash_stop() {
	local sig line
	[ "$(l1_outer_accel)" = tcg ] || return 0
	for sig in "${L1_RETRY_SIGNATURES[@]}"; do
		line=$(dmesg | grep -F -m1 -- "$sig") || continue
		res "CRASH: $1: $(printf '%s' "$line" | cut -c1-200)"
		finished=1
		res "L1-DONE"
		exit 0
	done
}

# Let the test program's /dev/kmsg markers through the printk rate limit.
echo on > /proc/sys/kernel/printk_devkmsg 2> /dev/null || true

if [ "$mode" = full ] && step start; then
# ---- dmemfs_test, dmemfs_vm_test (kselftest harness, TAP on stdout)
for prog in dmemfs_test dmemfs_vm_test; do
	log=/tmp/$prog.log
	bin=$build/guest/$prog
	if [ -x "$bin" ]; then
		echo "== $bin"
		t0=$SECONDS
		# The console copy gets elapsed seconds; $log stays plain TAP.
		timeout -k 5 900 "$bin" 2>&1 | tee "$log" |
			while IFS= read -r l; do printf '[%4ds] %s\n' $((SECONDS - t0)) "$l"; done
		echo "== $prog exit ${PIPESTATUS[0]} after $((SECONDS - t0))s"
		crash_stop start
		tap_results "$prog" "$log"
	else
		fail "$prog.complete" "$bin not built"
	fi
done

# ---- KUnit: every built-in suite a result, ours by name in --list.  The
# KTAP block of the kernel log through the one converter: a suite passes
# when it says ok, all the cases of its plan reported (parameters count in
# its number), none skipped (this L1 has dmem on both nodes: a skip is a
# bug here) and ours have at least the cases they have today (none
# compiled out); kunit.complete when every suite of the run's plan did.
dmesg | sed 's/^\[[^]]*\] //' | sed -n '/^KTAP version 1$/,$p' > /tmp/kunit.ktap
tap_results kunit /tmp/kunit.ktap notes=1 noskip=1 "atleast=dmem_parse=54 dmem_alloc=16 dmem_zero=9"

fi # mode full

# ---- dmem= reservation versus MemTotal and the memmap
reserved_bytes=0
for f in /sys/kernel/mm/dmem/node*/total_bytes; do
	[ -r "$f" ] && reserved_bytes=$((reserved_bytes + $(cat "$f")))
done
node_dirs=(/sys/devices/system/node/node[0-9]*)
nodes=${#node_dirs[@]}
to_bytes() { # 1G -> bytes
	local v=${1%[KkMmGgTt]} u=${1: -1}
	case $u in
	[Kk]) echo $((v << 10)) ;; [Mm]) echo $((v << 20)) ;;
	[Gg]) echo $((v << 30)) ;; [Tt]) echo $((v << 40)) ;; *) echo "$1" ;;
	esac
}
want=0
for w in $(cat /proc/cmdline); do
	case $w in
	dmem=*@*) s=${w#dmem=}; s=${s#!}; want=$((want + $(to_bytes "${s%%@*}"))) ;;
	dmem=*) s=${w#dmem=}; s=${s#!}; want=$((want + $(to_bytes "${s%%:*}") * nodes)) ;;
	esac
done
# the boot matrix says per node what each form must reserve (l1.want=N:BYTES,...)
wantspec=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^l1\.want=//p')
if [ "$mode" = boot ]; then
	want=0
	for nw in ${wantspec//,/ }; do want=$((want + ${nw#*:})); done
fi
res "# dmem: reserved ${reserved_bytes} bytes (sysfs total_bytes), command line asks ${want} (${nodes} nodes); kernel's own memmap_saved_bytes: $(cat /sys/kernel/mm/dmem/memmap_saved_bytes 2>/dev/null || echo none); $(grep -m1 'Kernel code' /proc/iomem | tr -s ' ')"
check l1.dmem-reserved "sysfs total ${reserved_bytes} bytes, command line asks ${want}" \
	[ "$reserved_bytes" -gt 0 -a "$reserved_bytes" -eq "$want" ]
# per node, the kernel's own account: requested_bytes next to total_bytes
short=
for d in /sys/kernel/mm/dmem/node*; do
	[ "$(cat "$d/requested_bytes" 2>/dev/null)" = "$(cat "$d/total_bytes")" ] ||
		short="$short $(basename "$d"): $(cat "$d/total_bytes") of $(cat "$d/requested_bytes" 2>/dev/null || echo '?')"
done
kaslr=on
grep -qw nokaslr /proc/cmdline && kaslr=off
check l1.dmem-requested-per-node "KASLR $kaslr:${short:- every node got what it asked}" \
	[ -z "$short" -a "$reserved_bytes" -gt 0 -a "$kaslr" = on ]

if [ -n "$base" ]; then
	IFS=: read -r b_memtotal b_present b_phys b_reserved <<< "$base"
	slack=$((4 << 20))
	memmap_expect=$((reserved_bytes / 4096 * 64))
	memtotal_delta=$(((b_memtotal - memtotal_kb) * 1024))
	present_delta=$(((b_present - present_pages) * 4096))
	phys_delta=$(((b_phys - ${phys_kb:-0}) * 1024))
	memmap_saved=$(((b_reserved - ${reserved_kb:-0}) * 1024))
	res "# memory: reserved ${reserved_bytes} B; MemTotal delta ${memtotal_delta} B; zone present delta ${present_delta} B; physpages delta ${phys_delta} B"
	res "# memmap: saved ${memmap_saved} B (kernel 'reserved' on the Memory: line, ${b_reserved}K -> ${reserved_kb}K); expected reserved/4096*64 = ${memmap_expect} B"
	res "MEMORY: reserved_bytes=${reserved_bytes} memtotal_delta=${memtotal_delta} present_delta=${present_delta} physpages_delta=${phys_delta} memmap_saved=${memmap_saved} memmap_expected=${memmap_expect}"
	lo=$((reserved_bytes - memmap_expect - slack)) hi=$((reserved_bytes + slack))
	check l1.memtotal-shrinks "MemTotal fell by ${memtotal_delta} B, want ${lo}..${hi} for ${reserved_bytes} B reserved" \
		[ "$reserved_bytes" -gt 0 -a "$memtotal_delta" -ge "$lo" -a "$memtotal_delta" -le "$hi" ]
	check l1.no-struct-page "zone present pages fell by ${present_delta} B and physpages by ${phys_delta} B, want exactly ${reserved_bytes}" \
		[ "$reserved_bytes" -gt 0 -a "$present_delta" -eq "$reserved_bytes" -a "$phys_delta" -eq "$reserved_bytes" ]
	check l1.memmap-saved "kernel reserved fell by ${memmap_saved} B, want ${memmap_expect} +- ${slack}" \
		[ "$reserved_bytes" -gt 0 -a "$memmap_saved" -ge $((memmap_expect - slack)) -a "$memmap_saved" -le $((memmap_expect + slack)) ]
else
	fail l1.memtotal-shrinks "no baseline boot (--base)"
fi

# ---- --boot-check: each node against what the form asks, then done
if [ "$mode" = boot ]; then
	for nw in ${wantspec//,/ }; do
		n=${nw%%:*} w=${nw#*:} d=/sys/kernel/mm/dmem/node${nw%%:*}
		t=$(cat "$d/total_bytes" 2> /dev/null || echo 0)
		r=$(cat "$d/requested_bytes" 2> /dev/null || echo 0)
		check "boot.node$n" "node$n reserved $t B, requested_bytes $r B, the form asks $w B" \
			[ "$t" = "$w" -a "$r" = "$w" ]
	done
	[ -n "$wantspec" ] || fail boot.want "no l1.want= on the kernel command line"
	finished=1
	res "L1-DONE"
	exit 0
fi

# ---- tests of the other parts of the tree
# They get dmemfs mounted with 2M and 1G pages and the usual variables, and
# must leave the pool as they found it.
pool_free() { pool_sum free; }
export TOP BUILD=$build DMEMFS_SYSFS_ROOT=/sys/kernel/mm/dmem
export DMEMFS_2M_MOUNT=/run/dmemfs/2M DMEMFS_1G_MOUNT=/run/dmemfs/1G
for ps in 2M 1G; do
	mkdir -p "/run/dmemfs/$ps"
	mount -t dmemfs -o "pagesize=$ps" none "/run/dmemfs/$ps"
	check "l1.mount-$ps" "/run/dmemfs/$ps is not dmemfs after mount -t dmemfs -o pagesize=$ps" \
		is_dmemfs "/run/dmemfs/$ps"
done
# script_leftovers: what a test script left running (libvirt's daemons,
# guests), named on stdout, and stopped
script_leftovers() {
	local p d left=
	for d in $(virsh list --all --name 2> /dev/null); do
		left+="domain $d, "
		virsh destroy "$d" > /dev/null 2>&1
		virsh undefine "$d" > /dev/null 2>&1
	done
	for d in libvirtd virtlogd; do
		p=$(cat "/run/$d.pid" 2> /dev/null) || continue
		# one the script stopped may still be on its way out
		for _ in $(seq 1 25); do kill -0 "$p" 2> /dev/null || break; sleep 0.2; done
		kill -0 "$p" 2> /dev/null || continue
		left+="$d, "
		stop_pid "$p"
	done
	p=$(pgrep -x qemu-system-x86 | tr '\n' ' ')
	[ -z "$p" ] || { left+="QEMU $p, "; pkill -9 -x qemu-system-x86; }
	printf '%s' "${left%, }"
}
# l1.skip=WORD on the kernel command line skips the scripts whose path
# contains WORD (make test-debug skips the libvirt acceptance: too slow
# under KASAN and TCG).
skip_word=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^l1\.skip=//p')
# l1.script-timeout=SECONDS: each script's limit (900; make test-debug gives
# more: under KASAN and TCG, l1-kvm.sh's four libvirt L2s alone took 600 s)
script_tmo=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^l1\.script-timeout=\([0-9][0-9]*\)$/\1/p' | tail -1)
script_tmo=${script_tmo:-900}
# script_run N: one run of the script $s (rel, its path); rc, left (what
# a script killed by the timeout leaves behind: its daemons and guests,
# cleared, as the next script could not start its own), free0, free1 (the
# pool around it) and faults0 (the trace's mark) stay for script_evidence
# shellcheck disable=SC2317 # run by retry_loop
script_run() {
	[ "$1" = 1 ] || echo "== $rel again (the SKIP line has the evidence)"
	free0=$(pool_free) t0=$SECONDS faults0=$(l2_fault_count)
	touch /tmp/l1-script.stamp
	timeout -k 5 "$script_tmo" bash "$s" > /tmp/l1-script.out 2>&1 < /dev/null
	rc=$?
	left=$(script_leftovers)
	free1=$(pool_free)
	cat /tmp/l1-script.out
	crash_stop "$(l1_script_check "$s")"
	[ "$rc" -eq 0 ]
}
# A script that failed runs once more only under the one retry rule: one
# of its L2s triple-faulted under TCG with L1's whole log and every L2
# console of the run clean (l2_fault_evidence), or one was seen twice at
# L1's own VMRUN (qemu_diag's two samples in a FAIL line:
# l1_state_evidence), and it ended by itself (no timeout: a hang is no
# fault of L2's), left nothing behind and gave the pool back whole (a leak
# is never retried away).  Its failures go with the SKIP line; the second
# run's results count.
# shellcheck disable=SC2317 # run by retry_loop
script_evidence() {
	local serials fails ev
	# 124, or 137 when timeout needed SIGKILL: a timeout
	[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] && [ -z "$left" ] && [ "$free0" = "$free1" ] || return 1
	dmesg > /tmp/l1-script.dmesg
	mapfile -t serials < <(find /var/log/libvirt/qemu -name '*.serial*' -newer /tmp/l1-script.stamp 2> /dev/null)
	fails=$(grep '^FAIL: ' /tmp/l1-script.out)
	ev=$(l2_fault_evidence "$(l1_outer_accel)" "$faults0" /tmp/l1-script.dmesg "${serials[@]}") ||
		{ l1_state_explains "$fails" && ev=$(l1_state_evidence "$(l1_outer_accel)" "$fails"); } || return 1
	echo "$ev; its failures: $(printf '%s\n' "$fails" | cut -c1-160 | tr '\n' '|' | cut -c1-800)"
}
# L2 triple faults, the evidence of the one retry rule for a script
l2_fault_trace || res "# no kvm_exit trace of L2 triple faults: no script is retried"
while read -r what s; do
	rel=${s#"$TOP"/}
	step "$(l1_script_check "$s")" || continue
	if [ "$what" = skip ]; then
		echo "== $rel skipped (l1.skip=$skip_word)"
		skip "$(l1_script_check "$s")" "not run: l1.skip=$skip_word"
		continue
	fi
	echo "== $rel"
	retry_loop "$(l1_script_check "$s")" 2 script_run script_evidence
	grep -E '^(PASS|FAIL|SKIP): ' /tmp/l1-script.out | while IFS= read -r l; do res "$l"; done
	res "# $rel: exit $rc after $((SECONDS - t0)) s"
	why="exit status $rc"
	[ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && why="timed out after ${script_tmo}s (exit $rc)"
	[ -z "$left" ] || why="$why; left behind: $left"
	[ "$free0" = "$free1" ] || why="$why; dmem free ${free0} B before, ${free1} B after"
	check "$(l1_script_check "$s")" "$why" [ "$rc" -eq 0 -a -z "$left" -a "$free0" = "$free1" ]
done < <(l1_test_scripts "$TOP" "$skip_word")
umount /run/dmemfs/2M /run/dmemfs/1G 2> /dev/null

# ---- trinity against dmemfs (make test-debug: l1.trinity=SECONDS)
secs=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^l1\.trinity=//p')
if [ -n "$secs" ]; then
	echo "== nested-test/l1/trinity-l1.sh $secs"
	bash "$TOP/nested-test/l1/trinity-l1.sh" "$secs" > /tmp/trinity-l1.res 2>&1
	cat /tmp/trinity-l1.res
	grep -E '^(PASS|FAIL): ' /tmp/trinity-l1.res | while IFS= read -r l; do res "$l"; done
fi

# ---- memory errors, last: each test poisons one dmem page for good
# (a resumed boot that starts later than here runs nothing: no such step)
step hwpoison || { res "FAIL: l1.trunk-from: no step $from in this boot"; finished=1; res L1-DONE; exit 0; }
p0=$(pool_sum poisoned) f0=$(pool_free) stress_poisoned=0

bin=$build/guest/hwpoison_test log=/tmp/hwpoison_test.log
if [ -x "$bin" ]; then
	echo "== $bin"
	timeout -k 5 1200 "$bin" > "$log" 2>&1
	echo "== hwpoison_test exit $?"
	cat "$log"
	crash_stop hwpoison
	tap_results hwpoison_test "$log"
	# and one in a running L2's memory: QEMU injects the vMCE
	echo "== nested-test/l1/hwpoison-l2.sh"
	timeout -k 5 300 bash "$TOP/nested-test/l1/hwpoison-l2.sh" > /tmp/hwpoison-l2.out 2>&1
	cat /tmp/hwpoison-l2.out
	crash_stop hwpoison
	grep -E '^(PASS|FAIL): ' /tmp/hwpoison-l2.out | while IFS= read -r l; do res "$l"; done
	# Random operations of several tenants on the pool, VFIO pins and a memory
	# error among them (nested-test/progs/dmemfs_stress.c): after the tests above,
	# which need whole healthy GiBs; at most one page poisoned per seed.
	sbin=$build/guest/dmemfs_stress log=/tmp/dmemfs_stress.log
	if [ -x "$sbin" ]; then
		echo "== $sbin"
		. "$TOP/nested-test/l1/vfio-lib.sh"
		bdf=$(vfio_edu_bdf) && grp=$(vfio_bind "$bdf") || grp=
		[ -n "$grp" ] || res "# stress: no edu device on vfio-pci, the VFIO steps are left out"
		VFIO_GROUP=$grp timeout -k 5 900 "$sbin" --seeds 1,2,3 --seconds 40 > "$log" 2>&1
		echo "== dmemfs_stress exit $?"
		[ -n "$grp" ] && vfio_unbind "$bdf"
		cat "$log"
		crash_stop hwpoison
		grep -E '^(PASS|FAIL): ' "$log" | while IFS= read -r l; do res "$l"; done
		grep -E '^WORKER-(FAIL|DONE)' "$log" | head -12 | while IFS= read -r l; do res "# $l"; done
		stress_poisoned=$(grep -c 'poisoned pfn 0x[0-9a-f]*, page' "$log")
	else
		fail stress.built "$sbin not built"
	fi
	p1=$(pool_sum poisoned) f1=$(pool_free)
	n=$(($("$bin" --list | wc -l) + 1 + stress_poisoned))
	res "# hwpoison: ${n} pages injected (${stress_poisoned} by dmemfs_stress); poisoned_bytes ${p0} -> ${p1}, free ${f0} -> ${f1} B; $(dmesg | grep -c 'recovery action for dmem page: Recovered') dmem recoveries in the kernel log"
	check l1.hwpoison-quarantine "poisoned_bytes ${p0} -> ${p1} and free ${f0} -> ${f1} B, want both to move by ${n} x 4096" \
		[ $((p1 - p0)) -eq $((n * 4096)) -a $((f0 - f1)) -eq $((n * 4096)) ]
else
	fail l1.hwpoison-quarantine "$bin not built"
	fail hwpoison_test.complete "$bin not built"
fi

# ---- nothing worse than a warning, all boot long
bad=$(kernel_splats)
check l1.dmesg-clean "kernel log: $bad" [ -z "$bad" ]
finished=1
res "L1-DONE"
exec 3>&-
