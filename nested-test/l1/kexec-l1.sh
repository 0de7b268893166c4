#!/bin/bash
# Inside L1, in a boot of its own (make test's step test-kexec): dmemfs
# files carried over kexec ("mount -o remount,persist", dmemfs_recover=,
# "mount -o recover"), three kernels in one L1 run:
#
#   stage 1  files on dmemfs 2M, 1G and 4K with a seeded pattern (a
#            directory, a sparse file, owners, modes, memory policies);
#            persist 2M and 1G; persist 4K, then change it (its table
#            must go); persist a 4K instance "bad", then a memory error
#            in its table's first page (its table must go).  The attack of a tenant (uid 1000) on an instance
#            "tenant": root persists it and keeps ADDR:KEY for the kexec;
#            the tenant reads the address in /proc/mounts, drops the
#            table with a touch and grows a file on the table's node:
#            it must not be given the table's page.  Then the instance
#            goes (its pages with it) while the kexec naming its table
#            stays loaded; on a new instance the tenant is given the page
#            and writes a table that names itself at ADDR, with a valid
#            MAC under a key of its own, into every page of a file,
#            naming the dpages of a victim's file on an instance that is
#            not persisted.  kexec into the
#            same bzImage, with fixed dmem= ranges (from sysfs) and
#            dmemfs_recover= naming the five tables with their keys
#   stage 2  the 2M and 1G tables are kept, the stale 4K one and the
#            tenant's (its MAC) and "bad" (its other page wiped) are
#            refused, no mount gets the victim's data, and
#            the keys are gone from /proc/cmdline; a 2M mount of another
#            source does not get the 2M table; mount -o recover gives
#            back every file, name, owner, mode, size, policy and dpage
#            count, with the pattern intact; the pool holds exactly the
#            recovered files.  Then a new file and a new persist of 2M;
#            the 1G mount goes.  Tables forged in the pages of 4K files,
#            from the documented format alone (dmem_pattern forge), each
#            with a key of its own passed with it, as a kernel bug would
#            write them: a byte flipped after the MAC, a pfn that is not
#            dmem, the new file's dpages, an extent past the end of its
#            file, one name twice (source forged-dup), and a good one
#            (source forged-keep).  A second kexec, with all of them
#   stage 3  the real table comes back whole (a second hop); the forged
#            ones are refused: MAC, not dmem, dpages taken, past the end;
#            the one with a name twice is kept at boot and refused by its
#            mount; the good one is listed in /sys/fs/dmemfs/kept and
#            discarded there.  After the zeroers, no page of the whole
#            pool holds any pattern of stages 1 and 2 that no table
#            kept, and once the files go every dpage is back.
#
# Args (l1.args): --kernel=PATH --initrd=PATH (default: the build's) and,
# from the previous stage, stage=N.  --list prints the checks.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=nested-test/l1/l1-common.sh
. "$here/l1-common.sh"
result_area kexec
checks="stage1-files persist-2M persist-1G persist-stale-dropped poisoned-table-dropped attack-page-held
	attack-setup kexec-1 tables-kept stale-refused attack-refused poisoned-table-refused keys-scrubbed ranges-same
	wrong-source-refused recover-2M recover-1G recover-none-refused
	tree pattern-2M pattern-sparse pattern-1G policies pool-is-files attack-no-victim-data
	repersist forged kexec-2
	second-hop corrupt-refused not-dmem-refused overlap-refused past-eof-refused dup-refused
	kept-discarded pool-zeroed no-leak kernel-log"
if [ "${1:-}" = --list ]; then
	for c in $checks; do echo "kexec.$c"; done
	exit 0
