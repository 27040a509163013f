# chash - PGXS build
#
# Targets beyond PGXS's own:
#   make unit        core unit tests (no server), plain and sanitized
#   make fuzz        libFuzzer targets over the core, FUZZ_SECONDS each
#   make bench       per-row cost ratios against PostgreSQL builtins
#   make demo        the README demo on throwaway clusters

EXTENSION = chash
EXTVERSION = 1.2
MODULE_big = chash

CORE_SRCS = $(sort $(wildcard src/core/*.c))
GLUE_SRCS = $(sort $(wildcard src/*.c))
OBJS = $(GLUE_SRCS:.c=.o) $(CORE_SRCS:.c=.o)

# chash--1.0.sql is the released 1.0 install script, frozen byte for byte
# (make check-release).  Each later version is an upgrade script assembled
# from one file per concept, in name order; a fresh install runs 1.0 and
# then the upgrades, as contrib's extensions do.
RELEASED_1_0_SHA256 = c1b3ba62e23bfcbad92eaf352713d055febdc991333e1cd3dcdfc2e38cfa35a5
# The sources of the released 1.0 -> 1.1 upgrade, concatenated in name order.
RELEASED_1_1_SHA256 = 9a5948be3b33943b47cc6bad70dd4c33510204f08907c641d97ac1e4dfc05f01
UPGRADES = 1.0--1.1 1.1--1.2
DATA = $(EXTENSION)--1.0.sql
DATA_built = $(foreach u,$(UPGRADES),$(EXTENSION)--$(u).sql)

REGRESS := $(sort $(notdir $(basename $(wildcard sql/*.sql))))
REGRESS_OPTS = --inputdir=. --load-extension=$(EXTENSION)
ISOLATION := $(sort $(notdir $(basename $(wildcard specs/*.spec))))
ISOLATION_OPTS = --load-extension=$(EXTENSION)
TAP_TESTS := $(if $(wildcard t/*.pl),1,)

PG_CPPFLAGS = -I$(srcdir)/src/core -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare -Wno-missing-field-initializers
# The mover's engine (mover/, without chash_move's main.c and command
# line) is linked into the library too, for the background rebalance
# (src/rebalance.c): one implementation of a move.  It is compiled a second
# time, position independent and hidden (no name of it is exported or
# taken from the server), into a static archive.
# crash_point.c, the tests' kill of chash_move at a named point, is not
# in it at all: a server process killed by a signal makes the postmaster
# end every session (the engine is compiled with CHASH_ENGINE_IN_SERVER,
# under which crash_point() is nothing).
MOVER_ENGINE_SRCS = $(filter-out mover/main.c mover/command_line.c mover/crash_point.c,$(sort $(wildcard mover/*.c)))
MOVER_ENGINE_OBJS = $(patsubst mover/%.c,mover/pic/%.o,$(MOVER_ENGINE_SRCS))
MOVER_ENGINE = mover/pic/libchash_move_engine.a
SHLIB_LINK = $(MOVER_ENGINE) -lxxhash -lcrypto
# src/shard_join.c talks to the directory database through libpq (whose
# header directory goes last: it has a client pg_config.h of its own).
PG_CPPFLAGS += -idirafter $(shell $(PG_CONFIG) --includedir)
SHLIB_LINK += -lpq -lpthread
EXTRA_CLEAN = $(DATA_built) unit-build mover/pic

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# chash_move, the mover (mover/): a libpq program, built and installed
# (into PostgreSQL's bindir) with the extension.  PGXS builds one of
# MODULE_big and PROGRAM per Makefile, so it has a Makefile of its own.
all: mover-all
install: mover-install
uninstall: mover-uninstall
clean: mover-clean

mover-all:
	$(MAKE) -C mover PG_CONFIG=$(PG_CONFIG)
mover-install: mover-all
	$(MAKE) -C mover PG_CONFIG=$(PG_CONFIG) install
mover-uninstall:
	$(MAKE) -C mover PG_CONFIG=$(PG_CONFIG) uninstall
mover-clean:
	$(MAKE) -C mover PG_CONFIG=$(PG_CONFIG) clean

.PHONY: mover-all mover-install mover-uninstall mover-clean

mover/pic/%.o: mover/%.c $(wildcard mover/*.h)
	@mkdir -p mover/pic
	$(CC) $(CFLAGS) $(CFLAGS_SL) -fvisibility=hidden -DCHASH_ENGINE_IN_SERVER -I$(shell $(PG_CONFIG) --includedir) \
		-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -c $< -o $@
$(MOVER_ENGINE): $(MOVER_ENGINE_OBJS)
	rm -f $@
	$(AR) $(AROPT) $@ $^
$(shlib): $(MOVER_ENGINE)

# The core's functions are the extension's own: hidden, so the glue calls
# them directly instead of through the shared library's PLT (measurable on
# the per-row paths).
$(CORE_SRCS:.c=.o): CFLAGS += -fvisibility=hidden

# PGXS tracks no header dependencies; every object depends on every header,
# and so does the JIT bitcode PGXS installs beside the library (a stale .bc
# would be inlined by the JIT in place of the new code).
$(OBJS) $(OBJS:.o=.bc): $(wildcard src/*.h src/core/*.h)

$(EXTENSION)--1.0--1.1.sql: $(sort $(wildcard src/sql/1.0--1.1/*.sql))
	cat $^ > $@

# From 1.2 on, a function is defined once per version, in
# src/sql/functions/<name>/<version>.sql, and the version's concept files
# include it with psql's "\ir" (src/sql/README.md); scripts/sql-assemble
# expands the includes, since an extension script cannot.
$(EXTENSION)--1.1--1.2.sql: $(sort $(wildcard src/sql/1.1--1.2/*.sql)) $(wildcard src/sql/functions/*/1.2.sql) scripts/sql-assemble
	scripts/sql-assemble $(sort $(wildcard src/sql/1.1--1.2/*.sql)) > $@

# The released scripts must not change, and the control file must name the
# newest version.
check-release:
	@echo "$(RELEASED_1_0_SHA256)  $(EXTENSION)--1.0.sql" | sha256sum --quiet -c - \
		|| { echo "$(EXTENSION)--1.0.sql differs from the released 1.0"; exit 1; }
	@test "$$(cat $(sort $(wildcard src/sql/1.0--1.1/*.sql)) | sha256sum | cut -d' ' -f1)" = "$(RELEASED_1_1_SHA256)" \
		|| { echo "src/sql/1.0--1.1/ differs from the released 1.1"; exit 1; }
	@! grep -il '^CREATE \(OR REPLACE \)\?FUNCTION' src/sql/1.1--1.2/*.sql \
		|| { echo "the files above define functions: they belong in src/sql/functions/<name>/1.2.sql"; exit 1; }
	@for f in src/sql/functions/*/*.sql; do grep -q "^\\\\ir \.\./functions/$$(basename $$(dirname $$f))/$$(basename $$f)$$" src/sql/*--$$(basename $$f .sql)/*.sql \
		|| { echo "$$f is included by no upgrade script"; exit 1; }; done
	@grep -q "^default_version = '$(EXTVERSION)'$$" $(EXTENSION).control \
		|| { echo "$(EXTENSION).control does not default to $(EXTVERSION)"; exit 1; }

# ---- core unit tests: every tests/unit/test_*.c is its own program ----
UNIT_TESTS = $(sort $(wildcard tests/unit/test_*.c))
UNIT_SUPPORT = tests/unit/unit_main.c tests/unit/unit_md5.c
PGLIBDIR := $(shell $(PG_CONFIG) --pkglibdir)
PGINCLUDE := $(shell $(PG_CONFIG) --includedir-server)
UNIT_CFLAGS = -std=c99 -O2 -g -Wall -Wextra -Werror -Isrc/core -Itests/unit
UNIT_LIBS = -lxxhash -L$(PGLIBDIR) -lpgcommon -lpgport -lcrypto -lm
SAN_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

unit-build/md5.o: tests/unit/unit_md5.c tests/unit/unit.h
	@mkdir -p unit-build
	$(CC) -O2 -g -I$(PGINCLUDE) -Itests/unit -Isrc/core -c $< -o $@

unit-build/%: tests/unit/%.c $(CORE_SRCS) $(wildcard src/core/*.h) tests/unit/unit_main.c tests/unit/unit.h unit-build/md5.o
	@mkdir -p unit-build
	$(CC) $(UNIT_CFLAGS) $< tests/unit/unit_main.c $(CORE_SRCS) unit-build/md5.o $(UNIT_LIBS) -o $@

unit-build/san-%: tests/unit/%.c $(CORE_SRCS) $(wildcard src/core/*.h) tests/unit/unit_main.c tests/unit/unit.h unit-build/md5.o
	@mkdir -p unit-build
	$(CC) $(UNIT_CFLAGS) $(SAN_FLAGS) $< tests/unit/unit_main.c $(CORE_SRCS) unit-build/md5.o $(UNIT_LIBS) -o $@

# The split's tests once more with its double-precision shortcuts off, so
# the exact path alone meets the same vectors (largest_remainder.c).
unit-build/exact-%: tests/unit/%.c $(CORE_SRCS) $(wildcard src/core/*.h) tests/unit/unit_main.c tests/unit/unit.h unit-build/md5.o
	@mkdir -p unit-build
	$(CC) $(UNIT_CFLAGS) -DLARGEST_REMAINDER_EXACT_ONLY $< tests/unit/unit_main.c $(CORE_SRCS) unit-build/md5.o $(UNIT_LIBS) -o $@

UNIT_BINS = $(patsubst tests/unit/%.c,unit-build/%,$(UNIT_TESTS)) \
	$(patsubst tests/unit/%.c,unit-build/san-%,$(UNIT_TESTS)) \
	unit-build/exact-test_directory unit-build/exact-test_planner

unit: $(UNIT_BINS)
	@tests/unit/run $(UNIT_BINS)

# ---- fuzzing (clang libFuzzer): every tests/fuzz/fuzz_*.c, FUZZ_SECONDS each ----
FUZZ_TARGETS = $(patsubst tests/fuzz/%.c,unit-build/%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_SECONDS ?= 20

unit-build/fuzz_%: tests/fuzz/fuzz_%.c $(CORE_SRCS) $(wildcard src/core/*.h)
	@mkdir -p unit-build
	clang -g -O1 -Isrc/core -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		$< $(CORE_SRCS) -lxxhash -lm -o $@

fuzz: $(FUZZ_TARGETS)
	@for t in $(FUZZ_TARGETS); do \
		echo "fuzzing $$t for $(FUZZ_SECONDS) s"; \
		./$$t -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -seed=1 > $$t.log 2>&1 \
			|| { tail -n 30 $$t.log; exit 1; }; \
		tail -n 1 $$t.log; \
	done

bench: install
	bench/run

demo:
	scripts/demo

.PHONY: unit fuzz bench demo check-release
