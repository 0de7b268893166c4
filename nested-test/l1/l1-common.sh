# shellcheck shell=bash
# The library of every script that runs inside L1 (nested-test/README.md):
# results, the kernel log scan and the dmem pool counters, written once.
#
# Results.  Check names are AREA.CHECK: result_area sets AREA for a script
# whose checks share one, or the name carries it.  pass,
# fail and skip print one line each, "PASS: AREA.CHECK[: detail]",
# "FAIL: AREA.CHECK: reason" or "SKIP: AREA.CHECK: reason": to stdout, where
# the script that started this one reads them, or to the results channel
# in the script that owns it (l1_channel).  results_exit ends a script with
# the one exit rule of the harness: non-zero if and only if a check failed.
#
# l1_channel: for the script that guest-images/init started.  fd 3 becomes
# L1's second serial port, ttyS1, which the kernel never writes to (stdout
# when there is none), and results go there; res LINE writes LINE there
# and, marked, on the console.
# l1_only: exit 2 unless this is a test L1.  boot-l1.sh puts l1.top= on
# every L1's command line (kexec'd stages keep it), and a host never has
# it: run on a host, an in-L1 script would mount, install and start guests
# there.  Every in-L1 script calls it (l1_channel does) after --list.
l1_only() {
	if ! tr ' ' '\n' < "${L1_CMDLINE:-/proc/cmdline}" | grep -q '^l1\.top='; then
		echo "${0##*/}: refusing to run outside the test L1 (no l1.top= in ${L1_CMDLINE:-/proc/cmdline})" >&2
		exit 2
	fi
}

l1_channel() {
	l1_only
	# L1_CHANNEL_DEV: test-l1-common.sh's, so that a host's serial port is
	# never opened
	local dev=${L1_CHANNEL_DEV:-/dev/ttyS1}
	if [ -c "$dev" ] && exec 3> "$dev"; then
		stty -F "$dev" raw -echo 2> /dev/null || true
	else
		exec 3>&1
	fi
	L1_OUT=channel
}
res() { printf '%s\n' "$*" >&3; printf 'RESULT %s\n' "$*"; }

L1_OUT=${L1_OUT:-stdout}
L1_AREA=${L1_AREA:-}
L1_FAILED=0
result_area() { L1_AREA=$1; }
_result() { if [ "$L1_OUT" = channel ]; then res "$*"; else printf '%s\n' "$*"; fi; }
pass() { _result "PASS: ${L1_AREA:+$L1_AREA.}$1${2:+: $2}"; }
# L1_FAILED_CHECKS: the checks that ran and failed (not those "not run")
L1_FAILED_CHECKS=
fail() {
	_result "FAIL: ${L1_AREA:+$L1_AREA.}$1: $2"
	L1_FAILED=1
	[[ $2 == "not run"* ]] || L1_FAILED_CHECKS+=" $1"
}
skip() { _result "SKIP: ${L1_AREA:+$L1_AREA.}$1: $2"; }
check() { # check CHECK REASON-IF-FAILED CONDITION...
	local name=$1 why=$2
	shift 2
	if "$@"; then pass "$name"; else fail "$name" "$why"; fi
}
results_exit() { exit "$L1_FAILED"; }
# stop_pid PID: SIGTERM, up to 30 s to go, then SIGKILL and up to 10 s more,
# so that a daemon's pidfile is free when this returns
stop_pid() {
	kill "$1" 2> /dev/null
	for _ in $(seq 1 60); do kill -0 "$1" 2> /dev/null || return 0; sleep 0.5; done
	kill -9 "$1" 2> /dev/null
	for _ in $(seq 1 50); do kill -0 "$1" 2> /dev/null || return 0; sleep 0.2; done
}
# fail_from FIRST WHY CHECK...: every CHECK from FIRST on fails, "not run:
# WHY" (a script that cannot go on still reports each of its checks)
fail_from() {
	local first=$1 why=$2 c on=
	shift 2
	for c in "$@"; do
		[ "$c" = "$first" ] && on=1
		[ -n "$on" ] && fail "$c" "not run: $why"
	done
}

