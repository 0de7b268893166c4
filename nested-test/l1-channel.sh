# shellcheck shell=bash
# Sourced by scripts that run inside L1: fd 3 becomes the results channel
# (ttyS1, which the harness reads and the kernel never writes to, or
# stdout when there is none), and res LINE writes LINE there and, marked,
# on the console.
if [ -c /dev/ttyS1 ] && exec 3> /dev/ttyS1; then
	stty -F /dev/ttyS1 raw -echo 2> /dev/null || true
else
	exec 3>&1
fi
res() { printf '%s\n' "$*" >&3; printf 'RESULT %s\n' "$*"; }
