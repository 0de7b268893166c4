#!/bin/bash
# Inside L1, in a boot of its own with a disk (make test's step
# test-liveupdate): L2 guests carried over a kexec of L1 by dmem-liveupdate.
#
#   stage 1  libvirt, the hook and the wrapper as make install puts them; the
#            disk (/dev/vda) holds the guests' device state.  An L2 on dmem
#            2M (2 x 256 MiB) and one on 1G (2 x 1 GiB) run the agent in
#            --carry mode: a pattern in most of their memory, checked every
#            2 s.  A running domain without dmem makes dmem-liveupdate
#            refuse, one line, nothing touched.  Then dmem-liveupdate saves
#            both without their RAM, persists the mounts, loads this
#            bzImage and executes it
#   stage 2  the images on the disk are small (no RAM in them), then
#            dmem-liveupdate --restore: mounts recovered, both guests back in
#            the same agent process (uptime and pass count go on, the
#            pattern has no error).  Then the peer, a host kernel update
#            without dmem's help, on equal terms: both guests saved at once
#            with virsh save, their RAM copied to the disk (x-ignore-shared
#            must be off again), and the same kernel loaded below the dmem
#            ranges and executed, with no table to recover
#   stage 3  virsh restore of both at once, their RAM copied back into new
#            dmemfs files; the pattern is intact.  At the end the guests go
#            and every dpage is back.
# The downtimes of both ways, each from the guest stopping to the guest
# running again on the next kernel, are comment lines in the results, and
# LIVEUPDATE/PLAINKEXEC/LUBREAKDOWN lines that make bench turns into a
# table (bench/run-bench.sh runs this script in a second L1 boot).
#
# Under TCG, a kexec'd boot pays for what the old kernel executed: the new
# kernel's first large memblock allocation (the percpu first chunk, 2 MiB
# a node, zeroed by memset) lands on pages that still hold translated
# code, and QEMU takes its self-modifying-code path for every store there
# (10 to 45 s with ERMS's rep stosb, a byte a store, measured by sampling
# RIP/RDI/RCX over the monitor: memblock_alloc_try_nid's memset at about
# 2 KB to 100 KB a second; boot-l1.sh's L1 CPU has no ERMS, so rep stosq
# stores 8 bytes at a time, some 5 times faster in L1).
# Hardware has no such cost, and a kexec from an idle L1 shows none.  Each
# kexec'd stage reports that step's time (setup_percpu to "percpu:
# Embedded" in its kernel log) as stall_s, and make bench gives the
# downtimes with and without it.
#
# Args (l1.args): --kernel=PATH --initrd=PATH, and from stage 1 stage=2 and
# what the agents said last.  --list prints the checks.
set -u
# seconds from setup_percpu to "percpu: Embedded" in this kernel's log (the
# TCG stall described above; 0.0 on a cold boot)
percpu_stall() {
	dmesg | awk -F'[][]' '/setup_percpu:/ { a = $2 } /percpu: Embedded/ { b = $2 }
		END { printf "%.1f", (a != "" && b != "") ? b - a : 0 }'
}
checks="setup-1 disk l2-2M-ready l2-1G-ready refuses-non-dmem kernel-log-1 kexec save-without-ram
	setup-2 restore restore-rerun carried-intact-2M carried-intact-1G restored-2M restored-1G continuous-2M continuous-1G
	kernel-log plain-save plain-kexec setup-3 plain-restored-2M plain-restored-1G
	released no-leak kernel-log-3"
if [ "${1:-}" = --list ]; then
	for c in $checks; do echo "liveupdate.$c"; done
	exit 0
