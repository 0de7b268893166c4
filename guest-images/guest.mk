# guest-images/: the L1 initramfs (busybox-static + init; the root file
# system is the host's, over virtio-9p).  Included by the top-level Makefile.

GUEST        := $(BUILD)/guest
GUEST_INITRD := $(GUEST)/initramfs.cpio.gz

.PHONY: guest
guest: $(GUEST_INITRD)

$(GUEST_INITRD): $(TOP)/guest-images/init $(TOP)/guest-images/mkinitramfs.sh
	@$(TOP)/guest-images/mkinitramfs.sh $@
