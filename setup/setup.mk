# setup/: dmemfs-host-setup, a host's dmemfs mounts and dmem-node<N> storage
# pools from its configuration (issues 29 and 31).  Included by the top
# Makefile.
#
#   make setup    build/bin/dmemfs-host-setup
#
# Built like dmem-liveupdate, on libdmemfs-host (the config, the pool's
# sysfs, the dmem-node<N> contract of model/nodepool.h) and libvirt.
# Its unit test (setup/tests/test-setup.c) is one of make unit's.

SETUP_BIN  := $(US_BIN)/dmemfs-host-setup
SETUP_LIBS  = $(US_LIB_A) $(US_PKG_LIBS) $(shell pkg-config --libs libvirt)

.PHONY: setup
setup: $(SETUP_BIN)
userspace: $(SETUP_BIN)

$(US_OBJ)/setup/%.o: US_CFLAGS += $(shell pkg-config --cflags libvirt)
$(SETUP_BIN): $(call us_obj,$(TOP)/setup/dmemfs-host-setup.c $(TOP)/setup/grub.c) $(US_LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(SETUP_LIBS)

US_TESTS   += test-setup
US_INSTALL += install-setup
$(US_OBJ)/tests/%.o: $(TOP)/setup/tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(US_CFLAGS) $(US_TEST_DEFS) -c $< -o $@

.PHONY: install-setup
install-setup: $(SETUP_BIN)
	install -D -m 0755 $(SETUP_BIN) $(DESTDIR)$(PREFIX)/sbin/dmemfs-host-setup
	install -D -m 0644 $(TOP)/setup/dmemfs-host-setup.8 $(DESTDIR)$(PREFIX)/share/man/man8/dmemfs-host-setup.8
