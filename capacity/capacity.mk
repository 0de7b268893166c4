# capacity/: the dmem capacity report (issue 7).  Included by the top Makefile.
#
#   make capacity        build/bin/dmem-capacity
#   make capacity-unit   host unit tests; writes $(RESULTS)/capacity.results
#   make test-capacity   the same as a `make test` step (never fails make)

CAP_DIR   := $(TOP)/capacity
CAP_OBJ   := $(BUILD)/obj/capacity
CAP_BIN   := $(BUILD)/bin/dmem-capacity
CAP_TBIN  := $(CAP_OBJ)/test-capacity
CAP_PKGS  := glib-2.0 libxml-2.0 libvirt
CAP_TPKGS := glib-2.0 libxml-2.0 libvirt json-glib-1.0
CAP_CC    ?= cc
CAP_WARN  := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -g
CAP_CFLAGS = $(CAP_WARN) $(shell pkg-config --cflags $(CAP_PKGS) 2>/dev/null)
CAP_LIBS   = $(shell pkg-config --libs $(CAP_PKGS) 2>/dev/null) -lm
CAP_TCFLAGS = $(CAP_WARN) $(shell pkg-config --cflags $(CAP_TPKGS) 2>/dev/null)
CAP_TLIBS   = $(shell pkg-config --libs $(CAP_TPKGS) 2>/dev/null) -lm

CAP_LIBSRC := units.c model.c shapes.c live.c libvirt_src.c report.c
CAP_LIBOBJ := $(addprefix $(CAP_OBJ)/,$(CAP_LIBSRC:.c=.o))
CAP_HDR    := $(CAP_DIR)/src/capacity.h

.PHONY: capacity capacity-unit test-capacity

capacity: $(CAP_BIN)

$(CAP_OBJ)/%.o: $(CAP_DIR)/src/%.c $(CAP_HDR) $(CAP_DIR)/capacity.mk
	@mkdir -p $(@D)
	$(CAP_CC) $(CAP_CFLAGS) -c -o $@ $<

$(CAP_OBJ)/test-capacity.o: $(CAP_DIR)/tests/test-capacity.c $(CAP_HDR) $(CAP_DIR)/capacity.mk
	@mkdir -p $(@D)
	$(CAP_CC) $(CAP_TCFLAGS) -I$(CAP_DIR)/src -c -o $@ $<

$(CAP_BIN): $(CAP_OBJ)/main.o $(CAP_LIBOBJ)
	@mkdir -p $(@D)
	$(CAP_CC) -o $@ $^ $(CAP_LIBS)

$(CAP_TBIN): $(CAP_OBJ)/test-capacity.o $(CAP_LIBOBJ)
	$(CAP_CC) -o $@ $^ $(CAP_TLIBS)

# TAP from the GLib test binary -> PASS:/FAIL: lines.  A crash or a short
# run (fewer results than the plan) is a FAIL line too.
capacity-unit: $(CAP_BIN) $(CAP_TBIN)
	@mkdir -p $(RESULTS)
	@out=$(RESULTS)/capacity.results; \
	CAP_BIN=$(CAP_BIN) CAP_TESTDIR=$(CAP_DIR)/tests $(CAP_TBIN) --tap > $(CAP_OBJ)/unit.log 2>&1; rc=$$?; \
	awk -v rc=$$rc ' \
	  /^1\.\.[0-9]+/ { plan = substr($$0, 4) + 0 } \
	  /^# / { last = substr($$0, 3) } \
	  /^ok [0-9]+ / { n++; name = $$3; sub(/^\/capacity\//, "", name); print "PASS: capacity/" name } \
	  /^not ok [0-9]+ / { n++; name = $$4; sub(/^\/capacity\//, "", name); print "FAIL: capacity/" name ": " (last ? last : "failed") } \
	  END { if (n < plan || plan == 0) print "FAIL: capacity: test binary stopped after " n " of " plan " tests (rc " rc ", build/obj/capacity/unit.log)" }' \
	  $(CAP_OBJ)/unit.log > $$out; \
	cat $$out; ! grep -q '^FAIL' $$out

TEST_STEPS += test-capacity
test-capacity:
	@mkdir -p $(RESULTS)
	@if ! $(MAKE) --no-print-directory capacity $(CAP_TBIN) > $(BUILD)/capacity-build.log 2>&1; then \
	  echo "FAIL: capacity: build failed (build/capacity-build.log)" > $(RESULTS)/capacity.results; \
	else $(MAKE) --no-print-directory capacity-unit > /dev/null 2>&1; \
	  [ -s $(RESULTS)/capacity.results ] || \
	    echo "FAIL: capacity: unit tests wrote no results" > $(RESULTS)/capacity.results; \
	fi; true
