#!/bin/bash
# make test-unit: l1-common.sh on the host, against a fake sysfs.  A
# counter that is missing must fail the checks that compare it, never read
# as 0 (the "no leak" check after a kexec into a kernel without dmem=).
set -u
here=$(cd "$(dirname "$0")" && pwd)
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
# never the host's serial port: l1_channel falls back to stdout
export L1_CHANNEL_DEV=$fake/no-channel
# shellcheck source=nested-test/l1/l1-common.sh
DMEMFS_SYSFS_ROOT=$fake/dmem . "$here/../l1/l1-common.sh"
out() { printf '%s: unit.l1-common.%s%s\n' "$1" "$2" "${3:+: $3}"; }
expect() { # expect NAME WANT(pass|fail) CHECK-LINE
	local got
	got=$(L1_OUT=stdout check "$1" why eval "$3" 2> /dev/null)
	# no line at all: the check never ran, which boot-l1.sh reports as a
	# FAIL of the expected check ("no result")
	case "$2:$got" in
	pass:PASS:* | fail:FAIL:* | fail:) out PASS "$1" ;;
	*) out FAIL "$1" "wanted $2, got '$got'" ;;
	esac
}
mkdir -p "$fake/dmem/node0" "$fake/dmem/node1"
echo 0 > "$fake/dmem/node0/used_bytes"
echo 0 > "$fake/dmem/node1/used_bytes"
echo 4096 > "$fake/dmem/node1/free_bytes"
expect no-leak-counts-zero pass '[ "$(pool_sum used)" -eq 0 ]'
expect free-sums pass '[ "$(pool_sum free)" -eq 4096 ]'
expect node-reads pass '[ "$(pool_bytes 1 free)" -eq 4096 ]'
rm -rf "$fake/dmem"
expect no-leak-without-pool fail '[ "$(pool_sum used)" -eq 0 ]'
expect node-without-counter fail '[ "$(pool_bytes 0 used)" -eq 0 ]'
expect arithmetic-without-pool fail '[ $(($(pool_bytes 0 used) - 0)) -eq 0 ]'
# an in-L1 script refuses to run on a host: no l1.top= on the command line
echo "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet" > "$fake/cmdline"
msg=$(L1_CMDLINE=$fake/cmdline bash -c '. "$1"; l1_channel; echo ran' _ "$here/../l1/l1-common.sh" 2>&1)
rc=$?
case "$rc:$msg" in
2:*"refusing to run outside the test L1"*) out PASS refuses-outside-l1 ;;
*) out FAIL refuses-outside-l1 "exit $rc: '$msg'" ;;
esac
echo "console=ttyS0 l1.top=/work/main l1.script=/x.sh" > "$fake/cmdline"
msg=$(L1_CMDLINE=$fake/cmdline bash -c '. "$1"; l1_channel; echo ran' _ "$here/../l1/l1-common.sh" 2>&1)
case "$msg" in
*ran) out PASS runs-in-l1 ;;
*) out FAIL runs-in-l1 "'$msg'" ;;
esac
# the one retry rule: only under TCG, only for a named crash signature
printf '[  1.0] ok\r\n[231.573857] BUG: TASK stack guard page was hit at 00000000c3670250\r\n' > "$fake/crash.log"
printf '[  1.0] ok\n[300.0] rcu: INFO: rcu_preempt self-detected stall\n' > "$fake/hang.log"
ev=$(retry_evidence tcg "$fake/crash.log")
case "$?:$ev" in
"0:[231.573857] BUG: TASK stack guard page was hit at 00000000c3670250") out PASS retry-named-crash-under-tcg ;;
*) out FAIL retry-named-crash-under-tcg "got '$ev'" ;;
esac
for c in "kvm crash" "tcg hang" "tcg missing" "unknown crash"; do
	read -r acc f <<< "$c"
	[ "$acc" = unknown ] && acc=
	if ev=$(retry_evidence "$acc" "$fake/$f.log"); then
		out FAIL "no-retry-${acc:-unknown-accel}-$f" "retried on '$ev'"
	else
		out PASS "no-retry-${acc:-unknown-accel}-$f"
	fi
done
# a quoted signature is no crash, and a crash already spent on a retry is not spent twice
printf 'RESULT SKIP: x.l2-attempt1: retried: [ 9.0] BUG: TASK stack guard page was hit\nSKIP: x.y: retried: stack guard page was hit\n' > "$fake/quoted.log"
cat "$fake/crash.log" "$fake/quoted.log" > "$fake/spent.log"
for c in "quoted 0" "spent 1"; do
	read -r f used <<< "$c"
	if ev=$(retry_evidence tcg "$fake/$f.log" "$used"); then
		out FAIL "no-retry-$f" "retried on '$ev'"
	else
		out PASS "no-retry-$f"
	fi
