#!/bin/bash
# In-L1 checks of dmemfs-hook on a real dmemfs (kernel trunk, 2 NUMA nodes with
# dmem).  Prints "PASS: hook.<check>" / "FAIL: hook.<check>: reason"
# lines; exits 1 if any check failed, else 0.
# --list prints the checks.
#
#   DMEMFS_2M_MOUNT  dmemfs mounted with pagesize=2M      (required)
#   DMEMFS_1G_MOUNT  dmemfs mounted with pagesize=1G      (required)
#   BIN              directory holding dmemfs-hook         (default build/bin)
#   DMEMFS_SYSFS_ROOT  pool statistics (default /sys/kernel/mm/dmem)
#   QEMU_USER        owner of the files (default libvirt-qemu, else root)
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=nested-test/l1/l1-common.sh
. "$here/../l1-common.sh"
result_area hook
if [ "${1:-}" = --list ]; then
	for c in setup prepare-exits-0 file-ram-node0 file-ram-node1 dpages-on-cell-nodes \
		reconnect-finds-files release-idempotent release-frees admission-refuses \
		refused-leaves-nothing plan-check-refuses 1g-pages; do
		echo "hook.$c"
	done
	exit 0
fi
l1_only
BIN=${BIN:-$(cd "$here/../../../build/bin" 2>/dev/null && pwd)}
HOOK=$BIN/dmemfs-hook
M2=${DMEMFS_2M_MOUNT:-}
M1G=${DMEMFS_1G_MOUNT:-}
QUSER=${QEMU_USER:-libvirt-qemu}
id "$QUSER" >/dev/null 2>&1 || QUSER=root
MiB=$((1 << 20))
UUID=d7e5a1c2-6b3f-4e8d-9a10-112233445566
UUID1G=d7e5a1c2-6b3f-4e8d-9a10-1122334455aa

SYSFS=$DMEM_SYSFS
free_of() { pool_bytes "$1" free; }

if [ ! -x "$HOOK" ]; then fail setup "no dmemfs-hook in $BIN"; results_exit; fi
if [ -z "$M2" ] || ! is_dmemfs "$M2"; then
	fail setup "DMEMFS_2M_MOUNT='$M2' is not a dmemfs mount"; results_exit
fi
if [ ! -d "$SYSFS/node0" ] || [ ! -d "$SYSFS/node1" ]; then
	fail setup "$SYSFS/node0 and node1 needed"; results_exit
fi
pass setup "hook $HOOK, dmemfs on $M2${M1G:+ and $M1G}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export DMEMFS_HOST_CONF=$tmp/dmemfs-host.conf
cat > "$DMEMFS_HOST_CONF" <<CONF
[mounts]
2M=$M2
${M1G:+1G=$M1G}
[qemu]
user=$QUSER
[sysfs]
root=$SYSFS
CONF

# domain XML: two cells bound to host nodes 0 and 1 (sizes in MiB)
domain() { # uuid size0 size1 [id-attr]
	cat <<XML
<domain type='kvm'$4>
  <name>l1-dmemfs</name>
  <uuid>$1</uuid>
  <metadata><dmemfs:dmemfs xmlns:dmemfs="http://dmemfs-host.org/xmlns/dmemfs/1.0" pagesize="2M"/></metadata>
  <memory unit='MiB'>$(($2 + $3))</memory>
  <memoryBacking><source type='file'/><access mode='shared'/></memoryBacking>
  <vcpu>2</vcpu>
  <numatune>
    <memnode cellid='0' mode='strict' nodeset='0'/>
    <memnode cellid='1' mode='strict' nodeset='1'/>
  </numatune>
  <os><type arch='x86_64' machine='pc-q35-7.2'>hvm</type></os>
  <cpu><numa>
    <cell id='0' cpus='0' memory='$2' unit='MiB'/>
    <cell id='1' cpus='1' memory='$3' unit='MiB'/>
  </numa></cpu>
</domain>
XML
}

# 1. prepare: files on the right nodes
f0=$(free_of 0); f1=$(free_of 1)
domain $UUID 64 32 " id='7'" > "$tmp/prep.xml"
if err=$("$HOOK" l1-dmemfs prepare begin - < "$tmp/prep.xml" 2>&1); then
	pass prepare-exits-0
else
	fail prepare-exits-0 "$err"
