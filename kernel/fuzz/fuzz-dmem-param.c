// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the dmem= parser (dmem_parse_param() of the
 * series' mm/dmem_reserve.c, copied out of build/linux by the Makefile
 * into dmem-param-extract.c).  Any input: no crash, no sanitizer report,
 * and a value that parses obeys every rule the reservation relies on.
 *
 *   make fuzz      builds build/fuzz/fuzz-dmem-param and runs 10^6 inputs
 */
#include <stdio.h>

#include "kshim.h"
#include "dmem-param-extract.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[128];
	struct dmem_param p;
	const char *why = NULL;

	if (size >= sizeof(s))
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	if (dmem_parse_param(s, &p, &why)) {
		if (!why)
			abort();	/* a refusal always says why */
		return 0;
	}
	if (why || !p.size || !is_power_of_2(p.align) || p.align < DMEM_MIN_ALIGN ||
	    !IS_ALIGNED(p.size, p.align))
		abort();
	if (p.has_addr && (p.kernel_keeps || !p.addr || !IS_ALIGNED(p.addr, p.align) ||
			   p.addr + p.size < p.addr))
		abort();
	return 0;
}
