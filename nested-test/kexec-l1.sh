#!/bin/bash
# Inside L1, in a boot of its own (make test's step test-kexec): dmemfs
# files carried over kexec ("mount -o remount,persist", dmemfs_recover=,
# "mount -o recover"), three kernels in one L1 run:
#
#   stage 1  files on dmemfs 2M, 1G and 4K with a seeded pattern (a
#            directory, a sparse file, owners, modes, memory policies);
#            persist 2M and 1G; persist 4K, then change it (its table
#            must go); kexec into the same bzImage, with fixed dmem=
#            ranges and dmemfs_recover= naming all three tables
#   stage 2  the 2M and 1G tables are kept, the stale 4K one is refused;
#            mount -o recover gives back every file, name, owner, mode,
#            size, policy and dpage count, with the pattern intact; the
#            pool holds exactly the recovered files.  Then a new file and
#            a new persist of 2M; the 1G mount goes.  Three tables forged
#            in the pages of 4K files, from the documented format alone
#            (dmem_pattern forge): one with a byte flipped after its
#            checksum, one naming a pfn that is not dmem, one good but
#            naming the new file's dpages.  A second kexec, with all four
#   stage 3  the real table comes back whole (a second hop); the forged
#            ones are refused: checksum, not dmem, and the good one
#            because its dpages are taken.  After the zeroers, no page of
#            the whole pool holds any pattern of stages 1 and 2 that no
#            table kept, and once the files go every dpage is back.
#
# Args (l1.args): --kernel=PATH --initrd=PATH (default: the build's) and,
# from the previous stage, stage=N.  --list prints the checks.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=nested-test/l1-common.sh
. "$here/l1-common.sh"
result_area kexec
checks="stage1-files persist-2M persist-1G persist-stale-dropped kexec-1
	tables-kept stale-refused ranges-same recover-2M recover-1G recover-none-refused
	tree pattern-2M pattern-sparse pattern-1G policies pool-is-files
	repersist forged kexec-2
	second-hop corrupt-refused not-dmem-refused overlap-refused pool-zeroed no-leak kernel-log"
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
persisted() { sed -n "s|^none $K/$1 dmemfs .*persisted=\(0x[0-9a-f]*\).*|\1|p" /proc/mounts; }
# the dmem ranges of this boot: "BASE_PFN NR_PAGES" in decimal, lowest first
regions() {
	local _n b nr _f
	tail -n +2 /sys/kernel/debug/dmem/regions | while read -r _n b nr _f; do
		echo "$((b)) $nr"
	done | sort -n
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
		truncate -s 64M "$K/2M/dom/sparse" && "$PAT" touch "$K/2M/dom/sparse" 0x12 0 600 8192 &&
		chmod 0600 "$K/2M/dom/sparse" && chown 64055:64055 "$K/2M/dom/sparse" &&
		truncate -s 1G "$K/1G/vm0" && "$PAT" fill "$K/1G/vm0" 0x21 prefer-many:0-1 &&
		truncate -s 1M "$K/4K/st" && "$PAT" fill "$K/4K/st" 0x31
	check stage1-files "creating the files failed" [ $? -eq 0 ]
	for s in 2M 1G; do
		err=$(mount -o remount,persist "$K/$s" 2>&1)
		t=$(persisted "$s")
		check "persist-$s" "remount,persist: '$err', /proc/mounts: $(grep " $K/$s " /proc/mounts)" [ -n "$t" ]
		eval "t$s=\$t"
	done
	# last, so that no later table can take its freed page: the address
	# must name nothing at the next boot
	mount -o remount,persist "$K/4K"
	t4=$(persisted 4K)
	truncate -s 2M "$K/4K/st" && "$PAT" touch "$K/4K/st" 0x31 300
	now=$(persisted 4K)
	check persist-stale-dropped "table '$t4' of 4K, '$now' after a change" [ "${t4:+set}/${now:-none}" = set/none ]
	echo "pool before kexec: used $(pool_sum used) free $(pool_sum free)"
	kexec_to 2 "${t2M:-0},${t1G:-0},${t4:-0}"
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
	want=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^dmem=\([0-9]*\)@\([0-9]*\)$/\2 \1/p' | sort -n)
	got=$(regions | while read -r b n; do echo "$((b * 4096)) $((n * 4096))"; done | sort -n)
	check ranges-same "regions '$got' against dmem= '$want'" [ "$want" = "$got" ]
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
	# a new file makes the mount change; persist again; forge three
	mkdir -p "$K/2M/c" && truncate -s 128M "$K/2M/c/x" && "$PAT" fill "$K/2M/c/x" 0x41
	umount "$K/1G"
	mount -o remount,persist "$K/2M"
	t=$(persisted 2M)
	check repersist "no persisted= after the second persist: $(grep " $K/2M " /proc/mounts)" [ -n "$t" ]
	mnt 4K
	x=$(($("$PAT" phys "$K/2M/c/x") / 4096))
	forged= i=0
	for f in "corrupt $x 64" "good 256 1" "good $x 64"; do
		read -r how pfn n <<< "$f"
		i=$((i + 1))
		truncate -s 4K "$K/4K/f$i" && "$PAT" touch "$K/4K/f$i" 0x51 0 &&
			forged+=",$("$PAT" forge "$K/4K/f$i" 21 "$pfn" "$n" "$how")"
	done
	check forged "forged tables '$forged'" [ "$(echo "$forged" | tr -cd , | wc -c)" -eq 3 ]
	kexec_to 3 "${t:-0}$forged"
	why="kexec failed"
	not_run second-hop
	;;
3)
	# ---- stage 3: the real table again, the forged ones refused, the
	# pool zeroed
	mark=0
	t=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^dmemfs_recover=//p' | tr , ' ')
	read -r real corrupt notdmem overlap <<< "$t"
	said() { dmesg | grep -m1 "dmemfs_recover=$1: " | sed 's/.*: //'; }
	mnt 2M recover
	out=$("$PAT" check "$K/2M/dom/ram0" 0x11 && "$PAT" check "$K/2M/dom/sparse" 0x12 0 600 8192 &&
		"$PAT" check "$K/2M/c/x" 0x41 2>&1)
	rc=$?
	check second-hop "table $real: $(said "$real"); $out" [ "$rc" -eq 0 ]
	check corrupt-refused "table $corrupt: $(said "$corrupt")" eval '[[ "$(said "$corrupt")" == *"checksum mismatch"* ]]'
	check not-dmem-refused "table $notdmem: $(said "$notdmem")" eval '[[ "$(said "$notdmem")" == *"not dmem on this boot"* ]]'
	check overlap-refused "table $overlap: $(said "$overlap")" eval '[[ "$(said "$overlap")" == *"dpage twice"* ]]'
	rm -rf "${K:?}/2M/dom" "$K/2M/c"
	umount "$K/2M"
	for _ in $(seq 1 120); do [ "$(pool_sum dirty)" -eq 0 ] && break; sleep 1; done
	mnt 2M
	free=$(($(stat -f -c '%a * %S' "$K/2M")))
	fallocate -l "$free" "$K/2M/all" || fail pool-zeroed "fallocate of the $free free bytes failed"
	hits=
	for seed in 0x11 0x12 0x21 0x31 0x41; do hits+="$("$PAT" scan "$K/2M/all" "$seed") "; done
	check pool-zeroed "pages with a pattern per seed: '$hits' in $((free / MiB)) MiB of the pool (dirty $(pool_sum dirty))" \
		[ "$hits" = "0 0 0 0 0 " ]
	rm -f "$K/2M/all"
	umount "$K/2M"
	check no-leak "pool free $(pool_sum free) of $(pool_sum total), used $(pool_sum used)" \
		[ "$(pool_sum free)" -eq "$(pool_sum total)" ]
	bad=$(kernel_splats "$mark")
	check kernel-log "$bad" [ -z "$bad" ]
	done_l1
	;;
esac
