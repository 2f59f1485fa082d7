"""kafka-python with its default settings against mq-kafka (issue 23).

Run by test/kafka/kafka_python.sh with Debian's /usr/bin/python3 (its
python3-kafka 2.0.2):

    defaults.py BROKER TOPIC GROUP ROUNDS

No api_version is given anywhere, so every client probes the broker as a
new user's would (ApiVersions, then Metadata v0).  Prints one JSON object:
how many of ROUNDS producers, consumers and admin clients connected
after probing and the versions they inferred, what the producer
sent, what two consumers of GROUP read (the second after the first
committed and closed), and what the admin client created, described and
deleted.  Each step's failure (or its running over STEP_SECONDS) is
reported in the JSON, not raised, so the test names what broke; the JSON
so far is printed after every step, the last line being the whole.
"""
import json
import signal
import sys

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic

broker, topic, group, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
out = {}
STEP_SECONDS = 45


class StepTimeout(Exception):
    pass


def on_alarm(signum, frame):
    raise StepTimeout("over %d s" % STEP_SECONDS)


def step(name, fn):
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(STEP_SECONDS)
    try:
        out[name] = fn()
    except Exception as e:  # noqa: BLE001 - reported, the test names it
        out[name] = "error: %s: %s" % (type(e).__name__, e)
    signal.alarm(0)
    print(json.dumps(out), flush=True)


def probes():
    """ROUNDS of each client kind, each probing on its own connections:
    how many connected, the versions they inferred, the first error"""
    ok, versions, errors = 0, set(), []
    for _ in range(rounds):
        for make in (lambda: KafkaProducer(bootstrap_servers=broker),
                     lambda: KafkaConsumer(bootstrap_servers=broker),
                     lambda: KafkaAdminClient(bootstrap_servers=broker)):
            try:
                c = make()
            except Exception as e:  # noqa: BLE001 - counted
                errors.append("%s: %s" % (type(e).__name__, e))
                continue
            ok += 1
            versions.add(".".join(map(str, c.config["api_version"])))
            c.close()
    return {"connected": ok, "versions": sorted(versions), "first_error": errors[0] if errors else None}


def produce():
    p = KafkaProducer(bootstrap_servers=broker)
    offsets = [p.send(topic, key=b"k%d" % i, value=b"v%d" % i).get(timeout=30).offset for i in range(10)]
    p.close()
    return offsets


def consume(n, commit):
    """the next n records GROUP reads; commit them, then close"""
    c = KafkaConsumer(topic, bootstrap_servers=broker, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, consumer_timeout_ms=20000)
    got = []
    for m in c:
        got.append(m.value.decode())
        if len(got) == n:
            break
    if commit:
        c.commit()
    c.close(autocommit=False)
    return got


def admin():
    a = KafkaAdminClient(bootstrap_servers=broker)
    name = topic + "_adm"
    res = {}
    r = a.create_topics([NewTopic(name, 3, 1)])
    res["create"] = [e[1] for e in r.topic_errors]
    d = a.describe_topics([name])
    res["describe"] = [len(t["partitions"]) for t in d]
    r = a.delete_topics([name])
    res["delete"] = [e[1] for e in r.topic_error_codes]
    a.close()
    return res


step("probes", probes)
step("produced", produce)
step("first", lambda: consume(4, True))
step("second", lambda: consume(6, True))
step("admin", admin)
