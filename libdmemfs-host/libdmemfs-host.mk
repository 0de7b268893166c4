# libdmemfs-host/libdmemfs-host.mk: the shared library (util, model), the
# build rules every C program of the host uses, and its unit test.
# Included by the top-level Makefile (TOP, BUILD, RESULTS come from there),
# before the programs' fragments.
#
#   build/obj/userspace/libdmemfs-host.a, test-lib (one of make unit's)
#   make fuzz          libFuzzer runs, FUZZ_TIME seconds each (default 30), and
#                      10^6 inputs to the kernel's dmem= parser (kernel/fuzz/)

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
US_LIB_A    := $(US_OBJ)/libdmemfs-host.a

us_obj = $(patsubst $(TOP)/%.c,$(US_OBJ)/%.o,$(1))

# Each program's fragment adds its unit test (US_TESTS), its binaries
# (userspace:) and its install step (US_INSTALL); userspace.mk runs them.
US_TESTS    := test-lib
US_INSTALL  :=
# the first make test step: every program's unit test (userspace.mk)
TEST_STEPS  += test-unit

.PHONY: userspace unit fuzz install test-unit
.PRECIOUS: $(US_OBJ)/tests/%.o

$(US_OBJ)/libdmemfs-host/util/%.o: US_INC := -I$(TOP)/libdmemfs-host/util
$(US_OBJ)/%.o: $(TOP)/%.c
	@mkdir -p $(dir $@)
	$(CC) $(US_CFLAGS) -c $< -o $@

$(US_LIB_A): $(call us_obj,$(US_LIB_SRC))
	@rm -f $@; ar rcs $@ $^

# ---- unit tests: test-NAME from <program>/tests/test-NAME.c and testutil
US_TEST_DEFS = -I$(TOP)/libdmemfs-host/tests $(shell pkg-config --cflags gio-2.0) -DTEST_TOP='"$(TOP)"' -DTEST_BINDIR='"$(US_BIN)"'

$(US_OBJ)/tests/%.o: $(TOP)/libdmemfs-host/tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(US_CFLAGS) $(US_TEST_DEFS) -c $< -o $@

# objects first, then a program's own archive (the wrapper's), the library
# last: each serves what comes before it
$(US_OBJ)/tests/test-%: $(US_OBJ)/tests/test-%.o $(US_OBJ)/tests/testutil.o $(US_LIB_A)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(filter-out $(US_LIB_A),$(filter %.a,$^)) $(US_LIB_A) \
	  $(US_PKG_LIBS) $(shell pkg-config --libs gio-2.0)

# ---- fuzzing ----------------------------------------------------------------
US_FUZZ     := $(BUILD)/fuzz
US_FUZZ_FLAGS = -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	$(US_DEFS) $(US_INC) $(US_PKG_CFLAGS)

$(US_FUZZ)/fuzz-plan: $(TOP)/libdmemfs-host/fuzz/fuzz-plan.c $(US_LIB_SRC)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(US_FUZZ_FLAGS) -o $@ $^ $(US_PKG_LIBS)

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

# ---- install: the config and its man page
US_INSTALL += install-lib
.PHONY: install-lib
install-lib:
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/dmemfs-host.conf ]; then \
	  echo "keeping existing $(DESTDIR)$(SYSCONFDIR)/dmemfs-host.conf"; \
	else install -D -m 0644 $(TOP)/libdmemfs-host/dmemfs-host.conf $(DESTDIR)$(SYSCONFDIR)/dmemfs-host.conf; fi
	install -D -m 0644 $(TOP)/libdmemfs-host/dmemfs-host.conf.5 $(DESTDIR)$(PREFIX)/share/man/man5/dmemfs-host.conf.5
