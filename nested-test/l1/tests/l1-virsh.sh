#!/bin/bash
# In-L1 acceptance of issue 7 (libvirt + dmemfs hook + qemu-memdev-wrapper
# + L2 guests), picked up by nested-test/l1/l1-trunk.sh like every
# */tests/l1-*.sh.  The checks live in nested-test/l1/acceptance/l1-checks.sh;
# they print "PASS: accept.<check>" / "FAIL: accept.<check>: reason" lines and
# leave the dmem pool as they found it.
here=$(cd "$(dirname "$0")" && pwd)
export TOP=${TOP:-$(cd "$here/../../.." && pwd)}
exec bash "$TOP/nested-test/l1/acceptance/l1-checks.sh" "$@"
