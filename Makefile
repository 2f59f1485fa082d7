# PGXS build of the mq extension.  `make` builds the extension and, through
# broker/Makefile, the frontend tools mqctl and mq-broker.
EXTENSION = mq
EXTVERSION = 0.2.0
# the release before: its install script is kept as src/release/mq--0.1.0.sql
# (exactly as it was built), and the update from it to EXTVERSION is built
# by scripts/update-sql.pl from src/update/mq--0.1.0--$(EXTVERSION).sql (by
# hand: catalog changes) and src/sql/*.sql (every definition, re-run);
# docs/operations.md, "Upgrades", and test/cli/upgrade.sh
PREVVERSION = 0.1.0

MODULE_big = mq
OBJS = $(patsubst %.c,%.o,$(wildcard src/*.c))

# The install script is built from src/sql/*.sql in name order; earlier
# releases' install and update scripts (src/release/) are installed as they
# are, so that `CREATE EXTENSION mq VERSION '0.1.0'` and every update path
# work.
DATA_built = mq--$(EXTVERSION).sql mq--$(PREVVERSION)--$(EXTVERSION).sql
DATA = $(wildcard src/release/mq--*.sql)

# pg_regress suites live in sql/ and expected/ (scripts/test.sh runs them).
REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
REGRESS_OPTS = --load-extension=mq

PG_CPPFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare

# generated from src/errcodes.txt (below)
EXTRA_CLEAN = src/mq_errcodes.h src/mq_errcodes.h.tmp

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

mq--$(EXTVERSION).sql: $(sort $(wildcard src/sql/*.sql))
	cat $^ > $@

mq--$(PREVVERSION)--$(EXTVERSION).sql: scripts/update-sql.pl src/update/mq--$(PREVVERSION)--$(EXTVERSION).sql $(sort $(wildcard src/sql/*.sql))
	perl $< $(PREVVERSION) $(EXTVERSION) $(wordlist 2,$(words $^),$^) > $@.tmp && mv $@.tmp $@

# The ERRCODE_MQ_* macros, generated from src/errcodes.txt (the one list of
# mq's SQLSTATEs) before anything is compiled.
src/mq_errcodes.h: src/errcodes.txt scripts/errcodes.sh
	bash scripts/errcodes.sh c-header $< > $@.tmp && mv $@.tmp $@
$(OBJS) $(OBJS:.o=.bc): src/mq_errcodes.h

# every object includes src/mq.h: rebuild them all when it changes (a stale
# object with an old struct layout crashes the server)
$(OBJS): src/mq.h

# mqctl and mq-broker: broker/Makefile, run by `make`, `make install`
# (to /usr/local/bin; see docs/cli.md) and `make clean` as well, unless
# MQ_TOOLS=no (the Debian package builds the extension once per
# PostgreSQL major with pg_buildext, and the tools once: debian/rules).
MQ_TOOLS ?= yes
ifneq ($(MQ_TOOLS),no)
all: broker-all
install: broker-install
clean: broker-clean
endif
broker-all broker-install broker-clean:
	$(MAKE) -C broker $(@:broker-%=%) PG_CONFIG=$(PG_CONFIG)
.PHONY: broker-all broker-install broker-clean

# PGXS tracks no header dependencies: every object includes src/mq.h.
$(OBJS): src/mq.h
