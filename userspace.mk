# userspace.mk: dmemfs-hook, qemu-memdev-wrapper and libdmemfs-host.
# Included by the top-level Makefile (TOP, BUILD, RESULTS come from there).
#
#   make userspace     build/bin/dmemfs-hook, build/bin/qemu-memdev-wrapper
#   make unit          unit tests, human-readable
#   make test-unit     unit tests as PASS:/FAIL: lines in $(RESULTS)/unit.results
#   make fuzz          libFuzzer runs, FUZZ_TIME seconds each (default 30), and
#                      10^6 inputs to the kernel's dmem= parser (kernel/fuzz/)
#   make install       PREFIX (/usr/local), DESTDIR, SYSCONFDIR (/etc)

TOP     ?= $(abspath .)
BUILD   ?= $(TOP)/build
RESULTS ?= $(BUILD)/results

PREFIX     ?= /usr/local
SYSCONFDIR ?= /etc
FUZZ_TIME  ?= 30
CC         ?= cc
FUZZ_CC    ?= clang

US_OBJ  := $(BUILD)/obj/userspace
US_BIN  := $(BUILD)/bin
US_PKGS := glib-2.0 libxml-2.0 json-glib-1.0
US_PKG_CFLAGS = $(shell pkg-config --cflags $(US_PKGS))
US_PKG_LIBS   = $(shell pkg-config --libs $(US_PKGS)) -lnuma
# layers: util <- model <- programs.  A util file sees only util's header,
# a program only the library's two layers and its own folder.
US_INC   := -I$(TOP)/libdmemfs-host/util -I$(TOP)/libdmemfs-host/model
US_DEFS  := -D_GNU_SOURCE -DSYSCONFDIR='"$(SYSCONFDIR)"' -DGLIB_VERSION_MIN_REQUIRED=GLIB_VERSION_2_74
# $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) last: a distribution's build flags
# (dpkg-buildflags: FORTIFY_SOURCE, stack protector, relro/now) win
US_CFLAGS = -std=c11 -O2 -g -Wall -Wextra -Werror -MMD -MP $(US_DEFS) $(US_INC) $(US_PKG_CFLAGS) \
	    $(CPPFLAGS) $(CFLAGS)