fi
TOP=${TOP:?TOP is not set}
export DMEMFS_2M_MOUNT=/run/dmemfs/2M DMEMFS_1G_MOUNT=/run/dmemfs/1G
# shellcheck source=nested-test/l1/l2-lib.sh
. "$TOP/nested-test/l1/l2-lib.sh"
result_area liveupdate
l1_channel
KERNEL=$BUILD/bzImage INITRD=$BUILD/guest/initramfs.cpio.gz stage=1
declare -A last=() plain=() at_ms=() intact=()
for a in "$@"; do
	case $a in
	--kernel=*) KERNEL=${a#*=} ;;
	--initrd=*) INITRD=${a#*=} ;;
	stage=*) stage=${a#*=} ;;
	last.*=*) k=${a#last.} && last[${k%%=*}]=${a#*=} ;;
	plain.*=*) k=${a#plain.} && plain[${k%%=*}]=${a#*=} ;;
	esac
done
LU=$PREFIX/sbin/dmem-liveupdate
STATE=/var/lib/dmemfs-host
SAVE=$STATE/liveupdate
U2=5a1e0000-0000-4000-8000-000000000002 U1G=5a1e0000-0000-4000-8000-000000000001
# The carried memory bit for bit, whatever the guests do after: each
# guest's files digested (dmem_pattern digest) at dmem-liveupdate's
# "kexec -e", after the saves and the persist, by a kexec first on the PATH
# it gives its commands (test tooling: the tool runs as on hosts), and
# again as the recover mount gives them back, by a libvirt hook of the test
# (qemu.d, after dmemfs-host's hook) at the restore's "start begin", before
# their QEMU starts.  The digests' time is taken out of the downtimes.
PAT=$BUILD/guest/dmem_pattern DIGEST_BEFORE=$STATE/.carried-digest DIGEST_AT=/run/carried-digest
DIGEST_HOOK=/etc/libvirt/hooks/qemu.d/zz-liveupdate-l1-digest
# carried_files UUID...: the domains' dmemfs files, sorted (not the hook's
# dot files: the .carried mark holds no guest memory)
carried_files() {
	local u
	for u; do find "$(domdir "$M2" "$u")" "$(domdir "$M1G" "$u")" -type f ! -name '.*' 2> /dev/null; done | sort
}
install_kexec_digest() {
	local real files
	real=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v kexec) && files=$(carried_files "$U2" "$U1G") &&
		[ -n "$files" ] || return 1
	mkdir -p /usr/local/sbin
	cat > /usr/local/sbin/kexec <<-EOF
		#!/bin/bash
		# liveupdate-l1.sh: the carried guests' files, digested at kexec -e
		if [ "\$1" = -e ]; then
			t0=\$(date +%s%3N)
			$PAT digest $(echo "$files" | tr '\n' ' ') > $DIGEST_BEFORE 2>&1
			echo "digest_ms=\$((\$(date +%s%3N) - t0))" >> $DIGEST_BEFORE
			sync
		fi
		exec $real "\$@"
	EOF
	chmod 755 /usr/local/sbin/kexec
}
install_restore_digest() {
	mkdir -p "$DIGEST_AT" "${DIGEST_HOOK%/*}" || return 1
	cat > "$DIGEST_HOOK" <<-EOF
		#!/bin/bash
		# liveupdate-l1.sh: a carried guest's files as the recover mount
		# gives them back, digested before its QEMU starts
		[ "\$2 \$3" = "start begin" ] || exit 0
		case \$1 in
		lu-2m) u=$U2 ;;
		lu-1g) u=$U1G ;;
		*) exit 0 ;;
		esac
		t0=\$(date +%s%3N)
		find $M2/libvirt-\$u $M1G/libvirt-\$u -type f ! -name '.*' 2> /dev/null | sort |
			xargs -r $PAT digest > $DIGEST_AT/\$1 2>&1
		echo "digest_ms=\$((\$(date +%s%3N) - t0))" >> $DIGEST_AT/\$1
		exit 0
	EOF
	chmod 755 "$DIGEST_HOOK"
}
# digest_ms FILE: the time a digest took, in ms (0 when none ran)
digest_ms() { sed -n 's/^digest_ms=//p' "$1" 2> /dev/null | tail -1 | grep . || echo 0; }
# ok NAME WHY RC: the verdict of a condition whose status is RC
ok() { if [ "$3" = 0 ]; then pass "$1"; else fail "$1" "$2"; fi; return "$3"; }
# done_l1: the end of a stage.  One that failed after an L2 triple fault
# under TCG says so on the console (l2_fault_evidence's line, one of
# run-liveupdate.sh's retry signatures), only when L1's log and both
# guests' consoles are clean, each guest's agent checked its pattern whole
# since its last start or restore (QEMU starts each console afresh: a
# guest whose carried memory came back wrong dies before it says so) or
# the guest's files came back bit for bit (carried-intact-*; its console,
# then, may be empty), and no check of the pool (released, no-leak) or of
# L1's log or carried-intact-* failed; faults that retry_l2 already
# answered do not count.
faults_used=0
done_l1() {
	local ev s name consoles=() whole=1
	for name in lu-2m lu-1g; do
		s=$(serial_of "$name")
		if tr -d '\r' < "$s" 2> /dev/null | grep -aqE "$L2_AGENT_OK_RE"; then
			consoles+=("$s")
		elif [ "${intact[$name]:-}" = 1 ]; then
			tr -d '\r' < "$s" 2> /dev/null | grep -aqE "$L2_CONSOLE_BAD_RE" && whole=
		else
			whole=
		fi
	done
	case " $L1_FAILED_CHECKS " in *" released "* | *" no-leak "* | *" kernel-log"* | *" carried-intact-"*) whole= ;; esac
	[ "$L1_FAILED" = 1 ] && [ -n "$whole" ] && dmesg > /tmp/dmesg-stage.txt &&
		ev=$(l2_fault_evidence "$(l1_outer_accel)" "$faults_used" /tmp/dmesg-stage.txt "${consoles[@]}") &&
		echo "$ev"
	acc_stop_all > /dev/null 2>&1
	res "L1-DONE"
	exit 0
}
not_run() { fail_from "$1" "$why" $checks; done_l1; } # every check from $1 on fails
# acc_setup without mounting dmemfs: stage 2's mounts come from the tables
setup_no_mount() {
	acc_install && acc_libvirt_config && acc_libvirtd_start
}

