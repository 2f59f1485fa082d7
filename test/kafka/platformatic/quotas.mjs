// @platformatic/kafka's Admin against mq-kafka's client quotas, run by
// test/kafka/quotas.sh: alterClientQuotas (AlterClientQuotas v1) and
// describeClientQuotas (DescribeClientQuotas v1) with each match type,
// strict or not, validateOnly, removal, and the entries mq refuses.
// Usage: node quotas.mjs BROKER.  Prints one JSON object: each step's
// result, or "ERR ..." with the client's error.
import { Admin } from '@platformatic/kafka'

const [broker] = process.argv.slice(2)
const out = {}
// the Kafka error names an error holds, however deep
const codes = e => e.errors ? e.errors.flatMap(codes) : [e.apiId ?? e.message]
const describe = e => 'ERR ' + codes(e).join(';')
const step = async (name, f) => {
  try { out[name] = (await f()) ?? 'ok' } catch (e) { out[name] = describe(e) }
}
// entries as "user/client=key:value,...", sorted; <default> for a null name
const show = entries => entries.map(e => {
  const part = t => { const x = e.entity.find(p => p.entityType === t); return x ? (x.entityName ?? '<default>') : '-' }
  return `${part('user')}/${part('client-id')}=` + e.values.map(v => `${v.key}:${v.value}`).sort().join(',')
}).sort()
setTimeout(() => { out.timeout = true; console.log(JSON.stringify(out)); process.exit(1) }, 60000)

const admin = new Admin({ clientId: 'pf-quota-admin', bootstrapBrokers: [broker] })
const set = (entities, ops, validateOnly = false) => admin.alterClientQuotas({ entries: [{ entities, ops }], validateOnly })
const user = name => ({ entityType: 'user', entityName: name })
const client = name => ({ entityType: 'client-id', entityName: name })
await step('alter', async () => {
  const r = await admin.alterClientQuotas({
    entries: [
      { entities: [user('alice')], ops: [{ key: 'producer_byte_rate', value: 1048576, remove: false }] },
      { entities: [user('alice'), client('app')], ops: [{ key: 'consumer_byte_rate', value: 2048, remove: false },
        { key: 'producer_byte_rate', value: 4096, remove: false }] },
      { entities: [user(null)], ops: [{ key: 'consumer_byte_rate', value: 5000, remove: false }] },
      { entities: [client(null)], ops: [{ key: 'producer_byte_rate', value: 7000, remove: false }] }
    ]
  })
  return r.map(e => e.errorCode)
})
const q = (components, strict = false) => admin.describeClientQuotas({ components, strict }).then(show)
await step('all', () => q([]))
await step('user_exact', () => q([{ entityType: 'user', matchType: 0, match: 'alice' }]))
await step('user_exact_strict', () => q([{ entityType: 'user', matchType: 0, match: 'alice' }], true))
await step('user_default', () => q([{ entityType: 'user', matchType: 1 }]))
await step('client_any', () => q([{ entityType: 'client-id', matchType: 2 }]))
await step('both', () => q([{ entityType: 'user', matchType: 2 }, { entityType: 'client-id', matchType: 0, match: 'app' }], true))
await step('nobody', () => q([{ entityType: 'user', matchType: 0, match: 'bob' }]))
await step('validate_only', async () => {
  await set([user('bob')], [{ key: 'producer_byte_rate', value: 10, remove: false }], true)
  return q([{ entityType: 'user', matchType: 0, match: 'bob' }])
})
await step('remove', async () => {
  await set([user('alice'), client('app')], [{ key: 'consumer_byte_rate', remove: true }])
  return q([{ entityType: 'client-id', matchType: 0, match: 'app' }])
})
await step('request_percentage', async () => {
  await set([client('app2')], [{ key: 'request_percentage', value: 25.5, remove: false }])
  return q([{ entityType: 'client-id', matchType: 0, match: 'app2' }])
})
// refused: INVALID_REQUEST (42) each, nothing changed
await step('bad_key', () => set([user('carol')], [{ key: 'controller_mutation_rate', value: 50, remove: false }]))
await step('bad_value', () => set([user('carol')], [{ key: 'producer_byte_rate', value: 10.5, remove: false }]))
await step('zero', () => set([user('carol')], [{ key: 'producer_byte_rate', value: 0, remove: false }]))
await step('ip', () => set([{ entityType: 'ip', entityName: '10.0.0.1' }], [{ key: 'producer_byte_rate', value: 10, remove: false }]))
await step('twice', () => set([user('carol'), user('dave')], [{ key: 'producer_byte_rate', value: 10, remove: false }]))
await step('after_refusals', () => q([{ entityType: 'user', matchType: 0, match: 'carol' }]))
await admin.close()
console.log(JSON.stringify(out))
process.exit(0)
