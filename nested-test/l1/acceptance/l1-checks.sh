#!/bin/bash
# The nested acceptance of issue 7, run inside L1 (our kernel, 2 NUMA nodes
# with dmem=): libvirtd with the dmemfs hook and qemu-memdev-wrapper, L2
# guests from guest-images/l2 under KVM on dmem.
#
# Prints "PASS: accept.<check>[: numbers]" / "FAIL: accept.<check>: reason"
# lines on stdout (progress on stderr) and leaves the pool, the mounts it made
# and the daemons as it found them.  Run by nested-test/l1/tests/l1-virsh.sh
# (from l1-trunk.sh, inside `make test`) and by l1-accept.sh (`make accept`).
#
# Environment: see ../l2-lib.sh; ACC_SOAK (cycles, default 15: libvirt compiles
# the domain's AppArmor profile several times a start, about 2 s each under
# TCG), ACC_BUDGET (s, 420: past it the soak stops after its third cycle,
# and passes on the clean cycles it ran; make test's whole run is held under
# an hour on 2 cores, and l1-trunk.sh kills a script at 900 s), ACC_ADM_CELL_MIB
# (admission shape: two cells of this size on nodes 0 and 1; default auto: a third
# of the smaller free pool).
set -u
here=$(cd "$(dirname "$0")" && pwd)
TOP=${TOP:-$(cd "$here/../../.." && pwd)}
# shellcheck source=nested-test/l1/l2-lib.sh
. "$here/../l2-lib.sh"
SOAK=${ACC_SOAK:-15}
SOAK_MIN=3 # cycles the soak needs, whatever the budget leaves
BUDGET=${ACC_BUDGET:-420} # seconds from the start after which the soak stops early
ADM_MIB=${ACC_ADM_CELL_MIB:-auto}
C0=64 C1=128 # the acceptance guest: cell 0 64 MiB on node 0, cell 1 128 MiB on node 1
T0=$SECONDS

result_area accept
CHECKS=(setup virsh-start virsh-numa virsh-l2-agent virt-install release-destroy release-kill9
	admission capacity-live host-setup capacity-fleet tenant-isolation refuse-dmemfs-path refuse-hotplug refuse-unservable refuse-unconfined reconnect soak soak-dmesg cleanup)
if [ "${1:-}" = --list ]; then
	printf 'accept.%s\n' "${CHECKS[@]}"
	exit 0
fi
l1_only
# L2 triple faults, as L1 sees them (l2_reset_evidence for acc-rc)
l2_fault_trace > /dev/null 2>&1
skip_all() {
	local c
	for c in "${CHECKS[@]}"; do [ "$c" = setup ] || fail "$c" "not run ($1)"; done
	results_exit
}

# ---- setup
step=""
setup() {
	step="build/bin/dmem-capacity"
	[ -x "$BUILD/bin/dmem-capacity" ] || return 1
	step="the dmem pool ($SYSFS/node0, node1)"
	[ -d "$SYSFS/node0" ] && [ -d "$SYSFS/node1" ] || return 1
	acc_setup || { step=$ACC_STEP; return 1; }
}
BASE=$(pool_free_all)
acc_log "pool at start: $(pool_mib)"
t=$SECONDS
if setup; then
	pass setup "dmemfs on $M2 and $M1G, hook and wrapper installed, libvirtd up in $((SECONDS - t)) s"
else
	fail setup "$step failed$(tail -1 /var/log/libvirt/libvirtd.log 2> /dev/null | sed 's/^/; libvirtd.log: /')"
	acc_stop_all
	skip_all "setup failed"
fi
trap 'acc_stop_all' EXIT
[ "$(pool_free_all)" = "$BASE" ] || BASE=$(pool_free_all) # mounts cost nothing, but be exact
used0() { pool_bytes 0 used; }
used1() { pool_bytes 1 used; }
back_to_base() { [ "$(pool_free_all)" = "$BASE" ]; }
# libvirt runs the release hook, and QEMU's mappings go, only after the
# domain is reported shut off: give the pool up to $1 s to come back.
wait_base() {
	local end=$((SECONDS + $1))
	until back_to_base; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.5
	done
}
base_why() { echo "pool free $(pool_free_all) B, baseline $BASE B"; }

# Right after a start: is QEMU on the hook's dmemfs files (START_OK/WHY), did
# cell N land on node N (NUMA_OK/WHY); then wait for the agent's line
# (AGENT_OK, AGENT_SUM, AGENT_LINE).
check_running_guest() { # check_running_guest PREFIX NAME UUID T_START_MS U0 U1
	local pfx=$1 name=$2 uuid=$3 t0=$4 u0=$5 u1=$6 pid maps d0 d1 line ms status
	l2_watch "$name" # how it ends, for qemu_diag when the agent stays silent
	pid=$(qemu_pid "$name")
	maps=$(grep -c "$(domdir "$M2" "$uuid")/ram-node" "/proc/$pid/maps" 2> /dev/null)
	d0=$(($(used0) - u0)) d1=$(($(used1) - u1))
	START_OK=
	START_WHY="QEMU pid '${pid}' maps ${maps:-0} of the 2 dmemfs files under $(domdir "$M2" "$uuid") ($(ls "$(domdir "$M2" "$uuid")" 2>&1 | tr '\n' ' '))"
	if [ -n "$pid" ] && [ "${maps:-0}" -ge 2 ]; then
		START_OK=1
		START_WHY="started after $(ms_to_s $(($(now_ms) - t0))) s; QEMU pid $pid maps $(domdir "$M2" "$uuid")/ram-node0 and ram-node1"
	fi
	NUMA_OK=
	NUMA_WHY="cell 0 ($C0 MiB) -> node0 used +$((d0 / MiB)) MiB, cell 1 ($C1 MiB) -> node1 used +$((d1 / MiB)) MiB"
	[ "$d0" -eq $((C0 * MiB)) ] && [ "$d1" -eq $((C1 * MiB)) ] && NUMA_OK=1
	line=$(wait_serial "$(serial_of "$name")" '^L2-AGENT-RESULT' 300)
	ms=$(($(now_ms) - t0))
	AGENT_LINE=$line
	status=$(agent_field "$line" status)
	AGENT_OK=
	[ "$status" = PASS ] && AGENT_OK=1
	AGENT_SUM="L2 boot (start to agent result) $(ms_to_s "$ms") s, guest kernel to init $(agent_field "$line" boot_s) s; agent: tested $(agent_mib "$line" tested_kib) of $(agent_mib "$line" mem_total_kib) MiB guest RAM ($(agent_field "$line" tested_pct)%) on $(agent_field "$line" nodes) guest nodes in $(agent_field "$line" pattern_s) s, $(agent_field "$line" pattern_errors) pattern errors; steal ticks $(agent_field "$line" steal_ticks) (feature $(agent_field "$line" steal_feature)); clocksource $(agent_field "$line" clocksource), $(agent_field "$line" clock_backwards) backwards steps, 200 ms sleep took $(agent_field "$line" sleep200_ms) ms"
	[ -n "$line" ] || AGENT_SUM="no L2-AGENT-RESULT line in $(serial_of "$name") after $(ms_to_s "$ms") s (domain $(domstate "$name"); last serial line: $(tr -d '\r' < "$(serial_of "$name")" 2> /dev/null | grep -v '^\s*$' | tail -1 | cut -c1-160); $(qemu_diag "$name"))"
	acc_log "$pfx: $AGENT_SUM"
	acc_log "$pfx: $line"
}