fi
d=$M2/libvirt-$UUID # libdmemfs-host/model/domaindir.h
for f in ram-node0:$((64 * MiB)) ram-node1:$((32 * MiB)); do
	n=${f%%:*}; want=${f#*:}
	got=$(stat -c '%s %a %U' "$d/$n" 2>/dev/null)
	if [ "$got" = "$want 600 $QUSER" ]; then pass "file-$n" "size, mode and owner $got"
	else fail "file-$n" "size, mode and owner '$got', want '$want 600 $QUSER'"; fi
done
n0=$(free_of 0); n1=$(free_of 1)
if [ $((f0 - n0)) -ge $((64 * MiB)) ] && [ $((f1 - n1)) -ge $((32 * MiB)) ] &&
   [ $((f0 - n0)) -lt $((96 * MiB)) ] && [ $((f1 - n1)) -lt $((64 * MiB)) ]; then
	pass dpages-on-cell-nodes "nodes 0 and 1"
else
	fail dpages-on-cell-nodes "node0 free $f0->$n0, node1 free $f1->$n1 (want -64M/-32M)"
fi
out=$("$HOOK" l1-dmemfs reconnect begin - < "$tmp/prep.xml" 2>&1)
if [ -z "$out" ]; then pass reconnect-finds-files; else fail reconnect-finds-files "$out"; fi

# 2. release without id, twice
domain $UUID 64 32 "" > "$tmp/rel.xml"
"$HOOK" l1-dmemfs release end - < "$tmp/rel.xml"; r1=$?
"$HOOK" l1-dmemfs release end - < "$tmp/rel.xml"; r2=$?
if [ $r1 = 0 ] && [ $r2 = 0 ] && [ ! -e "$d" ]; then pass release-idempotent "removes the files, twice"
else fail release-idempotent "rc $r1/$r2, $(ls -A "$d" 2>&1 | tr '\n' ' ')"; fi
r0=$(free_of 0); r1=$(free_of 1)
if [ "$r0" -ge $((n0 + 64 * MiB)) ] && [ "$r1" -ge $((n1 + 32 * MiB)) ]; then pass release-frees
else fail release-frees "node0 free $n0->$r0, node1 free $n1->$r1"; fi

# 3. admission control: node 0 cannot hold free + 2 MiB
big=$(( $(free_of 0) / MiB + 2 ))
domain $UUID $big 2 " id='8'" > "$tmp/big.xml"
b0=$(free_of 0)
err=$("$HOOK" l1-dmemfs prepare begin - < "$tmp/big.xml" 2>&1); rc=$?
if [ $rc = 1 ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] && [[ $err == *"does not fit"*node0=* ]]; then
	pass admission-refuses
else
	fail admission-refuses "rc $rc: $err"
fi
if [ ! -e "$d" ] && [ "$(free_of 0)" = "$b0" ]; then pass refused-leaves-nothing
else fail refused-leaves-nothing "$(ls -A "$d" 2>&1 | tr '\n' ' ') free $b0->$(free_of 0)"; fi
if "$HOOK" --plan --check < "$tmp/big.xml" >/dev/null 2>&1; then fail plan-check-refuses "exit 0"
else pass plan-check-refuses; fi
"$HOOK" l1-dmemfs release end - < "$tmp/rel.xml"

# 4. 1G pages on node 1
if [ -n "$M1G" ] && [ "$(free_of 1)" -ge $((2 << 30)) ]; then
	sed -e "s/$UUID/$UUID1G/" -e 's/pagesize="2M"/pagesize="1G"/' \
	    -e "s/memory='64'/memory='1'/; s/memory='32'/memory='1024'/" \
	    -e "s/nodeset='0'/nodeset='1'/" "$tmp/prep.xml" > "$tmp/g.xml"
	g1=$(free_of 1)
	if err=$("$HOOK" l1-dmemfs prepare begin - < "$tmp/g.xml" 2>&1) &&
	   [ "$(stat -c %s "$M1G/libvirt-$UUID1G/ram-node0" 2>/dev/null)" = $((1 << 30)) ] &&
	   [ $((g1 - $(free_of 1))) -ge $((2 << 30)) ]; then
		pass 1g-pages "both cells on node 1, 1 MiB cell rounded up to a 1G dpage"
	else
		fail 1g-pages "$err free $g1->$(free_of 1)"
	fi
	"$HOOK" l1-dmemfs release end - < "$tmp/g.xml"
else
	# the trunk's L1 (the only caller) always mounts 1G and gives node 1
	# 2 GiB of dmem: missing either is a bug there, not a reason to skip
	fail 1g-pages "DMEMFS_1G_MOUNT='$M1G', node 1 free $(free_of 1) (2 GiB needed)"
fi
results_exit
