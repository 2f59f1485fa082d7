// node-rdkafka (test/kafka/node_rdkafka.sh) against mq-kafka, every client
// at its defaults but for what a step needs: topics created and grown and
// deleted through the admin client, records with keys and headers in each
// compression codec, an idempotent producer, a group that commits, a
// transaction that consumes and produces (and one aborted) read by a
// read_committed consumer (librdkafka's default), watermarks and
// offsetsForTimes.  Prints one JSON line last, for the test to check
// against SQL, with the highest version of each request the clients sent.
// Usage: node client.js BROKER PREFIX
'use strict';
const K = require('node-rdkafka');

const [broker, pfx] = process.argv.slice(2);
const T = pfx, OUT = pfx + '_out', SCRATCH = pfx + '_scratch';
const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];
const sent = {};
const out = {librdkafka: K.librdkafkaVersion};

const cb = (f) => new Promise((res, rej) => f((e, v) => (e ? rej(e) : res(v))));
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

// every client logs its requests: the highest version of each goes out
function conf(extra) {
	return Object.assign({'metadata.broker.list': broker, debug: 'protocol'}, extra);
}
function watch(client) {
	client.on('event.log', (l) => {
		const m = /Sent (\w+)Request \(v(\d+)/.exec(l.message);
		if (m) sent[m[1]] = Math.max(sent[m[1]] || 0, Number(m[2]));
	});
	return client;
}
async function connect(client) {
	watch(client);
	await new Promise((res, rej) => {
		client.connect({}, (e) => e && rej(e));
		client.once('ready', res);
	});
	return client;
}

async function admin() {
	const a = K.AdminClient.create({"metadata.broker.list": broker});
	await cb((k) => a.createTopic({topic: T, num_partitions: 3, replication_factor: 1}, 10000, k));
	await cb((k) => a.createPartitions(T, 4, 10000, k));
	await cb((k) => a.createTopic({topic: OUT, num_partitions: 1, replication_factor: 1}, 10000, k));
	await cb((k) => a.createTopic({topic: SCRATCH, num_partitions: 1, replication_factor: 1}, 10000, k));
	return a;
}

// produce N records through a producer of conf, counting delivery reports
async function produce(extra, records) {
	const p = await connect(new K.Producer(conf(Object.assign({dr_cb: true}, extra))));
	let ok = 0, failed = 0;
	p.on('delivery-report', (e) => (e ? failed++ : ok++));
	p.setPollInterval(5);
	for (const r of records)
		p.produce(T, r.partition ?? null, Buffer.from(r.value), r.key, Date.now(), null, r.headers);
	await cb((k) => p.flush(20000, k));
	for (let i = 0; i < 100 && ok + failed < records.length; i++)
		await sleep(20);
	await cb((k) => p.disconnect(k));
	return failed ? `${ok} ok, ${failed} failed` : `${ok} ok`;
}

async function consumer(group, extra) {
	return connect(new K.KafkaConsumer(conf(Object.assign({'group.id': group}, extra)),
									   {'auto.offset.reset': 'earliest'}));
}
async function consumeN(c, n) {
	let got = [];
	for (const t0 = Date.now(); got.length < n && Date.now() - t0 < 30000;)
		got = got.concat(await cb((k) => c.consume(100, k)));
	return got;
}
const show = (m) => `${m.key}=${m.value}:${(m.headers || []).map((h) => Object.keys(h)[0] + '=' + Object.values(h)[0]).join(',')}`;

async function transactions(n) {
	const tp = await connect(new K.Producer(conf({'transactional.id': pfx + '-tx', dr_cb: true})));
	tp.setPollInterval(5);
	await cb((k) => tp.initTransactions(10000, k));
	const send = (v) => tp.produce(OUT, 0, Buffer.from(v), v);
	await cb((k) => tp.beginTransaction(k));
	send('committed-1');
	send('committed-2');
	await cb((k) => tp.commitTransaction(10000, k));
	await cb((k) => tp.beginTransaction(k));
	send('aborted-1');
	await cb((k) => tp.flush(10000, k));
	await cb((k) => tp.abortTransaction(10000, k));
	// consume, transform, produce: the input's offsets commit with the output
	const c = await consumer(pfx + '-txn', {'enable.auto.commit': false});
	c.subscribe([T]);
	const got = await consumeN(c, n);
	await cb((k) => tp.beginTransaction(k));
	send('transformed-' + got.length);
	await cb((k) => tp.sendOffsetsToTransaction(c.position(), c, 10000, k));
	await cb((k) => tp.commitTransaction(10000, k));
	await cb((k) => c.disconnect(k));
	await cb((k) => tp.disconnect(k));
	// librdkafka's consumers read committed by default
	const r = await consumer(pfx + '-reader', {});
	r.subscribe([OUT]);
	out.readCommitted = (await consumeN(r, 3)).map((m) => String(m.value));
	await sleep(500);		// nothing more arrives
	out.readCommitted = out.readCommitted.concat((await cb((k) => r.consume(100, k))).map((m) => String(m.value)));
	await cb((k) => r.disconnect(k));
}

async function main() {
	const a = await admin();
	const records = [];
	for (const codec of CODECS) {
		const batch = [];
		for (let i = 0; i < 20; i++)
			batch.push({key: `${codec}-${i}`, value: `v${i}`, headers: [{codec}]});
		out[codec] = await produce({'compression.codec': codec}, batch);
		records.push(...batch);
	}
	const idem = [];
	for (let i = 0; i < 50; i++)
		idem.push({key: `idem-${i}`, value: `v${i}`, partition: 0, headers: [{codec: 'idem'}]});
	out.idempotent = await produce({'enable.idempotence': true}, idem);
	const n = records.length + idem.length;

	const c = await consumer(pfx + '-group', {});
	c.subscribe([T]);
	const got = await consumeN(c, n);
	out.consumed = got.length;
	out.distinct = new Set(got.map((m) => `${m.partition}:${m.offset}`)).size;
	const want = new Set(records.concat(idem).map((r) => `${r.key}=${r.value}:codec=${r.headers[0].codec}`));
	out.matching = got.filter((m) => want.has(show(m))).length;
	c.commitSync(null);
	out.committed = (await cb((k) => c.committed(null, 5000, k)))
		.sort((x, y) => x.partition - y.partition).map((t) => t.offset);
	const wm = await cb((k) => c.queryWatermarkOffsets(T, 0, 5000, k));
	out.watermarks0 = [wm.lowOffset, wm.highOffset];
	const times = (ts) => cb((k) => c.offsetsForTimes([{topic: T, partition: 0, offset: ts}], 5000, k));
	out.offsetsForTimes = [(await times(0))[0].offset, (await times(Date.now() + 3600e3))[0].offset];
	await cb((k) => c.disconnect(k));

	await transactions(n);

	await cb((k) => a.deleteTopic(SCRATCH, 10000, k));
	a.disconnect();
	out.sent = sent;
	console.log(JSON.stringify(out));
}

main().catch((e) => {
	console.error('client failed:', e);
	process.exit(1);
});