# agent_mib LINE KEY: the KiB field KEY of an agent line in MiB (0 if missing)
agent_mib() {
	local v
	v=$(agent_field "$1" "$2")
	echo $((${v:-0} / 1024))
}

# ---- 1. virsh define + start of the 2-cell domain
name=acc-virsh uuid=$(new_uuid)
mkdomain "$name" "$uuid" $C0 $C1 > "/tmp/$name.xml"
rm -f "$(serial_of $name)"
u0=$(used0) u1=$(used1)
t=$SECONDS
if ! err=$(virsh define "/tmp/$name.xml" 2>&1); then
	fail virsh-start "virsh define: $err"
	fail virsh-numa "not run (define failed)"
	fail virsh-l2-agent "not run (define failed)"
else
	acc_log "virsh define took $((SECONDS - t)) s (includes probing the wrapper's capabilities)"
	t0=$(now_ms)
	if ! err=$(virsh start "$name" 2>&1); then
		fail virsh-start "virsh start: $(echo "$err" | tr -s '\n' ' ')"
		fail virsh-numa "not run (start failed)"
		fail virsh-l2-agent "not run (start failed)"
	else
		check_running_guest virsh "$name" "$uuid" "$t0" "$u0" "$u1"
		if [ -n "$START_OK" ]; then pass virsh-start "$START_WHY"; else fail virsh-start "$START_WHY"; fi
		if [ -n "$NUMA_OK" ]; then pass virsh-numa "$NUMA_WHY"; else fail virsh-numa "$NUMA_WHY"; fi
		if [ -n "$AGENT_OK" ]; then pass virsh-l2-agent "$AGENT_SUM"; else fail virsh-l2-agent "$AGENT_SUM; line: ${AGENT_LINE:-none}"; fi
		wait_state "$name" "shut off" 60 || virsh destroy "$name" > /dev/null 2>&1
	fi
	virsh undefine "$name" > /dev/null 2>&1
fi
wait_base 60 || acc_log "after acc-virsh: $(base_why)"

# ---- 2. the same guest with plain virt-install
name=acc-vi
rm -f "$(serial_of $name)"
u0=$(used0) u1=$(used1)
t0=$(now_ms)
VI_CMD=(virt-install --connect qemu:///system --name "$name" --memory $((C0 + C1)) --vcpus 1
	--osinfo linux2022 --import --disk none --network none --graphics none --noautoconsole
	--cpu "host-passthrough,numa.cell0.id=0,numa.cell0.cpus=0,numa.cell0.memory=$((C0 * 1024)),numa.cell1.id=1,numa.cell1.memory=$((C1 * 1024))"
	--numatune "memnode0.cellid=0,memnode0.mode=strict,memnode0.nodeset=0,memnode1.cellid=1,memnode1.mode=strict,memnode1.nodeset=1"
	--memorybacking "source.type=file,access.mode=shared"
	--boot "emulator=$WRAPPER,kernel=$IMAGES/l2-bzImage,initrd=$IMAGES/l2-initramfs.cpio.gz,kernel_args=$L2_CMDLINE_BASE"
	--serial "file,path=$(serial_of $name)" --controller "usb,model=none" --memballoon none
	--events "on_poweroff=destroy,on_reboot=destroy,on_crash=destroy"
	--xml ./metadata/dmemfs/@xmlns=http://dmemfs-host.org/xmlns/dmemfs/1.0
	--xml ./metadata/dmemfs/@pagesize=2M)
acc_log "${VI_CMD[*]}"
if ! err=$("${VI_CMD[@]}" 2>&1); then
	fail virt-install "$(echo "$err" | grep -v '^\s*$' | tail -3 | tr -s '\n' ' ')"
else
	t1=$(now_ms)
	uuid=$(virsh domuuid "$name" 2> /dev/null | head -1)
	check_running_guest vi "$name" "$uuid" "$t0" "$u0" "$u1"
	md=$(virsh dumpxml "$name" 2> /dev/null | grep -c 'dmemfs-host.org/xmlns/dmemfs')
	why="virt-install returned after $(ms_to_s $((t1 - t0))) s; $START_WHY; our metadata in the live XML: $md; $NUMA_WHY; $AGENT_SUM"
	if [ -n "$START_OK" ] && [ -n "$NUMA_OK" ] && [ -n "$AGENT_OK" ] && [ "$md" -ge 1 ]; then pass virt-install "$why"
	else fail virt-install "$why; line: ${AGENT_LINE:-none}"; fi
	wait_state "$name" "shut off" 60 || virsh destroy "$name" > /dev/null 2>&1
	virsh undefine "$name" > /dev/null 2>&1
fi
wait_base 60 || acc_log "after acc-vi: $(base_why)"

# ---- 3. release: destroy + undefine, and kill -9 of QEMU
name=acc-rel uuid=$(new_uuid)
u0=$(used0) u1=$(used1)
mkdomain "$name" "$uuid" $C0 $C1 > "/tmp/$name.xml"
if ! err=$(virsh define "/tmp/$name.xml" 2>&1) || ! err=$(virsh start --paused "$name" 2>&1); then
	fail release-destroy "define/start: $(echo "$err" | tr -s '\n' ' ')"
	fail release-kill9 "not run (start failed)"