done
# an L2 that reset itself without a word: only under TCG, only with the
# event, never after a panic, an agent that saw bad memory (at any pass) or
# checked nothing, a guest that left no serial, or a splat in L1's log
printf '2026-12-06 15:05:29.259+0000: event SHUTDOWN for domain '"'"'a'"'"': {"guest":true,"reason":"guest-reset"}\n' > "$fake/reset.ev"
printf '2026-12-06 15:05:29.259+0000: event SHUTDOWN for domain '"'"'a'"'"': {"guest":false,"reason":"host-signal"}\n' > "$fake/kill.ev"
printf '[    0.000000] BIOS-e820: ok\r\nL2-CARRY-CHECK uptime_s=4 kib=395730 errors=0 pass=1\r\nL2-CARRY-CHECK uptime_s=53.3 kib=395730 errors=0 pass=14\r\n' > "$fake/quiet.serial"
printf '[    0.000000] BIOS-e820: ok\n' > "$fake/boot.serial"
printf 'L2-CARRY-CHECK uptime_s=9 kib=1 errors=0 pass=2\n' > "$fake/one.serial"
printf 'L2-CARRY-CHECK uptime_s=9 kib=1 errors=3 pass=2\n' > "$fake/bad.serial"
printf 'L2-CARRY-CHECK uptime_s=9 kib=1 errors=3 pass=2\nL2-CARRY-CHECK uptime_s=11 kib=1 errors=0 pass=3\n' > "$fake/healed.serial"
printf 'L2-CARRY-CHECK uptime_s=9 kib=0 errors=0 pass=2\n' > "$fake/nothing.serial"
printf '[    9.1] Kernel panic - not syncing: Attempted to kill init!\n' > "$fake/panic.serial"
: > "$fake/empty.serial"
printf '[  50.0] kvm [344]: vcpu0, guest rIP: 0xffffffff9e206d71 Unhandled WRMSR(0xc0010007) = 0xffff\n' > "$fake/clean.l1"
printf '[  60.0] WARNING: CPU: 1 PID: 9 at mm/dmem.c:100 dmem_region_free+0x1\n' > "$fake/splat.l1"
for c in "quiet 2 errors=0 pass=14" "boot 0 " "one 1 errors=0 pass=2"; do
	read -r f n want <<< "$c"
	ev=$(l2_reset_evidence tcg "$fake/reset.ev" "$fake/$f.serial" "$fake/clean.l1")
	case "$?:$ev" in
	0:*'"reason":"guest-reset"'*"no panic, $n agent lines"*"$want") out PASS "l2-reset-under-tcg-$f" ;;
	*) out FAIL "l2-reset-under-tcg-$f" "got '$ev'" ;;
	esac
done
for c in "kvm reset quiet clean" "tcg kill quiet clean" "tcg reset bad clean" "tcg reset healed clean" \
	"tcg reset nothing clean" "tcg reset panic clean" "tcg none quiet clean" "tcg reset empty clean" \
	"tcg reset missing clean" "tcg reset quiet splat" "tcg reset quiet missing"; do
	read -r acc e f l <<< "$c"
	if ev=$(l2_reset_evidence "$acc" "$fake/$e.ev" "$fake/$f.serial" "$fake/$l.l1" 2> /dev/null); then
		out FAIL "no-l2-reset-$acc-$e-$f-$l" "retried on '$ev'"
	else
		out PASS "no-l2-reset-$acc-$e-$f-$l"
	fi
done
# an L2 triple fault that L1's kvm_exit trace recorded (l2_fault_evidence):
# the whole script runs again only under TCG, only for a record after the
# first N0, never with a splat in L1's log or a console of the run that
# shows a panic, an agent's FAIL or a pattern with errors
mkdir -p "$fake/tf" "$fake/tf-kvm" "$fake/tf-none" "$fake/tf-exit-only"
printf '# tracer: nop\n#\n' | tee "$fake/tf-none/trace" "$fake/tf-kvm/trace" "$fake/tf-exit-only/trace" > "$fake/tf/trace"
exit_rec=' CPU 0/KVM-4242    [001] ..... 812.000001: kvm_exit: vcpu 0 reason shutdown rip 0xffffffff81000f4d info 0 0'
user_rec=' CPU 0/KVM-4242    [001] ..... 812.000009: kvm_userspace_exit: reason KVM_EXIT_SHUTDOWN (8)'
printf '%s\n' "$exit_rec" "$user_rec" >> "$fake/tf/trace"
printf '%s\n' "$user_rec" >> "$fake/tf-kvm/trace"     # one KVM made: no intercept
printf '%s\n' "$exit_rec" >> "$fake/tf-exit-only/trace" # no exit to QEMU: no fault it saw
printf 'L2-AGENT-RESULT status=FAIL reason=pattern\n' > "$fake/fail.serial"
printf 'L2-MEM-CHECK node0_total_kib=1 node0_free_kib=1 tested_kib=9 errors=0 status=PASS\n' > "$fake/mem.serial"
export L2_FAULT_TRACE_ON=1
ev=$(L2_FAULT_TRACE=$fake/tf l2_fault_evidence tcg 0 "$fake/clean.l1" "$fake/quiet.serial" "$fake/one.serial")
case "$?:$ev" in
0:"L2 triple fault under TCG (1 in this run, L1 log and 2 L2 consoles clean): CPU 0/KVM-4242"*"reason shutdown rip 0xffffffff81000f4d"*)
	out PASS l2-triple-fault-under-tcg ;;
