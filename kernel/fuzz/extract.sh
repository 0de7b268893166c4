#!/bin/bash
# Print, from a patched tree, what kernel/fuzz/fuzz-dmem-param.c compiles:
# DMEM_MIN_ALIGN and struct dmem_param (mm/internal.h), dmem_memparse()
# and dmem_parse_param() (mm/dmem_reserve.c).
set -euo pipefail
tree=$1
grep -m1 '^#define DMEM_MIN_ALIGN' "$tree/mm/internal.h"
awk '/^struct dmem_param \{/ { on = 1 } on { print } on && /^\};/ { exit }' "$tree/mm/internal.h"
awk '/^static int dmem_memparse\(/ { on = 1 }
     on { print }
     on && /^int dmem_parse_param\(/ { last = 1 }
     last && /^}$/ { exit }' "$tree/mm/dmem_reserve.c"
