#!/bin/bash
# Developer tool (not run by make): regenerate the *.args fixtures from the
# domain XMLs with the real libvirt 9.0 command line builder, using the
# embedded qemu driver (no daemon, state in a temp dir, hooks not run).
# Only XMLs whose nodesets exist on this host can be converted; hugepages.xml
# needs a hugetlbfs of 1G pages mounted (mount -t hugetlbfs -o pagesize=1G
# none /dev/hugepages1G): libvirt takes its mem-path from the mount.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
xmls=${*:-dimm hugepages nonuma nonuma-memfd-global nonuma-plain numa-memnode numa-ram restrictive}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
for x in $xmls; do
	virsh -q -c "qemu:///embed?root=$root" domxml-to-native qemu-argv \
		"$here/../../libvirt-hook/tests/fixtures/$x.xml" |
	python3 -c 'import shlex,sys
a = shlex.split(sys.stdin.read())
i = next(i for i, w in enumerate(a) if w.startswith("/"))   # skip the env prefix
print("\n".join(a[i + 1:]))' | sed -e "s|$root|/var/lib/libvirt|g" \
		-e 's|/libvirt/qemu-embed-[0-9a-f]*/|/libvirt/qemu/|g' > "$here/fixtures/$x.args"
	echo "$x.args: $(wc -l < "$here/fixtures/$x.args") args"
done