US_LIB_SRC  := $(wildcard $(TOP)/libdmemfs-host/util/*.c $(TOP)/libdmemfs-host/model/*.c)
US_WRAP_SRC := $(TOP)/qemu-memdev-wrapper/rewrite.c $(TOP)/qemu-memdev-wrapper/qmp.c
US_TESTS    := test-lib test-hook test-wrapper test-liveupdate test-setup

us_obj = $(patsubst $(TOP)/%.c,$(US_OBJ)/%.o,$(1))

US_LIB_A  := $(US_OBJ)/libdmemfs-host.a
US_WRAP_A := $(US_OBJ)/qemu-memdev-wrapper.a
US_TEST_BINS := $(addprefix $(US_OBJ)/tests/,$(US_TESTS))

.PHONY: userspace unit fuzz install test-unit
.PRECIOUS: $(US_OBJ)/tests/%.o
TEST_STEPS += test-unit

userspace: $(US_BIN)/dmemfs-hook $(US_BIN)/qemu-memdev-wrapper

$(US_OBJ)/libdmemfs-host/util/%.o: US_INC := -I$(TOP)/libdmemfs-host/util
$(US_OBJ)/qemu-memdev-wrapper/%.o: US_INC += -I$(TOP)/qemu-memdev-wrapper
$(US_OBJ)/%.o: $(TOP)/%.c
	@mkdir -p $(dir $@)
	$(CC) $(US_CFLAGS) -c $< -o $@

$(US_LIB_A): $(call us_obj,$(US_LIB_SRC))
	@rm -f $@; ar rcs $@ $^
$(US_WRAP_A): $(call us_obj,$(US_WRAP_SRC))
	@rm -f $@; ar rcs $@ $^

US_HOOK_SRC := $(TOP)/libvirt-hook/main.c $(TOP)/libvirt-hook/hook.c
$(US_BIN)/dmemfs-hook: $(call us_obj,$(US_HOOK_SRC)) $(US_LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(US_PKG_LIBS)

$(US_BIN)/qemu-memdev-wrapper: $(call us_obj,$(TOP)/qemu-memdev-wrapper/main.c) $(US_WRAP_A) $(US_LIB_A)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(US_PKG_LIBS)

# ---- unit tests -----------------------------------------------------------
US_TEST_DEFS = -I$(TOP)/libdmemfs-host/tests $(shell pkg-config --cflags gio-2.0) -DTEST_TOP='"$(TOP)"' -DTEST_BINDIR='"$(US_BIN)"'

$(US_OBJ)/tests/%.o: $(TOP)/libdmemfs-host/tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(US_CFLAGS) $(US_TEST_DEFS) -c $< -o $@
$(US_OBJ)/tests/%.o: $(TOP)/libvirt-hook/tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(US_CFLAGS) -I$(TOP)/libvirt-hook $(US_TEST_DEFS) -c $< -o $@
$(US_OBJ)/tests/%.o: $(TOP)/qemu-memdev-wrapper/tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(US_CFLAGS) -I$(TOP)/qemu-memdev-wrapper $(US_TEST_DEFS) -c $< -o $@
$(US_OBJ)/tests/%.o: $(TOP)/setup/tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(US_CFLAGS) $(US_TEST_DEFS) -c $< -o $@
$(US_OBJ)/tests/%.o: $(TOP)/liveupdate/tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(US_CFLAGS) -I$(TOP)/liveupdate $(US_TEST_DEFS) -c $< -o $@
# the planning core, tested against golden files
$(US_OBJ)/tests/test-liveupdate: $(US_OBJ)/liveupdate/kexec-plan.o
# the hook's event table
$(US_OBJ)/tests/test-hook: $(US_OBJ)/libvirt-hook/hook.o

# objects first: the archives then serve what a test's own objects (hook.o) need
$(US_OBJ)/tests/test-%: $(US_OBJ)/tests/test-%.o $(US_OBJ)/tests/testutil.o $(US_WRAP_A) $(US_LIB_A)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(US_PKG_LIBS) $(shell pkg-config --libs gio-2.0)

unit: userspace $(US_TEST_BINS)
	@rc=0; for t in $(US_TEST_BINS); do \
	  echo "== $$(basename $$t)"; $$t || rc=1; done; \
	echo "== test-l1-common.sh"; out=$$($(TOP)/nested-test/host/test-l1-common.sh) || rc=1; \
	printf '%s\n' "$$out"; printf '%s\n' "$$out" | grep -q '^FAIL' && rc=1; \
	if [ $$rc = 0 ]; then echo "unit: all tests passed"; else echo "unit: FAILURES"; fi; exit $$rc

# One PASS:/FAIL: line per test case; never stops make.
test-unit:
	@mkdir -p $(RESULTS); out=$(RESULTS)/unit.results; : > $$out; \
	if ! $(MAKE) --no-print-directory userspace $(US_TEST_BINS) > $(BUILD)/unit-build.log 2>&1; then \
	  echo "FAIL: unit: build failed (build/unit-build.log)" >> $$out; \
	else for t in $(US_TEST_BINS); do \
	  $$t --tap 2>&1 | awk -v prefix="$$(basename $$t) " -f $(TOP)/scripts/tap-results.awk >> $$out; \
	done; fi; \
	$(TOP)/nested-test/host/test-l1-common.sh >> $$out 2>&1; \
	grep -q . $$out || echo "FAIL: unit: no results" >> $$out; true

# ---- fuzzing ----------------------------------------------------------------
US_FUZZ     := $(BUILD)/fuzz
US_FUZZ_FLAGS = -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	$(US_DEFS) $(US_INC) $(US_PKG_CFLAGS)

$(US_FUZZ)/fuzz-plan: $(TOP)/libdmemfs-host/fuzz/fuzz-plan.c $(US_LIB_SRC)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(US_FUZZ_FLAGS) -o $@ $^ $(US_PKG_LIBS)
$(US_FUZZ)/fuzz-rewrite: $(TOP)/qemu-memdev-wrapper/fuzz/fuzz-rewrite.c $(US_LIB_SRC) $(US_WRAP_SRC)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(US_FUZZ_FLAGS) -I$(TOP)/qemu-memdev-wrapper -o $@ $^ $(US_PKG_LIBS)

# the kernel's dmem= parser, copied out of the patched tree (kernel/fuzz/)
$(US_FUZZ)/dmem-param-extract.c: $(TOP)/kernel/fuzz/extract.sh $(wildcard $(TOP)/kernel/patches/*.patch)
	@mkdir -p $(dir $@)
	@$(TOP)/kernel/build.sh tree > /dev/null
	@$(TOP)/kernel/fuzz/extract.sh $(BUILD)/linux > $@.tmp && mv $@.tmp $@
$(US_FUZZ)/fuzz-dmem-param: $(TOP)/kernel/fuzz/fuzz-dmem-param.c $(TOP)/kernel/fuzz/kshim.h $(US_FUZZ)/dmem-param-extract.c
	$(FUZZ_CC) -std=gnu11 -g -O1 -Wall -Werror -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -I$(TOP)/kernel/fuzz -I$(US_FUZZ) -o $@ $<

fuzz: $(US_FUZZ)/fuzz-plan $(US_FUZZ)/fuzz-rewrite $(US_FUZZ)/fuzz-dmem-param
	@rm -rf $(US_FUZZ)/corpus-plan $(US_FUZZ)/corpus-rewrite
	@mkdir -p $(US_FUZZ)/corpus-plan $(US_FUZZ)/corpus-rewrite $(US_FUZZ)/artifacts
	@cp $(TOP)/libvirt-hook/tests/fixtures/*.xml $(US_FUZZ)/corpus-plan/
	@cp $(TOP)/qemu-memdev-wrapper/tests/fixtures/*.args $(US_FUZZ)/corpus-rewrite/
	@rc=0; for f in plan rewrite; do \
	  echo "== fuzz-$$f ($(FUZZ_TIME) s)"; \
	  ASAN_OPTIONS=detect_leaks=1 $(US_FUZZ)/fuzz-$$f -max_total_time=$(FUZZ_TIME) -max_len=16384 \
	    -dict=$(TOP)/$$( [ $$f = plan ] && echo libdmemfs-host || echo qemu-memdev-wrapper)/fuzz/$$f.dict \
	    -artifact_prefix=$(US_FUZZ)/artifacts/$$f- $(US_FUZZ)/corpus-$$f > $(US_FUZZ)/$$f.log 2>&1 \
	    || { rc=1; echo "fuzz-$$f: FAILED, see $(US_FUZZ)/$$f.log"; }; \
	  grep -E '^(#[0-9]+ *DONE|Done [0-9]+ runs)' $(US_FUZZ)/$$f.log | tail -2; \
	done; \
	echo "== fuzz-dmem-param (10^6 inputs)"; rm -rf $(US_FUZZ)/corpus-dmem; mkdir -p $(US_FUZZ)/corpus-dmem; \
	n=0; while IFS= read -r s; do n=$$((n + 1)); printf '%s' "$$s" > $(US_FUZZ)/corpus-dmem/seed$$n; \
	done < $(TOP)/kernel/fuzz/seeds.txt; \
	$(US_FUZZ)/fuzz-dmem-param -runs=1000000 -max_len=64 -artifact_prefix=$(US_FUZZ)/artifacts/dmem- \
	  $(US_FUZZ)/corpus-dmem > $(US_FUZZ)/dmem.log 2>&1 || { rc=1; echo "fuzz-dmem-param: FAILED, see $(US_FUZZ)/dmem.log"; }; \
	grep -E '^Done [0-9]+ runs' $(US_FUZZ)/dmem.log | tail -1; \
	exit $$rc

# ---- install ----------------------------------------------------------------
US_AA_LOCAL := $(DESTDIR)$(SYSCONFDIR)/apparmor.d/local/abstractions
US_AA_LIBVIRTD := $(DESTDIR)$(SYSCONFDIR)/apparmor.d/local/usr.sbin.libvirtd

install: userspace capacity liveupdate
	install -D -m 0755 $(US_BIN)/dmemfs-hook $(DESTDIR)$(PREFIX)/sbin/dmemfs-hook
	@# libvirt runs the hook through this link.  libvirtd's profile runs
	@# what is under /etc/libvirt/hooks in its own profile, which denies
	@# writes to /etc/apparmor.d/libvirt; through the link the hook is the
	@# binary, out of that profile (/usr/sbin/* PUx, or the rule below), and
	@# can write each domain's main profile (dmemfs-hook(8))
	install -d $(DESTDIR)$(SYSCONFDIR)/libvirt/hooks/qemu.d
	ln -sfn $(PREFIX)/sbin/dmemfs-hook $(DESTDIR)$(SYSCONFDIR)/libvirt/hooks/qemu.d/dmemfs
	install -D -m 0755 $(US_BIN)/qemu-memdev-wrapper $(DESTDIR)$(PREFIX)/bin/qemu-memdev-wrapper
	install -D -m 0755 $(CAP_BIN) $(DESTDIR)$(PREFIX)/bin/dmem-capacity
	install -D -m 0644 $(TOP)/capacity/dmem-capacity.1 $(DESTDIR)$(PREFIX)/share/man/man1/dmem-capacity.1
	install -D -m 0755 $(BUILD)/bin/dmem-liveupdate $(DESTDIR)$(PREFIX)/sbin/dmem-liveupdate
	install -D -m 0755 $(US_BIN)/dmemfs-host-setup $(DESTDIR)$(PREFIX)/sbin/dmemfs-host-setup
	install -D -m 0644 $(TOP)/setup/dmemfs-host-setup.8 $(DESTDIR)$(PREFIX)/share/man/man8/dmemfs-host-setup.8
	install -D -m 0644 $(TOP)/liveupdate/dmem-liveupdate.8 $(DESTDIR)$(PREFIX)/share/man/man8/dmem-liveupdate.8
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/dmemfs-host.conf ]; then \
	  echo "keeping existing $(DESTDIR)$(SYSCONFDIR)/dmemfs-host.conf"; \
	else install -D -m 0644 $(TOP)/libdmemfs-host/dmemfs-host.conf $(DESTDIR)$(SYSCONFDIR)/dmemfs-host.conf; fi
	install -D -m 0644 $(TOP)/libvirt-hook/dmemfs-hook.8 $(DESTDIR)$(PREFIX)/share/man/man8/dmemfs-hook.8
	install -D -m 0644 $(TOP)/qemu-memdev-wrapper/qemu-memdev-wrapper.8 $(DESTDIR)$(PREFIX)/share/man/man8/qemu-memdev-wrapper.8
	install -D -m 0644 $(TOP)/libdmemfs-host/dmemfs-host.conf.5 $(DESTDIR)$(PREFIX)/share/man/man5/dmemfs-host.conf.5
	install -D -m 0644 $(TOP)/qemu-memdev-wrapper/apparmor-dmemfs-host $(US_AA_LOCAL)/dmemfs-host
	@grep -qs '^#include <local/abstractions/dmemfs-host>' $(US_AA_LOCAL)/libvirt-qemu || \
	  echo '#include <local/abstractions/dmemfs-host>' >> $(US_AA_LOCAL)/libvirt-qemu
	@# libvirtd's profile runs /usr/bin/* to probe an emulator and /usr/sbin/*
	@# (the hook), not /usr/local/bin/* or /usr/local/sbin/*
	@if [ '$(PREFIX)' != /usr ]; then \
	  for rule in '  $(PREFIX)/bin/qemu-memdev-wrapper PUx,' '  $(PREFIX)/sbin/dmemfs-hook PUx,'; do \
	    grep -qsxF "$$rule" $(US_AA_LIBVIRTD) || echo "$$rule" >> $(US_AA_LIBVIRTD); done; \
	  echo "AppArmor: reload libvirtd's profile (apparmor_parser -r /etc/apparmor.d/usr.sbin.libvirtd)"; fi

-include $(shell find $(US_OBJ) -name '*.d' 2>/dev/null)
