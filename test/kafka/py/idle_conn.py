"""Kafka's connections.max.idle.ms as a client sees it (client_idle.sh):
with the daemon's idle limit at IDLE_MS, a connection that sent one
request and then nothing is closed by the daemon within a few limits; one
that keeps sending requests more often than the limit stays open; a
Fetch parked longer than the limit (max_wait) is answered, not closed.

Usage: idle_conn.py PORT TOPIC IDLE_MS.  Prints one JSON object."""
import json
import socket
import struct
import sys
import time

from kwire import Closed, Client, s

port, topic, idle_ms = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
out = {}

# silent after one request: closed by the daemon, after about the limit
quiet = Client(port)
quiet.call(18, 0, b'')
start = time.time()
quiet.sock.settimeout(20 * idle_ms / 1000)
try:
    out['quiet_closed'] = quiet.sock.recv(1) == b''
except socket.timeout:
    out['quiet_closed'] = False
out['quiet_closed_after_limits'] = round((time.time() - start) * 1000 / idle_ms, 1)

# a request every half limit, for four limits: still served
busy = Client(port)
served = 0
for _ in range(8):
    time.sleep(idle_ms / 2000)
    try:
        busy.call(18, 0, b'')
        served += 1
    except Closed:
        break
out['busy_served'] = served

# a Fetch at the end of an empty partition, waiting three limits for records
parked = Client(port)
wait_ms = 3 * idle_ms
body = struct.pack('>iiiib', -1, wait_ms, 1, 1 << 20, 0) + struct.pack('>i', 1) + s(topic) + \
    struct.pack('>iiqi', 1, 0, 0, 1 << 20)
start = time.time()
try:
    parked.call(1, 4, body)
    out['parked_answered'] = True
except Closed:
    out['parked_answered'] = False
out['parked_waited_limits'] = round((time.time() - start) * 1000 / idle_ms, 1)
print(json.dumps(out))
