# nested-test/: boot the test kernel as L1 under QEMU and run the in-guest
# trunk tests there.  Included by the top-level Makefile.
#
#   make guest    initramfs, dmemfs_test, dmemfs_vm_test, kvm_dmem_test, kvm_nested_dmem,
#                 gup_test and the KVM selftests steal_time +
#                 kvm_page_table_test into build/guest/
#   make nested   build what is missing, boot L1, print the results
#   make test     runs test-nested: $(RESULTS)/nested.results
#
# Knobs (environment, see nested-test/host/run-l1.sh): DMEM (default 2G:1G per
# node), L1_NODE_MEM (5G), L1_SMP (2), ACCEL (auto|kvm|tcg), L1_TIMEOUT (s).

GUEST            ?= $(BUILD)/guest
HARNESS_DIR      := $(BUILD)/linux/tools/testing/selftests
DMEMFS_TEST      := $(GUEST)/dmemfs_test
DMEMFS_VM_TEST   := $(GUEST)/dmemfs_vm_test
# -Wno-clobbered: 6.12's harness forks with vfork() beside setjmp() locals
DMEMFS_TEST_CFLAGS = -O2 -g -Wall -Wextra -Wno-sign-compare -Wno-unused-parameter \
		      -Wno-clobbered -Werror -I$(HARNESS_DIR) -isystem $(KVM_HDR)/include

.PHONY: guest nested test-nested
GUP_TEST         := $(GUEST)/gup_test
KVM_DMEM_TEST    := $(GUEST)/kvm_dmem_test
# Upstream KVM selftests (unmodified), built against the tree's uapi headers
# installed under $(KVM_HDR), objects and programs under $(KVM_ST_OUT).
KVM_ST_DIR       := $(HARNESS_DIR)/kvm
KVM_ST_OUT       := $(GUEST)/kvm-selftests
KVM_HDR          := $(BUILD)/kvm-hdr
KVM_ST_PROGS     := $(KVM_ST_OUT)/steal_time $(KVM_ST_OUT)/kvm_page_table_test
guest: $(DMEMFS_TEST) $(DMEMFS_VM_TEST) $(GUP_TEST) $(KVM_DMEM_TEST) $(KVM_ST_PROGS)

# The upstream selftest, built unmodified from the extracted tree.
$(GUP_TEST): $(HARNESS_DIR)/kselftest_harness.h $(KVM_HDR)/include/linux/kvm.h
	@mkdir -p $(@D)
	@echo "[guest] cc $(notdir $@) (tools/testing/selftests/mm, unmodified)"
	@$(CC) -O2 -I$(BUILD)/linux -I$(HARNESS_DIR) -I$(HARNESS_DIR)/mm \
	  -isystem $(KVM_HDR)/include -o $@ \
	  $(HARNESS_DIR)/mm/gup_test.c $(HARNESS_DIR)/mm/vm_util.c -lpthread

# The harness header comes from the extracted kernel tree.
$(HARNESS_DIR)/kselftest_harness.h:
	@$(TOP)/kernel/build.sh tree

$(DMEMFS_TEST) $(DMEMFS_VM_TEST): $(GUEST)/%: $(TOP)/nested-test/progs/%.c $(TOP)/nested-test/progs/dmemfs_fixture.h $(TOP)/nested-test/progs/test_util.h $(HARNESS_DIR)/kselftest_harness.h $(KVM_HDR)/include/linux/kvm.h
	@mkdir -p $(@D)
	@echo "[guest] cc $(notdir $@)"
	@$(CC) $(DMEMFS_TEST_CFLAGS) -o $@ $< -lpthread

# One-file kselftest-harness programs run in L1:
#   hwpoison_test    memory errors in dmem; run last (it poisons pages for good)
#   mce_test         machine checks raised for real (nested-test/l1/mce-l1.sh)
#   vfio_dmem_test   VFIO type1 on dmemfs (tests/l1-vfio.sh; --bench for make bench)
#   kvm_dmem_test    KVM memslots on dmemfs (tests/l1-kvm.sh)
#   dmemfs_stress    random operations of several tenants (l1-trunk.sh)
HWPOISON_TEST    := $(GUEST)/hwpoison_test
MCE_TEST         := $(GUEST)/mce_test
VFIO_DMEM_TEST   := $(GUEST)/vfio_dmem_test
DMEMFS_STRESS    := $(GUEST)/dmemfs_stress
guest: $(HWPOISON_TEST) $(MCE_TEST) $(VFIO_DMEM_TEST) $(DMEMFS_STRESS)
$(HWPOISON_TEST) $(MCE_TEST): $(TOP)/nested-test/progs/memory_error.h
$(HWPOISON_TEST) $(KVM_DMEM_TEST): $(TOP)/nested-test/progs/kvm_flat.h
$(HWPOISON_TEST) $(MCE_TEST) $(VFIO_DMEM_TEST) $(KVM_DMEM_TEST) $(DMEMFS_STRESS): $(GUEST)/%: $(TOP)/nested-test/progs/%.c $(TOP)/nested-test/progs/test_util.h $(HARNESS_DIR)/kselftest_harness.h \
		$(KVM_HDR)/include/linux/kvm.h
	@mkdir -p $(@D)
	@echo "[guest] cc $(notdir $@)"
	@$(CC) $(DMEMFS_TEST_CFLAGS) -o $@ $< -lpthread