*) out FAIL l2-triple-fault-under-tcg "got '$ev'" ;;
esac
ev=$(L2_FAULT_TRACE=$fake/tf-kvm l2_fault_evidence tcg 0 "$fake/clean.l1" "$fake/mem.serial" "$fake/boot.serial")
case "$?:$ev" in
0:"L2 triple fault under TCG (1 in this run, L1 log and 2 L2 consoles clean): CPU 0/KVM-4242"*"KVM_EXIT_SHUTDOWN (8)") out PASS l2-triple-fault-made-by-kvm ;;
*) out FAIL l2-triple-fault-made-by-kvm "got '$ev'" ;;
esac
# an L2 reset whose QEMU event nobody heard (libvirtd restarted): L1's
# trace stands for it, only with FAULTS0 given, a record after it, the trace on
printf 'error: failed to connect to the hypervisor\n' > "$fake/gone.ev"
ev=$(L2_FAULT_TRACE=$fake/tf l2_reset_evidence tcg "$fake/gone.ev" "$fake/boot.serial" "$fake/clean.l1" 0)
case "$?:$ev" in
0:*"KVM_EXIT_SHUTDOWN (8); serial: no panic, 0 agent lines"*) out PASS l2-reset-from-trace ;;
*) out FAIL l2-reset-from-trace "got '$ev'" ;;
esac
for c in "tcg tf 2 1" "tcg tf - 1" "tcg tf-none 0 1" "tcg tf 0 0" "kvm tf 0 1"; do
	read -r acc t n on <<< "$c"
	if ev=$(L2_FAULT_TRACE=$fake/$t L2_FAULT_TRACE_ON=${on/0/} l2_reset_evidence "$acc" "$fake/gone.ev" \
		"$fake/boot.serial" "$fake/clean.l1" ${n/-/} 2> /dev/null); then
		out FAIL "no-l2-reset-from-trace-$acc-$t-$n-$on" "retried on '$ev'"
	else
		out PASS "no-l2-reset-from-trace-$acc-$t-$n-$on"
	fi
done
for f in panic fail; do
	if ev=$(L2_FAULT_TRACE=$fake/tf l2_reset_evidence tcg "$fake/gone.ev" "$fake/$f.serial" "$fake/clean.l1" 0); then
		out FAIL "no-l2-reset-from-trace-$f" "retried on '$ev'"
	else
		out PASS "no-l2-reset-from-trace-$f"
	fi
done
# the RETBleed line of every TCG L1 is no splat
printf '[ 0.1] RETBleed: WARNING: Spectre v2 mitigation leaves CPU vulnerable to RETBleed attacks, data leaks possible!\n' > "$fake/retbleed.l1"
if L2_FAULT_TRACE=$fake/tf l2_fault_evidence tcg 0 "$fake/retbleed.l1" "$fake/quiet.serial" > /dev/null; then
	out PASS l2-triple-fault-retbleed-no-splat
else
	out FAIL l2-triple-fault-retbleed-no-splat "a RETBleed line counted as a splat"
fi
# never: under KVM, without the trace, no new record, an intercept without
# an exit to QEMU, a splat or no L1 log, no console, a console missing or
# empty, one with a panic, an agent's FAIL or a pattern with errors, or no
# console with an agent that checked memory whole
for c in "kvm tf 0 clean 1 quiet" "tcg tf 0 clean 0 quiet" "tcg tf-none 0 clean 1 quiet" "tcg tf 2 clean 1 quiet" \
	"tcg tf-exit-only 0 clean 1 quiet" "tcg tf 0 splat 1 quiet" "tcg tf 0 missing 1 quiet" "tcg tf 0 clean 1 -" \
	"tcg tf 0 clean 1 missing" "tcg tf 0 clean 1 empty" "tcg tf 0 clean 1 panic" "tcg tf 0 clean 1 bad" \
	"tcg tf 0 clean 1 fail" "tcg tf 0 clean 1 boot"; do
	read -r acc t n l on f <<< "$c"
	cons=("$fake/$f.serial")
	[ "$f" = - ] && cons=()
	[ "$f" = boot ] || [ "$f" = - ] || cons=("$fake/quiet.serial" "${cons[@]}")
	if ev=$(L2_FAULT_TRACE=$fake/$t L2_FAULT_TRACE_ON=${on/0/} l2_fault_evidence "$acc" "$n" "$fake/$l.l1" \
		"${cons[@]}" 2> /dev/null); then
		out FAIL "no-l2-triple-fault-$acc-$t-$n-$l-$on-$f" "retried on '$ev'"
	else
		out PASS "no-l2-triple-fault-$acc-$t-$n-$l-$on-$f"
	fi
done
# the line it leaves on a live update's console retries that L1, through
# run-liveupdate.sh's own loop (a fake boot-l1.sh: attempt 1 fails with the
# line, attempt 2 passes), and never the trunk's whole L1 (run-l1.sh)
ev=$(L2_FAULT_TRACE=$fake/tf l2_fault_evidence tcg 0 "$fake/clean.l1" "$fake/quiet.serial")
printf '%s\n' "$ev" > "$fake/lu-console.log"
if got=$(retry_evidence tcg "$fake/lu-console.log"); then
	out FAIL no-trunk-retry-on-l2-triple-fault "retried on '$got'"
else
	out PASS no-trunk-retry-on-l2-triple-fault