else
	held=$(($(used0) + $(used1) - u0 - u1))
	virsh destroy "$name" > /dev/null 2>&1
	virsh undefine "$name" > /dev/null 2>&1
	wait_base 30
	left=$(dom_files "$uuid")
	if back_to_base && [ -z "$left" ] && [ "$held" -eq $(((C0 + C1) * MiB)) ]; then
		pass release-destroy "held $((held / MiB)) MiB while running, pool back to baseline ($(pool_mib)), no files left"
	else
		fail release-destroy "held $((held / MiB)) MiB; after destroy+undefine: $(base_why); left: ${left:-nothing}"
	fi
	# kill -9: libvirt sees QEMU die and runs the release hook
	virsh define "/tmp/$name.xml" > /dev/null 2>&1
	if ! err=$(virsh start --paused "$name" 2>&1); then
		fail release-kill9 "virsh start --paused: $(echo "$err" | tr -s '\n' ' ')"
	else
		pid=$(qemu_pid "$name")
		held=$(($(used0) + $(used1) - u0 - u1))
		kill -9 "$pid"
		wait_state "$name" "shut off" 30
		st=$(domstate "$name")
		for i in $(seq 1 20); do back_to_base && break; sleep 0.5; done
		left=$(dom_files "$uuid")
		if [ "$st" = "shut off" ] && back_to_base && [ -z "$left" ] && [ "$held" -gt 0 ]; then
			pass release-kill9 "QEMU pid $pid killed with SIGKILL: domain shut off, $((held / MiB)) MiB back, pool at baseline, no files left"
		else
			fail release-kill9 "after kill -9 of $pid: domain '$st', held $((held / MiB)) MiB, $(base_why), left: ${left:-nothing}"
		fi
	fi
	virsh undefine "$name" > /dev/null 2>&1
fi

# ---- 4b. what operators export, read while the admission guests run:
# --prometheus equals the pool in sysfs and says no more guest of the shape
# fits (the hook just refused one), --recommend gives a dmem= line
capacity_live() {
	local prom rec n k want got wrong='' fits
	prom=$("$BUILD/bin/dmem-capacity" --dmem-pagesize 2M --guest "$shape" --prometheus 2> /tmp/acc-prom.err)
	for n in 0 1; do
		for k in total free used pinned poisoned; do
			want=$(cat "$SYSFS/node$n/${k}_bytes" 2> /dev/null)
			got=$(printf '%s\n' "$prom" | sed -n "s/^dmem_pool_${k}_bytes{node=\"$n\"} //p")
			[ -n "$want" ] && [ "$got" = "$want" ] || wrong="$wrong node$n ${k}_bytes=${got:-none} (sysfs ${want:-none});"
		done
	done
	# zeroed moves while the zeroers work: present, and not more than free
	for n in 0 1; do
		got=$(printf '%s\n' "$prom" | sed -n "s/^dmem_pool_zeroed_bytes{node=\"$n\"} //p")
		want=$(printf '%s\n' "$prom" | sed -n "s/^dmem_pool_free_bytes{node=\"$n\"} //p")
		[[ $got =~ ^[0-9]+$ ]] && [ "$got" -le "${want:-0}" ] || wrong="$wrong node$n zeroed_bytes=${got:-none} (free ${want:-none});"
	done
	fits=$(printf '%s\n' "$prom" | sed -n "s/^dmem_capacity_guests{shape=\"$shape\",model=\"dmem-free\"} //p")
	[ "$fits" = 0 ] || wrong="$wrong dmem-free guests ${fits:-none}, the hook refused the next one;"
	rec=$("$BUILD/bin/dmem-capacity" --dmem-pagesize 2M --guest "$shape" --recommend --json 2> /tmp/acc-rec.err |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["recommend"]["dmem"])' 2> /dev/null)
	[[ $rec =~ ^!?[0-9]+[KMG]:[0-9]+[KMG]$ ]] || wrong="$wrong --recommend gave '${rec:-nothing}' ($(head -1 /tmp/acc-rec.err));"
	if [ -z "$wrong" ]; then
		pass capacity-live "--prometheus pool = sysfs on both nodes, 0 more guests of $shape fit; --recommend dmem=$rec"
	else
		wrong=${wrong%;}
		fail capacity-live "${wrong# }"
	fi
}

# ---- 4c. dmemfs-host-setup, while the admission guests run: up refuses a
# dmem-node<N> pool defined otherwise and undoes what it did; up makes a
# nodes=N instance per node under /run/dmemfs-stats and a running,
# autostarted dir pool dmem-node<N> on it; a second up changes nothing.
# host_setup_down (after the fleet check): down removes both and leaves the
# configured mount points mounted (they hold the guests' memory).
SETUP_ST=/run/dmemfs-stats SETUP_4K=/run/dmemfs/4K
setup_state() { # pools and stats mounts, one line
	local n
	for n in 0 1; do
		printf 'node%s: pool %s, %s; ' "$n" \
			"$(nodepool_state $n)" \
			"$(grep " $SETUP_ST/node$n dmemfs " /proc/mounts | awk '{print $4}' | grep -o 'nodes=[0-9]*' || echo 'not mounted')"
	done
}
host_setup_up() {
	local out want
	SETUP_WHY=''
	virsh pool-define-as dmem-node1 dir --target /tmp/acc-foreign > /dev/null 2>&1
	if out=$("$SETUP" up 2>&1); then
		SETUP_WHY="up with a foreign dmem-node1 succeeded: $out;"
	elif ! printf '%s' "$out" | grep -q 'dmem-node1 exists with another definition.*nothing changed'; then
		SETUP_WHY="up with a foreign dmem-node1: '$out';"
	fi
	virsh pool-undefine dmem-node1 > /dev/null 2>&1
	want='node0: pool none, not mounted; node1: pool none, not mounted; '
	[ "$(setup_state)" = "$want" ] || SETUP_WHY="$SETUP_WHY after the refused up: $(setup_state);"
	[ ! -e $SETUP_ST ] || SETUP_WHY="$SETUP_WHY the refused up left $SETUP_ST;"
	! is_dmemfs $SETUP_4K || SETUP_WHY="$SETUP_WHY the refused up left $SETUP_4K mounted;"
	out=$("$SETUP" up 2>&1) || SETUP_WHY="$SETUP_WHY up: $out;"
	want='node0: pool running/yes, nodes=0; node1: pool running/yes, nodes=1; '
	[ "$(setup_state)" = "$want" ] || SETUP_WHY="$SETUP_WHY after up: $(setup_state);"
	for m in $SETUP_ST/node0 $SETUP_ST/node1 $SETUP_4K; do
		grep " $m dmemfs " /proc/mounts | grep -q 'nosuid,nodev,noexec' ||
			SETUP_WHY="$SETUP_WHY $m: $(grep " $m " /proc/mounts | cut -d' ' -f3-4 || echo 'not mounted');"
	done
	out=$("$SETUP" up 2>&1)
	printf '%s' "$out" | grep -q 'up: 0 mount(s) made, 2 storage pool(s)' ||
		SETUP_WHY="$SETUP_WHY a second up: $out;"
}
host_setup_down() {
	local out
	out=$("$SETUP" down 2>&1) || SETUP_WHY="$SETUP_WHY down: $out;"
	printf '%s' "$out" | grep -q 'down: 2 storage pool(s)' || SETUP_WHY="$SETUP_WHY down said: $out;"
	[ "$(setup_state)" = 'node0: pool none, not mounted; node1: pool none, not mounted; ' ] ||
		SETUP_WHY="$SETUP_WHY after down: $(setup_state);"
	[ ! -e $SETUP_ST ] || SETUP_WHY="$SETUP_WHY $SETUP_ST left behind;"
	for m in "$M2" "$M1G" $SETUP_4K; do
		is_dmemfs "$m" || SETUP_WHY="$SETUP_WHY $m unmounted by down;"
	done
	umount $SETUP_4K # up made it (the configuration's default 4K mount point); 6a wants none
	out=$("$SETUP" down 2>&1)
	printf '%s' "$out" | grep -q 'down: 0 storage pool(s)' || SETUP_WHY="$SETUP_WHY a second down: $out;"
	if [ -z "$SETUP_WHY" ]; then
		pass host-setup "up refused a foreign dmem-node1 and undid itself; up: pools running and autostarted on nodes=N instances (nosuid,nodev,noexec); up again: no change; down: pools and instances gone, the configured mount points kept"
	else
		SETUP_WHY=${SETUP_WHY%;}
		fail host-setup "${SETUP_WHY# }"
	fi
}