# tap_results PREFIX LOG [AWK-VAR=VALUE...]: the kselftest TAP in LOG ->
# result lines PREFIX.<test> on the results channel, and PREFIX.complete
# (the run gave as many results as its plan), through the one converter,
# scripts/tap-results.awk (its variables: notes=1, complete=NAME, want=N).
L1_TAP_AWK=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/tap-results.awk
tap_results() {
	local pfx=$1 log=$2 v out l
	local -a vars=()
	shift 2
	for v in "$@"; do vars+=(-v "$v"); done
	out=$(awk -v prefix="$pfx." "${vars[@]}" -f "$L1_TAP_AWK" "$log")
	while IFS= read -r l; do _result "$l"; done <<< "$out"
	if grep -q '^FAIL:' <<< "$out"; then L1_FAILED=1; fi
}

# Kernel log.  kernel_splats [SINCE]: the first splat lines of the kernel
# log after line SINCE (dmesg_mark), on one line; nothing when there is none.
L1_SPLAT_RE='WARNING:|BUG:|Oops|Call Trace|Kernel panic|general protection fault|possible circular locking|bad p[mu]d'
# not a splat: the advice the Spectre code prints at boot for an Intel CPU
# model under TCG (the boot of mce-l1.sh)
L1_SPLAT_NOT_RE='^(\[ *[0-9.]+\] )?RETBleed: WARNING: Spectre v2 mitigation leaves CPU vulnerable to RETBleed attacks'
dmesg_mark() { dmesg | wc -l; }
# log_splat FILE: true when FILE (a saved kernel log) has a splat other
# than the excepted lines
log_splat() { grep -aE "$L1_SPLAT_RE" "$1" | grep -avqE "$L1_SPLAT_NOT_RE"; }
# what an L2 console must not show for any retry: a splat or panic of the
# guest's kernel, an agent's FAIL, a pattern check with errors
L2_CONSOLE_BAD_RE="$L1_SPLAT_RE|status=FAIL| errors=[1-9]"
kernel_splats() {
	dmesg | tail -n +"$((${1:-0} + 1))" | grep -E "$L1_SPLAT_RE" | grep -vE "$L1_SPLAT_NOT_RE" | head -3 | tr -s ' \n' ' '
}

