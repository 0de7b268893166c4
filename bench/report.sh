#!/bin/bash
# bench/report.sh RAW OUTDIR: turn the lines of a benchmark boot (META,
# BENCH, SKIP, HVO, HVOSKIP; see bench/dmem-bench.c and nested-test/l1/bench/l1-bench.sh)
# into OUTDIR/report.md, report.json and report.svg.  Times are medians of
# the rounds; every ratio is against dmemfs 2M with MADV_POPULATE_WRITE.
set -euo pipefail
raw=$1 dir=$2
mkdir -p "$dir"
LC_ALL=C awk -v md="$dir/report.md" -v js="$dir/report.json" -v svg="$dir/report.svg" '
function kv(line, key,    m) { # value of key=... in a line
	if (match(line, "(^| )" key "=[^ ]*")) { m = substr(line, RSTART, RLENGTH); sub(/^ /, "", m); return substr(m, length(key) + 2) }
	return ""
}
function median(list,    a, n, i, j, t) {
	n = split(list, a, ",")
	for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return n % 2 ? a[(n + 1) / 2] + 0 : (a[n / 2] + a[n / 2 + 1]) / 2
}
function ms(ns) { return sprintf("%.1f", ns / 1e6) }
function x2(r) { return r == "" ? "-" : sprintf("%.2f", r) }
function jnum(v) { return v == "" ? "null" : v }
function jstr(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }
function kib(b) { return sprintf("%.0f", b / 1024) }
/^META / { k = $2; sub(/=.*/, "", k); v = substr($0, length(k) + 7); meta[k] = v; next }
/^BENCH / {
	v = kv($0, "variant")
	if (!(v in ns)) { order[++nv] = v; backing[v] = kv($0, "backing"); psz[v] = kv($0, "pagesize"); meth[v] = kv($0, "method") }
	ns[v] = ns[v] (ns[v] == "" ? "" : ",") kv($0, "ns")
	after[v] = after[v] (after[v] == "" ? "" : ",") kv($0, "after_ns")
	rel[v] = rel[v] (rel[v] == "" ? "" : ",") kv($0, "release_ns")
	pt[v] = kv($0, "pt_kb"); slab[v] = kv($0, "slab_kb"); ahp[v] = kv($0, "anonhuge_kb"); dused[v] = kv($0, "dmem_used_kb")
	mib = kv($0, "mib"); nrep[v]++
	next
}
/^SKIP / { v = kv($0, "variant"); if (!(v in skipped)) { skips[++ns_] = v; skipped[v] = kv($0, "reason") } next }
/^HVO / {
	s = kv($0, "size"); h = kv($0, "hvo"); p = kv($0, "pages") + 0; hvotry[s]++
	if (p > 0) { szkb = s == "1G" ? 1048576 : 2048
		back[s, h] += p * szkb - kv($0, "free_drop_kb"); if (kv($0, "total_rise_kb") + 0 > totmax[s, h] + 0) { totmax[s, h] = kv($0, "total_rise_kb") + 0; totgib[s, h] = p * szkb / 1048576 } gib[s, h] += p * szkb / 1048576; nh[s, h]++ }
	next
}
/^HVOSKIP / { hvoskip[kv($0, "size")] = kv($0, "reason"); next }
/^VFIOBENCH / {
	v = kv($0, "variant"); if (!(v in vmap)) { vorder[++nvf] = v; vback[v] = kv($0, "backing"); vpsz[v] = kv($0, "pagesize") }
	vmap[v] = vmap[v] (vmap[v] == "" ? "" : ",") kv($0, "map_ns"); vunm[v] = vunm[v] (vunm[v] == "" ? "" : ",") kv($0, "unmap_ns")
	vpin[v] = kv($0, "pinned_bytes"); vmib = kv($0, "mib")
	next
}
/^VFIOSKIP / { v = kv($0, "variant"); r = $0; sub(/.* reason=/, "", r); if (!(v in vskip)) vskips[++nvs] = v; vskip[v] = r; next }
/^ZERORATE / { zr_mib = kv($0, "mib"); zr_memset = kv($0, "memset_ns"); zr_zeroer = kv($0, "zeroer_ns"); zr_left = kv($0, "dirty_left"); next }
/^ZEROSKIP / { zr_skip = kv($0, "reason"); next }
/^LIVEUPDATE / { lusz = kv($0, "size_mib"); luorder[++nlu] = lusz; ludown[lusz] = kv($0, "downtime_s"); lurest[lusz] = kv($0, "restore_s"); luback[lusz] = kv($0, "backing"); next }
/^LUBREAKDOWN / { lub_stall = kv($0, "stall_s") }
/^PLAINKEXEC / { p = kv($0, "size_mib"); psstall[p] = kv($0, "stall_s"); psdown[p] = kv($0, "downtime_s"); pssave[p] = kv($0, "save_s"); pskexec[p] = kv($0, "kexec_s"); pssetup[p] = kv($0, "setup_s"); psrest[p] = kv($0, "restore_s"); psimg[p] = kv($0, "image_mib"); next }
/^LUBREAKDOWN / { lub_kexec = kv($0, "kexec_to_script_s"); lub_kernel = kv($0, "kernel_s"); lub_setup = kv($0, "setup_s"); lub_restore = kv($0, "restore_all_s"); next }
/^L2START / {
	b = kv($0, "backing") (kv($0, "cell_mib") == "" ? "" : " 2x" kv($0, "cell_mib") "M"); if (!(b in l2n)) { l2order[++nl2] = b; l2back[b] = kv($0, "backing"); l2cell[b] = kv($0, "cell_mib") } l2n[b]++
	if (kv($0, "status") == "PASS") {
		l2s[b] = l2s[b] (l2s[b] == "" ? "" : ",") kv($0, "start_ms")
		l2a[b] = l2a[b] (l2a[b] == "" ? "" : ",") kv($0, "agent_ms")
		l2g[b] = l2g[b] (l2g[b] == "" ? "" : ",") kv($0, "guest_boot_s")
	} else l2why[b] = kv($0, "reason") (kv($0, "reason") == "" ? "agent status " kv($0, "status") : "")
	next
}
/^MEMFREE / { v = kv($0, "variant"); if (!(v in mfree)) mforder[++nmf] = v; mfree[v] = kv($0, "memfree_kb"); mtot[v] = kv($0, "memtotal_kb"); mpool[v] = kv($0, "pool_kb"); next }
/^VMEMGROW / {
	b = kv($0, "backing"); if (!(b in vgn)) vgorder[++nvg] = b; vgn[b]++
	if (kv($0, "status") == "PASS") vgs[b] = vgs[b] (vgs[b] == "" ? "" : ",") kv($0, "grow_ms")
	else vgwhy[b] = kv($0, "reason") (kv($0, "reason") == "" ? "plugged " kv($0, "plugged_bytes") " B" : "")
	next
}
END {
	GiB = 1073741824
	base = "dmem-2M-populate"
	for (i = 1; i <= nv; i++) { v = order[i]; med[v] = median(ns[v]); aft[v] = median(after[v]); relm[v] = median(rel[v]) }
	bmed = (base in med) ? med[base] : 0
	for (i = 1; i <= nv; i++) { v = order[i]; ratio[v] = bmed ? med[v] / bmed : ""; if (aft[v] > 0) ratio2[v] = bmed ? (med[v] + aft[v]) / bmed : "" }
	npz = split("4K 2M 1G", pz, " ")
	for (i = 1; i <= npz; i++) { t = "dmem-" pz[i] "-touch"; p = "dmem-" pz[i] "-populate"
		speed[pz[i]] = (t in med && p in med && med[p] > 0) ? med[t] / med[p] : "" }
	# ---- metadata
	dtot = meta["dmem_total_bytes"] + 0; dg = dtot / GiB
	mm_boot = (dg > 0 && meta["boot_reserved_delta_bytes"] != "") ? meta["boot_reserved_delta_bytes"] / dg : ""
	mm_sysfs = (dg > 0 && meta["dmem_memmap_saved_bytes_sysfs"] + 0 > 0) ? meta["dmem_memmap_saved_bytes_sysfs"] / dg : ""
	mm = mm_boot != "" ? mm_boot : mm_sysfs
	mm_how = mm_boot != "" ? "measured: kernel \"reserved\" (Memory: line) of the baseline boot minus this boot, per GiB of dmem" : "dmem memmap_saved_bytes per GiB of dmem"
	nodmem_memmap = (meta["present_delta_bytes"] != "" && meta["present_delta_bytes"] + 0 == dtot && dtot > 0) ? "measured: zone present pages fell by exactly the dmem total" : "modelled"
	nm = 0
	mrow("dmemfs (4K, 2M, 1G)", 0, nodmem_memmap " (no struct page); allocator bitmap 32 KiB/GiB modelled (1 bit per 4 KiB)")
	mrow("normal RAM: THP, memfd, hugetlb no HVO", mm, mm_how)
	split("2M 1G", hs, " ")
	for (i = 1; i <= 2; i++) {
		s = hs[i]
		if ((s, 0) in nh && (s, 1) in nh) {
			g0 = back[s, 0] * 1024 / gib[s, 0]; g1 = back[s, 1] * 1024 / gib[s, 1]
			t1 = ((s, 1) in totgib) ? totmax[s, 1] * 1024 / totgib[s, 1] : 0
			hvo_back[s] = t1 > 0 ? t1 : g1 - g0
			mrow("hugetlbfs " s " + HVO", mm - hvo_back[s], sprintf("measured: the first HVO allocation of %g GiB of %s pages raised MemTotal by %s KiB/GiB (boot-time vmemmap pages freed to the buddy allocator; the kernel states %s KiB per page); MemFree deltas (not used: reclaim during the allocation moves MemFree more than HVO does) give back %s KiB/GiB with vm.hugetlb_optimize_vmemmap=1 (%d run) and %s with 0 (%d runs)", totgib[s, 1], s, kib(t1), meta["kernel_hvo_freeable_kib_" s] == "" ? "?" : meta["kernel_hvo_freeable_kib_" s], kib(g1), nh[s, 1], kib(g0), nh[s, 0]))
		} else {
			f = meta["kernel_hvo_freeable_kib_" s] + 0; per = s == "1G" ? 1 : 512
			mrow("hugetlbfs " s " + HVO", mm - f * 1024 * per, "modelled: memmap less the kernel'"'"'s own \"vmemmap can be freed\" figure (" (s in hvoskip ? hvoskip[s] : (s in hvotry ? "run-time allocation of " s " pages failed" : "not run")) ")")
		}
	}
	# ---- markdown
	printf "# dmemfs populate benchmark (`make bench`)\n\n" > md
	printf "One L1 boot (%s), kernel %s, %s vCPUs, %s MiB per run, median of %s round(s); the benchmark part took %s s in L1, `make bench` %s s on the host.\n", meta["accelerator"], meta["kernel"], meta["cpus"], mib, nrep[base] ? nrep[base] : "?", meta["bench_seconds"], meta["host_seconds"] > md
	printf "Absolute times under TCG are slow and noisy; compare the ratios. Ratio = time / time of **%s** (lower is faster).\n\n", base > md
	printf "| variant | backing | page | method | median ms | ratio | then touch ms | total ratio | MiB/s | page tables KiB/GiB | release ms |\n|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n" > md
	for (i = 1; i <= nv; i++) { v = order[i]
		printf "| %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %.0f | %s |\n", v, backing[v], psz[v], meth[v], ms(med[v]), x2(ratio[v]),
			(aft[v] > 0 ? ms(aft[v]) : ""), (aft[v] > 0 ? x2(ratio2[v]) : ""), (med[v] > 0 ? mib / (med[v] / 1e9) : 0), pt[v] * 1024 / mib, ms(relm[v]) > md }
	for (i = 1; i <= ns_; i++) printf "| %s | skipped: %s |||||||||| \n", skips[i], skipped[skips[i]] > md
	printf "\n\"then touch\": after fallocate, the faults that map the preallocated dpages (total ratio = both). Page tables: PageTables growth while populated.\n\n" > md
	if ("thp-populate" in ahp) printf "THP check: AnonHugePages grew by %s KiB in a %s MiB thp-populate run; its page tables are the PTE pages deposited with every huge PMD.\n\n", ahp["thp-populate"], mib > md
	printf "**MADV_POPULATE_WRITE over first touch on dmemfs:**" > md
	for (i = 1; i <= npz; i++) printf " %s %s×%s", pz[i], x2(speed[pz[i]]), (i < npz ? "," : "") > md
	printf " (touch time / populate time).\n\n" > md
	printf "## Metadata: struct page memory per GiB\n\n| backing | memmap KiB per GiB | how |\n|---|---:|---|\n" > md
	for (i = 1; i <= nm; i++) printf "| %s | %s | %s |\n", mname[i], mval[i] == "" ? "?" : kib(mval[i]), mhow[i] > md
	printf "\nModel for comparison: 64 B of struct page per 4 KiB = 16384 KiB/GiB. dmem measured: %.0f B reserved, MemTotal %s B lower, kernel memmap_saved_bytes %s.\n", dtot, meta["memtotal_delta_bytes"], meta["dmem_memmap_saved_bytes_sysfs"] > md
	printf "Pools: %s; THP %s, shmem THP %s; dmem free before/after the runs: %s B; kernel log during the run: %s.\n", meta["cmdline_hugetlb"], meta["thp_enabled"], meta["shmem_thp"], meta["dmem_free_before_after"], meta["dmesg"] > md
	# ---- L2 start through libvirt
	l2base = "dmem-2M"
	for (i = 1; i <= nl2; i++) { b = l2order[i]; if (l2s[b] != "") { l2ms[b] = median(l2s[b]); l2am[b] = median(l2a[b]); l2gm[b] = median(l2g[b]) } }
	if (nl2) {
		printf "\n## L2 start through libvirt (`virsh start`, 2 cells of %s MiB)\n\n", meta["l2start_cell_mib"] > md
		printf "Median of the rounds; ratios against **hugetlb-2M** of the same size (lower is faster). start: `virsh start` until it returns (hook, QEMU, memory); agent: until the L2 agent has written its pattern over all guest RAM and reported. dmem-2M starts from a pool the background zeroers cleaned (the wait for them is not in the time); dmem-2M-zeroing-off has background zeroing off, so the hook preallocation zeroes every dpage.\n\n" > md
		printf "| backing | size | runs ok | start ms | start / hugetlb-2M | to agent result ms | agent / hugetlb-2M | guest kernel to init s |\n|---|---|---:|---:|---:|---:|---:|---:|\n" > md
		for (i = 1; i <= nl2; i++) { b = l2order[i]; hb = "hugetlb-2M" (l2cell[b] == "" ? "" : " 2x" l2cell[b] "M")
			if (l2s[b] == "") { printf "| %s | 2x%s MiB | 0/%d | failed: %s |||||\n", l2back[b], l2cell[b], l2n[b], l2why[b] > md; continue }
			printf "| %s | 2x%s MiB | %d/%d | %.0f | %s | %.0f | %s | %.2f |\n", l2back[b], l2cell[b], split(l2s[b], tmp, ","), l2n[b], l2ms[b], x2(l2ms[hb] ? l2ms[b] / l2ms[hb] : ""), l2am[b], x2(l2am[hb] ? l2am[b] / l2am[hb] : ""), l2gm[b] > md }
	}
	# ---- virtio-mem grow of a running L2
	for (i = 1; i <= nvg; i++) { b = vgorder[i]; if (vgs[b] != "") vgm[b] = median(vgs[b]) }
	if (nvg) {
		printf "\n## virtio-mem grow of a running L2 by %s MiB (`virsh update-memory-device`)\n\n", meta["vmemgrow_mib"] > md
		printf "Median of the rounds, from the command until QEMU has the device at the new size (the guest plugs, QEMU preallocates every block); ratios against **dmem-2M** (above 1: slower than dmem).\n\n" > md
		printf "| backing | runs ok | grow ms | / dmem-2M |\n|---|---:|---:|---:|\n" > md
		for (i = 1; i <= nvg; i++) { b = vgorder[i]
			if (vgs[b] == "") { printf "| %s | 0/%d | failed: %s ||\n", b, vgn[b], vgwhy[b] > md; continue }
			printf "| %s | %d/%d | %.0f | %s |\n", b, split(vgs[b], tmp, ","), vgn[b], vgm[b], x2(vgm["dmem-2M"] ? vgm[b] / vgm["dmem-2M"] : "") > md }
	}
	# ---- host MemFree with a 5 of 8 GiB pool (l1-memfree.sh boots)
	if (nmf) {
		printf "\n## Host MemFree with a 5 GiB pool in 8 GiB\n\n" > md
		printf "Three boots of the same kernel, 8 GiB of L1 on two nodes, each read once the page cache was dropped and MemFree stood still: no pool, a dmem= pool, and hugetlbfs 1G pages reserved at boot with HVO (`hugetlb_free_vmemmap=on`). Left for the host: MemFree. The drop: MemFree of the boot without a pool less that of this boot; less the pool, what remains is metadata (negative: the boot gave memmap back).\n\n" > md
		printf "| boot | pool KiB | MemTotal KiB | MemFree KiB | MemFree drop KiB | drop less the pool KiB |\n|---|---:|---:|---:|---:|---:|\n" > md
		for (i = 1; i <= nmf; i++) { v = mforder[i]
			d = ("none" in mfree) ? mfree["none"] - mfree[v] : ""
			if (d != "" && v != "none" && mpool[v] ~ /^[0-9]+$/) mmeta[v] = d - mpool[v]
			printf "| %s | %s | %s | %s | %s | %s |\n", v, mpool[v], mtot[v], mfree[v], d == "" ? "-" : d, (v in mmeta) ? mmeta[v] : "-" > md }
		if (("dmem" in mmeta) && ("hugetlb-1g-hvo" in mmeta) && mpool["dmem"] > 0 && mpool["hugetlb-1g-hvo"] > 0) {
			dg = mpool["dmem"] / 1048576; hg = mpool["hugetlb-1g-hvo"] / 1048576
			if (mpool["dmem"] == mpool["hugetlb-1g-hvo"]) printf "\nFor the same %g GiB pool dmem leaves the host %d KiB more MemFree than hugetlbfs 1G with HVO.", dg, mfree["dmem"] - mfree["hugetlb-1g-hvo"] > md
			else printf "\nThe pools differ: dmem= reserved %g GiB, the boot-time hugetlbfs pool got %g GiB of 1G pages (the aligned GiBs it found free).", dg, hg > md
			printf " Per GiB of pool, the host got back %.0f KiB with dmem and %.0f KiB with hugetlbfs 1G + HVO (MemFree drop less the pool, over the pool); the struct pages of a GiB are 16384 KiB. Kernel logs: dmem %s; hugetlbfs %s.\n", -mmeta["dmem"] / dg, -mmeta["hugetlb-1g-hvo"] / hg, meta["memfree_dmem_dmesg"], meta["memfree_hugetlb-1g-hvo_dmesg"] > md
		}
	}
	# ---- host kernel update under running guests
	if (nlu) {
		printf "\n## Host kernel update\n\n" > md
		printf "Guest downtime under a host kernel update, both ways in the same L1 (under TCG, a virtio disk for the device state) and the same run, each from the guest stopping to the guest running again on the next kernel, the same kernel kexec'"'"'d below the dmem ranges both times, the guests saved at once and restored at once both times. dmem-liveupdate: saved without their RAM (it stays in dmem), the mounts persisted, kexec, `dmem-liveupdate --restore`. Plain: `virsh save` with the RAM to the disk, the same kexec without tables, `virsh restore` into new dmemfs files. Ratio: dmem-liveupdate / plain (below 1: less downtime).\n\n" > md
		printf "| guest | dmem-liveupdate s | save+kexec+restore s | ratio | ratio without the TCG stall | plain: save s | kexec s | setup s | restore s | image MiB |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n" > md
		for (i = 1; i <= nlu; i++) { z = luorder[i]
			ld = ludown[z] - lub_stall; pd = psdown[z] - psstall[z]
			printf "| %s MiB (%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", z, luback[z], ludown[z], psdown[z] == "" ? "-" : psdown[z], x2(psdown[z] + 0 > 0 ? ludown[z] / psdown[z] : ""), x2(psdown[z] + 0 > 0 && lub_stall != "" && psstall[z] != "" && pd > 0 ? ld / pd : ""), pssave[z] == "" ? "-" : pssave[z], pskexec[z] == "" ? "-" : pskexec[z], pssetup[z] == "" ? "-" : pssetup[z], psrest[z] == "" ? "-" : psrest[z], psimg[z] == "" ? "-" : psimg[z] > md }
		if (lub_stall != "") printf "\nThe TCG stall: under TCG, the first large memblock allocation of a kexec'"'"'d kernel (the percpu first chunk, zeroed with rep stosb) lands on pages that still hold code the old kernel ran, and QEMU takes its self-modifying-code path for every byte (setup_percpu to `percpu: Embedded`: %s s in the dmem-liveupdate kernel, %s s in the plain one at %s MiB). Hardware has no such cost; a kexec from an idle L1 has none. The last ratio takes it out of both ways.\n", lub_stall, psstall[luorder[nlu]], luorder[nlu] > md
		if (lub_kexec != "") printf "\nWhere the liveupdate downtime goes: kexec -e to L1'"'"'s test script %s s (of it the L1 kernel %s s to userspace), libvirtd and the test'"'"'s setup %s s, `dmem-liveupdate --restore` for both guests %s s. Only the plain way'"'"'s save and restore grow with guest RAM.\n", lub_kexec, lub_kernel, lub_setup, lub_restore > md
	}
	# ---- background zeroing
	printf "\n## Background zeroing (kdmemzerod)\n\n" > md
	if (zr_zeroer != "") printf "Zeroers against memset: %s MiB freed dirty were zeroed by the background zeroers in %s ms (%.0f MiB/s); a plain memset of the same %s MiB took %s ms (%.0f MiB/s): zeroer/memset rate %s (dirty bytes left: %s).\n\n", zr_mib, ms(zr_zeroer), zr_mib / (zr_zeroer / 1e9), zr_mib, ms(zr_memset), zr_mib / (zr_memset / 1e9), x2(zr_memset / zr_zeroer), zr_left > md
	else printf "Zeroer rate not measured: %s.\n\n", zr_skip == "" ? "no dmemfs 2M" : zr_skip > md
	printf "| allocation of %s MiB | median ms | against |\n|---|---:|---|\n", mib > md
	zrow("dmem-1G-fallocate", "hugetlb-1G-populate"); zrow("dmem-1G-fallocate", "hugetlb-2M-populate"); zrow("dmem-2M-fallocate", "hugetlb-2M-populate")
	zrow("dmem-2M-fallocate", "dmem-2M-fallocate-zeroing-off"); zrow("dmem-1G-fallocate", "dmem-1G-fallocate-zeroing-off"); zrow("dmem-2M-populate", "dmem-2M-populate-zeroing-off")
	printf "\nA ratio below 1 is faster; fallocate from a pool the zeroers cleaned does no zeroing.\n" > md
	# ---- VFIO MAP_DMA + UNMAP_DMA (vfio_dmem_test --bench)
	vb = "dmem-2M"
	for (i = 1; i <= nvf; i++) { v = vorder[i]; vmm[v] = median(vmap[v]); vum[v] = median(vunm[v]) }
	if (nvf || nvs) {
		printf "\n## VFIO MAP_DMA + UNMAP_DMA of %s MiB (type1v2, vIOMMU + edu device in L1)\n\n", vmib == "" ? mib : vmib > md
		printf "`vfio_dmem_test --bench`: median of the rounds; ratio = time / time of **%s** (lower is faster). pinned: dmem pinned_bytes while mapped (0 for non-dmem backings).\n\n", vb > md
		printf "| variant | backing | page | MAP_DMA ms | ratio | UNMAP_DMA ms | ratio | map+unmap ratio | pinned MiB |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n" > md
		for (i = 1; i <= nvf; i++) { v = vorder[i]
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %.0f |\n", v, vback[v], vpsz[v], ms(vmm[v]), x2(vmm[vb] ? vmm[v] / vmm[vb] : ""), ms(vum[v]), x2(vum[vb] ? vum[v] / vum[vb] : ""),
				x2(vmm[vb] + vum[vb] ? (vmm[v] + vum[v]) / (vmm[vb] + vum[vb]) : ""), vpin[v] / 1048576 > md }
		for (i = 1; i <= nvs; i++) printf "| %s | skipped: %s ||||||||\n", vskips[i], vskip[vskips[i]] > md
		printf "\nDevice %s; took %s s; dmem free after the VFIO runs: %s B.\n", meta["vfio_device"], meta["vfio_bench_seconds"], meta["dmem_free_after_vfio"] > md
	}
	# ---- json
	printf "{\n  \"baseline\": %s,\n  \"mib\": %s,\n  \"accelerator\": %s,\n  \"kernel\": %s,\n  \"bench_seconds\": %s,\n  \"variants\": [\n", jstr(base), mib, jstr(meta["accelerator"]), jstr(meta["kernel"]), jnum(meta["bench_seconds"]) > js
	for (i = 1; i <= nv; i++) { v = order[i]
		printf "    {\"name\": %s, \"backing\": %s, \"pagesize\": %s, \"method\": %s, \"samples_ns\": [%s], \"median_ns\": %.0f, \"ratio\": %s, \"then_touch_ns\": %s, \"total_ratio\": %s, \"pagetables_kb\": %s, \"unreclaimable_slab_kb\": %s, \"anonhuge_kb\": %s, \"dmem_used_kb\": %s, \"release_ns\": %.0f}%s\n",
			jstr(v), jstr(backing[v]), jstr(psz[v]), jstr(meth[v]), ns[v], med[v], jnum(ratio[v] == "" ? "" : sprintf("%.4f", ratio[v])),
			(aft[v] > 0 ? sprintf("%.0f", aft[v]) : "null"), (aft[v] > 0 ? sprintf("%.4f", ratio2[v]) : "null"), jnum(pt[v]), jnum(slab[v]), jnum(ahp[v]), jnum(dused[v]), relm[v], (i < nv ? "," : "") > js }
	printf "  ],\n  \"skipped\": {" > js
	for (i = 1; i <= ns_; i++) printf "%s%s: %s", (i > 1 ? ", " : ""), jstr(skips[i]), jstr(skipped[skips[i]]) > js
	printf "},\n  \"populate_over_touch_speedup\": {\"dmem-4K\": %s, \"dmem-2M\": %s, \"dmem-1G\": %s},\n", jnum(speed["4K"] == "" ? "" : sprintf("%.3f", speed["4K"])), jnum(speed["2M"] == "" ? "" : sprintf("%.3f", speed["2M"])), jnum(speed["1G"] == "" ? "" : sprintf("%.3f", speed["1G"])) > js
	printf "  \"memmap_bytes_per_gib\": [\n" > js
	for (i = 1; i <= nm; i++) printf "    {\"backing\": %s, \"bytes\": %s, \"how\": %s}%s\n", jstr(mname[i]), mval[i] == "" ? "null" : sprintf("%.0f", mval[i]), jstr(mhow[i]), (i < nm ? "," : "") > js
	printf "  ],\n  \"l2_start\": [" > js
	for (i = 1; i <= nl2; i++) { b = l2order[i]
		printf "%s\n    {\"backing\": %s, \"cell_mib\": %s, \"runs\": %d, \"start_ms\": [%s], \"agent_ms\": [%s], \"median_start_ms\": %s, \"median_agent_ms\": %s}", (i > 1 ? "," : ""), jstr(l2back[b]), jnum(l2cell[b]), l2n[b], l2s[b], l2a[b], jnum(l2ms[b]), jnum(l2am[b]) > js }
	printf "\n  ],\n  \"zero_rate\": {\"mib\": %s, \"memset_ns\": %s, \"zeroer_ns\": %s},", jnum(zr_mib), jnum(zr_memset), jnum(zr_zeroer) > js
	printf "\n  \"vfio_map_dma\": {\"baseline\": %s, \"mib\": %s, \"variants\": [", jstr(vb), jnum(vmib) > js
	for (i = 1; i <= nvf; i++) { v = vorder[i]
		printf "%s\n    {\"name\": %s, \"backing\": %s, \"pagesize\": %s, \"map_ns\": [%s], \"unmap_ns\": [%s], \"median_map_ns\": %.0f, \"median_unmap_ns\": %.0f, \"map_ratio\": %s, \"unmap_ratio\": %s, \"pinned_bytes\": %s}", (i > 1 ? "," : ""),
			jstr(v), jstr(vback[v]), jstr(vpsz[v]), vmap[v], vunm[v], vmm[v], vum[v], jnum(vmm[vb] ? sprintf("%.4f", vmm[v] / vmm[vb]) : ""), jnum(vum[vb] ? sprintf("%.4f", vum[v] / vum[vb]) : ""), jnum(vpin[v]) > js }
	printf "\n  ], \"skipped\": {" > js
	for (i = 1; i <= nvs; i++) printf "%s%s: %s", (i > 1 ? ", " : ""), jstr(vskips[i]), jstr(vskip[vskips[i]]) > js
	printf "}},\n  \"memfree_5_of_8_gib\": [" > js
	for (i = 1; i <= nmf; i++) { v = mforder[i]
		printf "%s\n    {\"boot\": %s, \"pool_kb\": %s, \"memtotal_kb\": %s, \"memfree_kb\": %s}", (i > 1 ? "," : ""), jstr(v), mpool[v] ~ /^[0-9]+$/ ? mpool[v] : "null", jnum(mtot[v]), jnum(mfree[v]) > js }
	printf "\n  ],\n  \"meta\": {" > js
	n = 0; for (k in meta) printf "%s%s: %s", (n++ ? ", " : ""), jstr(k), jstr(meta[k]) > js
	printf "}\n}\n" > js
	# ---- svg: ratios on a log scale, then memmap per GiB
	W = 900; L = 260; R = 120; bh = 18; top = 50; pw = W - L - R
	lo = 0; hi = 0
	for (i = 1; i <= nv; i++) { v = order[i]; if (ratio[v] > 0) { l = log(ratio[v]) / log(10); if (l < lo) lo = l; if (l > hi) hi = l } }
	lo = int(lo) - (lo < int(lo) ? 1 : 0); hi = int(hi) + (hi > int(hi) ? 1 : 0); if (hi <= lo) hi = lo + 1
	h1 = top + nv * (bh + 4) + 30; h = h1 + 60 + nm * (bh + 4) + 30
	printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, h > svg
	printf "<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">Populate %s MiB: time relative to %s (log scale, lower is faster)</text>\n", mib, base > svg
	for (d = lo; d <= hi; d++) { x = L + pw * (d - lo) / (hi - lo)
		printf "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g×</text>\n", x, top - 8, x, top + nv * (bh + 4), d == 0 ? "red" : "#ccc", x, top - 12, 10 ^ d > svg }
	col["dmemfs"] = "#1f77b4"; col["hugetlbfs"] = "#ff7f0e"; col["anon-THP"] = "#2ca02c"; col["shmem"] = "#9467bd"
	for (i = 1; i <= nv; i++) { v = order[i]; y = top + (i - 1) * (bh + 4)
		w = ratio[v] > 0 ? pw * (log(ratio[v]) / log(10) - lo) / (hi - lo) : 0
		printf "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text><rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/><text x=\"%.1f\" y=\"%d\">%s× (%s ms)</text>\n", L - 6, y + bh - 4, v, L, y, w, bh, col[backing[v]], L + w + 4, y + bh - 4, x2(ratio[v]), ms(med[v]) > svg }
	printf "<text x=\"10\" y=\"%d\" font-size=\"15\" font-weight=\"bold\">struct page memory (memmap) per GiB of guest memory, KiB</text>\n", h1 + 30 > svg
	mx = 1; for (i = 1; i <= nm; i++) if (mval[i] > mx) mx = mval[i]
	for (i = 1; i <= nm; i++) { y = h1 + 50 + (i - 1) * (bh + 4); w = mval[i] > 0 ? pw * mval[i] / mx : 0
		printf "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text><rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#555\"/><text x=\"%.1f\" y=\"%d\">%s KiB</text>\n", L - 6, y + bh - 4, substr(mname[i], 1, 40), L, y, w, bh, L + w + 4, y + bh - 4, mval[i] == "" ? "?" : kib(mval[i]) > svg }
	printf "</svg>\n" > svg
}
function mrow(name, val, how) { mname[++nm] = name; mval[nm] = val; mhow[nm] = how }
function zrow(a, b) { if ((a in med) && (b in med) && med[b] > 0) printf "| %s | %s | %s x the time of %s (%s ms): %.1f x faster |\n", a, ms(med[a]), x2(med[a] / med[b]), b, ms(med[b]), (med[a] > 0 ? med[b] / med[a] : 0) > md }
' "$raw"