# retry_l2 NAME PS: a fresh L2 NAME in place of one that stopped or never
# answered, only under the one retry rule (l1-common.sh) and only for an
# L2 reset with nothing said (l2_reset_evidence: L1's kernel log since
# $dmark clean too) or a silent L2 whose vCPU stood at L1's own VMRUN at
# two samples (l1_state_evidence, L1's log clean, no agent error on its
# serial), once a guest, as a SKIP line with the evidence.  (A crash of L1's vCPU
# thread is no retry here: L1 oopsed, and run-liveupdate.sh boots a fresh
# one.)  The fresh guest's first agent line goes into $l2_line, which must
# have errors=0 (no subshell: the counts and the mark must stay).
declare -A retries=()
# stopped_evidence: retry_l2's evidence for its guest $name
# shellcheck disable=SC2317 # run by retry_loop
stopped_evidence() {
	local ev d
	if ev=$(l2_reset_evidence "$(l1_outer_accel)" "/tmp/$name.qemu-events" "$(serial_of "$name")" /tmp/dmesg.txt); then
		echo "$ev (domain '$(domstate "$name")'; $(qemu_diag "$name"))"
		return
	fi
	log_splat /tmp/dmesg.txt && return 1
	tr -d '\r' < "$(serial_of "$name")" 2> /dev/null | grep -aqE "$L2_CONSOLE_BAD_RE" && return 1
	d=$(qemu_diag "$name")
	ev=$(l1_state_evidence "$(l1_outer_accel)" "$d") &&
		echo "the silent guest's vCPU stood at $ev, L1's code: TCG wrote L1's state over the guest's (domain '$(domstate "$name")'; $d)"
}
retry_l2() {
	local name=$1 ps=$2
	l2_line=
	dmesg | tail -n +"$((dmark + 1))" > /tmp/dmesg.txt
	dmark=$(dmesg_mark)
	[ -z "${retries[$name]:-}" ] && retry_grant "l2-$ps" 1 stopped_evidence || return 1
	retries[$name]=1 faults_used=$(l2_fault_count)
	virsh destroy "$name" > /dev/null 2>&1
	# the old guest's agent lines must not pass for the new one's
	mv -f "$(serial_of "$name")" "$(serial_of "$name").attempt1" 2> /dev/null
	virsh start "$name" > "/tmp/$name.err" 2>&1
	l2_watch "$name"
	l2_line=$(wait_pass "$name" 0 300)
	[ "$(agent_field "$l2_line" errors)" = 0 ]
}
# keep_running: both guests still run before the next step, each one that
# stopped started afresh under retry_l2's rule; else 1, and $why says which
keep_running() {
	local d name ps
	for d in "lu-2m 2M" "lu-1g 1G"; do
		read -r name ps <<< "$d"
		[ "$(domstate "$name")" = running ] && continue
		why="$name stopped ('$(domstate "$name")')$(gone_diag "$name")"
		retry_l2 "$name" "$ps" || return 1
	done
}

