# shellcheck shell=bash
# Which series a kernel script works on (sourced by build.sh, export.sh
# and checkpatch.sh, with $top set):
#   DMEM_SERIES=6.1 (default)
#       kernel/patches on Debian's linux-source-6.1, in build/linux,
#       giving build/bzImage
#   DMEM_SERIES=6.12
#       kernel/6.12/patches on linux-source-6.12, in build/linux-6.12,
#       giving build/bzImage-6.12: the port of issue 30, beside the 6.1
#       series until it carries all of it (kernel/PORT-6.12.md)
# kernel/6.12/not-yet lists the options of kernel/dmemfs-host.config that
# the 6.12 series does not have yet, each with the patch that brings it;
# build.sh drops them from the fragment and says so, and refuses every
# other =y or =m option of it that does not stick.  The Makefile unexports
# DMEM_SERIES: only make kernel-6.12 sets it, so make test builds and
# tests the 6.1 series whatever the environment says.
series=${DMEM_SERIES:-6.1}
case $series in
6.1) patchdir=$top/kernel/patches suffix='' ;;
6.12) patchdir=$top/kernel/6.12/patches suffix=-6.12 ;;
*) echo "DMEM_SERIES=$series: the series are 6.1 and 6.12" >&2; exit 2 ;;
esac
src=/usr/src/linux-source-$series.tar.xz
not_yet=$top/kernel/$series/not-yet
