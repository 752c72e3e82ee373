"""Pub/Sub schemas: definitions of either type compiled and checked (`definitions`,
with `avro` and `protobuf`), the schemas a server holds and how they are journaled
(`registry`), and what a topic's schema settings mean for CreateTopic, UpdateTopic
and Publish (`settings`). The SchemaService itself is in `pubsub.schema_service`:
deleting a schema rewrites the topics that name it."""
