"""kafka-python with its default settings against mq-kafka on a cluster.

Run by test/t/140_kafka_cluster_clients.pl and 141_kafka_cluster_clients_failover.pl
with Debian's /usr/bin/python3 (its python3-kafka 2.0.2); BOOT is one
daemon's address, the clients learn the others from Metadata.  No
api_version anywhere: every client probes the broker (ApiVersions, then
Metadata v0).  Each command prints one line per event, flushed, so that
the test can act while it runs (kill a leader after so many acks):

    cluster.py probe BOOT ROUNDS
        ROUNDS of producer, consumer and admin client: one JSON line
        {"connected": N, "versions": [...], "first_error": ...}
    cluster.py produce BOOT TOPIC N [acks [retries]]
        N keyed records "v0".."vN-1" (default partitioner), acks and
        retries as given (default: kafka-python's, acks=1, retries=0),
        PACE_MS (environment, default 20) after every 50 records:
        "ack VALUE PARTITION OFFSET" or "fail VALUE ERROR" per record, in
        the order the answers come, then "done ACKED FAILED"
    cluster.py consume BOOT TOPIC GROUP MAX IDLE_S
        one member of GROUP (earliest, no auto commit) reads until it has
        MAX records or none came for IDLE_S seconds, committing
        synchronously after each poll: "rec PARTITION OFFSET VALUE" per
        record, "commit ok" or "commit failed ERROR" per commit, "poll
        failed ERROR" per poll that raised, then "done COUNT"
    cluster.py admin BOOT TOPIC PARTITIONS REPLICATION [OTHER...]
        create TOPIC, describe it (the number of replicas of each
        partition) from BOOT and from admin clients bootstrapped at each
        OTHER, delete it: one JSON line
    cluster.py configs BOOT TOPIC KEY VALUE
        once BOOT's metadata names TOPIC with a leader, AlterConfigs of it
        (KEY=VALUE, the rest to defaults), then DescribeConfigs until it
        shows VALUE (at most 20 s): one JSON line, {"alter": error code,
        "describe": error code, "value": KEY's value described}
    cluster.py broker_configs BOOT KEY ID...
        DescribeConfigs of each broker ID (asked of that broker): one JSON
        line, {ID: KEY's value}
    cluster.py acls BOOT create|delete TOPIC USER
        CreateAcls at BOOT (USER may read TOPIC), or DeleteAcls of every
        ACL of USER: one JSON line, {"ok": true, ...} or {"error": ...}
"""
import json
import os
import sys
import threading
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, ConfigResource,
                         ConfigResourceType, NewTopic, ResourcePattern, ResourcePatternFilter, ResourceType)

lock = threading.Lock()
PACE = float(os.environ.get("PACE_MS", "20")) / 1000  # produce: the pause after every 50 records


def say(*words):
    with lock:
        print(*words, flush=True)


def probe(boot, rounds):
    ok, versions, errors = 0, set(), []
    for _ in range(int(rounds)):
        for make in (lambda: KafkaProducer(bootstrap_servers=boot),
                     lambda: KafkaConsumer(bootstrap_servers=boot),
                     lambda: KafkaAdminClient(bootstrap_servers=boot)):
            try:
                c = make()
            except Exception as e:  # noqa: BLE001 - counted
                errors.append("%s: %s" % (type(e).__name__, e))
                continue
            ok += 1
            versions.add(".".join(map(str, c.config["api_version"])))
            c.close()
    say(json.dumps({"connected": ok, "versions": sorted(versions),
                    "first_error": errors[0] if errors else None}, sort_keys=True))


def produce(boot, topic, n, acks=None, retries=None):
    conf = {"bootstrap_servers": boot}
    if acks is not None:
        conf["acks"] = acks if acks == "all" else int(acks)
    if retries is not None:
        conf["retries"] = int(retries)
    p = KafkaProducer(**conf)
    count = {"ack": 0, "fail": 0}

    def acked(value, md):
        count["ack"] += 1
        say("ack", value, md.partition, md.offset)

    def failed(value, err):
        count["fail"] += 1
        say("fail", value, type(err).__name__)

    for i in range(int(n)):
        v = "v%d" % i
        f = p.send(topic, key=b"k%d" % i, value=v.encode())
        f.add_callback(lambda md, v=v: acked(v, md))
        f.add_errback(lambda e, v=v: failed(v, e))
        if i % 50 == 49:
            time.sleep(PACE)  # a steady stream, not one burst
    p.flush()
    p.close()
    say("done", count["ack"], count["fail"])


