# nested-test/: boot the test kernel as L1 under QEMU and run the in-guest
# trunk tests there.  Included by the top-level Makefile.
#
#   make guest    initramfs + dmemfs_test into build/guest/
#   make nested   build what is missing, boot L1, print the results
#   make test     runs test-nested: $(RESULTS)/nested.results
#
# Knobs (environment, see nested-test/run-l1.sh): DMEM (default 2G:1G per
# node), L1_NODE_MEM (5G), L1_SMP (2), ACCEL (auto|kvm|tcg), L1_TIMEOUT (s).

GUEST            ?= $(BUILD)/guest
HARNESS_DIR      := $(BUILD)/linux/tools/testing/selftests
DMEMFS_TEST      := $(GUEST)/dmemfs_test
DMEMFS_TEST_CFLAGS := -O2 -g -Wall -Wextra -Wno-sign-compare -Wno-unused-parameter \
		      -Werror -I$(HARNESS_DIR)

.PHONY: guest nested test-nested
GUP_TEST         := $(GUEST)/gup_test
guest: $(DMEMFS_TEST) $(GUP_TEST)

# The upstream 6.1 selftest, built unmodified from the extracted tree.
$(GUP_TEST): $(HARNESS_DIR)/kselftest_harness.h
	@mkdir -p $(@D)
	@echo "[guest] cc $(notdir $@) (tools/testing/selftests/vm, unmodified)"
	@$(CC) -O2 -I$(BUILD)/linux -I$(HARNESS_DIR) -I$(HARNESS_DIR)/vm -o $@ \
	  $(HARNESS_DIR)/vm/gup_test.c -lpthread

# The harness header comes from the extracted kernel tree.
$(HARNESS_DIR)/kselftest_harness.h:
	@$(TOP)/kernel/build.sh tree

$(DMEMFS_TEST): $(TOP)/nested-test/dmemfs_test.c $(TOP)/nested-test/dmemfs_vm_tests.c $(HARNESS_DIR)/kselftest_harness.h
	@mkdir -p $(@D)
	@echo "[guest] cc $(notdir $@)"
	@$(CC) $(DMEMFS_TEST_CFLAGS) -o $@ $< -lpthread

nested: kernel guest
	@mkdir -p $(RESULTS)
	@$(TOP)/nested-test/run-l1.sh
	@cat $(RESULTS)/nested.results

# A make test step: never fails make, always leaves result lines.
TEST_STEPS += test-nested
test-nested: test-kernel
	@mkdir -p $(RESULTS); blocked=; \
	grep -qs '^PASS' $(RESULTS)/kernel.results || blocked="kernel build failed"; \
	$(MAKE) --no-print-directory guest > $(RESULTS)/guest-build.log 2>&1 || \
	  blocked="$${blocked:+$$blocked; }guest build failed (build/results/guest-build.log)"; \
	NESTED_BLOCKED="$$blocked" $(TOP)/nested-test/run-l1.sh || true; \
	[ -s $(RESULTS)/nested.results ] || echo "FAIL: nested: run-l1.sh wrote no results" > $(RESULTS)/nested.results
