# bench/: `make bench`, side-by-side populate timing and memmap cost of
# dmemfs, hugetlbfs (with and without HVO), anonymous THP and memfd inside
# one L1 benchmark boot.  Not a test: nothing here joins TEST_STEPS.
#
#   make bench    build/bench/report.md, report.json, report.svg
#
# Knobs (environment, see bench/run-bench.sh): BENCH_MIB, BENCH_REPS,
# BENCH_BUDGET, BENCH_L1_TIMEOUT.  The kernel is the one in build/bzImage;
# it is built only when missing (`make kernel` rebuilds it on purpose).

BENCH_DIR    := $(BUILD)/bench
BENCH_BIN    := $(BENCH_DIR)/dmem-bench
BENCH_CFLAGS := -std=c11 -O2 -Wall -Wextra -Werror

.PHONY: bench
bench: $(BENCH_BIN) guest userspace capacity | $(BUILD)/bzImage
	@$(TOP)/bench/run-bench.sh

$(BENCH_BIN): $(TOP)/bench/dmem-bench.c
	@mkdir -p $(@D)
	@echo "[bench] cc $(notdir $@)"
	@$(CC) $(BENCH_CFLAGS) -o $@ $<

$(BUILD)/bzImage:
	@$(MAKE) --no-print-directory kernel
