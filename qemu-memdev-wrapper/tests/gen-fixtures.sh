#!/bin/bash
# Developer tool (not run by make): regenerate the *.args fixtures from the
# domain XMLs with the real libvirt 9.0 command line builder, using the
# embedded qemu driver (no daemon, state in a temp dir, hooks not run).
# Only XMLs whose nodesets exist on this host can be converted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
xmls=${*:-dimm nonuma nonuma-memfd-global nonuma-plain numa-memnode numa-ram restrictive}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
for x in $xmls; do
	virsh -q -c "qemu:///embed?root=$root" domxml-to-native qemu-argv \
		"$here/../../libvirt-hook/tests/fixtures/$x.xml" |
	python3 -c 'import shlex,sys
a = shlex.split(sys.stdin.read())
i = next(i for i, w in enumerate(a) if w.startswith("/"))   # skip the env prefix
print("\n".join(a[i + 1:]))' | sed "s|$root|/var/lib/libvirt|g" > "$here/fixtures/$x.args"
	echo "$x.args: $(wc -l < "$here/fixtures/$x.args") args"
done
