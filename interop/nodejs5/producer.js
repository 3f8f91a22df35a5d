'use strict';
// producer.js sends messages through the SDK's Producer, as its README shows.
//
//   --mode normal       --count N messages, bodies "<prefix>-<i>", property seq=<i>, tag --tag
//                       (a comma-separated list is cycled through: a,b tags a, b, a, ...)
//   --mode fifo         the same with messageGroup --message-group (a FIFO topic)
//   --mode delay        the same, each delivered --delay ms after it is sent (a DELAY topic)
//   --mode transaction  one transaction per word of --resolutions (commit, rollback or check:
//                       check sends the half message and leaves it for the server to check
//                       through Telemetry; the checker answers COMMIT), bodies
//                       "<prefix>-<i>-<word>" (a TRANSACTION topic)
//
// Lines: {"event":"started"}, {"event":"sent",...} per message, {"event":"committed"|
// "rolledback",...}, {"event":"checked",...} when the server asked about a message and
// {"event":"check-ended",...} once the checker's answer was accepted, {"event":"done"}.
const { Producer } = require('rocketmq-client-nodejs');
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
const { args, emit, fail, deadline, logger } = require('./lib');

const opt = args({
  endpoint: '', topic: '', mode: 'normal', count: 1, prefix: 'nodejs', tag: 'nodejs5',
  'message-group': 'group-a', delay: 3000, resolutions: 'commit,rollback,check',
  'timeout-ms': 60000, 'request-timeout-ms': 5000,
});
if (!opt.topic) fail(new Error('--topic is required'));

let stage = 'startup';
deadline(opt['timeout-ms'], () => stage);

async function main() {
  const toCheck = new Set(); // left for the server's check and not yet answered
  const checkable = new Set(); // every one left for the check
  let checkedAll;
  const allChecked = new Promise(resolve => { checkedAll = resolve; });
  const producer = new Producer({
    endpoints: opt.endpoint,
    topics: [ opt.topic ],
    requestTimeout: opt['request-timeout-ms'],
    logger,
    checker: {
      async check(m) {
        const body = m.body.toString('utf8');
        emit('checked', { messageId: m.messageId, body, expected: checkable.has(body) });
        return TransactionResolution.COMMIT;
      },
    },
  });
  // Wrapped to see when the checker's answer (EndTransaction from SOURCE_SERVER_CHECK) is
  // accepted: the SDK only logs it.
  const endTransaction = producer.endTransaction.bind(producer);
  producer.endTransaction = async (endpoints, message, messageId, transactionId, resolution, source) => {
    await endTransaction(endpoints, message, messageId, transactionId, resolution, source);
    if (source === undefined || source === 1) return; // TransactionSource.SOURCE_CLIENT
    const body = Buffer.from(message.body).toString('utf8');
    emit('check-ended', { messageId, transactionId, body });
    if (toCheck.delete(body) && toCheck.size === 0) checkedAll();
  };

  await producer.startup();
  emit('started', { clientId: producer.clientId, maxBodySizeBytes: producer.publishingSettings.maxBodySizeBytes });

  if (opt.mode === 'transaction') {
    const words = opt.resolutions.split(',').filter(Boolean);
    for (const [ i, word ] of words.entries()) {
      if (![ 'commit', 'rollback', 'check' ].includes(word)) throw new Error(`--resolutions: ${word} is not commit, rollback or check`);
      const body = `${opt.prefix}-${i}-${word}`;
      stage = `transaction ${body}`;
      const tx = producer.beginTransaction();
      if (word === 'check') {
        toCheck.add(body);
        checkable.add(body);
      }
      const r = await producer.send({ topic: opt.topic, tag: opt.tag, keys: [ body ], body: Buffer.from(body) }, tx);
      emit('sent', { body, messageId: r.messageId, transactionId: r.transactionId, offset: r.offset, queueId: r.messageQueue.queueId });
      if (word === 'commit') {
        await tx.commit();
        emit('committed', { body, messageId: r.messageId });
      } else if (word === 'rollback') {
        await tx.rollback();
        emit('rolledback', { body, messageId: r.messageId });
      }
    }
    if (toCheck.size > 0) {
      stage = `the server's check of ${[ ...toCheck ].join(', ')}`;
      await allChecked;
    }
  } else {
    for (let i = 0; i < opt.count; i++) {
      const body = `${opt.prefix}-${i}`;
      const tags = opt.tag.split(',');
      const msg = { topic: opt.topic, tag: tags[i % tags.length], keys: [ body ], body: Buffer.from(body), properties: new Map([[ 'seq', String(i) ]]) };
      switch (opt.mode) {
        case 'normal': break;
        case 'fifo': msg.messageGroup = opt['message-group']; break;
        case 'delay': msg.delay = opt.delay; break;
        default: throw new Error(`--mode ${opt.mode}: want normal, fifo, delay or transaction`);
      }
      stage = `send ${body}`;
      const r = await producer.send(msg);
      emit('sent', { body, messageId: r.messageId, offset: r.offset, queueId: r.messageQueue.queueId, sentAt: Date.now() });
    }
  }
  stage = 'shutdown';
  await producer.shutdown();
  emit('done', {});
  process.exit(0);
}

main().catch(fail);
