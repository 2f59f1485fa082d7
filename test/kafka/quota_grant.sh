#!/usr/bin/env bash
# Client quotas under a daemon role that may not read them (the grant of
# mq.client_quota_lookup() forgotten): mq-kafka says so once in its log,
# enforces none (mq_kafka_client_quotas 0), and the server's log holds no
# permission error (it asks whether it may before calling the lookup);
# once granted, the next read takes the quotas in: here the one an
# AlterClientQuotas through the daemon triggers, answered after that read.
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

ROLE=mq_quota_daemon
sql "DO \$\$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$ROLE') THEN CREATE ROLE $ROLE LOGIN; END IF;
END \$\$" >/dev/null
sql "GRANT USAGE ON SCHEMA mq TO $ROLE; SELECT mq.grant('alter, describe', 'cluster', 'kafka-cluster', '$ROLE');
     SELECT mq.set_client_quota('producer_byte_rate', 10000, client_id => 'qg-slow')" >/dev/null
METRICS="127.0.0.1:$(_free_port)"
kafka_start -d "dbname=$PGDATABASE user=$ROLE" --metrics "$METRICS" || { fail "mq-kafka starts as $ROLE"; finish; }
LOG="$(tmpdir)/mq-kafka.log"
said() { grep -q 'client quotas cannot be read: grant EXECUTE on mq.client_quota_lookup()' "$LOG"; }
wait_for 15 said || fail "the daemon says it cannot read the quotas, and what to grant"
enforced() { curl -sf "http://$METRICS/metrics" | grep -qx "mq_kafka_client_quotas $1"; }
check_eq "$(enforced 0 && echo yes)" yes "and enforces none"
check_eq "$(grep -c 'client_quota_lookup' "${MQ_SERVER_LOG:-/dev/null}")" 0 \
	"the server's log holds no permission error: the daemon asked first"

sql "GRANT EXECUTE ON FUNCTION mq.client_quota_lookup() TO $ROLE" >/dev/null
# AlterClientQuotas v0 through the daemon (a second quota); answered once read
run env PYTHONPATH=test/kafka/py /usr/bin/python3 - "$KAFKA_PORT" <<'PY'
import struct, sys
from kwire import Client, Reader, arr, s
c = Client(int(sys.argv[1]))
body = arr([arr([s('client-id') + s('qg-other')]) + arr([s('consumer_byte_rate') + struct.pack('>db', 5000, 0)])]) + b'\0'
r = Reader(c.call(49, 0, body))
r.take('>ii')
print(r.take('>h'))
PY
check_eq "$OUT" 0 "AlterClientQuotas through the daemon succeeds"
check_eq "$(enforced 2 && echo yes)" yes "and once granted, the daemon enforces both quotas when it answers"
check_eq "$(grep -c 'client quotas are read again: 2 enforced' "$LOG")" 1 "and says so"
check_eq "$(grep -c 'client quotas cannot be read' "$LOG")" 1 "the warning was logged once"
finish