fi
lu=$fake/lu && mkdir -p "$lu/nested-test/host" "$lu/nested-test/l1" "$lu/build"
cp "$here/run-liveupdate.sh" "$lu/nested-test/host/"
cp "$here/../l1/l1-common.sh" "$lu/nested-test/l1/"
: > "$lu/nested-test/l1/liveupdate-l1.sh"
cat > "$lu/nested-test/host/boot-l1.sh" << EOF
#!/bin/bash
n=\$(cat "$lu/n" 2> /dev/null || echo 0); echo \$((n + 1)) > "$lu/n"
mkdir -p "\$RESULTS/liveupdate-l1"
if [ "\$n" = 0 ]; then
	printf '# accelerator: -accel tcg -cpu max\nFAIL: liveupdate.kernel-log-3: not run: lu-2m stopped\n' > "\$RESULTS/liveupdate.results"
	cp "$fake/lu-console.log" "\$RESULTS/liveupdate-l1/test-console.log"
else
	printf '# accelerator: -accel tcg -cpu max\nPASS: liveupdate.kernel-log-3\n' > "\$RESULTS/liveupdate.results"
	: > "\$RESULTS/liveupdate-l1/test-console.log"
fi
EOF
chmod +x "$lu/nested-test/host/boot-l1.sh"
TOP=$lu RESULTS=$lu/res bash "$lu/nested-test/host/run-liveupdate.sh" > /dev/null 2>&1
got=$(tr '\n' '|' < "$lu/res/liveupdate.results" 2> /dev/null)
case "$got" in
"SKIP: liveupdate.l1-attempt1: retried: in a fresh L1: L2 triple fault under TCG (1 in this run"*"|# accelerator: -accel tcg -cpu max|PASS: liveupdate.kernel-log-3|") out PASS liveupdate-retry-on-l2-triple-fault ;;
*) out FAIL liveupdate-retry-on-l2-triple-fault "got '$got'" ;;
esac
# the one retry loop (retry_loop, retry_grant): a failure retried only on
# evidence, each retry a SKIP line, at most MAX runs, RUN's variables kept
rl_skips=()
# shellcheck disable=SC2317 # run by retry_loop
rl_skip() { rl_skips+=("$1: $2"); }
rl_case() { # rl_case NAME MAX "RUN-STATUSES" EVIDENCE WANT-STATUS WANT-ATTEMPT WANT-SKIPS
	local name=$1 max=$2 evidence=$4 want="$5/$6/$7" got st
	local -a statuses
	read -ra statuses <<< "$3"
	rl_skips=() runs=0
	# shellcheck disable=SC2317 # run by retry_loop
	# a run past the list passes: a loop that runs too often is a FAIL
	# of its case, not an unbound variable that ends this script
	rl_run() { runs=$1; return "${statuses[$(($1 - 1))]:-0}"; }
	retry_loop x "$max" rl_run "$evidence" rl_skip
	st=$?
	got="$st/$RETRY_ATTEMPT/$(IFS='|'; echo "${rl_skips[*]}")"
	if [ "$got" = "$want" ] && [ "$runs" = "$6" ]; then out PASS "retry-loop-$name"; else out FAIL "retry-loop-$name" "got '$got' after $runs runs, want '$want'"; fi
}
# shellcheck disable=SC2317 # run by retry_loop
ev_yes() { echo "named crash $1"; }
# shellcheck disable=SC2317 # run by retry_loop
ev_no() { return 1; }
# shellcheck disable=SC2317 # run by retry_loop
ev_empty() { return 0; }
# shellcheck disable=SC2317 # run by retry_loop
ev_kvm() { retry_evidence kvm "$fake/crash.log"; }
# shellcheck disable=SC2317 # run by retry_loop
ev_tcg() { retry_evidence tcg "$fake/crash.log"; }
rl_case first-pass 2 "0" ev_yes 0 1 ""
rl_case no-evidence-no-retry 2 "1 0" ev_no 1 1 ""
rl_case empty-evidence-no-retry 2 "1 0" ev_empty 1 1 ""
rl_case kvm-never-retried 3 "1 0" ev_kvm 1 1 ""
rl_case tcg-crash-retried 2 "1 0" ev_tcg 0 2 "x-attempt1: retried: [231.573857] BUG: TASK stack guard page was hit at 00000000c3670250"
rl_case stops-at-max 2 "1 1 0" ev_yes 1 2 "x-attempt1: retried: named crash 1"
rl_case status-kept 2 "3 7" ev_yes 7 2 "x-attempt1: retried: named crash 1"
rl_case three-attempts 3 "1 1 0" ev_yes 0 3 "x-attempt1: retried: named crash 1|x-attempt2: retried: named crash 2"
# RUN sets its caller's locals, even those named like the loop's own
# shellcheck disable=SC2317 # run by retry_loop
rl_caller() { local r=unset ev=unset; rl_set() { r=$1 ev=set; }; retry_loop x 1 rl_set ev_no rl_skip; echo "$r/$ev"; }
got=$(rl_caller)
if [ "$got" = 1/set ]; then out PASS retry-loop-keeps-callers-variables; else out FAIL retry-loop-keeps-callers-variables "got '$got'"; fi
# evidence that printed a line but failed is no evidence
# shellcheck disable=SC2317 # run by retry_loop
ev_loud_no() { echo "not evidence"; return 1; }
rl_case loud-failure-no-retry 2 "1 0" ev_loud_no 1 1 ""
# EVIDENCE sees its caller's variables (stopped_evidence reads retry_l2's
# name, nested_evidence nested's r and out): no local of the helpers
# stands between
# shellcheck disable=SC2317 # run by retry_loop
rl_reader() {
	local name=guest r=5 out=o
	rl_fail() { return 1; }
	ev_read() { echo "$name/$r/$out/$1"; }
	rl_skips=()
	retry_loop x 2 rl_fail ev_read rl_skip
	retry_grant y 1 ev_read rl_skip
	printf '%s|' "${rl_skips[@]}"
}
got=$(rl_reader)
if [ "$got" = "x-attempt1: retried: guest/5/o/1|y-attempt1: retried: guest/5/o/1|" ]; then
	out PASS retry-loop-evidence-sees-callers-variables