fi
l1_channel
BUILD=${BUILD:-$TOP/build}
KERNEL=$BUILD/bzImage INITRD=$BUILD/guest/initramfs.cpio.gz stage=1
for a in "$@"; do
	case $a in
	--kernel=*) KERNEL=${a#*=} ;;
	--initrd=*) INITRD=${a#*=} ;;
	stage=*) stage=${a#*=} ;;
	esac
done
PAT=$BUILD/guest/dmem_pattern
K=/run/kx
MiB=$((1 << 20))
done_l1() { res "L1-DONE"; exit 0; }
# not_run FROM: every check from FROM on fails with the reason in $why
not_run() { fail_from "$1" "$why" $checks; done_l1; }
mnt() { mkdir -p "$K/$1" && mount -t dmemfs -o "pagesize=$1${2:+,$2}" none "$K/$1"; }
persisted() { sed -n "s|^${2:-none} $K/$1 dmemfs .*persisted=\(0x[0-9a-f]*\).*|\1|p" /proc/mounts; }
# token ADDR: the dmemfs_recover= word of the table at ADDR, ADDR:KEY from
# /sys/fs/dmemfs/tables (root only); ADDR alone on the series before keys
TABLES=/sys/fs/dmemfs/tables
token() {
	if [ -e "$TABLES" ]; then grep -m1 "^$1:" "$TABLES"; else echo "$1"; fi
}
# a forger's key: 64 hex digits, or "crc" for the series before keys
forger_key() {
	if [ -e "$TABLES" ]; then od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; else echo crc; fi
}
as_tenant() { setpriv --reuid=1000 --regid=1000 --clear-groups -- "$@"; }
# node_of ADDR: the node whose dmem range holds physical address ADDR
node_of() {
	local n b sz _f
	if [ -r /sys/kernel/mm/dmem/ranges ]; then
		while read -r n b sz; do
			[ $(($1)) -ge $((b)) ] && [ $(($1)) -lt $((b + sz)) ] && echo "$n"
		done < /sys/kernel/mm/dmem/ranges
	else
		tail -n +2 /sys/kernel/debug/dmem/regions | while read -r n b sz _f; do
			[ $(($1 / 4096)) -ge $((b)) ] && [ $(($1 / 4096)) -lt $((b + sz)) ] && echo "$n"
		done
	fi
}
# page_index FILE ADDR PAGES: the index of FILE's 4 KiB page at ADDR, if any
page_index() {
	local i
	for ((i = 0; i < $3; i++)); do
		[ "$(($("$PAT" phys "$1" $((i * 4096)))))" -eq "$(($2))" ] && echo "$i" && return
	done
}
# the dmem ranges of this boot: "BASE_PFN NR_PAGES" in decimal, lowest
# first (root's sysfs file; debugfs on the series before it)
regions() {
	local _n b nr _f
	if [ -r /sys/kernel/mm/dmem/ranges ]; then
		while read -r _n b nr; do echo "$((b / 4096)) $((nr / 4096))"; done < /sys/kernel/mm/dmem/ranges
	else
		tail -n +2 /sys/kernel/debug/dmem/regions | while read -r _n b nr _f; do
			echo "$((b)) $nr"
		done
	fi | sort -n
}
# the command line of the next stage: fixed ranges for the regions of this
# boot, the tables, the stage
next_cmdline() { # next_cmdline STAGE TABLES
	local w keep=() fixed=() base nr
	for w in $(cat /proc/cmdline); do
		case $w in dmem=* | dmemfs_recover=* | l1.args=*) ;; *) keep+=("$w") ;; esac
	done
	while read -r base nr; do
		fixed+=("dmem=$((nr * 4096))@$((base * 4096))")
	done < <(regions)
	echo "${keep[*]} ${fixed[*]} dmemfs_recover=$2 l1.args=--kernel=$KERNEL,--initrd=$INITRD,stage=$1"
}
# kexec_to STAGE TABLES: load this kernel again below the lowest dmem range
# (kexec sees dmem as RAM) and jump; does not return on success
kexec_to() {
	local low cmd out
	low=$(($(regions | head -1 | cut -d' ' -f1) * 4096))
	cmd=$(next_cmdline "$1" "$2")
	echo "kexec: $cmd (mem-max $((low - 1)))"
	if ! out=$(kexec -l "$KERNEL" --initrd="$INITRD" --command-line="$cmd" --mem-max=$((low - 1)) 2>&1); then
		fail "kexec-$(($1 - 1))" "kexec -l: $out"
		return 1
	fi
	pass "kexec-$(($1 - 1))" "to stage $1 with dmemfs_recover=$2"
	sync
	kexec -e
	fail "kexec-$(($1 - 1))" "kexec -e returned"
	return 1
}
blocks() { stat -c %b "$1"; }

