'use strict';
// Shared plumbing of the scripts that drive the RocketMQ 5.x Node.js SDK against an mq node
// (interop/grpc_nodejs_test.go runs them). Every script reads its settings from --flags (or
// the MQ_* environment variables), prints one JSON object per line on stdout, logs the SDK's
// own lines on stderr, and exits by itself: 0 when it did all it was asked, 1 on any error,
// 2 when its time limit ran out first (the SDK's startup waits for the server's settings
// without a limit of its own).

const { format } = require('node:util');

// args parses --name value pairs; a value falls back to $MQ_<NAME> (dashes as underscores),
// then to the default given.
function args(defaults) {
  const out = { ...defaults };
  for (const key of Object.keys(defaults)) {
    const env = process.env['MQ_' + key.toUpperCase().replace(/-/g, '_')];
    if (env !== undefined) out[key] = env;
  }
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) fail(new Error(`unexpected argument ${JSON.stringify(a)}: flags are --name value`));
    const key = a.slice(2);
    if (!(key in defaults)) fail(new Error(`unknown flag --${key}; known: ${Object.keys(defaults).map(k => '--' + k).join(' ')}`));
    if (i + 1 >= argv.length) fail(new Error(`flag --${key} needs a value`));
    out[key] = argv[++i];
  }
  for (const [key, def] of Object.entries(defaults)) {
    if (typeof def === 'number') {
      const n = Number(out[key]);
      if (!Number.isFinite(n)) fail(new Error(`--${key} ${JSON.stringify(out[key])} is not a number`));
      out[key] = n;
    }
  }
  if (!out.endpoint) fail(new Error('--endpoint HOST:PORT (or $MQ_ENDPOINT) is required: the node\'s gRPC address'));
  return out;
}

// emit prints one machine-readable line.
function emit(event, fields) {
  process.stdout.write(JSON.stringify({ event, ...fields }) + '\n');
}

// fail reports err, with the chain of its causes (the SDK wraps the server's status in them:
// code is RocketMQ's apache.rocketmq.v2.Code, or gRPC's status code), and exits 1.
function fail(err) {
  const causes = [];
  for (let c = err && err.cause; c && causes.length < 8; c = c.cause) {
    causes.push({ message: String(c.message || c), code: c.code });
  }
  emit('error', { error: String(err && err.stack || err), code: err && err.code, causes });
  process.exit(1);
}

// deadline ends the process with code 2 after ms, whatever the SDK is waiting for.
function deadline(ms, what) {
  const timer = setTimeout(() => {
    emit('timeout', { after_ms: ms, waiting_for: what() });
    process.exit(2);
  }, ms);
  timer.unref();
}

// logger is the SDK's logger (its default writes to ~/logs): lines on stderr.
const logger = {
  info: (...a) => process.stderr.write('INFO ' + format(...a) + '\n'),
  warn: (...a) => process.stderr.write('WARN ' + format(...a) + '\n'),
  error: (...a) => process.stderr.write('ERROR ' + format(...a) + '\n'),
  debug: (...a) => { if (process.env.MQ_DEBUG) process.stderr.write('DEBUG ' + format(...a) + '\n'); },
  close: () => {},
};

// view is what a script prints of a received message.
function view(m) {
  return {
    messageId: m.messageId,
    topic: m.topic,
    tag: m.tag,
    keys: m.keys,
    body: m.body.toString('utf8'),
    messageGroup: m.messageGroup || undefined,
    deliveryAttempt: m.deliveryAttempt,
    deliveryTimestamp: m.deliveryTimestamp ? m.deliveryTimestamp.getTime() : undefined,
    bornTimestamp: m.bornTimestamp ? m.bornTimestamp.getTime() : undefined,
    offset: m.offset,
    corrupted: m.corrupted || undefined,
    properties: Object.fromEntries(m.properties),
    at: Date.now(),
  };
}

// filterExpression is a subscription's filter: a tag expression ("*", "a || b") or, with type
// sql, a SQL92 expression over the message's properties.
function filterExpression(expression, type) {
  const { FilterExpression } = require('rocketmq-client-nodejs');
  const { FilterType } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
  switch (type) {
    case 'tag': return new FilterExpression(expression, FilterType.TAG);
    case 'sql': return new FilterExpression(expression, FilterType.SQL);
    default: return fail(new Error(`--filter-type ${type}: want tag or sql`));
  }
}

process.on('unhandledRejection', fail);
process.on('uncaughtException', fail);

module.exports = { args, emit, fail, deadline, logger, view, filterExpression };
