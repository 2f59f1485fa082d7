"""Raw Kafka requests for the authorization tests (authz_matrix.py,
acl_roundtrip.py): SASL/PLAIN, Produce v3, Fetch v4, Metadata v1,
OffsetCommit v2, OffsetFetch v1, and the ACL APIs at every version (v2+
flexible), each answering its error code(s).  Python's standard library
only; one connection per Client, requests in order."""
import socket
import struct

_CRC = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def varint(v):
    u = 2 * v if v >= 0 else -2 * v - 1
    out = b''
    while u >= 0x80:
        out += bytes([(u & 0x7F) | 0x80])
        u >>= 7
    return out + bytes([u])


def uvarint(u):
    out = b''
    while u >= 0x80:
        out += bytes([(u & 0x7F) | 0x80])
        u >>= 7
    return out + bytes([u])


def s(x, flex=False):
    """a (nullable) string, compact when flex"""
    if x is None:
        return uvarint(0) if flex else struct.pack('>h', -1)
    b = x.encode()
    return uvarint(len(b) + 1) + b if flex else struct.pack('>h', len(b)) + b


def arr(items, flex=False):
    return (uvarint(len(items) + 1) if flex else struct.pack('>i', len(items))) + b''.join(items)


def batch(value):
    rec = b'\0' + varint(0) + varint(0) + varint(-1) + varint(len(value)) + value + varint(0)
    recs = varint(len(rec)) + rec
    rest = struct.pack('>hiqqqhii', 0, 0, 0, 0, -1, -1, -1, 1) + recs
    return struct.pack('>qiibI', 0, 9 + len(rest), 0, 2, crc32c(rest)) + rest


class Reader:
    def __init__(self, data, flex=False):
        self.d, self.p, self.flex = data, 0, flex

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.d, self.p)
        self.p += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def uvarint(self):
        shift = v = 0
        while True:
            b = self.d[self.p]
            self.p += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v

    def str(self):
        n = self.uvarint() - 1 if self.flex else self.take('>h')
        if n < 0:
            return None
        v = self.d[self.p:self.p + n].decode()
        self.p += n
        return v

    def count(self):
        return self.uvarint() - 1 if self.flex else self.take('>i')

    def tags(self):
        if self.flex:
            for _ in range(self.uvarint()):
                self.uvarint()
                k = self.uvarint()
                self.p += k


class Closed(Exception):
    pass