else
	out FAIL retry-loop-evidence-sees-callers-variables "got '$got'"
fi
# retry_grant alone (liveupdate-l1.sh's L2 that stopped): the same decision
rl_skips=()
if retry_grant l2-2M 1 ev_tcg rl_skip && [ "${rl_skips[*]}" = "l2-2M-attempt1: retried: [231.573857] BUG: TASK stack guard page was hit at 00000000c3670250" ] &&
	! retry_grant l2-1G 1 ev_kvm rl_skip && [ ${#rl_skips[@]} = 1 ]; then
	out PASS retry-grant
else
	out FAIL retry-grant "skips: ${rl_skips[*]}"
fi
# the release the host passes as l1.kernel= (l1-boot-lib.sh's
# kernel_release): from a bzImage's setup header, "none" for anything else
img=$fake/bzImage
head -c 2048 /dev/zero > "$img"
printf '\x00\x02' | dd of="$img" bs=1 seek=$((0x20e)) conv=notrunc 2> /dev/null # 0x200 + 0x200
printf '6.12.118-gabc (b@h) #1 SMP\0' | dd of="$img" bs=1 seek=$((0x400)) conv=notrunc 2> /dev/null
got=$( (. "$here/l1-boot-lib.sh" > /dev/null 2>&1; kernel_release "$img"; echo "/$(kernel_release "$fake/crash.log")/$(kernel_release "$fake/none")") )
if [ "$got" = "6.12.118-gabc/none/none" ]; then out PASS kernel-release; else out FAIL kernel-release "got '$got'"; fi
# a check reported as not run is no check that failed (done_l1's guard)
got=$(L1_FAILED_CHECKS= && L1_OUT=stdout && fail released 'free 1 B, want 2 B' > /dev/null &&
	fail kernel-log-3 'not run: lu-2m stopped' > /dev/null && echo "$L1_FAILED_CHECKS")
if [ "$got" = " released" ]; then out PASS failed-checks-not-run-apart; else out FAIL failed-checks-not-run-apart "got '$got'"; fi
# a vCPU that stood at L1's own __svm_vcpu_run at both samples (kvm_nested_dmem's line)
l='race: FAIL: the vCPU ran on 60 s after the stop (2730 rounds, leaks 0): the nested guest hangs; guest mode 0, rip 0xffffffff835107cc (L1: __svm_vcpu_run+0x9c), mp_state 0; then guest mode 0, rip 0xffffffff835107cc (L1: __svm_vcpu_run+0x9c), mp_state 0'
ev=$(l1_state_evidence tcg "$l")
case "$?:$ev" in
"0:rip 0xffffffff835107cc (L1: __svm_vcpu_run+0x9c)") out PASS l1-state-in-guest ;;
*) out FAIL l1-state-in-guest "got '$ev'" ;;
esac
# and qemu_diag's two samples in a script's FAIL line (l1-trunk.sh's retry)
q='FAIL: vmem.hotplug-dimm: attach-device rc 0 in 120 s: CPU 0/KVM: state R; RIP=ffffffffb8b107cc HLT=0 rip 0xffffffffb8b107cc (L1: __svm_vcpu_run+0x9c); then rip 0xffffffffb8b107cc (L1: __svm_vcpu_run+0x9c); code at RIP: Cannot access memory'
ev=$(l1_state_evidence tcg "$q")
case "$?:$ev" in
"0:rip 0xffffffffb8b107cc (L1: __svm_vcpu_run+0x9c)") out PASS l1-state-in-l2 ;;
*) out FAIL l1-state-in-l2 "got '$ev'" ;;
esac
one=${l%%; then*}
other=${l//__svm_vcpu_run/__svm_vcpu_run_other}
nosym=${l//(L1: __svm_vcpu_run+0x9c)/(L1: -)}
for c in "kvm l" "tcg one" "tcg other" "tcg nosym"; do
	read -r acc v <<< "$c"
	if ev=$(l1_state_evidence "$acc" "${!v}"); then
		out FAIL "no-l1-state-$acc-$v" "retried on '$ev'"
	else
		out PASS "no-l1-state-$acc-$v"
	fi
done
# the samples explain a script's FAILs only when each carries them or was
# not run (l1_state_explains: the trunk's script retry)
s1='FAIL: vmem.hotplug-dimm: no answer (rip 0xffffffff835107cc (L1: __svm_vcpu_run+0x9c); rip 0xffffffff835107cc (L1: __svm_vcpu_run+0x9c))'
s2='FAIL: vmem.grow-past-pool: not run (the L2 is silent)'
s3='FAIL: vmem.pool-restored: free 1 B, want 2 B'
for c in "all|$s1|$s2|0" "own-failure|$s1|$s3|1" "none||$s3|1"; do
	IFS='|' read -r n a b want <<< "$c"
	l1_state_explains "$(printf '%s\n' "$a" "$b")"
	got=$?
	if [ "$got" = "$want" ]; then out PASS "l1-state-explains-$n"; else out FAIL "l1-state-explains-$n" "got $got, want $want"; fi
done
# the SHUTDOWN that delivers a reserved-bit #PF on a fetch (l1_shutdown_evidence)
mkdir -p "$fake/sd" && printf '# tracer: nop\n%s\n%s\n' \
	' kvm_nested_dmem-912 [000] ..... 411.4: kvm_exit: vcpu 0 reason shutdown rip 0x403620 info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x80000b0e error_code 0x00000018' \
	' kvm_nested_dmem-912 [000] ..... 411.5: kvm_userspace_exit: reason KVM_EXIT_SHUTDOWN (8)' > "$fake/sd/trace"
ev=$(L2_FAULT_TRACE=$fake/sd l1_shutdown_evidence tcg 0)
case "$?:$ev" in
0:*"reason shutdown rip 0x403620"*"error_code 0x00000018") out PASS l1-shutdown-reserved-fetch ;;
*) out FAIL l1-shutdown-reserved-fetch "got '$ev'" ;;
esac
for c in "kvm sd 0" "tcg sd 2" "tcg tf 0" "tcg tf-none 0"; do
	read -r acc t n <<< "$c"
	if ev=$(L2_FAULT_TRACE=$fake/$t l1_shutdown_evidence "$acc" "$n"); then
		out FAIL "no-l1-shutdown-$acc-$t-$n" "retried on '$ev'"
	else
		out PASS "no-l1-shutdown-$acc-$t-$n"
	fi