def consume(boot, topic, group, most, idle):
    c = KafkaConsumer(topic, bootstrap_servers=boot, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False)
    got, last = 0, time.time()
    while got < int(most) and time.time() - last < float(idle):
        try:
            batches = c.poll(timeout_ms=500, max_records=min(100, int(most) - got))
        except ValueError as e:
            # kafka-python 2.0.2 when a broker's connection drops under it
            # ("Invalid file object", dpkp/kafka-python#2450, fixed in 2.1):
            # the consumer goes on at its next poll, as an application's would
            say("poll", "failed", type(e).__name__)
            continue
        if not batches:
            continue
        last = time.time()
        for tp, recs in batches.items():
            for r in recs:
                got += 1
                say("rec", tp.partition, r.offset, r.value.decode())
        try:
            c.commit()
            say("commit", "ok")
        except Exception as e:  # noqa: BLE001 - reported, the records may come again
            say("commit", "failed", type(e).__name__)
    c.close(autocommit=False)
    say("done", got)


def admin(boot, topic, partitions, replication, *others):
    """create at BOOT, describe at BOOT and at each of OTHERS (admin
    clients bootstrapped there), delete at BOOT"""
    res = {}

    def describe(at):
        """partitions and replicas of each, once every partition has a
        leader: a new topic reaches the brokers' metadata after its
        creation is answered, as with a KRaft controller"""
        b = KafkaAdminClient(bootstrap_servers=at)
        try:
            for _ in range(100):
                t = b.describe_topics([topic])[0]
                if t["error_code"] == 0 and t["partitions"] and all(p["leader"] >= 0 for p in t["partitions"]):
                    return sorted(len(p["replicas"]) for p in t["partitions"])
                time.sleep(0.2)
            return "error %d" % t["error_code"]
        finally:
            b.close()

    a = KafkaAdminClient(bootstrap_servers=boot)
    steps = [("create", lambda: [e[1] for e in a.create_topics([NewTopic(topic, int(partitions), int(replication))]).topic_errors])]
    steps += [("describe", lambda: describe(boot))]
    steps += [("describe_at_%d" % i, lambda at=at: describe(at)) for i, at in enumerate(others)]
    steps += [("delete", lambda: [e[1] for e in a.delete_topics([topic]).topic_error_codes])]
    for name, fn in steps:
        try:
            res[name] = fn()
        except Exception as e:  # noqa: BLE001 - reported, the test names it
            res[name] = "error: %s: %s" % (type(e).__name__, e)
    a.close()
    say(json.dumps(res, sort_keys=True))


def configs(boot, topic, key, value):
    """AlterConfigs, then DescribeConfigs, of TOPIC at BOOT"""
    a = KafkaAdminClient(bootstrap_servers=boot)
    res = {}
    try:
        for _ in range(100):  # until BOOT's metadata names the topic, led
            t = a.describe_topics([topic])[0]
            if t["error_code"] == 0 and t["partitions"] and all(p["leader"] >= 0 for p in t["partitions"]):
                break
            time.sleep(0.2)
        r = a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, {key: value})])
        res["alter"] = r.resources[0][0]
        for _ in range(100):  # the replicas take it up within a tick or so
            d = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])[0].resources[0]
            res["describe"] = d[0]
            res["value"] = {c[0]: c[1] for c in d[4]}.get(key)
            if res["value"] == value:
                break
            time.sleep(0.2)
    except Exception as e:  # noqa: BLE001 - reported, the test names it
        res["error"] = "%s: %s" % (type(e).__name__, e)
    a.close()
    say(json.dumps(res, sort_keys=True))


def broker_configs(boot, key, *ids):
    """each broker's value of KEY, from DescribeConfigs of the broker"""
    a = KafkaAdminClient(bootstrap_servers=boot)
    res = {}
    for i in ids:
        d = a.describe_configs([ConfigResource(ConfigResourceType.BROKER, i)])[0].resources[0]
        res[i] = {c[0]: c[1] for c in d[4]}.get(key, "error %s, %d configs" % (d[0], len(d[4])))
    a.close()
    say(json.dumps(res, sort_keys=True))


def acls(boot, what, topic, user):
    """CreateAcls or DeleteAcls at BOOT"""
    a = KafkaAdminClient(bootstrap_servers=boot)
    try:
        if what == "create":
            r = a.create_acls([ACL("User:" + user, "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                                   ResourcePattern(ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL))])
            res = {"ok": len(r["succeeded"]) == 1 and not r["failed"]} if r["failed"] == [] else {"error": str(r["failed"])}
        else:
            r = a.delete_acls([ACLFilter(principal="User:" + user, host="*", operation=ACLOperation.ANY,
                                         permission_type=ACLPermissionType.ANY,
                                         resource_pattern=ResourcePatternFilter(ResourceType.ANY, None,
                                                                                ACLResourcePatternType.ANY))])
            res = {"ok": r[0][2] is None or r[0][2].errno == 0, "deleted": len(r[0][1])}
    except Exception as e:  # noqa: BLE001 - reported, the test names it
        res = {"error": "%s: %s" % (type(e).__name__, e)}
    a.close()
    say(json.dumps(res, sort_keys=True))


{"probe": probe, "produce": produce, "consume": consume, "admin": admin,
 "configs": configs, "broker_configs": broker_configs, "acls": acls}[sys.argv[1]](*sys.argv[2:])
