# dmemfs-host: top-level entry points.  See README.md.
#
#   make demo    install deps, build everything, boot L1 on dmem, show it working
#   make test    everything: unit tests, checkpatch, kernel build, nested run
#   make bench   side-by-side performance ratios (not a test)

TOP        := $(abspath .)
BUILD      := $(TOP)/build
RESULTS    := $(BUILD)/results
export TOP BUILD RESULTS

.PHONY: all deps kernel tree checkpatch bisect-check kernel-modular userspace unit fuzz guest nested test test-debug demo bench clean
.DEFAULT_GOAL := all

all: kernel userspace guest

deps:
	@scripts/install-deps.sh

kernel: deps
	@kernel/build.sh

tree: deps
	@kernel/build.sh tree

checkpatch: tree
	@kernel/checkpatch.sh

# Every patch that changes code builds a bzImage that boots (bisect-l1.sh),
# and no patch maps dmem before KVM and VFIO pin it.  Not in make test (about
# an hour); series-order.sh alone runs in test-checkpatch.
bisect-check: kernel guest $(DMEM_PATTERN)
	@kernel/bisect-check.sh

# KVM, VFIO and hwpoison-inject as modules (kernel/modular.config): a
# distribution's build of the series, bzImage plus modules.  Build only.
kernel-modular: deps
	@FLAVOR=modular kernel/build.sh

# Fragments owned by each part of the tree: the library first (the rules
# the programs build with), userspace.mk after the programs (it adds up
# their unit tests and install steps).  A step joins TEST_STEPS in the
# order of the includes.
include libdmemfs-host/libdmemfs-host.mk
include libvirt-hook/hook.mk
include qemu-memdev-wrapper/wrapper.mk
include setup/setup.mk
include capacity/capacity.mk
include guest-images/guest.mk
include nested-test/nested.mk
include liveupdate/liveupdate.mk
include nested-test/acceptance.mk
include bench/bench.mk
include userspace.mk

# Each fragment adds its steps to TEST_STEPS.  A step writes PASS:/FAIL: lines
# to $(RESULTS)/<step>.results and must write a FAIL line itself if it breaks.
TEST_STEPS += test-checkpatch test-kernel
test-steps: $(TEST_STEPS)

test-checkpatch: tree
	@kernel/checkpatch.sh > $(RESULTS)/checkpatch.results 2>&1 || \
	  echo "FAIL: checkpatch: script error" >> $(RESULTS)/checkpatch.results
	@kernel/series-order.sh >> $(RESULTS)/checkpatch.results 2>&1 || \
	  grep -q '^FAIL: series-order' $(RESULTS)/checkpatch.results || \
	  echo "FAIL: series-order: script error" >> $(RESULTS)/checkpatch.results

# The packages (debian/ for the userspace, bindeb-pkg for the kernel) into
# build/deb/, lintian on each (not in make test yet).
.PHONY: deb
deb: deps kernel
	@scripts/make-deb.sh

test-kernel: deps
	@if kernel/build.sh >&2; then echo "PASS: kernel: series applies and bzImage builds"; \
	  else echo "FAIL: kernel: series does not apply or build (build/kernel-build.log)"; \
	  fi > $(RESULTS)/kernel.results

test:
	@rm -rf $(RESULTS); mkdir -p $(RESULTS)
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory -k test-steps; true
	@scripts/summarize.sh $(RESULTS) $(TEST_STEPS:test-%=%)

# The same in-guest suite on a KASAN + PROVE_LOCKING + DEBUG_VM kernel
# (kernel/debug.config), without the libvirt acceptance, plus 180 s of
# trinity against dmemfs (nested-test/l1/trinity-l1.sh).  Not part of
# make test: the debug build alone is a cold kernel build.
test-debug: deps
	@rm -rf $(BUILD)/results-debug; mkdir -p $(BUILD)/results-debug
	@$(MAKE) --no-print-directory guest
	@if FLAVOR=debug kernel/build.sh >&2; then echo "PASS: kernel-debug: builds"; \
	  else echo "FAIL: kernel-debug: build failed (build/kernel-build-debug.log)"; \
	  fi > $(BUILD)/results-debug/kernel.results
	@KERNEL=$(BUILD)/bzImage-debug RESULTS=$(BUILD)/results-debug L1_APPEND="l1.skip=virsh l1.trinity=180 l1.script-timeout=2400" L1_TIMEOUT=5400 L1_VFIO_TIMEOUT=900 \
	  nested-test/host/run-l1.sh || true
	@scripts/summarize.sh $(BUILD)/results-debug kernel nested

demo:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory kernel userspace capacity guest
	@scripts/demo.sh

clean:
	rm -rf $(BUILD)