command -v kexec > /dev/null || { why="no kexec (kexec-tools)"; not_run stage1-files; }
[ -x "$PAT" ] || { why="no $PAT"; not_run stage1-files; }

case $stage in
1)
	# ---- stage 1: files, tables, kexec
	mnt 2M && mnt 1G && mnt 4K || { why="mount failed"; not_run stage1-files; }
	mkdir -m 0750 "$K/2M/dom" && chown 64055:64055 "$K/2M/dom" &&
		truncate -s 256M "$K/2M/dom/ram0" && "$PAT" fill "$K/2M/dom/ram0" 0x11 bind:1 &&
		: > "$K/2M/dom/sparse" && chmod 0600 "$K/2M/dom/sparse" &&
		chown 64055:64055 "$K/2M/dom/sparse" && truncate -s 64M "$K/2M/dom/sparse" &&
		"$PAT" touch "$K/2M/dom/sparse" 0x12 0 600 8192 &&
		truncate -s 1G "$K/1G/vm0" && "$PAT" fill "$K/1G/vm0" 0x21 prefer-many:0-1 &&
		truncate -s 1M "$K/4K/st" && "$PAT" fill "$K/4K/st" 0x31
	check stage1-files "creating the files failed" [ $? -eq 0 ]
	for s in 2M 1G; do
		err=$(mount -o remount,persist "$K/$s" 2>&1)
		t=$(persisted "$s")
		check "persist-$s" "remount,persist: '$err', /proc/mounts: $(grep " $K/$s " /proc/mounts)" [ -n "$t" ]
		t=$(token "$t")
		eval "t$s=\$t"
	done
	mount -o remount,persist "$K/4K"
	t4=$(persisted 4K)
	t4=$(token "$t4")
	truncate -s 2M "$K/4K/st" && "$PAT" touch "$K/4K/st" 0x31 300
	now=$(persisted 4K)
	check persist-stale-dropped "table '$t4' of 4K, '$now' after a change" [ "${t4:+set}/${now:-none}" = set/none ]
	# a memory error in the first page of a persisted table: the table
	# goes, and that page is never written again, so the wipe of its
	# other page must be what refuses it at the next boot, though root's
	# kexec names it with its key
	mkdir -p "$K/bad" && mount -t dmemfs -o pagesize=4K bad "$K/bad" &&
		truncate -s 64K "$K/bad/f" && "$PAT" fill "$K/bad/f" 0x42 &&
		mount -o remount,persist "$K/bad"
	tb=$(persisted bad bad)
	tbad=$(token "$tb")
	[ -n "$tb" ] && echo $((tb / 4096)) > /sys/kernel/debug/hwpoison/corrupt-pfn
	now=$(persisted bad bad)
	check poisoned-table-dropped "table '$tbad', '$now' after a memory error in its first page" \
		[ "${tbad:+set}/${now:-none}" = set/none ]

	# ---- the attack of a tenant on the table of its own instance
	# the victim: another tenant's guest memory, on an instance that is
	# not persisted (its dpages are dirty pool in the next kernel)
	mkdir -p "$K/victim" && mount -t dmemfs -o pagesize=2M victim "$K/victim" &&
		truncate -s 64M "$K/victim/ram" && "$PAT" fill "$K/victim/ram" 0x61
	vpfn=$(($("$PAT" phys "$K/victim/ram") / 4096))
	# the attacker: uid 1000, with a directory on a 4K instance that root
	# persists; root keeps ADDR:KEY for the kexec it loads
	tpat=/tmp/dmem_pattern
	install -m 0755 "$PAT" "$tpat"
	mkdir -p "$K/tenant" && mount -t dmemfs -o pagesize=4K tenant "$K/tenant" &&
		install -d -o 1000 -g 1000 "$K/tenant/t" &&
		as_tenant truncate -s 4K "$K/tenant/t/own" && as_tenant "$tpat" touch "$K/tenant/t/own" 0x71 0 &&
		mount -o remount,persist "$K/tenant"
	ta=$(token "$(persisted tenant tenant)")
	# the tenant: the address is public (/proc/mounts), its node too
	# (the dmem ranges per node are in /proc/cmdline and sysfs)
	addr=$(as_tenant sed -n "s|^tenant $K/tenant dmemfs .*persisted=\(0x[0-9a-f]*\).*|\1|p" /proc/mounts)
	tnode=$(node_of "$addr")
	# 1. a touch drops the table; once its page is zeroed, a file of 1024
	# pages on that node: does the tenant get the page?
	as_tenant touch "$K/tenant/t/own"
	sleep 2
	out=$(as_tenant truncate -s 4M "$K/tenant/t/grab" &&
		as_tenant "$tpat" forge-at "$K/tenant/t/grab" "$addr" 21 "$vpfn" 8 "$(forger_key)" tenant "bind:$tnode" 2>&1)
	got=$(page_index "$K/tenant/t/grab" "$addr" 1024)
	check attack-page-held "tenant: $out; its page ${got:-none} is the dropped table's page $addr" [ -z "$got" ]
	# 2. the instance goes (its pages with it) while the kexec that names
	# its table stays loaded; the tenant, on a new instance, is given the
	# page and writes a table there (valid MAC under a key of its own, or
	# valid CRC on the series before keys) naming 8 of the victim's
	# dpages, into every page, as it cannot see addresses
	umount "$K/tenant" && mount -t dmemfs -o pagesize=4K tenant "$K/tenant" &&
		install -d -o 1000 -g 1000 "$K/tenant/t"
	sleep 2
	out=$(as_tenant truncate -s 4M "$K/tenant/t/grab" &&
		as_tenant "$tpat" forge-at "$K/tenant/t/grab" "$addr" 21 "$vpfn" 8 "$(forger_key)" tenant "bind:$tnode" 2>&1)
	got=$(page_index "$K/tenant/t/grab" "$addr" 1024)
	check attack-setup "victim pfn $vpfn, table '$ta' on node $tnode, tenant read '$addr', wrote: $out, its page ${got:-none} is the table's (else nothing is tested)" \
		eval '[ "$vpfn" -gt 0 ] && [ -n "$ta" ] && [ "${ta%%:*}" = "$addr" ] && [ "$out" = "1024 pages" ] && [ -n "$got" ]'
	echo "pool before kexec: used $(pool_sum used) free $(pool_sum free)"
	kexec_to 2 "${t2M:-0},${t1G:-0},${t4:-0},${ta:-0},${tbad:-0}"
	why="kexec failed"
	not_run tables-kept
	;;
