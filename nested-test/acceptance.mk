# nested-test/l1/acceptance/: the L2 guest image (guest-images/l2) and the
# nested libvirt acceptance of issue 7.  Included by the top-level Makefile.
#
#   make l2       build/l2/agent, build/l2/initramfs.cpio.gz (also part of `make guest`)
#   make accept   boot L1 and run only the acceptance (build/results/accept/)
#
# `make test` runs the acceptance inside the trunk's L1 boot:
# nested-test/l1/tests/l1-virsh.sh is one of the trunk's tests/l1-*.sh scripts.

L2_DIR    := $(BUILD)/l2
L2_AGENT  := $(L2_DIR)/agent
L2_INITRD := $(L2_DIR)/initramfs.cpio.gz
L2_CFLAGS := -static -O2 -Wall -Wextra -Werror

.PHONY: l2 accept
l2: $(L2_INITRD)
guest: l2

$(L2_AGENT): $(TOP)/guest-images/l2/agent.c
	@mkdir -p $(@D)
	@echo "[l2] cc -static $(notdir $@)"
	@$(CC) $(L2_CFLAGS) -o $@ $<

$(L2_INITRD): $(L2_AGENT) $(TOP)/guest-images/l2/init $(TOP)/guest-images/l2/mkinitramfs.sh
	@$(TOP)/guest-images/l2/mkinitramfs.sh $(L2_AGENT) $@

accept: kernel userspace capacity guest
	@$(TOP)/nested-test/host/run-accept.sh
