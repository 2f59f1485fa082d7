#!/usr/bin/env bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
sql "SELECT mq.create_topic('cf', 1)" >/dev/null
kafka_start || { fail "start"; finish; }
/usr/bin/python3 - "$BROKER" <<'PY'
import sys
from kafka import KafkaAdminClient
from kafka.protocol.admin import AlterConfigsRequest, DescribeConfigsRequest
a = KafkaAdminClient(bootstrap_servers=sys.argv[1])
def send(req):
    f = a._send_request_to_node(a._client.least_loaded_node(), req)
    a._wait_for_futures([f])
    return f.value
print('alter dup key', send(AlterConfigsRequest[1]([(2, 'cf', [('retention.ms', '1000'), ('retention.ms', '2000')])], False)))
print('alter dup resource', send(AlterConfigsRequest[1]([(2, 'cf', [('retention.ms', '1000')]), (2, 'cf', [('retention.ms', '2000')])], False)))
print('alter unknown topic', send(AlterConfigsRequest[1]([(2, 'nosuch', [('retention.ms', '1000')])], False)))
print('alter broker', send(AlterConfigsRequest[1]([(4, '1', [('log.retention.ms', '1000')])], False)))
print('alter bad type', send(AlterConfigsRequest[1]([(99, 'x', [('a', 'b')])], False)))
print('describe unknown topic', send(DescribeConfigsRequest[1]([(2, 'nosuch', None)], False)))
print('describe some keys', send(DescribeConfigsRequest[1]([(2, 'cf', ['retention.ms', 'nosuch.key'])], False)))
print('describe dup', send(DescribeConfigsRequest[1]([(2, 'cf', ['retention.ms']), (2, 'cf', ['retention.ms'])], False)))
print('describe broker 7', send(DescribeConfigsRequest[1]([(4, '7', ['log.retention.ms'])], False)))
print('describe bad type', send(DescribeConfigsRequest[1]([(99, 'x', None)], False)))
PY
sql "SELECT config FROM mq.topics WHERE topic = 'cf'"
finish
