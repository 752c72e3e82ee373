// The Node client's REST transport (`fallback: 'rest'`: HTTP/1.1 JSON, every call
// carrying `$alt=json;enum-encoding=int` and `$prettyPrint=0`) against a Pub/Sub
// server at REST_HOST (host:port, plain HTTP): create a topic and a subscription,
// publish, pull, acknowledge, and get, set and test the topic's IAM policy, then
// print one JSON line of what it saw. Run by tests/interop/test_node_rest.py.
'use strict';
const {v1} = require('@google-cloud/pubsub');
const {OAuth2Client} = require('google-auth-library');

async function main() {
  const [project, topicId, subId] = process.argv.slice(2);
  const [host, port] = process.env.REST_HOST.split(':');
  // A token nobody checks: the server reads no credentials.
  const authClient = new OAuth2Client();
  authClient.setCredentials({access_token: 'local', expiry_date: Date.now() + 3600 * 1000});
  const options = {
    fallback: 'rest', protocol: 'http', servicePath: host, port: Number(port), authClient,
    minifyJson: true,  // `$prettyPrint=0` on every call
  };
  const publisher = new v1.PublisherClient(options);
  const subscriber = new v1.SubscriberClient(options);
  const topic = `projects/${project}/topics/${topicId}`;
  const subscription = `projects/${project}/subscriptions/${subId}`;
  await publisher.createTopic({name: topic, labels: {team: 'node'}});
  const [created] = await subscriber.createSubscription(
    {name: subscription, topic, ackDeadlineSeconds: 30});
  const [published] = await publisher.publish({
    topic, messages: ['one', 'two'].map(text => ({data: Buffer.from(text), attributes: {n: text}})),
  });
  const received = [];
  while (received.length < published.messageIds.length) {
    const [response] = await subscriber.pull({subscription, maxMessages: 10});
    received.push(...response.receivedMessages);
  }
  await subscriber.acknowledge({subscription, ackIds: received.map(m => m.ackId)});
  const [again] = await subscriber.pull({subscription, maxMessages: 10, returnImmediately: true});
  const [empty] = await publisher.getIamPolicy({resource: topic});
  const [set] = await publisher.setIamPolicy({resource: topic, policy: {
    etag: empty.etag, bindings: [{role: 'roles/pubsub.publisher', members: ['user:node@example.com']}],
  }});
  let stale = null;
  try {
    await publisher.setIamPolicy({resource: topic, policy: {etag: empty.etag, bindings: []}});
  } catch (err) {
    stale = err.code;  // google.rpc code: ABORTED is 10
  }
  const [tested] = await publisher.testIamPermissions({
    resource: topic, permissions: ['pubsub.topics.publish', 'pubsub.topics.attachSubscription'],
  });
  const [topics] = await publisher.listTopics({project: `projects/${project}`});
  console.log(JSON.stringify({
    subscription_state: created.state,
    published: published.messageIds,
    received: received.map(m => ({
      id: m.message.messageId, data: Buffer.from(m.message.data).toString(),
      attributes: m.message.attributes,
    })),
    after_ack: again.receivedMessages.length,
    empty_etag: Buffer.from(empty.etag).toString('base64'),
    bindings: set.bindings.map(b => ({role: b.role, members: b.members})),
    stale_etag_code: stale,
    permissions: tested.permissions,
    topics: topics.map(t => ({name: t.name, labels: t.labels})),
  }));
  await subscriber.close();
  await publisher.close();
}

main().catch(err => { console.error(`node client failed: ${err.message}`); process.exit(1); });