l2_fault_trace || echo "no kvm_exit trace of L2 triple faults: no L1 is retried for one"
case $stage in
1)
	acc_setup
	r=$?
	ok setup-1 "libvirt setup: $ACC_STEP failed" $r || { why="setup failed"; not_run disk; }
	mkfs.ext4 -q -F /dev/vda > /tmp/mkfs.log 2>&1 && mkdir -p "$STATE" && mount /dev/vda "$STATE"
	r=$?
	ok disk "no disk for the guests' state: $(tail -1 /tmp/mkfs.log)" $r ||
		{ why="no disk"; not_run l2-2M-ready; }
	dmark=$(dmesg_mark)
	mark1=$dmark
	for d in "lu-2m $U2 256 2M" "lu-1g $U1G 1024 1G"; do
		read -r name uuid mib ps <<< "$d"
		mkdomain "$name" "$uuid" "$mib" "$mib" "l2.carry=1" "" "$ps" > "/tmp/$name.xml"
		virsh define "/tmp/$name.xml" > /dev/null 2>&1
		virsh start "$name" > "/tmp/$name.err" 2>&1 || echo "virsh start $name: $(tr -s '\n' ' ' < "/tmp/$name.err")"
		l2_watch "$name"
	done
	for d in "lu-2m 2M" "lu-1g 1G"; do
		read -r name ps <<< "$d"
		l=$(wait_pass "$name" 0 300)
		[ -n "$l" ] || { retry_l2 "$name" "$ps"; l=$l2_line; }
		[ -n "$l" ] && [ "$(agent_field "$l" errors)" = 0 ]
		r=$?
		ok "l2-$ps-ready" "check line '$l' (domain '$(domstate "$name")', serial: $(last_serial "$name"); $(qemu_diag "$name"); QEMU log: $(tail -3 "/var/log/libvirt/qemu/$name.log" 2> /dev/null | tr -s '\n' ' ' | cut -c1-400))" $r
	done
	# a running domain that has no dmem: refused, nothing touched.  Its
	# guest stops by itself if it resets (on_reboot destroy), and under TCG
	# an L2 does (l1-common.sh's second signature): a refusal that was
	# right in all but that, with QEMU's guest-reset event as the evidence
	# (l2_reset_evidence), runs once more with lu-plain started afresh
	mkdomain lu-plain "$(new_uuid)" 64 64 l2.hold=1 |
		sed -e '/<metadata>/,/<\/metadata>/d' -e "s|<emulator>.*</emulator>|<emulator>/usr/bin/qemu-system-x86_64</emulator>|" \
			-e '/<numatune>/,/<\/numatune>/d' > /tmp/lu-plain.xml
	virsh define /tmp/lu-plain.xml > /dev/null 2>&1
	refusal="dmem-liveupdate: domain lu-plain cannot be carried: no dmem memory (not a dmemfs-host domain): migrate or stop it first"
	# the tool's side of the check: refused with those words, nothing marked or saved
	# shellcheck disable=SC2317 # run by retry_loop
	refused_untouched() { [ "$rc" = 1 ] && [ "$out" = "$refusal" ] && [ -z "$marks" ] && [ ! -e "$SAVE" ]; }
	# shellcheck disable=SC2317 # run by retry_loop
	refuse_run() {
		local m
		if [ "$1" != 1 ]; then
			l2_afresh lu-plain "$1"
		fi
		m=$(dmesg_mark)
		virsh start lu-plain > /tmp/lu-plain.err 2>&1
		l2_watch lu-plain
		keep_running
		out=$("$LU" --kernel "$KERNEL" --initrd "$INITRD" --no-exec 2>&1)
		rc=$?
		marks=$(ls "$(domdir "$M2" "$U2")/.carried" "$(domdir "$M1G" "$U1G")/.carried" 2> /dev/null)
		states="$(domstate lu-2m)/$(domstate lu-1g)/$(domstate lu-plain)"
		dmesg | tail -n +"$((m + 1))" > /tmp/dmesg-plain.txt
		refused_untouched && [ "$states" = running/running/running ]
	}
	# shellcheck disable=SC2317 # run by retry_loop
	refuse_evidence() {
		local ev
		refused_untouched && [ "$states" = "running/running/shut off" ] &&
			ev=$(l2_reset_evidence "$(l1_outer_accel)" /tmp/lu-plain.qemu-events "$(serial_of lu-plain)" \
				/tmp/dmesg-plain.txt) &&
			echo "lu-plain stopped by itself while it was refused: $ev"
	}
	retry_loop refuses-non-dmem 2 refuse_run refuse_evidence
	r=$?
	gone=
	for n in lu-2m lu-1g; do [ "$(domstate $n)" = running ] || gone+=" $n$(gone_diag $n)"; done
	[ "$(domstate lu-plain)" = running ] || gone+=" lu-plain$(gone_diag lu-plain)"
	ok refuses-non-dmem "rc $rc, '$out', marks '$marks', states $states$gone" $r
	virsh destroy lu-plain > /dev/null 2>&1
	virsh undefine lu-plain > /dev/null 2>&1
	keep_running || not_run kernel-log-1
	# this kernel's log goes with the kexec: its splats are checked now
	bad=$(kernel_splats "$mark1")
	check kernel-log-1 "$bad" [ -z "$bad" ]
	# the last word of each guest before it stops
	l2=$(carry_line lu-2m) l1g=$(carry_line lu-1g)
	args="last.up2m=$(agent_field "$l2" uptime_s),last.pass2m=$(agent_field "$l2" pass),last.up1g=$(agent_field "$l1g" uptime_s),last.pass1g=$(agent_field "$l1g" pass)"
	install_kexec_digest || echo "no kexec digest of the carried files: carried-intact-* fail"
	# dmem-liveupdate kexecs this L1: only a failure comes back here.  The
	# next kernel boots as this one did.  (Not tsc=reliable: TCG's vCPU
	# TSCs are not synchronized, and a kernel told to trust them anyway
	# lost the L2s' timer interrupts: restored guests halted for good.)
	"$LU" --kernel "$KERNEL" --initrd "$INITRD" \
		--append "l1.args=--kernel=$KERNEL,--initrd=$INITRD,stage=2,$args"
	why="dmem-liveupdate came back (exit $?) instead of executing the kernel"
	not_run kexec
	;;