# ---- the one retry rule ------------------------------------------------
# A test may run again (in a fresh L1, or with a fresh L2 inside L1) only
# when L1 runs under TCG and only after a crash whose signature is named
# here; each retry is a SKIP line that carries the evidence.  Anything else,
# a timeout or a silent guest included, is a FAIL.
#   'stack guard page was hit': under TCG's emulated SVM, a KVM vCPU thread
#   of L1 overruns its stack (first seen in stop 18: the VFIO L2 boot, the
#   live update's L2s)
L1_RETRY_SIGNATURES=('stack guard page was hit')
# retry_loop CHECK MAX RUN EVIDENCE [SKIP]: the one retry loop; every
# retry of the tree, on the host and in L1, goes through it or, for a
# failure already seen, through its decision retry_grant.  It calls RUN N
# for N = 1, 2, ... up to MAX times, in this shell (RUN's variables stay).
# A failed attempt (RUN returned non-zero) that is not the last runs again
# only when retry_grant says so.  Returns RUN's last status; RETRY_ATTEMPT
# holds the attempt that counted (one global: no RUN may itself call
# retry_loop).
RETRY_ATTEMPT=0
retry_loop() {
	# its locals named apart: RUN sets its caller's variables, which
	# dynamic scope would otherwise find here first
	local _rl_check=$1 _rl_max=$2 _rl_run=$3 _rl_ev=$4 _rl_skip=${5:-skip} _rl_r
	for ((RETRY_ATTEMPT = 1; ; RETRY_ATTEMPT++)); do
		"$_rl_run" "$RETRY_ATTEMPT"
		_rl_r=$?
		[ "$_rl_r" -ne 0 ] && [ "$RETRY_ATTEMPT" -lt "$_rl_max" ] &&
			retry_grant "$_rl_check" "$RETRY_ATTEMPT" "$_rl_ev" "$_rl_skip" || return "$_rl_r"
	done
}
# retry_grant CHECK N EVIDENCE [SKIP]: succeeds when EVIDENCE N, in a
# subshell, prints the evidence of a named signature (it must end in one
# of the evidence functions below, which all refuse unless L1 runs under
# TCG), after SKIP (default: skip) recorded "CHECK-attemptN" "retried:
# EVIDENCE".
retry_grant() {
	local _rg_ev
	_rg_ev=$("$3" "$2") && [ -n "$_rg_ev" ] || return 1
	"${4:-skip}" "$1-attempt$2" "retried: $_rg_ev"
}
# retry_evidence ACCEL FILE [USED]: succeeds, printing a line of FILE (a
# console log, the kernel log of the failed attempt) with a named
# signature, only when ACCEL is tcg.  Result lines (RESULT ..., SKIP: ...)
# that quote a signature do not count, and neither do the first USED
# crashes, already spent on earlier retries: each retry needs a crash of
# its own.
retry_evidence() {
	local sig line
	[ "$1" = tcg ] && [ -r "$2" ] || return 1
	for sig in "${L1_RETRY_SIGNATURES[@]}"; do
		line=$(tr -d '\r' < "$2" | grep -F -- "$sig" | grep -v -e 'RESULT ' -e 'SKIP: ' |
			sed -n "$((${3:-0} + 1))p")
		[ -n "$line" ] || continue
		printf '%s\n' "$line" | cut -c1-200
		return 0
	done
	return 1
}
# The second named signature, for an L2 that L1 expects to run:
#   an L2 reset that its guest asked for with nothing said: QEMU's SHUTDOWN
#   event '"guest":true,"reason":"guest-reset"' for an L2 that boots with
#   panic=-1 (a panic of its kernel prints "Kernel panic" first) and whose
#   agent never reboots: a triple fault.  Under TCG's emulated SVM an L2 of
#   a running L1 stops so with anonymous memory too (stop 21's start/stop
#   loop: 4 in 27 on dmem, 1 in 12 on anonymous memory; stop 39: both L2s
#   of one live update run, 2M and 1G, and lu-2m again in the next).  A
#   memory error of ours would show first in the agent's pattern check, or
#   in L1's kernel log: a serial that is missing or empty (no sign the
#   guest ran), any agent line with errors other than 0 or nothing checked
#   (kib=0), or a splat in L1's log is no such reset.
# l2_reset_evidence ACCEL EVENTS SERIAL L1LOG [FAULTS0]: succeeds, printing
# the event and what the serial says, only when ACCEL is tcg, EVENTS (virsh
# qemu-monitor-event's output) has that reset, SERIAL shows a guest that
# ran without a crash of its kernel or an agent that saw bad memory, and
# L1LOG (L1's kernel log over the guest's life) has no splat.  With
# FAULTS0, for a guest whose events nobody heard (their listener ends with
# libvirtd), L1's trace (l2_fault_trace) may stand for the event: a
# KVM_EXIT_SHUTDOWN after its first FAULTS0 records, with the guest alone
# running.
l2_reset_evidence() {
	local ev serial lines
	[ "$1" = tcg ] && [ -s "$3" ] && [ -r "$4" ] || return 1
	ev=$(grep -aF '"guest":true,"reason":"guest-reset"' "$2" 2> /dev/null | head -1)
	[ -z "$ev" ] && [ -n "${5:-}" ] && [ "$L2_FAULT_TRACE_ON" = 1 ] &&
		ev=$(l2_triple_faults | tail -n +"$(($5 + 1))" | grep -m1 'kvm_userspace_exit:')
	[ -n "$ev" ] || return 1
	grep -aqE "$L1_SPLAT_RE" "$4" && return 1
	serial=$(tr -d '\r' < "$3")
	printf '%s\n' "$serial" | grep -aqE "$L1_SPLAT_RE|status=FAIL" && return 1
	lines=$(printf '%s\n' "$serial" | grep -a '^L2-CARRY-CHECK ')
	# every pass of the agent: errors=0 over a checked pattern
	printf '%s\n' "$lines" | grep -a . | grep -avqE ' kib=[1-9][0-9]* errors=0( |$)' && return 1
	printf '%s; serial: no panic, %s agent lines, the last: %s\n' "$(echo "$ev" | cut -c1-160)" \
		"$(printf '%s\n' "$lines" | grep -ac .)" "$(printf '%s\n' "$lines" | tail -1 | cut -c1-100)"
}
# The same fault seen from L1's KVM, which needs no QEMU event listener
# per domain: a triple fault of an L2 vCPU reaches QEMU as KVM_EXIT_SHUTDOWN
# (8), which QEMU reports as guest-reset, whether the CPU took the SVM
# SHUTDOWN intercept (exit code 0x7f) or KVM itself turned an exception
# during a double fault into one.  A reboot that the L2's kernel asks for
# (ACPI, keyboard controller, port 0xcf9; the same guest-reset event) is
# neither.  l2_fault_trace: from now on, L1's kvm_userspace_exit tracepoint
# records those exits, and kvm_exit the SHUTDOWN intercepts with the
# guest's RIP, in a trace instance of their own (tracefs: test tooling,
# never the product's); l2_triple_faults prints the records, a line each
# ("... kvm_userspace_exit: reason KVM_EXIT_SHUTDOWN (8)", "... kvm_exit:
# vcpu 0 reason shutdown rip 0x...").
L2_FAULT_TRACE=${L2_FAULT_TRACE:-/sys/kernel/tracing/instances/l2-triple-faults}
# set by l2_fault_trace once both events record; l2_fault_evidence needs it
L2_FAULT_TRACE_ON=${L2_FAULT_TRACE_ON:-}
l2_fault_trace() {
	local t=/sys/kernel/tracing e=$L2_FAULT_TRACE/events/kvm
	[ -d $t/instances ] || mount -t tracefs tracefs $t 2> /dev/null
	# errno == 0: an exit cut short (-EINTR) keeps the last exit's reason
	if mkdir -p "$L2_FAULT_TRACE" 2> /dev/null &&
		echo 'reason == 8 && errno == 0' > "$e"/kvm_userspace_exit/filter &&
		echo 'exit_reason == 127' > "$e"/kvm_exit/filter &&
		echo 1 > "$e"/kvm_exit/enable && echo 1 > "$e"/kvm_userspace_exit/enable; then
		L2_FAULT_TRACE_ON=1
	else
		echo 0 > "$e"/kvm_userspace_exit/enable 2> /dev/null
		L2_FAULT_TRACE_ON=
		return 1
	fi
}
l2_triple_faults() { grep -av '^#' "$L2_FAULT_TRACE/trace" 2> /dev/null | sed 's/^ *//'; }
# l2_fault_count: how many records so far, the mark (FAULTS0) of a run
l2_fault_count() { l2_triple_faults | grep -c .; }
# l2_fault_evidence ACCEL FAULTS0 L1LOG SERIAL...: the named signature for a
# whole in-L1 script, which started L2s of its own and may be run once more
# (l1-trunk.sh; liveupdate-l1.sh's line for run-liveupdate.sh): succeeds,
# printing the first new record, only when ACCEL is tcg, l2_fault_trace
# records, L1 recorded an L2 triple fault after its first FAULTS0 records,
# L1LOG (L1's kernel log) has no splat, there is at least one SERIAL (the
# L2s' consoles over the run), every one is there and not empty, none shows
# a panic, an oops, an agent's FAIL or a pattern with errors (a memory
# error of ours shows there first), and at least one shows an agent that
# checked memory and found it whole.
L2_FAULT_SIGNATURE='L2 triple fault under TCG'
# l2_fault_retry_evidence ACCEL FILE: retry_evidence for that line alone
# (run-liveupdate.sh; never the trunk's whole L1, whose scripts retry here)
l2_fault_retry_evidence() { local L1_RETRY_SIGNATURES=("$L2_FAULT_SIGNATURE"); retry_evidence "$1" "$2" 0; }
L2_AGENT_OK_RE='^L2-(CARRY-CHECK .* kib=[1-9][0-9]* errors=0|MEM-CHECK .* tested_kib=[1-9][0-9]* errors=0 status=PASS|AGENT-RESULT status=PASS)( |$)'
l2_fault_evidence() {
	local accel=$1 n0=$2 log=$3 new s c ok=
	shift 3
	[ "$accel" = tcg ] && [ "$L2_FAULT_TRACE_ON" = 1 ] && [ -r "$log" ] && [ $# -gt 0 ] || return 1
	new=$(l2_triple_faults | tail -n +"$((n0 + 1))")
	printf '%s\n' "$new" | grep -q 'kvm_userspace_exit:' || return 1
	log_splat "$log" && return 1
	for s in "$@"; do
		[ -s "$s" ] || return 1
		c=$(tr -d '\r' < "$s")
		printf '%s\n' "$c" | grep -aqE "$L2_CONSOLE_BAD_RE" && return 1
		printf '%s\n' "$c" | grep -aqE "$L2_AGENT_OK_RE" && ok=1
	done
	[ -n "$ok" ] || return 1
	# the intercept's line has the RIP; one KVM made has only its exit
	printf '%s (%s in this run, L1 log and %s L2 consoles clean): %s\n' "$L2_FAULT_SIGNATURE" \
		"$(printf '%s\n' "$new" | grep -c 'kvm_userspace_exit:')" "$#" \
		"$(printf '%s\n' "$new" | { grep 'kvm_exit:' || printf '%s\n' "$new"; } | head -1 | cut -c1-200)"
}
# The fourth: a guest whose vCPU stands, at two samples, at an address of
# L1's own __svm_vcpu_run, the code around VMRUN.  No guest's code is there
# (L1's text, at L1's KASLR offset): TCG's emulated SVM wrote L1's state
# over the guest's at a #VMEXIT, and the guest resumed at L1's next
# instruction after VMRUN (__svm_vcpu_run+0x9c in this build).  Measured in
# stop 43: kvm_nested_dmem --race hung so in 1 of 14 runs (rip
# 0xffffffff835107cc), a silent L2 of a stress loop in its decompressor
# (rip 0xffffffffb8b107cc), both __svm_vcpu_run+0x9c under their L1's
# KASLR.  A bug of ours that corrupts guest memory cannot set a guest's RIP
# there.  l1_state_evidence ACCEL TEXT: succeeds, printing the first
# sample, when ACCEL is tcg and TEXT (kvm_nested_dmem's FAIL line) has two
# samples "rip 0x... (L1: __svm_vcpu_run+0x...)".
l1_state_evidence() {
	local s
	[ "$1" = tcg ] || return 1
	s=$(printf '%s\n' "$2" | grep -o -E 'rip 0x[0-9a-f]+ \(L1: __svm_vcpu_run\+0x[0-9a-f]+\)')
	[ "$(printf '%s\n' "$s" | grep -c .)" -ge 2 ] || return 1
	printf '%s\n' "$s" | head -1
}
# l1_state_explains FAILS: the samples explain a run's FAIL lines (one per
# line) only where they stand: true when every one carries them or is a
# check not run, so that a failure of its own never passes on a second run
l1_state_explains() {
	[ "$(printf '%s\n' "$1" | grep -a . | grep -avcE '^FAIL: [^:]*: not run|\(L1: __svm_vcpu_run\+0x')" = 0 ]
}
# Its other face, when the guest took L1's paging state too: L1's trace
# (l2_fault_trace) records an SVM SHUTDOWN intercept while a #PF with error
# code 0x18 (a reserved bit, on an instruction fetch) was being delivered,
# at the guest's own RIP.  Measured in stop 43 with kvm_nested_dmem --race
# on dmemfs 2M (3 in 98 runs) and on tmpfs with huge pages, no dmem at all
# (2 in 31): not ours.  l1_shutdown_evidence ACCEL FAULTS0: succeeds,
# printing the record, when ACCEL is tcg and a kvm_exit record after the
# first FAULTS0 lines of l2_triple_faults is that one.
l1_shutdown_evidence() {
	[ "$1" = tcg ] || return 1
	l2_triple_faults | tail -n +"$(($2 + 1))" |
		grep -m1 -E 'kvm_exit: vcpu [0-9]+ reason shutdown rip 0x[0-9a-f]+ .*intr_info 0x80000b0e error_code 0x00000018' |
		cut -c1-220 | grep .
}
# l1_outer_accel: inside L1, the outer accelerator (boot-l1.sh's l1.accel=): tcg or kvm
l1_outer_accel() { tr ' ' '\n' < "${L1_CMDLINE:-/proc/cmdline}" | sed -n 's/^l1\.accel=//p' | tail -1; }

# The dmem pool (/sys/kernel/mm/dmem).  pool_bytes NODE WHAT: WHAT_bytes of
# node NODE; pool_sum WHAT: over all nodes.  A counter that is not there
# reads "absent!", which no comparison or $((...)) takes for a number: a
# pool that vanished (a kexec into a kernel without dmem=) must fail a
# "nothing used" check, not pass it as 0.
DMEM_SYSFS=${DMEMFS_SYSFS_ROOT:-/sys/kernel/mm/dmem}
# meminfo_kb FIELD: a /proc/meminfo field in kB (empty when there is none)
meminfo_kb() { awk -v f="$1:" '$1 == f {print $2}' /proc/meminfo; }
pool_bytes() { cat "$DMEM_SYSFS/node$1/$2_bytes" 2> /dev/null || echo 'absent!'; }
pool_sum() {
	local f t=0 n=0
	for f in "$DMEM_SYSFS"/node*/"$1"_bytes; do
		[ -r "$f" ] || continue
		t=$((t + $(cat "$f"))) n=$((n + 1))
	done
	if [ "$n" -gt 0 ]; then echo "$t"; else echo 'absent!'; fi
}

# The magic number of dmemfs (include/uapi/linux/magic.h of the series), as
# stat -f -c %t prints it (test-l1-common.sh sets another: a host has no
# dmemfs).
DMEMFS_MAGIC_HEX=${DMEMFS_MAGIC_HEX:-2ace90c6}
is_dmemfs() { [ "$(stat -f -c %t "$1" 2> /dev/null)" = "$DMEMFS_MAGIC_HEX" ]; }

# l1_script_check PATH: the name of the check on a whole tests/l1-*.sh
# script (its exit status and the pool it leaves), l1.script-NAME.
l1_script_check() { local b=${1##*/}; b=${b#l1-}; echo "l1.script-${b%.sh}"; }

# l1_test_scripts TOP SKIP: the in-L1 test scripts,
# nested-test/l1/tests/l1-*.sh, a line
# each: "run PATH", or "skip PATH" when the path contains SKIP (the word of
# l1.skip= on L1's command line; empty: none).  The trunk runs them, and
# the host driver expects their checks, from this one list.
l1_test_scripts() {
	local s rel
	for s in "$1"/nested-test/l1/tests/l1-*.sh; do
		[ -e "$s" ] || continue
		rel=${s#"$1"/}
		if [ -n "$2" ] && [ "${rel#*"$2"}" != "$rel" ]; then echo "skip $s"; else echo "run $s"; fi
	done
}