class Client:
    def __init__(self, port, user=None, password=None, client_id='kwire.py'):
        self.sock = socket.create_connection(('127.0.0.1', port), timeout=15)
        self.corr = 0
        self.client_id = client_id
        if user is not None:
            r = self.call(17, 1, s('PLAIN'))
            assert struct.unpack_from('>h', r)[0] == 0, 'handshake'
            tok = b'\0' + user.encode() + b'\0' + password.encode()
            r = self.call(36, 1, struct.pack('>i', len(tok)) + tok)
            if struct.unpack_from('>h', r)[0] != 0:
                raise Closed('authentication failed')

    def close(self):
        self.sock.close()

    def call(self, api, ver, body, flex=False):
        """the response body after the header; Closed if the broker closed"""
        self.corr += 1
        hdr = struct.pack('>hhi', api, ver, self.corr) + s(self.client_id) + (b'\0' if flex else b'')
        frame = hdr + body
        try:
            self.sock.sendall(struct.pack('>i', len(frame)) + frame)
            buf = b''
            while len(buf) < 4 or len(buf) < 4 + struct.unpack_from('>i', buf)[0]:
                got = self.sock.recv(65536)
                if not got:
                    raise Closed('closed')
                buf += got
        except (ConnectionError, socket.timeout) as e:
            raise Closed(str(e))
        return buf[8 + (1 if flex else 0):]

    # --- data APIs: each returns Kafka's error code -----------------------
    def produce(self, topic, value=b'v'):
        b = batch(value)
        body = s(None) + struct.pack('>hii', 1, 5000, 1) + s(topic) + struct.pack('>iii', 1, 0, len(b)) + b
        r = Reader(self.call(0, 3, body))
        r.take('>i')
        r.str()
        r.take('>ii')
        return r.take('>h')

    def fetch(self, topic):
        body = struct.pack('>iiiib', -1, 0, 1, 1 << 20, 0) + struct.pack('>i', 1) + s(topic) + \
            struct.pack('>iiqi', 1, 0, 0, 1 << 20)
        r = Reader(self.call(1, 4, body))
        r.take('>ii')
        r.str()
        r.take('>ii')
        return r.take('>h')

    def list_offsets(self, topic, partition=0, timestamp=-1):
        """ListOffsets v1 of one partition: its error code"""
        body = struct.pack('>i', -1) + struct.pack('>i', 1) + s(topic) + struct.pack('>iiq', 1, partition, timestamp)
        r = Reader(self.call(2, 1, body))
        r.take('>i')
        r.str()
        r.take('>ii')
        return r.take('>h')

    def list_groups(self):
        """the groups ListGroups v0 lists, sorted"""
        r = Reader(self.call(16, 0, b''))
        r.take('>h')
        names = []
        for _ in range(r.take('>i')):
            names.append(r.str())
            r.str()
        return sorted(names)

    def metadata(self):
        """the topics Metadata v1 lists (all topics asked)"""
        r = Reader(self.call(3, 1, struct.pack('>i', -1)))
        for _ in range(r.take('>i')):
            r.take('>i')
            r.str()
            r.take('>i')
            r.str()
        r.take('>i')
        names = []
        for _ in range(r.take('>i')):
            err = r.take('>h')
            name = r.str()
            r.take('>b')
            for _ in range(r.take('>i')):
                r.take('>hii')
                for _ in range(2):  # replicas, isr
                    k = r.take('>i')
                    r.p += 4 * k
            if err == 0:
                names.append(name)
        return sorted(names)

    def commit(self, group, topic, offset=0):
        body = s(group) + struct.pack('>i', -1) + s('') + struct.pack('>qi', -1, 1) + s(topic) + \
            struct.pack('>iiq', 1, 0, offset) + s(None)
        r = Reader(self.call(8, 2, body))
        r.take('>i')
        r.str()
        r.take('>ii')
        return r.take('>h')

    def offset_fetch(self, group, topic):
        body = s(group) + struct.pack('>i', 1) + s(topic) + struct.pack('>ii', 1, 0)
        r = Reader(self.call(9, 1, body))
        r.take('>i')
        r.str()
        r.take('>ii')
        r.take('>q')
        r.str()
        return r.take('>h')

    def offset_fetch_v3(self, group, topic):
        """OffsetFetch v3 of partition 0: (top-level error, partitions answered)"""
        body = s(group) + struct.pack('>i', 1) + s(topic) + struct.pack('>ii', 1, 0)
        r = Reader(self.call(9, 3, body))
        r.take('>i')
        n = 0
        for _ in range(r.take('>i')):
            r.str()
            for _ in range(r.take('>i')):
                r.take('>iq')
                r.str()
                r.take('>h')
                n += 1
        return r.take('>h'), n

    def log_dirs(self):
        """DescribeLogDirs v3 of every partition: (error, [(dir, topic, partition, size)])"""
        r = Reader(self.call(35, 3, b'\x00\x00', flex=True), flex=True)  # topics null, no tags
        r.take('>i')
        err = r.take('>h')
        rows = []
        for _ in range(r.count()):
            r.take('>h')
            d = r.str()
            for _ in range(r.count()):
                t = r.str()
                for _ in range(r.count()):
                    p, size, _lag, _future = r.take('>iqqb')
                    r.tags()
                    rows.append((d, t, p, size))
                r.tags()
            r.tags()
        return err, rows

    def describe_producers(self, topic, partitions):
        """DescribeProducers v0 of a topic's partitions:
        [(partition, error, [(producer_id, epoch, last_sequence)])]"""
        body = b'\x02' + s(topic, True) + bytes([len(partitions) + 1])
        body += b''.join(struct.pack('>i', p) for p in partitions) + b'\x00\x00'
        r = Reader(self.call(61, 0, body, flex=True), flex=True)
        r.take('>i')
        out = []
        for _ in range(r.count()):
            r.str()
            for _ in range(r.count()):
                p, err = r.take('>i'), r.take('>h')
                r.str()
                prods = []
                for _ in range(r.count()):
                    pid, epoch, seq, _ts, _ce, _txn = r.take('>qiiqiq')
                    r.tags()
                    prods.append((pid, epoch, seq))
                r.tags()
                out.append((p, err, prods))
            r.tags()
        return out

    # --- ACL APIs -----------------------------------------------------------
    @staticmethod
    def _binding(a, ver, flex):
        """a = (type, name, pattern, principal, host, op, perm)"""
        out = struct.pack('>b', a[0]) + s(a[1], flex)
        if ver >= 1:
            out += struct.pack('>b', a[2])
        out += s(a[3], flex) + s(a[4], flex) + struct.pack('>bb', a[5], a[6])
        return out + (b'\0' if flex else b'')

    @staticmethod
    def _acl_row(r, ver):
        row = [r.take('>b'), r.str()]
        row.append(r.take('>b') if ver >= 1 else 3)
        return row

    def describe_acls(self, f, ver=1):
        """(error, message, [(type, name, pattern, principal, host, op, perm)])"""
        flex = ver >= 2
        r = Reader(self.call(29, ver, self._binding(f, ver, flex), flex), flex)
        r.take('>i')
        err, msg, out = r.take('>h'), r.str(), []
        for _ in range(r.count()):
            res = self._acl_row(r, ver)
            for _ in range(r.count()):
                out.append(tuple(res + [r.str(), r.str(), r.take('>b'), r.take('>b')]))
                r.tags()
            r.tags()
        r.tags()
        return err, msg, sorted(out, key=str)

    def create_acls(self, bindings, ver=1):
        """[(error, message)] per creation"""
        flex = ver >= 2
        body = arr([self._binding(a, ver, flex) for a in bindings], flex)
        r = Reader(self.call(30, ver, body, flex), flex)
        r.take('>i')
        out = []
        for _ in range(r.count()):
            out.append((r.take('>h'), r.str()))
            r.tags()
        return out

    def delete_acls(self, filters, ver=1):
        """[(error, message, [deleted binding])] per filter"""
        flex = ver >= 2
        body = arr([self._binding(f, ver, flex) for f in filters], flex)
        r = Reader(self.call(31, ver, body, flex), flex)
        r.take('>i')
        out = []
        for _ in range(r.count()):
            err, msg, gone = r.take('>h'), r.str(), []
            for _ in range(r.count()):
                r.take('>h')
                r.str()
                row = self._acl_row(r, ver)
                gone.append(tuple(row + [r.str(), r.str(), r.take('>b'), r.take('>b')]))
                r.tags()
            r.tags()
            out.append((err, msg, sorted(gone, key=str)))
        return out