# ---- 4d. the fleet view over libvirt, read while the admission guests run:
# the dmem-node<N> pools dmemfs-host-setup made (4c);
# dmem-capacity --connect reads this host over two libvirt connections (the
# second one counted once) and the test driver as a host without dmem, and
# gives the pool of each node as sysfs has it (free in whole 2M dpages), the
# same guests as the local read, and the same figures in --prometheus
capacity_fleet() {
	local n out prom wrong='' local_json
	local_json=$("$BUILD/bin/dmem-capacity" --dmem-pagesize 2M --guest "$shape" --json 2> /dev/null)
	out=$("$BUILD/bin/dmem-capacity" --dmem-pagesize 2M --guest "$shape" --json --refresh \
		--connect qemu:///system --connect qemu+unix:///system --connect test:///default 2> /tmp/acc-fleet.err)
	wrong="$wrong$(LOCAL="$local_json" SYSFS="$SYSFS" python3 -c '
import json, os, sys
d, loc, why = json.loads(sys.stdin.read()), json.loads(os.environ["LOCAL"]), []
h = d["hosts"]
def sysfs(n, k):
    return int(open("%s/node%d/%s_bytes" % (os.environ["SYSFS"], n, k)).read())
def fit(rep, model):
    return [f["per_host"] for f in rep["shapes"][0]["fit"] if f["model"] == model][0]
if not h[0].get("refreshed") or h[0].get("dmem_pools") != 2:
    why.append("qemu:///system: refreshed %s, %s dmem pools" % (h[0].get("refreshed"), h[0].get("dmem_pools")))
for nd in h[0]["host"]["nodes"]:
    n, M2 = nd["node"], 2 << 20
    if nd["dmem_total_bytes"] != sysfs(n, "total") or nd["dmem_free_bytes"] != sysfs(n, "free") // M2 * M2:
        why.append("node%d over libvirt: total %d free %d, sysfs %d %d" % (n, nd["dmem_total_bytes"], nd["dmem_free_bytes"], sysfs(n, "total"), sysfs(n, "free")))
for m in ("dmem-free", "dmem-booted"):
    if fit(h[0], m) != fit(loc, m):
        why.append("%s: %d guests over libvirt, %d read locally" % (m, fit(h[0], m), fit(loc, m)))
if h[1].get("same_host_as") != 0:
    why.append("qemu+unix:///system not recognised as the same host")
if h[2].get("dmem_pools") != 0 or "error" in h[2]:
    why.append("test:///default: %s" % h[2])
tot = {f["model"]: f["guests"] for f in d["total"]["shapes"][0]["fit"]}
want = fit(h[0], "dmem-booted")
if tot.get("dmem-booted") != want:
    why.append("total dmem-booted %s, want %d (this host once, the test host has none)" % (tot.get("dmem-booted"), want))
print(" " + "; ".join(why) + ";" if why else "")
print("fleet: %d hosts, node0 free %d MiB, dmem-booted %d, total 4K %d" % (len(h), h[0]["host"]["nodes"][0]["dmem_free_bytes"] >> 20, want, tot["struct-page-4k"]), file=sys.stderr)
' <<< "$out" 2>> /tmp/acc-fleet.err || echo " no fleet JSON ($(head -1 /tmp/acc-fleet.err));")"
	prom=$("$BUILD/bin/dmem-capacity" --dmem-pagesize 2M --guest "$shape" --prometheus --connect qemu:///system 2>> /tmp/acc-fleet.err)
	for n in 0 1; do
		local got want
		got=$(printf '%s\n' "$prom" | sed -n "s/^dmem_pool_total_bytes{host=\"[^\"]*\",uri=\"qemu:\/\/\/system\",node=\"$n\"} //p")
		want=$(cat "$SYSFS/node$n/total_bytes")
		[ "$got" = "$want" ] || wrong="$wrong --prometheus node$n total ${got:-none} (sysfs $want);"
	done
	if [ -z "$wrong" ]; then
		pass capacity-fleet "$(tail -1 /tmp/acc-fleet.err); over libvirt = sysfs on both nodes, the second connection counted once, --prometheus labelled by host"
	else
		wrong=${wrong%;}
		fail capacity-fleet "${wrong# }"
	fi
}

# ---- 4e. tenants, read while the admission guests run: one guest's QEMU,
# as an attacker who took it over, cannot open another guest's memory file.
# Every QEMU runs as the qemu user, which owns every guest's files (0600), so
# only the domain's AppArmor profile (libvirt-<uuid>, with our snippet) stands
# in the way.  The attack is QEMU's own: object-add of a memory-backend-file
# on the other guest's file, through A's monitor.  Controls: A's QEMU runs in
# its profile, enforced; the same object-add on A's own file works (so the
# refusal is not QEMU failing for another reason); and the qemu user outside
# any profile reads B's file (so the profile, not file modes, is what refuses).
qmp_add_file() { # qmp_add_file DOMAIN PATH -> QMP reply on one line
	virsh qemu-monitor-command "$1" "{\"execute\":\"object-add\",\"arguments\":{\"qom-type\":\"memory-backend-file\",\"id\":\"acc-steal\",\"mem-path\":\"$2\",\"size\":$((2 * MiB)),\"align\":$((2 * MiB)),\"share\":true}}" 2>&1 | tr -s '\n' ' '
}
tenant_isolation() {
	local ua ub pa pb bfd fa fb out why='' label p
	ua=$(virsh domuuid acc-adm-0 2> /dev/null) ub=$(virsh domuuid acc-adm-1 2> /dev/null)
	pa=$(qemu_pid acc-adm-0)
	if [ -z "$ua" ] || [ -z "$ub" ] || [ -z "$pa" ] || [ -z "$(qemu_pid acc-adm-1)" ]; then
		fail tenant-isolation "not run: two admission guests are not running (uuids '$ua' '$ub', QEMU '$pa')"
		return
	fi
	fa=$(domdir "$M2" "$ua")/ram-node0 fb=$(domdir "$M2" "$ub")/ram-node0
	label=$(tr -d '\0' < "/proc/$pa/attr/current" 2> /dev/null)
	[ "$label" = "libvirt-$ua (enforce)" ] || why="$why QEMU $pa runs as '$label', not libvirt-$ua (enforce);"
	[ -f "$fb" ] && [ -f "$fa" ] || why="$why no files to attack ($fa, $fb);"
	# the attack, and the same through B's QEMU's /proc (its root, its fd)
	pb=$(qemu_pid acc-adm-1)
	bfd=$(find "/proc/$pb/fd" -lname "$fb" -printf '%f\n' 2> /dev/null | head -1)
	[ -n "$bfd" ] || why="$why B's QEMU $pb holds no fd on $fb;"
	for p in "/proc/$pb/root$fb" "/proc/$pb/fd/$bfd"; do
		out=$(qmp_add_file acc-adm-0 "$p")
		printf '%s' "$out" | grep -q 'Permission denied' || why="$why A's object-add on $p: $out;"
		virsh qemu-monitor-command acc-adm-0 '{"execute":"object-del","arguments":{"id":"acc-steal"}}' > /dev/null 2>&1
	done
	out=$(qmp_add_file acc-adm-0 "$fb")
	if printf '%s' "$out" | grep -q '"return"'; then
		why="$why A's QEMU opened B's $fb: $out;"
		virsh qemu-monitor-command acc-adm-0 '{"execute":"object-del","arguments":{"id":"acc-steal"}}' > /dev/null 2>&1
	elif ! printf '%s' "$out" | grep -q 'Permission denied'; then
		why="$why A's object-add on B's file failed otherwise: $out;"
	fi
	dmesg | grep 'apparmor="DENIED" operation="open"' | grep "profile=\"libvirt-$ua\"" | grep -q "name=\"$fb\"" ||
		why="$why no AppArmor denial of $fb for libvirt-$ua in the kernel log;"
	# control: A's own file
	out=$(qmp_add_file acc-adm-0 "$fa")
	printf '%s' "$out" | grep -q '"return"' || why="$why A's object-add on its own $fa: $out;"
	virsh qemu-monitor-command acc-adm-0 '{"execute":"object-del","arguments":{"id":"acc-steal"}}' > /dev/null 2>&1
	# control: file modes alone let the qemu user in
	# (dmemfs files have no read(): the open is what is in question)
	setpriv --reuid=libvirt-qemu --regid="$(id -g libvirt-qemu)" --init-groups \
		dd if="$fb" of=/dev/null count=0 status=none 2> /tmp/acc-control.err ||
		why="$why the control open of $fb as the unconfined qemu user failed ($(head -1 /tmp/acc-control.err)), so the test cannot tell the profile's refusal from the file mode's;"
	if [ -z "$why" ]; then
		pass tenant-isolation "A's QEMU (libvirt-$ua, enforce) refused B's memory file (Permission denied, AppArmor DENIED in the kernel log), opened its own; the unconfined qemu user can open B's file, and B's QEMU's /proc root and fd refused too, so the profile is what keeps tenants apart"
	else
		why=${why%;}
		fail tenant-isolation "${why# }"
	fi
}

# The same attack through libvirt: a domain whose XML names B's memory file
# (as its serial file: directly, through a symlink elsewhere, as a glob) is
# refused at prepare, before libvirt opens the file as root or
# virt-aa-helper puts it in the profile.  A 9p share of the directory above
# the mounts passes that (it is not on dmemfs) but makes virt-aa-helper
# grant "$MOUNTS/**": the hook reads the rules virt-aa-helper wrote at start
# begin, before QEMU runs, and refuses that.
refuse_dmemfs_path() {
	local ub fb id name=acc-steal uuid p why='' err msg want share
	ub=$(virsh domuuid acc-adm-1 2> /dev/null)
	fb=$(domdir "$M2" "$ub")/ram-node0
	id=$(stat -c '%i %s' "$fb" 2> /dev/null)
	if [ -z "$ub" ] || [ -z "$id" ]; then
		fail refuse-dmemfs-path "not run: no admission guest B ('$ub', $fb)"
		return
	fi
	ln -sfn "$fb" /tmp/acc-steal-link
	share="<filesystem type='mount' accessmode='passthrough'><source dir='${M2%/*}'/><target dir='steal'/></filesystem>"
	for p in "$fb" /tmp/acc-steal-link "$M2/**" share; do
		uuid=$(new_uuid)
		# a domain without dmem (any domain's QEMU is the qemu user), so
		# that the full pool of the admission guests does not refuse it first
		mkdomain "$name" "$uuid" 64 64 | sed -e '/<metadata>/,/<\/metadata>/d' -e '/<numatune>/,/<\/numatune>/d' \
			-e "s|<emulator>.*</emulator>|<emulator>/usr/bin/qemu-system-x86_64</emulator>|" > "/tmp/$name.plain.xml"
		if [ "$p" = share ]; then
			sed "s|</devices>|$share</devices>|" "/tmp/$name.plain.xml" > "/tmp/$name.xml"
			want="its AppArmor profile would let its QEMU reach a guest's memory"
		else
			sed "s|<source path='[^']*'/>|<source path='$p'/>|" "/tmp/$name.plain.xml" > "/tmp/$name.xml"
			want="on the dmemfs mount at or above"
		fi
		grep -qF -e "<source path='$p'/>" -e "<target dir='steal'/>" "/tmp/$name.xml" ||
			why="$why the test XML does not have $p;"
		virsh define "/tmp/$name.xml" > /dev/null 2>&1
		err=$(virsh start "$name" 2>&1) && why="$why a domain with $p started;"
		msg=$(printf '%s\n' "$err" | grep -o 'dmemfs-hook: .*' | head -1 | cut -c1-400)
		[[ $msg == *"$want"* ]] || why="$why start with $p: '${msg:-$(echo "$err" | tr -s '\n' ' ' | cut -c1-300)}';"
		wait_state "$name" "shut off" 30
		[ -z "$(qemu_pid "$name")" ] || why="$why a QEMU runs for $p;"
		virsh destroy "$name" > /dev/null 2>&1
		virsh undefine "$name" > /dev/null 2>&1
		[ -z "$(dom_files "$uuid")" ] || why="$why files left for $uuid;"
	done
	rm -f /tmp/acc-steal-link
	[ "$(stat -c '%i %s' "$fb" 2> /dev/null)" = "$id" ] || why="$why B's $fb is not the file it was ($id);"
	[ ! -e "$M2/**" ] || why="$why a file '**' appeared on $M2;"
	case $(domstate acc-adm-1) in running | paused) ;; *) why="$why B is '$(domstate acc-adm-1)';" ;; esac
	if [ -z "$why" ]; then
		pass refuse-dmemfs-path "a domain naming B's memory as its serial file (directly, through a symlink, as a glob over $M2) refused at prepare, one sharing ${M2%/*} over 9p refused at start begin from virt-aa-helper's rules (\"$msg\"); no QEMU ran, B and its file untouched"
	else
		why=${why%;}
		fail refuse-dmemfs-path "${why# }"
	fi
}

