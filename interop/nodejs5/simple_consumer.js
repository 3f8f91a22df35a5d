'use strict';
// simple_consumer.js receives through the SDK's SimpleConsumer, as its README shows.
//
//   --mode receive     receive and ack until --count messages were acked
//   --mode redeliver   receive one message with --invisible-ms, leave it unacked, receive
//                      until the same message comes back once its invisible time passed,
//                      then ack it
//   --mode change      receive one message with a long --invisible-ms, change its invisible
//                      duration to --change-ms, receive until it comes back (long before
//                      --invisible-ms), then ack it with the handle the change returned
//
// --filter is the tag expression ("*" for all), or SQL92 with --filter-type sql. --await-ms
// is the SDK's long-polling awaitDuration. Lines: {"event":"started"}, {"event":"received",...}
// per message, {"event":"acked"|"changed"|"redelivered",...}, {"event":"done"}.
const { SimpleConsumer } = require('rocketmq-client-nodejs');
const { Code } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
const { args, emit, fail, deadline, logger, view, filterExpression } = require('./lib');

const opt = args({
  endpoint: '', topic: '', group: '', mode: 'receive', count: 1, filter: '*', 'filter-type': 'tag', batch: 16,
  'invisible-ms': 15000, 'change-ms': 2000, 'await-ms': 5000,
  'timeout-ms': 60000, 'request-timeout-ms': 5000,
});
if (!opt.topic || !opt.group) fail(new Error('--topic and --group are required'));

let stage = 'startup';
deadline(opt['timeout-ms'], () => stage);

async function main() {
  const consumer = new SimpleConsumer({
    endpoints: opt.endpoint,
    consumerGroup: opt.group,
    subscriptions: new Map().set(opt.topic, filterExpression(opt.filter, opt['filter-type'])),
    awaitDuration: opt['await-ms'],
    requestTimeout: opt['request-timeout-ms'],
    logger,
  });
  await consumer.startup();
  emit('started', { clientId: consumer.clientId });

  // ack is SimpleConsumer.ack, which checks only the response's status, plus a check of the
  // entry's own status (an AckMessage answer carries one per receipt handle).
  const ack = async m => {
    for (const e of await consumer.ackMessage(m)) {
      if (e.status && e.status.code !== Code.OK) {
        throw new Error(`ack of ${m.messageId} refused: code ${e.status.code}: ${e.status.message}`);
      }
    }
  };

  const receive = async invisible => {
    const got = await consumer.receive(opt.batch, invisible);
    for (const m of got) emit('received', view(m));
    return got;
  };

  switch (opt.mode) {
    case 'receive': {
      const acked = new Set();
      while (acked.size < opt.count) {
        stage = `receive: ${acked.size} of ${opt.count} acked`;
        for (const m of await receive(opt['invisible-ms'])) {
          await ack(m);
          acked.add(m.messageId);
          emit('acked', { messageId: m.messageId, body: m.body.toString('utf8') });
        }
      }
      break;
    }
    case 'redeliver':
    case 'change': {
      let first;
      while (!first) {
        stage = 'the first message';
        const got = await receive(opt['invisible-ms']);
        first = got[0];
        // Others of the batch are acked so only the first one comes back.
        for (const m of got.slice(1)) await ack(m);
      }
      if (opt.mode === 'change') {
        await consumer.changeInvisibleDuration(first, opt['change-ms']);
        emit('changed', { messageId: first.messageId, invisibleMs: opt['change-ms'], at: Date.now() });
      }
      let again;
      while (!again) {
        stage = `redelivery of ${first.messageId}`;
        for (const m of await receive(opt['invisible-ms'])) {
          if (m.messageId === first.messageId) {
            again = m;
          } else {
            await ack(m);
          }
        }
      }
      emit('redelivered', { messageId: again.messageId, deliveryAttempt: again.deliveryAttempt, firstAttempt: first.deliveryAttempt });
      await ack(again);
      emit('acked', { messageId: again.messageId, body: again.body.toString('utf8') });
      break;
    }
    default:
      throw new Error(`--mode ${opt.mode}: want receive, redeliver or change`);
  }
  stage = 'shutdown';
  await consumer.shutdown();
  emit('done', {});
  process.exit(0);
}

main().catch(fail);
