'use strict';
// push_consumer.js consumes through the SDK's PushConsumer (QueryAssignment, then
// ReceiveMessage per assigned queue, acks by the SDK) until --count distinct messages were
// consumed, as its README shows. Lines: {"event":"started"}, {"event":"consumed",...} per
// delivery, {"event":"done"}.
const { PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');
const { args, emit, fail, deadline, logger, view, filterExpression } = require('./lib');

const opt = args({
  endpoint: '', topic: '', group: '', count: 1, filter: '*', 'filter-type': 'tag',
  // Shutdown waits for the receive in flight: up to the request timeout plus the long-polling
  // timeout the server's settings gave (RocketMQ's proxy: 30 s).
  'timeout-ms': 120000, 'request-timeout-ms': 5000,
});
if (!opt.topic || !opt.group) fail(new Error('--topic and --group are required'));

let stage = 'startup';
deadline(opt['timeout-ms'], () => stage);

async function main() {
  const seen = new Set();
  let enough;
  const allConsumed = new Promise(resolve => { enough = resolve; });
  const consumer = new PushConsumer({
    endpoints: opt.endpoint,
    consumerGroup: opt.group,
    subscriptions: new Map([[ opt.topic, filterExpression(opt.filter, opt['filter-type']) ]]),
    requestTimeout: opt['request-timeout-ms'],
    logger,
    messageListener: {
      async consume(m) {
        emit('consumed', view(m));
        seen.add(m.messageId);
        if (seen.size >= opt.count) enough();
        return ConsumeResult.SUCCESS;
      },
    },
  });
  await consumer.startup();
  emit('started', { clientId: consumer.clientId });
  stage = `consume: ${opt.count} messages`;
  await allConsumed;
  stage = 'shutdown';
  await consumer.shutdown();
  emit('done', { consumed: seen.size });
  process.exit(0);
}

main().catch(fail);