2)
	mark=0
	start_ms=$(date +%s%3N) up=$(cut -d' ' -f1 /proc/uptime)
	# the guests' device state is on the disk: without it nothing can come back
	setup_no_mount && mkdir -p "$STATE" && mount /dev/vda "$STATE" 2> /tmp/state-mount.err
	r=$?
	ok setup-2 "libvirt setup or the state disk failed ($ACC_STEP; $(tr '\n' ' ' < /tmp/state-mount.err))" $r ||
		{ why="setup failed"; not_run restore; }
	setup_ms=$(date +%s%3N)
	pass kexec "L1 came back through dmem-liveupdate's kexec ($(tr ' ' '\n' < /proc/cmdline | grep -E '^dmem(fs_recover)?=' | tr '\n' ' '))"
	sizes=$(stat -c '%s' "$SAVE/$U2.save" "$SAVE/$U1G.save" 2> /dev/null | tr '\n' ' ')
	big=$(for z in $sizes; do [ "$z" -ge $((64 * MiB)) ] && echo "$z"; done)
	[ -n "$sizes" ] && [ -z "$big" ]
	r=$?
	ok save-without-ram "images '$sizes' bytes (guests: 512 MiB and 2 GiB): $(ls -l "$SAVE" 2>&1 | tr -s '\n ' ' ')" $r
	loaded_ms=$(sed -n 's/^loaded_at_ms=//p' "$SAVE/liveupdate.state" 2> /dev/null)
	install_restore_digest || echo "no restore digest of the carried files: carried-intact-* fail"
	out=$("$LU" --restore 2>&1)
	rc=$?
	done_ms=$(date +%s%3N)
	rm -f "$DIGEST_HOOK"
	# how a restored guest stops, from its first moments (gone_diag)
	l2_watch lu-2m
	l2_watch lu-1g
	# both guests were carried: each has its "restored in" line
	check restore "rc $rc: $(echo "$out" | tr '\n' ' ') $(dmesg | grep -E 'dmemfs: (dmemfs_recover|recover)' | tr -s '\n' ' ')" \
		eval '[ "$rc" = 0 ] && [ "$(echo "$out" | grep -cE "^domain lu-(2m|1g): restored in ")" = 2 ]'
	# every guest left the state as it came back: a rerun has nothing to do
	out2=$("$LU" --restore 2>&1)
	rc2=$?
	check restore-rerun "a second --restore: rc $rc2, '$out2'; state: $(tr '\n' ' ' 2>&1 < "$SAVE/liveupdate.state")" \
		eval '[ "$rc2" = 0 ] && [[ "$out2" == "nothing to restore"* ]] && [ ! -e "$SAVE/liveupdate.state" ]'
	# every file of each guest came back bit for bit (a guest whose memory
	# is proven whole may count an L2 triple fault as TCG's: done_l1)
	before_ms=$(digest_ms "$DIGEST_BEFORE") at_max=0
	for d in "lu-2m $U2 2M" "lu-1g $U1G 1G"; do
		read -r name uuid ps <<< "$d"
		b=$(grep -F " $(domdir "$M2" "$uuid")/" "$DIGEST_BEFORE"; grep -F " $(domdir "$M1G" "$uuid")/" "$DIGEST_BEFORE")
		a=$(grep -v '^digest_ms=' "$DIGEST_AT/$name" 2> /dev/null)
		at_ms[$name]=$(digest_ms "$DIGEST_AT/$name")
		[ "${at_ms[$name]}" -gt "$at_max" ] && at_max=${at_ms[$name]}
		[ -n "$b" ] && [ "$(echo "$b" | sort)" = "$(echo "$a" | sort)" ] && intact[$name]=1
		check "carried-intact-$ps" "before kexec: '$(echo "$b" | tr '\n' '|')'; back: '$(echo "$a" | tr '\n' '|')'; $(grep -v '^[0-9a-f]\{16\} \|^digest_ms=' "$DIGEST_BEFORE" 2> /dev/null | head -2 | tr '\n' ' ')" \
			[ "${intact[$name]:-}" = 1 ]
	done
	res "# the test's digests of the carried memory: $(ms_to_s "$before_ms") s at kexec -e (both guests), $(ms_to_s "${at_ms[lu-2m]}") and $(ms_to_s "${at_ms[lu-1g]}") s at the restores (2M, 1G guest); taken out of the times below"
	res "# liveupdate breakdown: kexec -e to L1's test script $(ms_to_s $((start_ms - ${loaded_ms:-$start_ms} - before_ms))) s (L1 kernel to userspace ${up} s, under TCG, $(percpu_stall) s of it the percpu memset on translated code), libvirtd and the test's setup $(ms_to_s $((setup_ms - start_ms))) s, dmem-liveupdate --restore $(ms_to_s $((done_ms - setup_ms - at_max))) s"
	res "LUBREAKDOWN kexec_to_script_s=$(ms_to_s $((start_ms - ${loaded_ms:-$start_ms} - before_ms))) kernel_s=$up setup_s=$(ms_to_s $((setup_ms - start_ms))) restore_all_s=$(ms_to_s $((done_ms - setup_ms - at_max))) stall_s=$(percpu_stall)"
	for d in "lu-2m 2M 2m 512" "lu-1g 1G 1g 2048"; do
		read -r name ps k mib <<< "$d"
		st=$(domstate "$name") gone=
		[ "$st" = running ] || gone=$(gone_diag "$name")
		check "restored-$ps" "domain '$st'$gone" [ "$st" = running ]
		l=$(wait_pass "$name" "${last[pass$k]:-0}" 300)
		down=$(echo "$out" | grep "^domain $name:" | sed 's/^domain [^:]*: //')
		[ -n "$l" ] && [ "$(agent_field "$l" errors)" = 0 ] &&
			awk -v a="$(agent_field "$l" uptime_s)" -v b="${last[up$k]:-1e9}" 'BEGIN { exit !(a > b) }'
		r=$?
		ok "continuous-$ps" "before: uptime ${last[up$k]:-?} s pass ${last[pass$k]:-?}; after: '$l' (serial: $(last_serial "$name"); $(qemu_diag "$name"))" $r
		res "# liveupdate $ps guest (2 x $((mib / 2)) MiB): $down (the test's digests in it); agent before: uptime ${last[up$k]:-?} s pass ${last[pass$k]:-?}, after: $l"
		# without the digests: before kexec -e (downtime), at the restore (both)
		res "LIVEUPDATE backing=dmem-$ps size_mib=$mib $(echo "$down" | awk -v b="$before_ms" -v a="${at_ms[$name]:-0}" '
			match($0, /restored in [0-9.]+ s/) { r = substr($0, RSTART + 12, RLENGTH - 14) }
			match($0, /downtime [0-9.]+ s/) { d = substr($0, RSTART + 9, RLENGTH - 11) }
			END { printf "downtime_s=%s restore_s=%s", d == "" ? "" : sprintf("%.2f", d - (b + a) / 1000),
				r == "" ? "" : sprintf("%.2f", r - a / 1000) }')"
	done
	bad=$(kernel_splats "$mark")
	check kernel-log "$bad" [ -z "$bad" ]

	# ---- the peer on equal terms: both guests saved at once with their
	# RAM, the same kexec, both restored at once on the next kernel
	bad= pargs=
	for d in "lu-2m 2m" "lu-1g 1g"; do
		read -r name k <<< "$d"
		l0=$(carry_line "$name")
		[ "$(domstate "$name")" = running ] && [ -n "$l0" ] ||
			bad+="$name: not running ('$(domstate "$name")'); "
		plain[kib$k]=$(agent_field "$l0" kib)
		pargs+=",plain.pass$k=$(agent_field "$l0" pass)"
	done
	[ -z "$bad" ] || { fail plain-save "$bad"; why="no plain save"; not_run plain-kexec; }
	t0=$(date +%s%3N)
	# the saves only: a bare wait would also wait out l2_watch's listeners
	jobs_=()
	for name in lu-2m lu-1g; do
		(virsh save "$name" "$STATE/$name.plain" > "/tmp/$name.plain.err" 2>&1
		 echo "$? $(date +%s%3N)" > "/tmp/$name.plain.done") &
		jobs_+=($!)
	done
	wait "${jobs_[@]}"
	for d in "lu-2m 2m" "lu-1g 1g"; do
		read -r name k <<< "$d"
		read -r rc t1 < "/tmp/$name.plain.done"
		size=$(stat -c %s "$STATE/$name.plain" 2> /dev/null || echo 0)
		kib=${plain[kib$k]}
		# the image holds the pattern's memory: x-ignore-shared is off again
		[ "$rc" = 0 ] && [ "$size" -ge $((${kib:-1} * 1024)) ] ||
			bad+="$name: rc $rc, image $size bytes for ${kib:-?} KiB of pattern: $(tr -s '\n' ' ' < "/tmp/$name.plain.err"); "
		pargs+=",plain.save$k=$((t1 - t0)),plain.img$k=$((size / MiB))"
	done
	[ -z "$bad" ]
	ok plain-save "$bad" $? || { why="plain save failed"; not_run plain-kexec; }
	# below every dmem range, as dmem-liveupdate loads it
	lowest=$(while read -r _ base _; do echo $((base)); done < /sys/kernel/mm/dmem/ranges | sort -n | head -1)
	cmdline=$(tr ' ' '\n' < /proc/cmdline | grep -v -e '^dmemfs_recover=' -e '^l1\.args=' \
		-e '^BOOT_IMAGE=' -e '^initrd=' -e '^$' | tr '\n' ' ')
	sync
	kexec -l "$KERNEL" --initrd="$INITRD" --mem-max=$((lowest - 1)) \
		--command-line="${cmdline}l1.args=--kernel=$KERNEL,--initrd=$INITRD,stage=3,plain.t0=$t0$pargs" \
		> /tmp/kexec-plain.err 2>&1 || { why="kexec -l: $(tr '\n' ' ' < /tmp/kexec-plain.err)"; not_run plain-kexec; }
	date +%s%3N > "$STATE/plain.kexec_ms"
	sync
	kexec -e
	why="kexec -e of the plain update returned"
	not_run plain-kexec
	;;
