"""kafka-python over TLS against mq-kafka (issue 24).

Run by test/kafka/tls.sh with Debian's /usr/bin/python3 (python3-kafka):

    tls.py clients BROKER TOPIC GROUP CADIR [CLIENT]
        a producer sends 6 records over SSL (with CADIR/CLIENT.crt and .key
        as its certificate if CLIENT is given: mutual TLS), a consumer of
        GROUP reads them and commits; prints one JSON object: produced
        offsets, consumed values, the group's committed offset.
    tls.py live BROKER CADIR
        one TLS connection (Python's ssl module, CADIR/ca.crt trusted) that
        sends ApiVersions, prints "ready" and the server certificate's
        SHA-256, waits for a line on stdin, then sends ApiVersions again on
        the same connection and prints "same connection ok" if answered
        (the SIGHUP reload test: the connection outlives the reload).
"""
import hashlib
import json
import socket
import ssl
import struct
import sys


def ctx_for(cadir, client):
    ctx = ssl.create_default_context(cafile=cadir + "/ca.crt")
    if client:
        ctx.load_cert_chain(cadir + "/" + client + ".crt", cadir + "/" + client + ".key")
    return ctx


def clients(broker, topic, group, cadir, client=None):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    tls = dict(security_protocol="SSL", ssl_cafile=cadir + "/ca.crt", ssl_check_hostname=True)
    if client:
        tls.update(ssl_certfile=cadir + "/" + client + ".crt", ssl_keyfile=cadir + "/" + client + ".key")
    out = {}
    p = KafkaProducer(bootstrap_servers=broker, **tls)
    out["produced"] = [p.send(topic, value=b"py%d" % i).get(timeout=30).offset for i in range(6)]
    p.close()
    c = KafkaConsumer(topic, bootstrap_servers=broker, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, consumer_timeout_ms=20000, **tls)
    got = []
    for m in c:
        if m.value.startswith(b"py"):
            got.append(m.value.decode())
        if len(got) == 6:
            break
    c.commit()
    out["consumed"] = got
    out["committed"] = c.committed(TopicPartition(topic, 0))
    c.close(autocommit=False)
    print(json.dumps(out))


def api_versions(s, corr):
    client = b"tls-live"
    body = struct.pack(">hhih", 18, 0, corr, len(client)) + client
    s.sendall(struct.pack(">i", len(body)) + body)
    size = struct.unpack(">i", recv_exactly(s, 4))[0]
    return struct.unpack(">i", recv_exactly(s, size)[:4])[0] == corr


def recv_exactly(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise EOFError("connection closed")
        data += chunk
    return data


def live(broker, cadir):
    host, port = broker.rsplit(":", 1)
    raw = socket.create_connection((host, int(port)))
    s = ctx_for(cadir, None).wrap_socket(raw, server_hostname=host)
    ok = api_versions(s, 1)
    print("ready" if ok else "no answer", hashlib.sha256(s.getpeercert(binary_form=True)).hexdigest(),
          flush=True)
    sys.stdin.readline()
    print("same connection ok" if api_versions(s, 2) else "no answer", flush=True)
    s.close()


if __name__ == "__main__":
    if sys.argv[1] == "clients":
        clients(*sys.argv[2:])
    else:
        live(*sys.argv[2:])
