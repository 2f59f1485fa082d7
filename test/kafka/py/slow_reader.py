"""A client that pipelines Fetch requests and reads none of the answers
until the daemon has stopped answering (slow_reader.sh): how many it
answered meanwhile (the Fetch count of mq-kafka's metrics), how much the
daemon's resident memory grew, then every answer read, in order.

Usage: slow_reader.py PORT TOPIC N METRICS_HOST:PORT PID [CA_FILE]
(with CA_FILE: over TLS).  Prints one JSON object."""
import json
import os
import socket
import ssl
import struct
import sys
import time
import urllib.request

from kwire import Reader, s

port, topic, n, metrics, pid = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
ca = sys.argv[6] if len(sys.argv) > 6 else None


def fetches():
    with urllib.request.urlopen('http://%s/metrics' % metrics) as r:
        for line in r.read().decode().splitlines():
            if line.startswith('mq_kafka_requests_total{api="Fetch"}'):
                return int(line.split()[1])
    return 0


def rss_kb():
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])


def read_exact(sock, size):
    buf = b''
    while len(buf) < size:
        got = sock.recv(size - len(buf))
        if not got:
            raise EOFError('closed after %d of %d bytes' % (len(buf), size))
        buf += got
    return buf


before, rss0 = fetches(), rss_kb()
raw = socket.socket()
raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a slow link: a small window
raw.connect(('127.0.0.1', port))
sock = raw
if ca:
    ctx = ssl.create_default_context(cafile=ca)
    sock = ctx.wrap_socket(raw, server_hostname='localhost')

# Fetch v4 of partition 0 from offset 0, up to 1 MB: every answer is about 1 MB
body = struct.pack('>iiiib', -1, 0, 1, 1 << 20, 0) + struct.pack('>i', 1) + s(topic) + \
    struct.pack('>iiqi', 1, 0, 0, 1 << 20)
frames = b''
for corr in range(1, n + 1):
    frame = struct.pack('>hhi', 1, 4, corr) + s('slow_reader.py') + body
    frames += struct.pack('>i', len(frame)) + frame
sock.sendall(frames)

# until all are answered, or the count has stood still for a second
last, since, deadline = -1, time.time(), time.time() + 60
while time.time() < deadline:
    answered = fetches() - before
    if answered >= n:
        break
    if answered != last:
        last, since = answered, time.time()
    elif answered >= 1 and time.time() - since >= 1:
        break
    time.sleep(0.05)
out = {'answered_unread': answered, 'rss_growth_mb': (rss_kb() - rss0) // 1024}

in_order = with_records = 0
for corr in range(1, n + 1):
    size = struct.unpack('>i', read_exact(sock, 4))[0]
    r = Reader(read_exact(sock, size))
    if r.take('>i') != corr:
        break
    in_order += 1
    r.take('>i')                  # throttle
    r.take('>i')                  # topics
    r.str()
    r.take('>i')                  # partitions
    _, err, _, _ = r.take('>ihqq')
    aborted = r.take('>i')
    r.take('>%dx' % (16 * max(aborted, 0)))
    if err == 0 and r.take('>i') > 0:
        with_records += 1
out.update(read_in_order=in_order, with_records=with_records)
print(json.dumps(out))