2)
	# ---- stage 2: recover, check, a table to corrupt, kexec again
	kept=$(dmesg | grep -c 'kept for mount -o recover')
	refused=$(dmesg | grep 'table refused' | head -1)
	check tables-kept "$(dmesg | grep dmemfs_recover= | tr -s '\n' ' ')" [ "$kept" -eq 2 ]
	check stale-refused "no refusal of the stale 4K table: $(dmesg | grep dmemfs_recover= | tr -s '\n' ' ')" \
		eval '[[ "$refused" == *"no table there"* ]]'
	t=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^dmemfs_recover=//p' | tr , ' ')
	read -r _ _ _ ta tb <<< "$t"
	ta=${ta%%:*} tb=${tb%%:*}
	said=$(dmesg | grep -m1 "dmemfs_recover=$ta: ")
	check attack-refused "the tenant's table at $ta: '$said'" eval '[[ "$said" == *"table refused (not authenticated"* ]]'
	said=$(dmesg | grep -m1 "dmemfs_recover=$tb: ")
	check poisoned-table-refused "the table whose first page had the error, at $tb: '$said'" \
		eval '[[ "$said" == *"table refused (a page of the chain is missing)"* ]]'
	# the tenant's instance gets no table back (the verdict comes after
	# the 2M and 1G mounts recovered theirs: no file anywhere may hold the
	# victim's pattern)
	if mkdir -p "$K/tenant" && mount -t dmemfs -o pagesize=4K,recover tenant "$K/tenant" 2> /dev/null; then
		tgot="mounted: $(find "$K/tenant" -type f | tr '\n' ' ')"
	else
		tgot="refused"
	fi
	check keys-scrubbed "/proc/cmdline: $t" eval '! grep -Eq "dmemfs_recover=[^ ]*:[0-9a-f]{64}" /proc/cmdline'
	want=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^dmem=\([0-9]*\)@\([0-9]*\)$/\2 \1/p' | sort -n)
	got=$(regions | while read -r b n; do echo "$((b * 4096)) $((n * 4096))"; done | sort -n)
	check ranges-same "regions '$got' against dmem= '$want'" [ "$want" = "$got" ]
	# a table comes back only in the mount it names (source none here)
	mkdir -p "$K/other"
	err=$(mount -t dmemfs -o pagesize=2M,recover other "$K/other" 2>&1)
	check wrong-source-refused "mount -o recover of a 2M instance of source other: '$err', files: $(ls -A "$K/other" 2> /dev/null | tr '\n' ' ')" \
		eval '! grep -q " $K/other " /proc/mounts'
	umount "$K/other" 2> /dev/null
	for s in 2M 1G; do
		err=$(mnt "$s" recover 2>&1)
		check "recover-$s" "mount -o recover: $err $(dmesg | grep 'recover' | tail -1)" [ -n "$(ls -A "$K/$s" 2> /dev/null)" ]
	done
	err=$(mnt 4K recover 2>&1)
	check recover-none-refused "mount -o recover of 4K without a table worked" eval '! grep -q " $K/4K " /proc/mounts'
	d=$K/2M/dom
	tree="$(stat -c '%a %u:%g' "$d") $(stat -c '%a %u:%g %s' "$d/sparse") $(stat -c '%s' "$d/ram0" "$K/1G/vm0" | tr '\n' ' ')$(blocks "$d/sparse") $(blocks "$K/1G/vm0")"
	check tree "got '$tree'" [ "$tree" = "750 64055:64055 600 64055:64055 67108864 268435456 1073741824 12288 2097152" ]
	out=$("$PAT" check "$d/ram0" 0x11 2>&1)
	check pattern-2M "$out" [ $? -eq 0 ]
	out=$("$PAT" check "$d/sparse" 0x12 0 600 8192 2>&1)
	check pattern-sparse "$out" [ $? -eq 0 ]
	out=$("$PAT" check "$K/1G/vm0" 0x21 2>&1)
	check pattern-1G "$out" [ $? -eq 0 ]
	pol="$("$PAT" policy "$d/ram0") / $("$PAT" policy "$K/1G/vm0")"
	check policies "got '$pol'" [ "$pol" = "bind 0x2 / prefer-many 0x3" ]
	files=$(( ($(blocks "$d/ram0") + $(blocks "$d/sparse") + $(blocks "$K/1G/vm0")) * 512 ))
	check pool-is-files "pool used $(pool_sum used), the files hold $files" [ "$(pool_sum used)" -eq "$files" ]
	# every file of every instance that recovered something: none holds
	# any page of the victim's pattern (last: reading a hole allocates)
	hits=0 where=
	while read -r f; do
		n=$("$PAT" scan "$f" 0x61)
		[ "$n" -gt 0 ] && hits=$((hits + n)) && where+="$f "
	done < <(find "$K" -type f 2> /dev/null)
	check attack-no-victim-data "recover of the tenant's instance $tgot; $hits pages of the victim's pattern in: ${where:-no file}" \
		[ "$tgot/$hits" = refused/0 ]
	grep -q " $K/tenant " /proc/mounts && umount "$K/tenant"
	grep -q " $K/other " /proc/mounts && umount "$K/other"
	# a new file makes the mount change; persist again; forge three
	mkdir -p "$K/2M/c" && truncate -s 128M "$K/2M/c/x" && "$PAT" fill "$K/2M/c/x" 0x41
	umount "$K/1G"
	mount -o remount,persist "$K/2M"
	t=$(persisted 2M)
	check repersist "no persisted= after the second persist: $(grep " $K/2M " /proc/mounts)" [ -n "$t" ]
	t=$(token "$t")
	mnt 4K
	x=$(($("$PAT" phys "$K/2M/c/x") / 4096))
	for i in 1 2 3 4 5 6 7 8; do
		truncate -s 4K "$K/4K/f$i" && "$PAT" touch "$K/4K/f$i" 0x51 0
	done
	# 4K dpages that are free pool in the next kernel: the 4K files' own
	p6=$(($("$PAT" phys "$K/4K/f6") / 4096))
	p7=$(($("$PAT" phys "$K/4K/f7") / 4096)) p8=$(($("$PAT" phys "$K/4K/f8") / 4096))
	forged= i=0
	for f in "21 corrupt $x 64 none" "21 good 256 1 none" "21 good $x 64 none" "21 pasteof $x 2 none" \
		"12 dup:$p8 $p7 2 forged-dup" "12 good $p6 1 forged-keep"; do
		read -r shift how pfn n src <<< "$f"
		i=$((i + 1))
		forged+=",$("$PAT" forge "$K/4K/f$i" "$shift" "$pfn" "$n" "$how" "$(forger_key)" "$src")"
	done
	check forged "forged tables '$forged'" [ "$(echo "$forged" | tr -cd , | wc -c)" -eq 6 ]
	kexec_to 3 "${t:-0}$forged"
	why="kexec failed"
	not_run second-hop
	;;