3)
	mark=0
	start_ms=$(date +%s%3N)
	acc_setup && mkdir -p "$STATE" && mount /dev/vda "$STATE" 2> /tmp/state-mount.err
	r=$?
	kexec_ms=$(cat "$STATE/plain.kexec_ms" 2> /dev/null)
	kexec_s=$(ms_to_s $((start_ms - ${kexec_ms:-$start_ms})))
	pass plain-kexec "L1 came back through the plain update's kexec in $kexec_s s (no dmemfs_recover=: $(tr ' ' '\n' < /proc/cmdline | grep -c '^dmemfs_recover='))"
	ok setup-3 "libvirt setup or the state disk failed ($ACC_STEP; $(tr '\n' ' ' < /tmp/state-mount.err))" $r ||
		{ why="setup failed"; not_run plain-restored-2M; }
	setup_ms=$(date +%s%3N)
	jobs_=()
	for name in lu-2m lu-1g; do
		(virsh restore "$STATE/$name.plain" > "/tmp/$name.restore.err" 2>&1
		 echo "$? $(date +%s%3N)" > "/tmp/$name.restore.done") &
		jobs_+=($!)
	done
	wait "${jobs_[@]}"
	for d in "lu-2m 2M 2m 512" "lu-1g 1G 1g 2048"; do
		read -r name ps k mib <<< "$d"
		read -r rc t2 < "/tmp/$name.restore.done"
		l2_watch "$name"
		l=$(wait_pass "$name" "${plain[pass$k]:-0}" 300)
		[ "$rc" = 0 ] && [ -n "$l" ] && [ "$(agent_field "$l" errors)" = 0 ]
		r=$?
		ok "plain-restored-$ps" "rc $rc: $(tr -s '\n' ' ' < "/tmp/$name.restore.err"), after: '$l' (domain '$(domstate "$name")', last serial '$(last_serial "$name")', $(qemu_diag "$name"), QEMU log: $(tail -3 "/var/log/libvirt/qemu/$name.log" 2> /dev/null | tr -s '\n' ' ' | cut -c1-300))" $r
		save=${plain[save$k]:-0} down=$((t2 - ${plain[t0]:-$t2}))
		res "# plain host kernel update of $name ($mib MiB, image ${plain[img$k]:-?} MiB on the disk): downtime $(ms_to_s "$down") s (save $(ms_to_s "$save") s, kexec to the test script $kexec_s s, setup $(ms_to_s $((setup_ms - start_ms))) s, restore $(ms_to_s $((t2 - setup_ms))) s)"
		res "PLAINKEXEC size_mib=$mib downtime_s=$(ms_to_s "$down") save_s=$(ms_to_s "$save") kexec_s=$kexec_s setup_s=$(ms_to_s $((setup_ms - start_ms))) restore_s=$(ms_to_s $((t2 - setup_ms))) image_mib=${plain[img$k]:-0} stall_s=$(percpu_stall)"
	done
	rm -f "$STATE"/*.plain "$STATE/plain.kexec_ms"
	for name in lu-2m lu-1g; do virsh destroy "$name" > /dev/null 2>&1; virsh undefine "$name" > /dev/null 2>&1; done
	left=$(find "$M2" "$M1G" -mindepth 1 2> /dev/null | tr '\n' ' ')
	check released "files left after destroy: '$left'" [ -z "${left// /}" ]
	check no-leak "pool used $(pool_sum used) bytes after both guests went" [ "$(pool_sum used)" -eq 0 ]
	bad=$(kernel_splats "$mark")
	check kernel-log-3 "$bad" [ -z "$bad" ]
	done_l1
	;;
esac
