// The Node client's GAPIC clients (gRPC) against a Pub/Sub server at
// PUBSUB_EMULATOR_HOST, on the surfaces beyond publish and pull: an Avro schema
// (create, get, list, validate a message), a topic with schema settings and a publish
// through it (one message that matches, one that does not), a subscription filter,
// a snapshot with Seek, and the Publish limits (1,000 messages; a request over
// 10,000,000 bytes); it prints one JSON line of what it saw.
// Run by tests/interop/test_node_surfaces.py.
'use strict';
const {v1} = require('@google-cloud/pubsub');
const grpc = require('@grpc/grpc-js');

async function refusal(call) {
  try {
    await call();
    return null;
  } catch (err) {
    return {code: err.code, details: err.details};
  }
}

async function main() {
  const [project] = process.argv.slice(2);
  const [host, port] = process.env.PUBSUB_EMULATOR_HOST.split(':');
  const options = {
    servicePath: host, port: Number(port), sslCreds: grpc.credentials.createInsecure(),
  };
  const publisher = new v1.PublisherClient(options);
  const subscriber = new v1.SubscriberClient(options);
  const schemas = new v1.SchemaServiceClient(options);
  const parent = `projects/${project}`;

  const definition = JSON.stringify({
    type: 'record', name: 'Order', fields: [{name: 'id', type: 'string'}],
  });
  const [schema] = await schemas.createSchema({
    parent, schemaId: 'orders', schema: {type: 'AVRO', definition},
  });
  const [got] = await schemas.getSchema({name: schema.name});
  const [listed] = await schemas.listSchemas({parent});
  const badMessage = await refusal(() => schemas.validateMessage({
    parent, name: schema.name, message: Buffer.from('{"nope": 1}'), encoding: 'JSON',
  }));

  const typed = `${parent}/topics/typed`;
  await publisher.createTopic({
    name: typed, schemaSettings: {schema: schema.name, encoding: 'JSON'},
  });
  const [accepted] = await publisher.publish({
    topic: typed, messages: [{data: Buffer.from(JSON.stringify({id: 'a1'}))}],
  });
  const badPublish = await refusal(() => publisher.publish({
    topic: typed, messages: [{data: Buffer.from('{"nope": 1}')}],
  }));

  const plain = `${parent}/topics/plain`;
  await publisher.createTopic({name: plain});
  const filtered = `${parent}/subscriptions/eu-only`;
  await subscriber.createSubscription({
    name: filtered, topic: plain, filter: 'attributes.region = "eu"', ackDeadlineSeconds: 60,
  });
  const badFilter = await refusal(() => subscriber.createSubscription({
    name: `${parent}/subscriptions/bad-filter`, topic: plain, filter: 'attributes.region =',
  }));
  await publisher.publish({topic: plain, messages: [
    {data: Buffer.from('eu'), attributes: {region: 'eu'}},
    {data: Buffer.from('us'), attributes: {region: 'us'}},
  ]});
  const [first] = await subscriber.pull({subscription: filtered, maxMessages: 10});

  const snapshot = `${parent}/snapshots/before-ack`;
  await subscriber.createSnapshot({name: snapshot, subscription: filtered});
  await subscriber.acknowledge({
    subscription: filtered, ackIds: first.receivedMessages.map(m => m.ackId),
  });
  const [afterAck] = await subscriber.pull({
    subscription: filtered, maxMessages: 10, returnImmediately: true,
  });
  await subscriber.seek({subscription: filtered, snapshot});
  const [afterSeek] = await subscriber.pull({subscription: filtered, maxMessages: 10});
  const limited = `${parent}/topics/limits`;
  await publisher.createTopic({name: limited});
  const many = n => Array.from({length: n}, (_, i) => ({data: Buffer.from(`m${i}`)}));
  const [thousand] = await publisher.publish({topic: limited, messages: many(1000)});
  const tooMany = await refusal(() => publisher.publish({topic: limited, messages: many(1001)}));
  const tooBig = await refusal(() => publisher.publish({
    topic: limited, messages: [{data: Buffer.alloc(10 * 1000 * 1000)}],
  }));
  const data = r => r.receivedMessages.map(m => Buffer.from(m.message.data).toString());

  console.log(JSON.stringify({
    schema: {name: got.name, type: got.type, revision: got.revisionId !== ''},
    listed: listed.map(s => s.name),
    bad_message: badMessage && badMessage.code,
    accepted: accepted.messageIds.length,
    bad_publish: badPublish && badPublish.code,
    bad_filter: badFilter && badFilter.code,
    filtered: data(first),
    after_ack: data(afterAck),
    after_seek: data(afterSeek),
    thousand: thousand.messageIds.length,
    too_many: tooMany && tooMany.code,
    too_big: tooBig && tooBig.details,
  }));
  await Promise.all([publisher.close(), subscriber.close(), schemas.close()]);
}

main().catch(err => { console.error(`node client failed: ${err.message}`); process.exit(1); });
