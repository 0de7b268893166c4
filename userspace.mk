# userspace.mk: what the host programs' fragments (libdmemfs-host.mk,
# libvirt-hook/hook.mk, qemu-memdev-wrapper/wrapper.mk, setup/setup.mk,
# liveupdate/liveupdate.mk, capacity/capacity.mk) add up to.  Included by
# the top-level Makefile after all of them: it reads US_TESTS and
# US_INSTALL, which they fill.
#
#   make userspace     every host program into build/bin
#   make unit          unit tests, human-readable
#   make test-unit     unit tests as PASS:/FAIL: lines in $(RESULTS)/unit.results
#   make install       PREFIX (/usr/local), DESTDIR, SYSCONFDIR (/etc)

US_TEST_BINS := $(addprefix $(US_OBJ)/tests/,$(US_TESTS))

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

# ---- install: each program's step, then libvirtd's profile for PREFIX
install: $(US_INSTALL)
	@# libvirtd's profile runs /usr/bin/* to probe an emulator and /usr/sbin/*
	@# (the hook), not /usr/local/bin/* or /usr/local/sbin/*
	@if [ '$(PREFIX)' != /usr ]; then \
	  for rule in '  $(PREFIX)/bin/qemu-memdev-wrapper PUx,' '  $(PREFIX)/sbin/dmemfs-hook PUx,'; do \
	    grep -qsxF "$$rule" $(US_AA_LIBVIRTD) || echo "$$rule" >> $(US_AA_LIBVIRTD); done; \
	  echo "AppArmor: reload libvirtd's profile (apparmor_parser -r /etc/apparmor.d/usr.sbin.libvirtd)"; fi

-include $(shell find $(US_OBJ) -name '*.d' 2>/dev/null)
