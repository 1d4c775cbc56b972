// One node.js consumer that commits every record synchronously (`bench.parts.commit_clients` runs it):
//   node bench/parts/commit_clients.mjs CLIENT SERVERS TOPIC GROUP RECORDS
// CLIENT: kafkajs or platformatic (@platformatic/kafka), resolved from the bench's own cache dir (NODE_PATH).
// Prints one JSON line: records, seconds from the first record to the last commit's answer, commit-call times (ms).
import { createRequire } from 'node:module'

// @platformatic/kafka 2.12 asks for node 22 and uses one of its additions; node 20 (Debian's) lacks it.
if (!Promise.withResolvers) {
  Promise.withResolvers = () => {
    let resolve, reject
    const promise = new Promise((res, rej) => { resolve = res; reject = rej })
    return { promise, resolve, reject }
  }
}

const [client, servers, topic, group, recordsArg] = process.argv.slice(2)
const records = Number(recordsArg)
const require = createRequire(process.env.NODE_PATH.split(':')[0] + '/')
const commitMs = []
let first = null

function done () {
  const seconds = Number(process.hrtime.bigint() - first) / 1e9
  process.stdout.write(JSON.stringify({ records: commitMs.length, seconds, commit_ms: commitMs }) + '\n')
}

async function timed (commit) {
  const started = process.hrtime.bigint()
  if (first === null) first = started
  await commit()
  commitMs.push(Number(process.hrtime.bigint() - started) / 1e6)
}

if (client === 'kafkajs') {
  const { Kafka, logLevel } = require('kafkajs')
  const kafka = new Kafka({ clientId: 'bench-kafkajs', brokers: servers.split(','), logLevel: logLevel.ERROR })
  const consumer = kafka.consumer({ groupId: group, maxWaitTimeInMs: 10, sessionTimeout: 10000, heartbeatInterval: 3000 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  let finished
  const all = new Promise(resolve => { finished = resolve })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ topic, partition, message }) => {
      if (commitMs.length >= records) return
      await timed(() => consumer.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }]))
      if (commitMs.length === records) finished()
    }
  })
  await all
  done()
  await consumer.disconnect()
} else if (client === 'platformatic') {
  const { Consumer } = require('@platformatic/kafka')
  const consumer = new Consumer({ groupId: group, clientId: 'bench-platformatic', bootstrapBrokers: servers.split(',') })
  const stream = await consumer.consume({ topics: [topic], mode: 'earliest', autocommit: false, maxWaitTime: 10,
    sessionTimeout: 10000, heartbeatInterval: 3000 })
  for await (const message of stream) {
    await timed(() => message.commit())
    if (commitMs.length === records) break
  }
  done()
  await stream.close()
  await consumer.close(true)
} else {
  throw new Error(`unknown client ${client}`)
}
process.exit(0)
