# TAP -> result lines: the one converter, for GLib's --tap (the host unit
# tests) and the kselftest harness (the programs L1 runs).
#
#   awk -v prefix=P [-v strip=RE] [-v notes=1] [-v complete=NAME] [-v want=N] \
#       -f scripts/tap-results.awk LOG
#
# Each result "ok N name" / "not ok N name" becomes
#   PASS: P<name>[: notes]        (notes=1: the test's diagnostics)
#   FAIL: P<name>: <reason>       (its assertion lines, else its diagnostics)
#   SKIP: P<name>: <reason>       ("ok N name # SKIP reason": never a pass)
# with RE removed from the name first.  Then P<NAME> (NAME: complete) says
# whether the run was whole: PASS with the count when it gave as many
# results as its plan (1..N) announced (and N = want, when given), FAIL
# when the runner died, timed out or bailed out before that.
function clean(s) {
	sub(/^# ?/, "", s)
	sub(/^[^ :]*\.c:[0-9]+:[^: ]*:/, "", s)   # the harness's file:line:test:
	gsub(/[\t ]+/, " ", s)
	return s
}
function add(list, s) {
	return list == "" ? s : (length(list) < 300 ? list " | " s : list)
}
BEGIN { if (complete == "") complete = "complete"; n = 0; plan = 0 }
/^1\.\.[0-9]+/ { plan = substr($1, 4) + 0; next }
/^Bail out!/ { bail = $0; next }
/^#/ {
	if ($0 ~ /^# +RUN /) { diag = ""; why = ""; next }
	if ($0 ~ /^# Totals:/) { totals = substr($0, 3); next }
	if ($0 ~ /^# +(OK|FAIL|SKIP) / || $0 ~ /^# (PASSED|FAILED|Starting|Start of|End of|random seed)/)
		next
	line = clean($0)
	if (line ~ /Expected |Assertion|ERROR:|should |assertion failed/)
		why = add(why, line)
	diag = add(diag, line)
	last = line
	next
}
/^(not )?ok [0-9]+ / {
	ok = $1 == "ok"
	name = ok ? $3 : $4
	if (strip != "")
		sub(strip, "", name)
	n++
	if (ok && $0 ~ /# SKIP/) {
		r = $0; sub(/.*# SKIP */, "", r)
		print "SKIP: " prefix name ": " (r != "" ? r : (diag != "" ? diag : "skipped"))
	} else if (ok) {
		print "PASS: " prefix name (notes && diag != "" ? ": " diag : "")
	} else {
		print "FAIL: " prefix name ": " substr(why != "" ? why : (diag != "" ? diag : "failed"), 1, 320)
	}
	diag = ""; why = ""
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