done
echo "console=ttyS0 l1.top=/work/main l1.accel=tcg l1.script=/x.sh" > "$fake/cmdline"
[ "$(L1_CMDLINE=$fake/cmdline l1_outer_accel)" = tcg ] && out PASS outer-accel || out FAIL outer-accel "'$(L1_CMDLINE=$fake/cmdline l1_outer_accel)'"
# the one TAP converter (scripts/tap-results.awk, through tap_results):
# every result, a skip as a skip, a failure's assertion as its reason, and a
# run cut short (fewer results than the plan, or than want=) fails .complete
tap_case() { # tap_case NAME WANT-OUTPUT TAP [AWK-VAR...]
	local name=$1 want=$2 tap=$3 got
	shift 3
	printf '%b' "$tap" > "$fake/t.tap"
	got=$(L1_OUT=stdout tap_results p "$fake/t.tap" "$@" | tr '\n' '|')
	if [ "$got" = "$want" ]; then out PASS "tap.$name"; else out FAIL "tap.$name" "got '$got'"; fi
}
ks='TAP version 13\n1..3\n# Starting 3 tests from 1 test cases.\n#  RUN           f.a ...\n#            OK  f.a\nok 1 f.a\n#  RUN           f.b ...\n# x.c:10:b:Expected 1 (1) == 2 (2)\n# x.c:11:b:note\n#          FAIL  f.b\nnot ok 2 f.b\n#  RUN           f.c ...\nok 3 f.c # SKIP no 1G pool\n# Totals: pass:1 fail:1 xfail:0 xpass:0 skip:1 error:0\n'
tap_case kselftest 'PASS: p.f.a|FAIL: p.f.b: Expected 1 (1) == 2 (2)|SKIP: p.f.c: no 1G pool|PASS: p.complete: 3 of 3 tests (Totals: pass:1 fail:1 xfail:0 xpass:0 skip:1 error:0)|' "$ks"
tap_case cut-short 'PASS: p.f.a|FAIL: p.complete: 1 results of a plan of 3: the runner died, timed out or bailed out|' 'TAP version 13\n1..3\nok 1 f.a\n'
tap_case no-plan 'FAIL: p.complete: 0 results of a plan of 0: the runner died, timed out or bailed out; last: Segmentation fault|' '# Segmentation fault\n'
tap_case want 'PASS: p.f.a: n=1|FAIL: p.done: 1 results of a plan of 1 (12 expected): the runner died, timed out or bailed out; last: n=1|' '1..1\n# x.c:5:a:n=1\nok 1 f.a\n' notes=1 complete=done want=12
tap_case glib 'PASS: p.lib/a|FAIL: p.lib/b: ERROR:/t.c:9:b: assertion failed (x == y)|PASS: p.complete: 2 of 2 tests|' '# random seed: R02S\n1..2\n# Start of lib tests\nok 1 /lib/a\n# ERROR:/t.c:9:b: assertion failed (x == y)\nnot ok 2 /lib/b\n# End of lib tests\n' strip=^/
# KUnit's KTAP in the kernel log: suites are the results, their cases and
# parameters (indented) make the count and the reason; a suite "ok" whose
# cases fell short of their plan fails; the log after the block is not read
ku='KTAP version 1\n1..2\n    KTAP version 1\n    # Subtest: s1\n    1..2\n        KTAP version 1\n        # Subtest: p\n        ok 1 a=1 accepted\n        ok 2 a=2 accepted\n    ok 1 p\nx_try_catch (9) used greatest stack depth\n    ok 2 q\n# s1: pass:2 fail:0 skip:0 total:2\n# Totals: pass:2 fail:0 skip:0 total:2\nok 1 s1\n    KTAP version 1\n    # Subtest: s2\n    1..1\n    ok 1 r # SKIP no dmem\nok 2 s2\nok 3 later\n'
tap_case ktap 'PASS: p.s1: 4 of 4 subtests ok|PASS: p.s2: 0 of 1 subtests ok, 1 skipped|PASS: p.all: 2 of 2 tests|' "$ku" notes=1 complete=all
# where every test must run (noskip=1: the trunk's KUnit), a skipped case
# fails its suite; atleast=: a suite with cases compiled out fails
tap_case ktap-noskip 'PASS: p.s1|FAIL: p.s2: 1 subtests skipped: r|PASS: p.complete: 2 of 2 tests|' "$ku" noskip=1
tap_case ktap-atleast 'FAIL: p.s1: only 4 subtests, want at least 5|PASS: p.s2|PASS: p.complete: 2 of 2 tests|' "$ku" "atleast=s1=5 s2=1"
kb='KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: s1\n    1..2\n        # Subtest: p\n        ok 1 a=1 accepted\n        # p: EXPECTATION FAILED at mm/x.c:5\n        Expected r == 0, but\n            r == -22\n        not ok 2 a=2 accepted\n    not ok 1 p\n    ok 2 q\nnot ok 1 s1\n'
tap_case ktap-failed-param 'FAIL: p.s1: not ok: a=2 accepted (p: EXPECTATION FAILED at mm/x.c:5 | Expected r == 0, but | r == -22) | p|PASS: p.complete: 1 of 1 tests|' "$kb"
ks2='KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: s1\n    1..16\n    ok 1 a\n    ok 2 b\nok 1 s1\n'
tap_case ktap-short-suite 'FAIL: p.s1: 2 of its 16 subtests reported|PASS: p.complete: 1 of 1 tests|' "$ks2"
# boot-l1.sh's merge of a resumed trunk (run-l1.sh): a check that a later
# boot reports again replaces the earlier boot's line; within one boot a
# name reported twice keeps both lines (a FAIL then a PASS stays a FAIL)
merged=$(
	RESULTS=$fake/res TOP=$(cd "$here/../.." && pwd)
	. "$here/l1-boot-lib.sh"
	l1_area x
	add "PASS: a.setup"
	add "FAIL: a.step1: x"
	add "PASS: a.step1"
	add "PASS: a.step2"
	resume_mark
	add "FAIL: a.setup: redone"
	add "PASS: a.step3"
	add "PASS: a.step3"
	printf '%s\n' "${lines[@]}" | sed '/^$/d' | tr '\n' '|'
)
# KUnit only where asked: kunit.enable=0 on every boot's command line but
# a test boot that run-l1.sh gives L1_KUNIT=1 (a prefix on the call)
appends=$(
	RESULTS=$fake/res TOP=$(cd "$here/../.." && pwd)
	. "$here/l1-boot-lib.sh"
	accel_name() { echo tcg; }
	printf '%s|' "$(l1_append /x.sh "dmem=1G")" "$(L1_KUNIT=1 l1_append /x.sh "dmem=1G")" "$(l1_append /x.sh "")"
)
case "$appends" in
*"l1.script=/x.sh kunit.enable=0 dmem=1G|"*"l1.script=/x.sh dmem=1G|"*"l1.script=/x.sh kunit.enable=0|") out PASS kunit-only-where-asked ;;
*) out FAIL kunit-only-where-asked "got '$appends'" ;;
esac
want='FAIL: a.step1: x|PASS: a.step1|PASS: a.step2|FAIL: a.setup: redone|PASS: a.step3|PASS: a.step3|'
[ "$merged" = "$want" ] && out PASS resume-merge || out FAIL resume-merge "got '$merged'"
# every in-L1 script (all of nested-test/l1/ but its libraries) answers
# --list with exit 0 and, on a host (no l1.top=), refuses with exit 2.  Run
# on a copy of the tree, as nobody when this runs as root: a script that
# did not refuse would mount and install on this machine otherwise.
top=$(cd "$here/../.." && pwd)
l1_scripts() { # l1_scripts ROOT: the in-L1 scripts under ROOT/nested-test/l1
	find "$1/nested-test/l1" -name '*.sh' ! -name '*-lib.sh' ! -name l1-common.sh | sort
}
copy=$fake/tree
mkdir -p "$copy"
cp -r "$top/nested-test" "$top/scripts" "$copy/"
chmod -R a+rX "$fake"
chmod a+rx "$fake"
as_nobody=()
# root, not fakeroot's (whose setpriv fails, and whose real user is harmless)
if [ "$(id -u)" = 0 ] && setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all true 2> /dev/null; then
	as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all)
