// The Node client against a Pub/Sub server at PUBSUB_EMULATOR_HOST on dead-letter
// policies and push configuration: a subscription with a dead-letter policy
// (max 5 attempts) whose streaming subscriber nacks every message; the dead-letter
// subscription's message and attributes; the policy changed through a nested update
// mask; modifyPushConfig from pull to push and back. Prints one JSON line.
// Run by tests/interop/test_node_dead_letter.py.
'use strict';
const {PubSub, v1} = require('@google-cloud/pubsub');
const grpc = require('@grpc/grpc-js');

async function main() {
  const [project] = process.argv.slice(2);
  const pubsub = new PubSub({projectId: project});
  const [topic] = await pubsub.createTopic('orders');
  const [deadTopic] = await pubsub.createTopic('orders-dead');
  const [deadSub] = await deadTopic.createSubscription('orders-dead-sub');
  const [subscription] = await topic.createSubscription('orders-sub', {
    deadLetterPolicy: {deadLetterTopic: deadTopic.name, maxDeliveryAttempts: 5},
  });

  const attempts = [];
  const nacked = new Promise(resolve => {
    subscription.on('message', message => {
      attempts.push(message.deliveryAttempt);
      message.nack();
      if (attempts.length === 5) resolve();
    });
  });
  await topic.publishMessage({data: Buffer.from('poison'), attributes: {k: 'v'}});
  await nacked;
  const dead = await new Promise(resolve => {
    deadSub.on('message', message => { message.ack(); resolve(message); });
  });
  await Promise.all([subscription.close(), deadSub.close()]);

  const [host, port] = process.env.PUBSUB_EMULATOR_HOST.split(':');
  const subscriber = new v1.SubscriberClient({
    servicePath: host, port: Number(port), sslCreds: grpc.credentials.createInsecure(),
  });
  const [updated] = await subscriber.updateSubscription({
    subscription: {name: subscription.name, deadLetterPolicy: {maxDeliveryAttempts: 20}},
    updateMask: {paths: ['dead_letter_policy.max_delivery_attempts']},
  });
  await subscription.modifyPushConfig({
    pushEndpoint: 'https://push.example.com/orders',
    oidcToken: {serviceAccountEmail: 'pusher@proj-alpha.iam.gserviceaccount.com'},
  });
  const [pushed] = await subscription.getMetadata();
  await subscription.modifyPushConfig({});
  const [pulled] = await subscription.getMetadata();
  let refused = null;
  try {
    await subscription.modifyPushConfig({pushEndpoint: 'ftp://push.example.com/orders'});
  } catch (err) {
    refused = {code: err.code, details: err.details};
  }
  console.log(JSON.stringify({
    attempts,
    dead: {data: dead.data.toString(), attributes: dead.attributes},
    policy: updated.deadLetterPolicy,
    pushed: pushed.pushConfig.pushEndpoint,
    pushed_account: pushed.pushConfig.oidcToken.serviceAccountEmail,
    pulled: pulled.pushConfig.pushEndpoint,
    refused,
  }));
  await subscriber.close();
  await pubsub.close();
}

main().catch(err => { console.error(`node client failed: ${err.message}`); process.exit(1); });