# And through hot-plug, which runs no hook: a running domain A (any, here
# one without dmem) is given B's memory file as an NVDIMM.  virt-aa-helper
# puts the path into A's .files and libvirt chowns it; before the fix A's
# QEMU opened and mapped B's file (object-add succeeded), and libvirt's
# rollback left the file root:root.  Now the deny rules of A's main profile
# (written by the hook at prepare) refuse the open, and dmemfs refuses to
# change the owner of a file with a size.
# An L2 A that resets itself (the second TCG fault; on_reboot destroy ends
# its QEMU, and the attach meets a closed monitor) is started once more,
# only under the one retry rule (l2_reset_evidence), as a SKIP with the
# evidence: never for a QEMU that is still there or went another way.
# shellcheck disable=SC2317 # run by retry_loop
plug_run() {
	why=''
	if [ "$1" != 1 ]; then
		l2_afresh "$name" "$1"
	fi
	plug_faults=$(l2_fault_count) plug_mark=$(dmesg_mark)
	if ! err=$(virsh start "$name" 2>&1); then
		why="domain A did not start: $(echo "$err" | tr -s '\n' ' ' | cut -c1-300)"
		return 1
	fi
	l2_watch "$name"
	grep -q 'dmemfs-host: no other guest' "/etc/apparmor.d/libvirt/libvirt-$uuid" 2> /dev/null ||
		why="$why A's main profile has no deny rules from the hook;"
	if err=$(virsh attach-device "$name" "/tmp/$name-nvdimm.xml" --live 2>&1); then
		why="$why B's file attached to A;"
	fi
	err=$(echo "$err" | tr -s '\n' ' ' | cut -c1-300)
	[[ $err == *"Permission denied"* ]] || why="$why the attach did not fail for want of permission ('$err');"
	# and B's directory, which libvirt would chown the same way
	dst=$(stat -c '%U:%G %a %i' "${fb%/*}" 2> /dev/null)
	sed "s|<path>[^<]*</path>|<path>${fb%/*}</path>|" "/tmp/$name-nvdimm.xml" > "/tmp/$name-dir.xml"
	virsh attach-device "$name" "/tmp/$name-dir.xml" --live > /dev/null 2>&1 && why="$why B's directory attached to A;"
	[ "$(stat -c '%U:%G %a %i' "${fb%/*}" 2> /dev/null)" = "$dst" ] ||
		why="$why B's directory went from '$dst' to '$(stat -c '%U:%G %a %i' "${fb%/*}" 2>&1)';"
	p=$(qemu_pid "$name")
	[ -n "$p" ] || why="$why A's QEMU is gone;"
	[ -n "$p" ] && grep -qF "$ub" "/proc/$p/maps" && why="$why A's QEMU maps B's memory;"
	[ -n "$p" ] && ls -l "/proc/$p/fd" 2> /dev/null | grep -qF "$ub" && why="$why A's QEMU holds B's file open;"
	denied=$(dmesg | grep -F 'apparmor="DENIED"' | grep -F "libvirt-$uuid" | grep -F "$ub" | tail -1 | cut -c1-240)
	[ -n "$denied" ] || why="$why no AppArmor denial of B's file for A in the kernel log;"
	[ "$(stat -c '%U:%G %a %i %s' "$fb" 2> /dev/null)" = "$st" ] ||
		why="$why B's file went from '$st' to '$(stat -c '%U:%G %a %i %s' "$fb" 2>&1)';"
	case $(domstate acc-adm-1) in running | paused) ;; *) why="$why B is '$(domstate acc-adm-1)';" ;; esac
	[ -z "$why" ]
}
# shellcheck disable=SC2317 # run by retry_loop
plug_evidence() {
	local ev
	[ -z "$(qemu_pid "$name")" ] || return 1
	dmesg | tail -n +"$((plug_mark + 1))" > /tmp/dmesg-plug.txt
	ev=$(l2_reset_evidence "$(l1_outer_accel)" "/tmp/$name.qemu-events" "$(serial_of "$name")" \
		/tmp/dmesg-plug.txt "$plug_faults") && echo "$ev (the attach: '$err')"
}
refuse_hotplug() {
	local ub fb st dst name=acc-plug uuid why='' err p denied plug_faults plug_mark
	ub=$(virsh domuuid acc-adm-1 2> /dev/null)
	fb=$(domdir "$M2" "$ub")/ram-node0
	st=$(stat -c '%U:%G %a %i %s' "$fb" 2> /dev/null)
	if [ -z "$ub" ] || [ -z "$st" ]; then
		fail refuse-hotplug "not run: no admission guest B ('$ub', $fb)"
		return
	fi
	uuid=$(new_uuid)
	mkdomain "$name" "$uuid" 64 64 | sed -e '/<metadata>/,/<\/metadata>/d' -e '/<numatune>/,/<\/numatune>/d' \
		-e "s|<emulator>.*</emulator>|<emulator>/usr/bin/qemu-system-x86_64</emulator>|" \
		-e "s|<memory unit='MiB'>|<maxMemory slots='4' unit='MiB'>4096</maxMemory><memory unit='MiB'>|" > "/tmp/$name.xml"
	cat > "/tmp/$name-nvdimm.xml" << EOF
<memory model='nvdimm' access='shared'><source><path>$fb</path><alignsize unit='KiB'>2048</alignsize></source><target><size unit='KiB'>$((ADM_MIB * 1024))</size><node>0</node></target></memory>
EOF
	virsh define "/tmp/$name.xml" > /dev/null 2>&1
	rm -f "$(serial_of "$name")"
	retry_loop refuse-hotplug 2 plug_run plug_evidence
	virsh destroy "$name" > /dev/null 2>&1
	virsh undefine "$name" > /dev/null 2>&1
	if [ -z "$why" ]; then
		pass refuse-hotplug "B's memory file hot-plugged into A as an NVDIMM: refused ('$err'), the kernel log: $denied; B's file still $st, its directory still $dst, B $(domstate acc-adm-1) (attempt $RETRY_ATTEMPT)"
	else
		why=${why%;}
		fail refuse-hotplug "attempt $RETRY_ATTEMPT: ${why# }"
	fi
}

# ---- 4. admission: dmem-capacity's prediction from the live pool, then N+1 starts
# auto: cells of a third of the smaller node's free pool (2 MiB multiples),
# so that about three guests fit whatever dmem= the L1 boots with
if [ "$ADM_MIB" = auto ]; then
	read -r f0 f1 <<< "$(pool_free_all)"
	ADM_MIB=$(((f0 < f1 ? f0 : f1) / MiB / 3 / 2 * 2))
fi
shape="${ADM_MIB}M@0+${ADM_MIB}M@1"
capjson=$("$BUILD/bin/dmem-capacity" --dmem-pagesize 2M --guest "$shape" --json 2> /tmp/acc-cap.err)
N=$(printf '%s' "$capjson" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print([f["per_host"] for f in d["shapes"][0]["fit"] if f["model"] == "dmem-free"][0])' 2> /dev/null)
acc_log "dmem-capacity --guest $shape (live): $N guests fit in the free pool"
"$BUILD/bin/dmem-capacity" --dmem-pagesize 2M --guest "$shape" > /tmp/acc-capacity.txt 2>&1
cat /tmp/acc-capacity.txt >&2
if ! [ "${N:-x}" -ge 1 ] 2> /dev/null; then
	fail admission "no prediction from dmem-capacity: $(head -1 /tmp/acc-cap.err)"
	fail capacity-live "not run (no admission guests)"
	fail capacity-fleet "not run (no admission guests)"
	fail host-setup "not run (no admission guests)"
	fail tenant-isolation "not run (no admission guests)"
	fail refuse-dmemfs-path "not run (no admission guests)"
else
	started=0 refused='' adm_err=''
	for i in $(seq 0 "$N"); do
		mkdomain "acc-adm-$i" "$(new_uuid)" "$ADM_MIB" "$ADM_MIB" > "/tmp/acc-adm-$i.xml"
		virsh define "/tmp/acc-adm-$i.xml" > /dev/null 2>&1
		if err=$(virsh start --paused "acc-adm-$i" 2>&1); then
			started=$((started + 1))
		elif [ "$i" -eq "$N" ]; then
			refused=$(printf '%s\n' "$err" | grep -o 'dmemfs-hook: .*' | head -1)
			adm_err=$err
		else
			adm_err=$err
			break
		fi
	done
	printf '%s\n' "$adm_err" | sed 's/^/[accept] virsh: /' >&2
	peak="$(pool_mib)"
	capacity_live
	host_setup_up
	capacity_fleet
	host_setup_down
	tenant_isolation
	refuse_dmemfs_path
	refuse_hotplug
	for i in $(seq 0 "$N"); do
		virsh destroy "acc-adm-$i" > /dev/null 2>&1
		virsh undefine "acc-adm-$i" > /dev/null 2>&1
	done
	why="predicted N=$N for $shape (dmem-capacity, live pool), $started started paused (pool then: $peak), guest $((N + 1)) ${refused:+refused by the hook: \"$refused\"}"
	[ -z "$refused" ] && why="$why not refused as expected: $(echo "$adm_err" | tr -s '\n' ' ' | cut -c1-300)"
	if [ "$started" -eq "$N" ] && [ -n "$refused" ] && back_to_base; then
		pass admission "$why; after destroying all the pool is at baseline"
	else
		fail admission "$why; after destroying all: $(base_why)"
	fi
fi

# ---- 6a. a domain the hook cannot serve: 4K pages, and no dmemfs 4K here
# (libvirt itself takes a 4K <hugepages> page for plain memory)
name=acc-huge uuid=$(new_uuid)
mkdomain "$name" "$uuid" $C0 $C1 "" "<hugepages><page size='4' unit='KiB'/></hugepages>" > "/tmp/$name.xml"
if ! err=$(virsh define "/tmp/$name.xml" 2>&1); then
	fail refuse-unservable "libvirt refused the <hugepages> domain at define, before the hook: $err"
else
	err=$(virsh start "$name" 2>&1)
	rc=$?
	msg=$(printf '%s\n' "$err" | grep -o 'dmemfs-hook: .*' | head -1)
	left=$(dom_files "$uuid") pid=$(qemu_pid "$name") st=$(domstate "$name")
	if [ $rc -ne 0 ] && [[ $msg == *"page size 4K"*"dmemfs mounted here: 2M $M2, 1G $M1G"* ]] &&
		[ -z "$left" ] && [ -z "$pid" ] && [ "$st" = "shut off" ] && back_to_base; then
		pass refuse-unservable "4K <hugepages> domain refused at start with \"$msg\"; nothing left (no files, no QEMU, pool at baseline)"
	else
		fail refuse-unservable "virsh start rc $rc: $(echo "$err" | tr -s '\n' ' ' | cut -c1-300); state '$st', qemu '$pid', files '${left}', $(base_why)"
	fi
	virsh undefine "$name" > /dev/null 2>&1
fi

# ---- 6c. a domain libvirt would run outside its own AppArmor profile
# (<seclabel type='none'/>): its QEMU, the qemu user, would be free to open
# every guest's memory, so the hook refuses it at prepare (the wrapper would
# too) and the start fails cleanly
name=acc-unconfined uuid=$(new_uuid)
mkdomain "$name" "$uuid" $C0 $C1 | sed "s|</domain>|<seclabel type='none'/></domain>|" > "/tmp/$name.xml"
if ! err=$(virsh define "/tmp/$name.xml" 2>&1); then
	fail refuse-unconfined "virsh define: $err"
else
	err=$(virsh start "$name" 2>&1)
	rc=$?
	msg=$(printf '%s\n' "$err" | grep -o 'dmemfs-hook: .*' | head -1 | cut -c1-200)
	wait_state "$name" "shut off" 30
	left=$(dom_files "$uuid") pid=$(qemu_pid "$name") st=$(domstate "$name")
	if [ $rc -ne 0 ] && [[ $msg == *"its <seclabel> is type 'none' or a static AppArmor label"* ]] &&
		[ -z "$left" ] && [ -z "$pid" ] && [ "$st" = "shut off" ] && wait_base 30; then
		pass refuse-unconfined "<seclabel type='none'/> domain refused at start with \"$msg\"; nothing left (no files, no QEMU, pool at baseline)"
	else
		fail refuse-unconfined "virsh start rc $rc: $(echo "$err" | tr -s '\n' ' ' | cut -c1-300); state '$st', qemu '$pid', files '${left}', $(base_why)"
	fi
	virsh undefine "$name" > /dev/null 2>&1
fi

# ---- 6b. libvirtd restarted with a running domain.  An L2 that reset
# itself early in its boot (the second TCG fault: while libvirtd was down,
# QEMU waits in its shutdown state and the new libvirtd ends it) starts
# once more, only under the one retry rule (l2_reset_evidence, its QEMU
# event or, with the listener gone with libvirtd, L1's trace of the triple
# fault), as a SKIP with the evidence.
name=acc-rc uuid=$(new_uuid)
mkdomain "$name" "$uuid" $C0 $C1 "l2.hold=1" > "/tmp/$name.xml"
rm -f "$(serial_of $name)"
# shellcheck disable=SC2317 # run by retry_loop
rc_run() {
	if [ "$1" != 1 ]; then
		l2_afresh "$name" "$1"
		back_to_base || acc_log "before acc-rc attempt $1: $(base_why)"
	fi
	rc_faults=$(l2_fault_count) rc_mark=$(dmesg_mark)
	if ! err=$(virsh start "$name" 2>&1); then
		why="start: $(echo "$err" | tr -s '\n' ' ')"
		return 1
	fi
	l2_watch "$name" # until libvirtd stops: how the guest ended, if it did
	pid=$(qemu_pid "$name")
	held=$(($(used0) + $(used1)))
	t=$SECONDS
	acc_libvirtd_stop
	alive=no
	kill -0 "$pid" 2> /dev/null && alive=yes
	acc_libvirtd_start
	rs=$((SECONDS - t))
	st=$(domstate "$name") pid2=$(qemu_pid "$name")
	hold=$(wait_serial "$(serial_of "$name")" '^L2-HOLD' 180)
	st2=$(domstate "$name")
	why="libvirtd stopped and started in $rs s (QEMU alive meanwhile: $alive); after reconnect: state '$st', QEMU pid $pid -> '${pid2}', guest then reached its init (${hold:-no L2-HOLD line}), state '$st2', dmem held $((held / MiB)) -> $((($(used0) + $(used1)) / MiB)) MiB"
	[ "$st" = running ] && [ "$pid2" = "$pid" ] && [ -n "$hold" ] && [ "$st2" = running ] &&
		[ "$held" -eq $(($(used0) + $(used1))) ]
}
# shellcheck disable=SC2317 # run by retry_loop
rc_evidence() {
	local ev
	dmesg | tail -n +"$((rc_mark + 1))" > /tmp/dmesg-rc.txt
	ev=$(l2_reset_evidence "$(l1_outer_accel)" "/tmp/$name.qemu-events" "$(serial_of "$name")" \
		/tmp/dmesg-rc.txt "$rc_faults") &&
		echo "$ev; QEMU log: $(tail -2 "/var/log/libvirt/qemu/$name.log" 2> /dev/null | tr -s '\n' ' ' | cut -c1-200)"
}
if ! err=$(virsh define "/tmp/$name.xml" 2>&1); then
	fail reconnect "define: $(echo "$err" | tr -s '\n' ' ')"
else
	if retry_loop reconnect 2 rc_run rc_evidence; then
		pass reconnect "$why (attempt $RETRY_ATTEMPT)"
	else
		# where the guest stood: its serial's end, QEMU's threads (a
		# silent L2 early in its boot is a TCG fault of the vfio-l2 kind)
		fail reconnect "attempt $RETRY_ATTEMPT: $why; L2 serial: $(tail -c 200 "$(serial_of "$name")" 2> /dev/null | tr -s '\r\n' ' '); $(qemu_diag "$name")"
	fi
	virsh destroy "$name" > /dev/null 2>&1
	virsh undefine "$name" > /dev/null 2>&1
	back_to_base || acc_log "after acc-rc: $(base_why)"
fi

# ---- 5. soak: start/destroy cycles, no dpage leaked, clean kernel log
name=acc-soak uuid=$(new_uuid)
mkdomain "$name" "$uuid" $C0 $C1 > "/tmp/$name.xml"
dmesg_before=$(dmesg | wc -l)
if ! err=$(virsh define "/tmp/$name.xml" 2>&1); then
	fail soak "virsh define: $err"
else
	ok=0 leaks=0 errs='' t=$SECONDS stopped=
	cycles=0
	for i in $(seq 1 "$SOAK"); do
		# past the budget, end with a reason instead once the soak has its
		# SOAK_MIN cycles (how many more fit is the host's speed, not a verdict)
		if [ "$cycles" -ge "$SOAK_MIN" ] && [ $((SECONDS - T0)) -ge "$BUDGET" ]; then
			stopped=" (stopped before cycle $i: the acceptance has run $((SECONDS - T0)) s of its ${BUDGET} s)"
			break
		fi
		cycles=$i
		if err=$(virsh start --paused "$name" 2>&1) && virsh destroy "$name" > /dev/null 2>&1; then
			if back_to_base; then ok=$((ok + 1)); else leaks=$((leaks + 1)); errs="$errs cycle $i: $(base_why);"; fi
		else
			errs="$errs cycle $i: $(echo "$err" | tr -s '\n' ' ' | cut -c1-200);"
		fi
	done
	secs=$((SECONDS - t))
	virsh undefine "$name" > /dev/null 2>&1
	read -r b0 b1 <<< "$BASE"
	read -r f0 f1 <<< "$(pool_free_all)"
	leaked=$((b0 + b1 - f0 - f1))
	why="$ok of $cycles start --paused/destroy cycles clean in ${secs} s ($(awk -v s="$secs" -v n="$cycles" 'BEGIN { printf "%.1f", s / (n ? n : 1) }') s a cycle)$stopped, $((leaked / 4096)) dpages (4 KiB units) leaked at the end"
	# every cycle that ran clean, nothing leaked, and enough of them to
	# call it a soak
	if [ "$ok" -eq "$cycles" ] && [ "$cycles" -ge "$SOAK_MIN" ] && [ "$leaked" -eq 0 ]; then
		pass soak "$why"
	else
		fail soak "$why${errs:+;$errs}$([ "$cycles" -ge "$SOAK_MIN" ] || echo "; fewer than $SOAK_MIN cycles")"
	fi
fi
bad=$(kernel_splats "$dmesg_before")
allbad=$(kernel_splats)
# (the wording avoids the words run-l1.sh looks for in the console)
if [ -z "$allbad" ]; then pass soak-dmesg "kernel log clean (no warnings, bugs or oopses) during the whole acceptance"
else fail soak-dmesg "kernel log: ${bad:-$allbad}"; fi

# ---- cleanup
left=$(find "$M2" "$M1G" -mindepth 1 -maxdepth 1 2> /dev/null | tr '\n' ' ')
trap - EXIT
acc_stop_all
if back_to_base && [ -z "$left" ] && [ -z "$(libvirtd_pid)" ]; then
	pass cleanup "libvirtd stopped, pool at baseline ($(pool_mib)), total $((SECONDS - T0)) s"
else
	fail cleanup "$(base_why); files left: ${left:-none}; libvirtd pid '$(libvirtd_pid)'"
fi
results_exit
