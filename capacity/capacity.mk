# capacity/: the dmem capacity report (issue 7).  Included by the top Makefile.
#
#   make capacity        build/bin/dmem-capacity
#   make capacity-unit   host unit tests; writes $(RESULTS)/capacity.results
#   make test-capacity   the same as a `make test` step (never fails make)

CAP_DIR   := $(TOP)/capacity
CAP_OBJ   := $(BUILD)/obj/capacity
CAP_BIN   := $(BUILD)/bin/dmem-capacity
CAP_TBIN  := $(CAP_OBJ)/test-capacity

# Built like dmemfs-hook (libvirt-hook/hook.mk) and on the same archive: domain XML
# goes through the hook's plan_from_xml, nodesets and the pool through
# libdmemfs-host.  libvirt is for --libvirt only.
CAP_CFLAGS = $(US_CFLAGS) -I$(CAP_DIR)/src $(shell pkg-config --cflags libvirt)
CAP_LIBS   = $(US_LIB_A) $(US_PKG_LIBS) $(shell pkg-config --libs libvirt) -lm

CAP_LIBSRC := units.c model.c shapes.c live.c libvirt_src.c report.c fleet.c \
	      render-table.c render-json.c render-svg.c render-prometheus.c
CAP_LIBOBJ := $(addprefix $(CAP_OBJ)/,$(CAP_LIBSRC:.c=.o))

.PHONY: capacity capacity-unit test-capacity

capacity: $(CAP_BIN)

$(CAP_OBJ)/%.o: $(CAP_DIR)/src/%.c $(CAP_DIR)/capacity.mk
	@mkdir -p $(@D)
	$(CC) $(CAP_CFLAGS) -c -o $@ $<

$(CAP_OBJ)/test-capacity.o: $(CAP_DIR)/tests/test-capacity.c $(CAP_DIR)/capacity.mk
	@mkdir -p $(@D)
	$(CC) $(CAP_CFLAGS) -c -o $@ $<

$(CAP_BIN): $(CAP_OBJ)/main.o $(CAP_LIBOBJ) $(US_LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(CAP_OBJ)/main.o $(CAP_LIBOBJ) $(CAP_LIBS)

$(CAP_TBIN): $(CAP_OBJ)/test-capacity.o $(CAP_LIBOBJ) $(US_LIB_A)
	$(CC) $(LDFLAGS) -o $@ $(CAP_OBJ)/test-capacity.o $(CAP_LIBOBJ) $(CAP_LIBS)

-include $(wildcard $(CAP_OBJ)/*.d)

# TAP from the GLib test binary -> PASS:/FAIL: lines (scripts/tap-results.awk):
# a crash or a short run (fewer results than the plan) fails capacity/complete.
capacity-unit: $(CAP_BIN) $(CAP_TBIN) $(US_BIN)/dmemfs-hook
	@mkdir -p $(RESULTS)
	@out=$(RESULTS)/capacity.results; \
	CAP_BIN=$(CAP_BIN) HOOK_BIN=$(US_BIN)/dmemfs-hook CAP_TESTDIR=$(CAP_DIR)/tests $(CAP_TBIN) --tap > $(CAP_OBJ)/unit.log 2>&1; \
	awk -v prefix=capacity/ -v strip='^/capacity/' -f $(TOP)/scripts/tap-results.awk \
	  $(CAP_OBJ)/unit.log > $$out; \
	cat $$out; ! grep -q '^FAIL' $$out

TEST_STEPS += test-capacity
test-capacity:
	@mkdir -p $(RESULTS)
	@if ! $(MAKE) --no-print-directory capacity $(CAP_TBIN) $(US_BIN)/dmemfs-hook > $(BUILD)/capacity-build.log 2>&1; then \
	  echo "FAIL: capacity: build failed (build/capacity-build.log)" > $(RESULTS)/capacity.results; \
	else $(MAKE) --no-print-directory capacity-unit > /dev/null 2>&1; \
	  [ -s $(RESULTS)/capacity.results ] || \
	    echo "FAIL: capacity: unit tests wrote no results" > $(RESULTS)/capacity.results; \
	fi; true

US_INSTALL += install-capacity
.PHONY: install-capacity
install-capacity: $(CAP_BIN)
	install -D -m 0755 $(CAP_BIN) $(DESTDIR)$(PREFIX)/bin/dmem-capacity
	install -D -m 0644 $(TOP)/capacity/dmem-capacity.1 $(DESTDIR)$(PREFIX)/share/man/man1/dmem-capacity.1
