# PGXS build of the mq extension.  `make` builds the extension; broker/ and
# the CLI get their own targets once they exist.
EXTENSION = mq
EXTVERSION = 0.1.0

MODULE_big = mq
OBJS = $(patsubst %.c,%.o,$(wildcard src/*.c))

# The install script is built from src/sql/*.sql in name order; upgrade
# scripts (src/mq--OLD--NEW.sql) are installed as they are.
DATA_built = mq--$(EXTVERSION).sql
DATA = $(wildcard src/mq--*--*.sql)

# pg_regress suites live in sql/ and expected/ (see DESIGN.md, section 2).
REGRESS = $(patsubst sql/%.sql,%,$(sort $(wildcard sql/*.sql)))
REGRESS_OPTS = --load-extension=mq

PG_CPPFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

mq--$(EXTVERSION).sql: $(sort $(wildcard src/sql/*.sql))
	cat $^ > $@

# mqctl (and later mq-broker): broker/Makefile, run by `make`, `make install`
# (to /usr/local/bin; see docs/cli.md) and `make clean` as well.
all: broker-all
install: broker-install
clean: broker-clean
broker-all broker-install broker-clean:
	$(MAKE) -C broker $(@:broker-%=%) PG_CONFIG=$(PG_CONFIG)
.PHONY: broker-all broker-install broker-clean

# PGXS tracks no header dependencies: every object includes src/mq.h.
$(OBJS): src/mq.h
