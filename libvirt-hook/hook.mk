# libvirt-hook/hook.mk: dmemfs-hook, libvirt's qemu hook (one libvirt event
# to one model call), its unit test and its install step.  Included by the
# top-level Makefile after libdmemfs-host.mk.
#
#   make userspace     builds build/bin/dmemfs-hook among the programs

US_HOOK_SRC := $(TOP)/libvirt-hook/main.c $(TOP)/libvirt-hook/hook.c
US_TESTS    += test-hook
US_INSTALL  += install-hook
userspace: $(US_BIN)/dmemfs-hook

$(US_BIN)/dmemfs-hook: $(call us_obj,$(US_HOOK_SRC)) $(US_LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(US_PKG_LIBS)

$(US_OBJ)/tests/%.o: $(TOP)/libvirt-hook/tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(US_CFLAGS) -I$(TOP)/libvirt-hook $(US_TEST_DEFS) -c $< -o $@
# the hook's event table
$(US_OBJ)/tests/test-hook: $(US_OBJ)/libvirt-hook/hook.o

US_AA_LIBVIRTD := $(DESTDIR)$(SYSCONFDIR)/apparmor.d/local/usr.sbin.libvirtd
.PHONY: install-hook
install-hook: $(US_BIN)/dmemfs-hook
	install -D -m 0755 $(US_BIN)/dmemfs-hook $(DESTDIR)$(PREFIX)/sbin/dmemfs-hook
	@# libvirt runs the hook through this link.  libvirtd's profile runs
	@# what is under /etc/libvirt/hooks in its own profile, which denies
	@# writes to /etc/apparmor.d/libvirt; through the link the hook is the
	@# binary, out of that profile (/usr/sbin/* PUx, or the rule below), and
	@# can write each domain's main profile (dmemfs-hook(8))
	install -d $(DESTDIR)$(SYSCONFDIR)/libvirt/hooks/qemu.d
	ln -sfn $(PREFIX)/sbin/dmemfs-hook $(DESTDIR)$(SYSCONFDIR)/libvirt/hooks/qemu.d/dmemfs
	install -D -m 0644 $(TOP)/libvirt-hook/dmemfs-hook.8 $(DESTDIR)$(PREFIX)/share/man/man8/dmemfs-hook.8
