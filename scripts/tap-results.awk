# TAP and KTAP -> result lines: the one converter, for GLib's --tap (the
# host unit tests), the kselftest harness (the programs L1 runs) and
# KUnit's KTAP in the kernel log (the trunk's kunit.* checks).
#
#   awk -v prefix=P [-v strip=RE] [-v notes=1] [-v complete=NAME] [-v want=N] \
#       [-v noskip=1] [-v atleast="NAME=N ..."] -f scripts/tap-results.awk LOG
#
# Each result "ok N name" / "not ok N name" of the top level becomes
#   PASS: P<name>[: notes]        (notes=1: the test's diagnostics)
#   FAIL: P<name>: <reason>       (its assertion lines, else its diagnostics)
#   SKIP: P<name>: <reason>       ("ok N name # SKIP reason": never a pass)
# with RE removed from the name first.  KTAP's subtests (indented by 4
# spaces a level: KUnit's cases and parameters) are not results of their
# own: they make their parent's reason (the names of the failed ones, their
# assertions) and its count, and a parent "ok" whose subtests fell short of
# their plan is a FAIL.  Then P<NAME> (NAME: complete) says whether the run
# was whole: PASS with the count when it gave as many results as its plan
# (1..N) announced (and N = want, when given), FAIL when the runner died,
# timed out or bailed out before that, with the harness's "# Totals:" when
# it follows the last result.  Results past the plan are not read (a kernel
# log goes on after KUnit's block).  noskip=1: a skip, of a result or of
# one of its subtests, is a FAIL (where every test must run: the trunk's
# KUnit).  atleast: the result NAME fails with fewer than N subtests (cases
# compiled out).
function clean(s) {
	sub(/^# ?/, "", s)
	sub(/^[^ :]*\.c:[0-9]+:[^: ]*:/, "", s)   # the harness's file:line:test:
	gsub(/[\t ]+/, " ", s)
	return s
}
function add(list, s) {
	return list == "" ? s : (length(list) < 300 ? list " | " s : list)
}
function title(s) {   # "ok 3 name with words # directive" -> "name with words"
	sub(/^(not )?ok [0-9]+ (- )?/, "", s)
	sub(/ *# .*$/, "", s)
	return s
}
BEGIN {
	if (complete == "") complete = "complete"
	n = 0; plan = 0
	na = split(atleast, al, / +/)
	for (i = 1; i <= na; i++)
		if (split(al[i], kv, "=") == 2)
			minsub[kv[1]] = kv[2] + 0
}
{
	match($0, /^ */)
	depth = int(RLENGTH / 4)
	$0 = substr($0, RLENGTH + 1)
}
plan > 0 && n >= plan {
	# the line after the last result: the harness's totals, if any
	if (!after++ && depth == 0 && $0 ~ /^# Totals:/)
		totals = substr($0, 3)
	next
}
/^(K?TAP version|# Subtest:)/ { next }
/^1\.\.[0-9]+/ {
	if (depth == 0)
		plan = substr($1, 4) + 0
	else if (depth == 1)
		subplan = substr($1, 4) + 0
	next
}
/^Bail out!/ { bail = $0; next }
/^#/ {
	if ($0 ~ /^# +RUN /) { diag = ""; why = ""; next }
	if ($0 ~ /^# Totals:/) next   # KUnit's, a suite's own: not the run's
	if ($0 ~ /^# +(OK|FAIL|SKIP) / || $0 ~ /^# (PASSED|FAILED|Starting|Start of|End of|random seed)/ ||
	    $0 ~ /^# [^ ]+: pass:[0-9]+ fail:[0-9]+/)
		next
	line = clean($0)
	if (line ~ /Expected |Assertion|ERROR:|should |assertion failed|(EXPECTATION|ASSERTION) FAILED/)
		why = add(why, line)
	diag = add(diag, line)
	last = line
	next
}
# KUnit's assertion text: "Expected x == y, but" and its indented values
depth > 0 && !/^(not )?ok [0-9]+ / {
	if ($0 ~ /^Expected / || why != "")
		why = add(why, clean($0))
	next
}
/^(not )?ok [0-9]+ / && depth > 0 {
	if (depth == 1)
		subn++
	if ($1 == "ok" && $0 ~ /# SKIP/) {
		subskip++
		skipwhy = add(skipwhy, title($0))
	} else if ($1 == "ok") {
		subok++
	} else {
		subbad++
		subwhy = add(subwhy, title($0) (why != "" ? " (" why ")" : ""))
	}
	diag = ""; why = ""
	next
}
/^(not )?ok [0-9]+ / {
	ok = $1 == "ok"
	name = ok ? $3 : $4
	if (name == "-")
		name = ok ? $4 : $5
	if (strip != "")
		sub(strip, "", name)
	n++
	subs = subok + subbad + subskip
	if (ok && subplan > 0 && subn != subplan) {
		ok = 0
		why = subn " of its " subplan " subtests reported"
	} else if (ok && noskip && subskip > 0) {
		ok = 0
		why = subskip " subtests skipped: " skipwhy
	} else if (ok && (name in minsub) && subs < minsub[name]) {
		ok = 0
		why = "only " subs " subtests, want at least " minsub[name]
	}
	sub_note = subs > 0 ? subok " of " subs " subtests ok" (subskip ? ", " subskip " skipped" : "") : ""
	if (ok && $0 ~ /# SKIP/ && noskip) {
		r = $0; sub(/.*# SKIP */, "", r)
		print "FAIL: " prefix name ": skipped: " (r != "" ? r : "no reason")
	} else if (ok && $0 ~ /# SKIP/) {
		r = $0; sub(/.*# SKIP */, "", r)
		print "SKIP: " prefix name ": " (r != "" ? r : (diag != "" ? diag : "skipped"))
	} else if (ok) {
		d = sub_note != "" ? sub_note : diag
		print "PASS: " prefix name (notes && d != "" ? ": " d : "")
	} else {
		r = subwhy != "" ? "not ok: " subwhy : (why != "" ? why : (diag != "" ? diag : "failed"))
		print "FAIL: " prefix name ": " substr(r, 1, 320)
	}
	diag = ""; why = ""; subn = subok = subbad = subskip = subplan = 0; subwhy = skipwhy = ""
}
END {
	if (plan > 0 && n == plan && (want == "" || n == want + 0))
		print "PASS: " prefix complete ": " n " of " plan " tests" (totals != "" ? " (" totals ")" : "")
	else
		print "FAIL: " prefix complete ": " n " results of a plan of " plan \
			(want != "" ? " (" want " expected)" : "") \
			": the runner died, timed out or bailed out" \
			(bail != "" ? " (" bail ")" : "") (last != "" ? "; last: " substr(last, 1, 160) : "")
}
