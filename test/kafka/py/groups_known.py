"""The groups a lag monitor discovers through the Kafka protocol, with
kafka-python's admin client (Debian's python3-kafka) at its defaults:
ListGroups and DescribeGroups of every group given on the command line.
Run by test/kafka/groups_known.sh.  Usage: groups_known.py BROKER GROUP...
Prints one JSON object: "listed" [group, protocol type] of the groups
asked about, "described" {group: [state, protocol type, protocol,
[[member id, client id, subscribed topics, assigned "topic:partition"]]]}.
"""
import json
import sys

from kafka import KafkaAdminClient

broker, groups = sys.argv[1], sys.argv[2:]
admin = KafkaAdminClient(bootstrap_servers=broker)
listed = sorted([g, t] for g, t in admin.list_consumer_groups() if g in groups)
described = {}
for d in admin.describe_consumer_groups(groups):
    members = []
    for m in d.members:
        topics = sorted(m.member_metadata.subscription) if m.member_metadata else []
        parts = sorted('%s:%d' % (t, p) for t, ps in (m.member_assignment.assignment if m.member_assignment else [])
                       for p in ps)
        members.append([m.member_id, m.client_id, topics, parts])
    described[d.group] = [d.state, d.protocol_type, d.protocol, sorted(members)]
admin.close()
print(json.dumps({'listed': listed, 'described': described}))