fi
echo "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet" > "$fake/cmdline"
scan_scripts() { # sets n, nolist, norefuse over the copy's in-L1 scripts
	local s rel msg rc
	nolist= norefuse= n=0
	while read -r s; do
		n=$((n + 1))
		rel=${s#"$copy"/}
		(cd "$fake" && TOP=$copy timeout 20 "${as_nobody[@]}" bash "$s" --list > /dev/null 2>&1) < /dev/null ||
			nolist="$nolist $rel"
		msg=$(cd "$fake" && TOP=$copy L1_CMDLINE=$fake/cmdline timeout 20 "${as_nobody[@]}" bash "$s" 2>&1 < /dev/null)
		rc=$?
		case "$rc:$msg" in
		2:*"refusing to run outside the test L1"*) ;;
		*) norefuse="$norefuse $rel(exit $rc)" ;;
		esac
	done < <(l1_scripts "$copy")
}
scan_scripts
[ "$n" -ge 20 ] && [ -z "$nolist" ] && out PASS every-l1-script-lists || out FAIL every-l1-script-lists "$n scripts; no --list:${nolist:- none}"
[ "$n" -ge 20 ] && [ -z "$norefuse" ] && out PASS every-l1-script-refuses-on-host || out FAIL every-l1-script-refuses-on-host "$n scripts; ran on a host:${norefuse:- none}"
# the planted fault: a script without the guard, and one without --list
printf '#!/bin/bash\n[ "${1:-}" = --list ] && exit 0\necho "would mount here"\n' > "$copy/nested-test/l1/tests/l1-planted.sh"
printf '#!/bin/bash\n. "$TOP/nested-test/l1/l1-common.sh"\nl1_only\n' > "$copy/nested-test/l1/tests/l1-nolist.sh"
chmod a+r "$copy"/nested-test/l1/tests/l1-*.sh
scan_scripts
case "$norefuse|$nolist" in
*l1-planted.sh*"|"*l1-nolist.sh*) out PASS planted-scripts-caught ;;
*) out FAIL planted-scripts-caught "not caught: ran on a host:${norefuse:- none}; no --list:${nolist:- none}" ;;
esac
rm -f "$copy/nested-test/l1/tests/l1-planted.sh" "$copy/nested-test/l1/tests/l1-nolist.sh"
# the Makefile includes its fragments with include, not -include: one that
# is missing stops make, rather than dropping its test steps silently
mk=$fake/mk
mkdir -p "$mk"
(cd "$top" && find . -path ./build -prune -o -name '*.mk' -print0 | tar -cf - --null -T -) | tar -xf - -C "$mk"
cp "$top/Makefile" "$mk/"
# parse only: a target of its own that runs nothing, and none of an outer
# make's settings (this runs inside make test-unit)
mk_parse() { printf 'mk-parse-probe: ; @:\n' | env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u RESULTS -u BUILD \
	make -s -C "$mk" -f Makefile -f - mk-parse-probe TOP="$mk" > /dev/null 2>&1; }