# dmem_pattern: a seeded pattern in a dmemfs file (kexec-l1.sh); plain C
DMEM_PATTERN     := $(GUEST)/dmem_pattern
guest: $(DMEM_PATTERN)
$(DMEM_PATTERN): $(TOP)/nested-test/progs/dmem_pattern.c
	@mkdir -p $(@D)
	@echo "[guest] cc $(notdir $@)"
	@$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror $(shell pkg-config --cflags glib-2.0) -o $@ $< \
	  $(shell pkg-config --libs glib-2.0)

# make headers_install of the tree into $(KVM_HDR) (a log on failure).
# (wildcard: before kernel/build.sh tree has run there is no tree yet)
$(KVM_HDR)/include/linux/kvm.h: $(HARNESS_DIR)/kselftest_harness.h \
				$(wildcard $(BUILD)/linux/include/uapi/linux/kvm.h)
	@mkdir -p $(KVM_HDR)
	@echo "[guest] headers_install $(notdir $(KVM_HDR))/include"
	@$(MAKE) --no-print-directory -C $(BUILD)/linux -s headers_install \
	  INSTALL_HDR_PATH=$(KVM_HDR) > $(KVM_HDR).log 2>&1 || \
	  { tail -5 $(KVM_HDR).log; exit 1; }
	@touch $@

# One selftest program a rule; the kvm Makefile builds libkvm once.  asm/kvm.h
# uses __DECLARE_FLEX_ARRAY, which tools/include/linux/types.h does not pull
# in: include the uapi linux/stddef.h first (EXTRA_CFLAGS; the sources stay
# unmodified).
$(KVM_ST_PROGS): $(KVM_ST_OUT)/%: $(KVM_ST_DIR)/%.c $(KVM_HDR)/include/linux/kvm.h
	@mkdir -p $(@D)
	@echo "[guest] cc $(notdir $@) (tools/testing/selftests/kvm, unmodified)"
	@$(MAKE) --no-print-directory -C $(KVM_ST_DIR) OUTPUT=$(KVM_ST_OUT) \
	  INSTALL_HDR_PATH=$(KVM_HDR) KHDR_INCLUDES="-isystem $(KVM_HDR)/include" \
	  EXTRA_CFLAGS="-include $(KVM_HDR)/include/linux/stddef.h" $@ > $@.log 2>&1 || { tail -5 $@.log; exit 1; }
# not two kvm Makefiles building libkvm at once under make -j
$(KVM_ST_OUT)/kvm_page_table_test: | $(KVM_ST_OUT)/steal_time

