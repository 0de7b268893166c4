# liveupdate/: dmem-liveupdate, the host kernel update under running dmem
# guests (issue 16).  Included by the top-level Makefile.
#
#   make liveupdate   build/bin/dmem-liveupdate
#
# Built like dmemfs-hook (userspace.mk), on libdmemfs-host: domain XML
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

-include $(wildcard $(BUILD)/obj/liveupdate/*.d)
