# liveupdate/: dmem-liveupdate, the host kernel update under running dmem
# guests (issue 16).  Included by the top-level Makefile.
#
#   make liveupdate   build/bin/dmem-liveupdate
#
# Built like dmemfs-hook (libvirt-hook/hook.mk), on libdmemfs-host: domain XML
# through the model's plan, the carry state and marks through its carry.c.
# kexec-plan.c is the planning core (text in, the kexec plan out), which
# test-liveupdate checks against liveupdate/tests/golden/.

LU_BIN    := $(BUILD)/bin/dmem-liveupdate
LU_CFLAGS  = $(US_CFLAGS) $(shell pkg-config --cflags libvirt libvirt-qemu)
LU_LIBS    = $(US_LIB_A) $(US_PKG_LIBS) $(shell pkg-config --libs libvirt libvirt-qemu)

.PHONY: liveupdate
liveupdate: $(LU_BIN)
userspace: $(LU_BIN)

$(BUILD)/obj/liveupdate/%.o: $(TOP)/liveupdate/%.c $(TOP)/liveupdate/liveupdate.mk
	@mkdir -p $(@D)
	$(CC) $(LU_CFLAGS) -c -o $@ $<

$(LU_BIN): $(BUILD)/obj/liveupdate/dmem-liveupdate.o $(BUILD)/obj/liveupdate/kexec-plan.o $(US_LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LU_LIBS)

US_TESTS   += test-liveupdate
US_INSTALL += install-liveupdate
$(US_OBJ)/tests/%.o: $(TOP)/liveupdate/tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(US_CFLAGS) -I$(TOP)/liveupdate $(US_TEST_DEFS) -c $< -o $@
# the planning core, tested against golden files
$(US_OBJ)/tests/test-liveupdate: $(US_OBJ)/liveupdate/kexec-plan.o

.PHONY: install-liveupdate
install-liveupdate: $(LU_BIN)
	install -D -m 0755 $(LU_BIN) $(DESTDIR)$(PREFIX)/sbin/dmem-liveupdate
	install -D -m 0644 $(TOP)/liveupdate/dmem-liveupdate.8 $(DESTDIR)$(PREFIX)/share/man/man8/dmem-liveupdate.8

# ---- its make test step: L2 guests carried over a kexec of L1 by
# dmem-liveupdate (nested-test/l1/liveupdate-l1.sh, through
# run-liveupdate.sh, which retries a fresh L1 after TCG's vCPU-thread
# crash): an L1 of its own, with a disk for the guests' device state.
# l1-inputs and l1_step are nested-test/nested.mk's.
.PHONY: liveupdate-l1 test-liveupdate
liveupdate-l1: kernel userspace capacity liveupdate guest
	@$(TOP)/nested-test/host/run-liveupdate.sh
	@cat $(RESULTS)/liveupdate.results
TEST_STEPS += test-liveupdate
test-liveupdate: l1-inputs
	$(call l1_step,liveupdate,$(TOP)/nested-test/host/run-liveupdate.sh)

-include $(wildcard $(BUILD)/obj/liveupdate/*.d)