# kvm_nested_dmem: our program on the selftest library (the libkvm objects
# the steal_time build leaves in $(KVM_ST_OUT)/lib), same flags as upstream's.
KVM_NESTED_DMEM  := $(GUEST)/kvm_nested_dmem
guest: $(KVM_NESTED_DMEM)
$(KVM_NESTED_DMEM): $(TOP)/nested-test/progs/kvm_nested_dmem.c $(KVM_ST_OUT)/steal_time
	@echo "[guest] cc $(notdir $@) (on libkvm of tools/testing/selftests/kvm)"
	@$(CC) -std=gnu11 -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare \
	  -fno-stack-protector -fno-PIE -no-pie -pthread -I$(BUILD)/linux/tools/include \
	  -I$(BUILD)/linux/tools/arch/x86/include -I$(KVM_ST_DIR)/include \
	  -I$(KVM_ST_DIR)/include/x86_64 -I$(HARNESS_DIR) \
	  -include $(KVM_HDR)/include/linux/stddef.h -isystem $(KVM_HDR)/include -o $@ $< \
	  $(KVM_ST_OUT)/lib/*.o $(KVM_ST_OUT)/lib/x86_64/*.o -ldl

nested: kernel guest
	@mkdir -p $(RESULTS)
	@$(TOP)/nested-test/host/run-l1.sh
	@cat $(RESULTS)/nested.results

# ---- make test's L1 steps.  Each boots L1s of its own; none fails make, and
# each leaves result lines ($(RESULTS)/NAME.results).  What they need is built
# once by l1-inputs: the guest programs (from the kernel tree, so after
# test-kernel) and the host binaries L1 runs (the objects test-unit and
# test-capacity build, so after them: make -j never builds one file from two
# sub-makes).  boot-l1.sh's lock runs one L1 at a time, so the steps have no
# order among themselves.
.PHONY: l1-inputs
l1-inputs: test-kernel test-unit test-capacity
	@mkdir -p $(RESULTS); rm -f $(RESULTS)/l1-blocked; \
	grep -qs '^PASS' $(RESULTS)/kernel.results || echo "kernel build failed" > $(RESULTS)/l1-blocked; \
	[ -e $(RESULTS)/l1-blocked ] || $(MAKE) --no-print-directory guest userspace capacity liveupdate \
	  > $(BUILD)/l1-inputs.log 2>&1 || echo "guest or userspace build failed (build/l1-inputs.log)" > $(RESULTS)/l1-blocked

# $(call l1_step,NAME,COMMAND): run COMMAND (which writes $(RESULTS)/NAME.results)
# unless l1-inputs is blocked; NAME.results always ends up with result lines
define l1_step
	@if [ -e $(RESULTS)/l1-blocked ]; then \
	  echo "FAIL: $(1): not run ($$(cat $(RESULTS)/l1-blocked))" > $(RESULTS)/$(1).results; \
	else $(2) > $(BUILD)/$(1).log 2>&1 || true; fi; \
	[ -s $(RESULTS)/$(1).results ] || echo "FAIL: $(1): wrote no results (build/$(1).log)" > $(RESULTS)/$(1).results
endef

TEST_STEPS += test-nested
test-nested: l1-inputs
	$(call l1_step,nested,$(TOP)/nested-test/host/run-l1.sh)

# ---- the dmem= boot matrix: every form, several boots each, KASLR on
.PHONY: boot-matrix test-boot
boot-matrix: kernel guest
	@$(TOP)/nested-test/host/boot-matrix.sh
	@cat $(RESULTS)/boot.results
TEST_STEPS += test-boot
test-boot: l1-inputs
	$(call l1_step,boot,$(TOP)/nested-test/host/boot-matrix.sh)

# ---- files carried over kexec (nested-test/l1/kexec-l1.sh): an L1 of its own
# that kexecs itself twice
KEXEC_L1 = $(TOP)/nested-test/host/boot-l1.sh --area=kexec $(TOP)/nested-test/l1/kexec-l1.sh
.PHONY: kexec test-kexec
kexec: kernel guest
	@$(KEXEC_L1)
	@cat $(RESULTS)/kexec.results
TEST_STEPS += test-kexec
test-kexec: l1-inputs
	$(call l1_step,kexec,$(KEXEC_L1))

# ---- L2 guests carried over a kexec of L1 by dmem-liveupdate: its step is
# liveupdate/liveupdate.mk's

# ---- machine checks raised for real (nested-test/l1/mce-l1.sh, mce_test): an
# L1 of its own, under TCG with an Intel CPU model (Intel's severity table)
MCE_L1 = ACCEL=tcg L1_TIMEOUT=600 L1_CPU=max,-erms,-fsrm,vendor=GenuineIntel,family=6,model=85,stepping=7 \
	$(TOP)/nested-test/host/boot-l1.sh --area=mce $(TOP)/nested-test/l1/mce-l1.sh
.PHONY: mce test-mce
mce: kernel guest
	@$(MCE_L1)
	@cat $(RESULTS)/mce.results
TEST_STEPS += test-mce
test-mce: l1-inputs
	$(call l1_step,mce,$(MCE_L1))

# ---- the packages as an operator installs them (nested-test/l1/package-l1.sh):
# make deb's build/deb/ in an L1 of its own, which kexecs into the packaged
# kernel.  The step builds the packages first (deb.results: lintian).
PKG_L1 = $(TOP)/nested-test/host/boot-l1.sh --area=package $(TOP)/nested-test/l1/package-l1.sh
.PHONY: package-l1 test-package
package-l1: deb guest
	@$(PKG_L1)
	@cat $(RESULTS)/package.results
TEST_STEPS += test-package
test-package: l1-inputs
	$(call l1_step,package,{ DEB_BUILD_OPTIONS=nocheck $(TOP)/scripts/make-deb.sh > $(RESULTS)/deb.results; $(PKG_L1); })