3)
	# ---- stage 3: the real table again, the forged ones refused, the
	# pool zeroed
	mark=0
	t=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^dmemfs_recover=//p' | tr , ' ' | sed 's/:[^ ]*//g')
	read -r real corrupt notdmem overlap pasteof dup keep <<< "$t"
	said() { dmesg | grep -m1 "dmemfs_recover=$1: " | sed 's/.*: //'; }
	mnt 2M recover
	out=$("$PAT" check "$K/2M/dom/ram0" 0x11 && "$PAT" check "$K/2M/dom/sparse" 0x12 0 600 8192 &&
		"$PAT" check "$K/2M/c/x" 0x41 2>&1)
	rc=$?
	check second-hop "table $real: $(said "$real"); $out" [ "$rc" -eq 0 ]
	check corrupt-refused "table $corrupt: $(said "$corrupt")" eval '[[ "$(said "$corrupt")" == *"not authenticated"* ]]'
	check not-dmem-refused "table $notdmem: $(said "$notdmem")" eval '[[ "$(said "$notdmem")" == *"not dmem on this boot"* ]]'
	check overlap-refused "table $overlap: $(said "$overlap")" eval '[[ "$(said "$overlap")" == *"dpage twice"* ]]'
	check past-eof-refused "table $pasteof: $(said "$pasteof")" eval '[[ "$(said "$pasteof")" == *"passes the end of file"* ]]'
	mkdir -p "$K/dup"
	err=$(mount -t dmemfs -o pagesize=4K,recover forged-dup "$K/dup" 2>&1)
	check dup-refused "table $dup: $(said "$dup"); mount: '$err' $(dmesg | grep -m1 "table of $dup")" \
		eval '[[ "$(said "$dup")" == *"kept for mount"* ]] && ! grep -q " $K/dup " /proc/mounts && dmesg | grep -q "table of $dup refused at .*name twice"'
	kept=$(cat /sys/fs/dmemfs/kept)
	echo discard > /sys/fs/dmemfs/kept
	check kept-discarded "kept before: '$kept', after: '$(cat /sys/fs/dmemfs/kept)'" \
		eval '[[ "$kept" == "$keep 4K 1 1 forged-keep" ]] && [ -z "$(cat /sys/fs/dmemfs/kept)" ]'
	rm -rf "${K:?}/2M/dom" "$K/2M/c"
	umount "$K/2M"
	for _ in $(seq 1 120); do [ "$(pool_sum dirty)" -eq 0 ] && break; sleep 1; done
	mnt 2M
	free=$(($(stat -f -c '%a * %S' "$K/2M")))
	fallocate -l "$free" "$K/2M/all" || fail pool-zeroed "fallocate of the $free free bytes failed"
	hits=
	for seed in 0x11 0x12 0x21 0x31 0x41 0x42; do hits+="$("$PAT" scan "$K/2M/all" "$seed") "; done
	check pool-zeroed "pages with a pattern per seed: '$hits' in $((free / MiB)) MiB of the pool (dirty $(pool_sum dirty))" \
		[ "$hits" = "0 0 0 0 0 0 " ]
	rm -f "$K/2M/all"
	umount "$K/2M"
	check no-leak "pool free $(pool_sum free) of $(pool_sum total), used $(pool_sum used)" \
		[ "$(pool_sum free)" -eq "$(pool_sum total)" ]
	bad=$(kernel_splats "$mark")
	check kernel-log "$bad" [ -z "$bad" ]
	done_l1
	;;
esac
