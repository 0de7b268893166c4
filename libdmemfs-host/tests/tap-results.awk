# GLib TAP (--tap) -> "PASS: <prog> <path>" / "FAIL: <prog> <path>: <reason>" /
# "SKIP: <prog> <path>: <reason>" (a skip is counted as such, never as a pass)
# A runner that dies before its plan is complete yields a FAIL line too.
/^1\.\.[0-9]+/ { plan = substr($1, 4) + 0 }
/^# / { last = substr($0, 3) }
/^ok [0-9]+ / {
	n++; name = $3
	if ($0 ~ /# SKIP/) {
		why = $0; sub(/.*# SKIP */, "", why)
		print "SKIP: " prog " " name ": " (why != "" ? why : "skipped")
	} else print "PASS: " prog " " name
	last = ""
}
/^not ok [0-9]+ / {
	n++; name = $4
	print "FAIL: " prog " " name ": " (last != "" ? last : "assertion failed")
	last = ""
}
/^Bail out!/ { bail = $0 }
END {
	if (plan == 0 || n < plan)
		print "FAIL: " prog ": runner stopped after " n " of " plan " tests" (bail != "" ? " (" bail ")" : "") (last != "" ? ": " last : "")
}
