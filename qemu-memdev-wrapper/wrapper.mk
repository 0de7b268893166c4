# qemu-memdev-wrapper/wrapper.mk: qemu-memdev-wrapper, the <emulator> that
# points memory backends at the hook's files (rewrite.c, qmp.c in an
# archive of their own, which the test and the fuzzer link), its unit test,
# fuzzer and install step.  Included by the top-level Makefile after
# libdmemfs-host.mk.

US_WRAP_SRC := $(TOP)/qemu-memdev-wrapper/rewrite.c $(TOP)/qemu-memdev-wrapper/qmp.c
US_WRAP_A   := $(US_OBJ)/qemu-memdev-wrapper.a
US_TESTS    += test-wrapper
US_INSTALL  += install-wrapper
userspace: $(US_BIN)/qemu-memdev-wrapper

$(US_OBJ)/qemu-memdev-wrapper/%.o: US_INC += -I$(TOP)/qemu-memdev-wrapper
$(US_WRAP_A): $(call us_obj,$(US_WRAP_SRC))
	@rm -f $@; ar rcs $@ $^

$(US_BIN)/qemu-memdev-wrapper: $(call us_obj,$(TOP)/qemu-memdev-wrapper/main.c) $(US_WRAP_A) $(US_LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(US_PKG_LIBS)

$(US_OBJ)/tests/%.o: $(TOP)/qemu-memdev-wrapper/tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(US_CFLAGS) -I$(TOP)/qemu-memdev-wrapper $(US_TEST_DEFS) -c $< -o $@
$(US_OBJ)/tests/test-wrapper: $(US_WRAP_A)

$(US_FUZZ)/fuzz-rewrite: $(TOP)/qemu-memdev-wrapper/fuzz/fuzz-rewrite.c $(US_LIB_SRC) $(US_WRAP_SRC)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(US_FUZZ_FLAGS) -I$(TOP)/qemu-memdev-wrapper -o $@ $^ $(US_PKG_LIBS)

US_AA_LOCAL := $(DESTDIR)$(SYSCONFDIR)/apparmor.d/local/abstractions
.PHONY: install-wrapper
install-wrapper: $(US_BIN)/qemu-memdev-wrapper
	install -D -m 0755 $(US_BIN)/qemu-memdev-wrapper $(DESTDIR)$(PREFIX)/bin/qemu-memdev-wrapper
	install -D -m 0644 $(TOP)/qemu-memdev-wrapper/qemu-memdev-wrapper.8 $(DESTDIR)$(PREFIX)/share/man/man8/qemu-memdev-wrapper.8
	install -D -m 0644 $(TOP)/qemu-memdev-wrapper/apparmor-dmemfs-host $(US_AA_LOCAL)/dmemfs-host
	@grep -qs '^#include <local/abstractions/dmemfs-host>' $(US_AA_LOCAL)/libvirt-qemu || \
	  echo '#include <local/abstractions/dmemfs-host>' >> $(US_AA_LOCAL)/libvirt-qemu
