"""Kafka drops an Empty group without committed offsets when a topic is
deleted (its group coordinator's cleanup), with kafka-python (Debian's
python3-kafka) at its defaults but for autocommit: group GROUP-empty
reads TOPIC and leaves without committing, GROUP-offsets commits and
leaves; then the admin client deletes DOOMED, an unrelated topic.  Run by
test/kafka/group_cleanup.sh.  Usage: group_cleanup.py BROKER TOPIC DOOMED GROUP
Prints one JSON object: the GROUP- groups ListGroups lists "before" and
"after" the deletion, and the state DescribeGroups gives each "after".
"""
import json
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer

broker, topic, doomed, group = sys.argv[1:5]


def member(group_id, commit):
    c = KafkaConsumer(topic, bootstrap_servers=broker, group_id=group_id,
                      enable_auto_commit=False, auto_offset_reset='earliest')
    deadline = time.time() + 30
    while not c.assignment() and time.time() < deadline:
        c.poll(timeout_ms=200)
    if commit:
        c.commit()
    c.close()


member(group + '-empty', False)
member(group + '-offsets', True)
admin = KafkaAdminClient(bootstrap_servers=broker)


def listed():
    return sorted(g for g, _ in admin.list_consumer_groups() if g.startswith(group + '-'))


before = listed()
admin.delete_topics([doomed])
# the cleanup follows the deletion: ask until the group is gone, or 10 s
deadline = time.time() + 10
after = listed()
while group + '-empty' in after and time.time() < deadline:
    time.sleep(0.1)
    after = listed()
states = {d.group: d.state for d in admin.describe_consumer_groups([group + '-empty', group + '-offsets'])}
print(json.dumps({'before': before, 'after': after, 'states': states}, sort_keys=True))
