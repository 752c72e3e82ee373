// The Node client against a Pub/Sub server at PUBSUB_EMULATOR_HOST: create a topic
// and a subscription, publish three messages, Pull them with the GAPIC subscriber
// (v1.SubscriberClient.pull), acknowledge them, and print one JSON line of what it saw.
// Run by tests/interop/test_node_client.py.
'use strict';
const {PubSub, v1} = require('@google-cloud/pubsub');

async function main() {
  const [project, topicId, subId] = process.argv.slice(2);
  const pubsub = new PubSub({projectId: project});
  const [topic] = await pubsub.createTopic(topicId);
  const [subscription] = await topic.createSubscription(subId, {ackDeadlineSeconds: 30});
  const ids = [];
  for (const text of ['one', 'two', 'three']) {
    ids.push(await topic.publishMessage({data: Buffer.from(text), attributes: {n: text}}));
  }
  const [host, port] = process.env.PUBSUB_EMULATOR_HOST.split(':');
  const grpc = require('@grpc/grpc-js');
  const subscriber = new v1.SubscriberClient({
    servicePath: host, port: Number(port), sslCreds: grpc.credentials.createInsecure(),
  });
  const received = [];
  while (received.length < ids.length) {
    const [response] = await subscriber.pull({subscription: subscription.name, maxMessages: 10});
    received.push(...response.receivedMessages);
  }
  await subscriber.acknowledge({
    subscription: subscription.name, ackIds: received.map(m => m.ackId),
  });
  const [again] = await subscriber.pull({
    subscription: subscription.name, maxMessages: 10, returnImmediately: true,
  });
  console.log(JSON.stringify({
    published: ids,
    received: received.map(m => ({
      id: m.message.messageId, data: Buffer.from(m.message.data).toString(),
      attributes: m.message.attributes,
    })),
    after_ack: again.receivedMessages.length,
  }));
  await subscriber.close();
  await pubsub.close();
}

main().catch(err => { console.error(`node client failed: ${err.message}`); process.exit(1); });