if ! mk_parse; then
	out FAIL make-fragments-complete "make cannot parse a full copy of the Makefile and its fragments"
else
	out PASS make-fragments-complete
	missing=
	for f in $(cd "$mk" && grep -o '^include [^ ]*' Makefile | cut -d' ' -f2); do
		mv "$mk/$f" "$mk/$f.gone"
		mk_parse && missing="$missing $f"
		mv "$mk/$f.gone" "$mk/$f"
	done
	[ -z "$missing" ] && out PASS make-missing-fragment-fails || out FAIL make-missing-fragment-fails "make ran without:$missing"
fi
# l1-hook-checks.sh in a controlled L1 without a 1G mount, or without the
# 2 GiB of node 1 it needs: hook.1g-pages FAILs, never SKIPs or PASSes.  On
# the host: a stub hook that does nothing, a fake pool, a plain directory
# taken for the 2M mount; as nobody when root, like the scripts above.
hk=$fake/hook
mkdir -p "$hk/bin" "$hk/m2" "$hk/m1g" "$hk/dmem/node0" "$hk/dmem/node1"
printf '#!/bin/sh\nexit 0\n' > "$hk/bin/dmemfs-hook"
chmod a+rx "$hk/bin/dmemfs-hook"
for n in 0 1; do echo 0 > "$hk/dmem/node$n/used_bytes"; done
echo $((2 << 30)) > "$hk/dmem/node0/free_bytes"
chmod -R a+rwX "$hk"
echo "console=ttyS0 l1.top=$copy l1.script=x" > "$fake/l1cmdline"
hook_1g() { # hook_1g M1G NODE1_FREE -> the hook.1g-pages line
	echo "$2" > "$hk/dmem/node1/free_bytes"
	(cd "$fake" && TOP=$copy L1_CMDLINE=$fake/l1cmdline L1_OUT=stdout BIN=$hk/bin DMEMFS_SYSFS_ROOT=$hk/dmem \
		DMEMFS_MAGIC_HEX=$(stat -f -c %t "$hk/m2") DMEMFS_2M_MOUNT=$hk/m2 DMEMFS_1G_MOUNT=$1 QEMU_USER=root \
		timeout 60 "${as_nobody[@]}" bash "$copy/nested-test/l1/tests/l1-hook-checks.sh" 2>&1 < /dev/null) |
		grep -E '^(PASS|FAIL|SKIP): hook\.1g-pages' | head -1
}
for c in "no-1g-mount| |$((4 << 30))" "node1-short|$hk/m1g|$((1 << 30))"; do
	IFS='|' read -r name m want <<< "$c"
	got=$(hook_1g "${m// /}" "$want")
	case "$got" in
	FAIL:*) out PASS "hook-1g-pages-fails-$name" ;;
	*) out FAIL "hook-1g-pages-fails-$name" "got '$got'" ;;
	esac
done
