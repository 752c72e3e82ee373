"""Pub/Sub: the Publisher and Subscriber services (`publisher_service`,
`subscriber_service`, and `snapshot_service` for snapshots and Seek), their request
limits (`limits`), and what they store: the server state (`state`: topics, org
policies and the resource ancestry, journaled: `journaled`), subscriptions with their
backlogs (`subscriptions`, `subindex`, `backlog`), their filters (`filters`), snapshots
and what a Seek resets (`snapshots`, `snapshotstore`), dead letters (`deadletter`), the
per-topic message log (`messages`) and export and push
subscriptions under a storage policy (`exports`). Where a Publish lands is
`reconciler.orgpolicy.publishing`'s rule, the one the validator applies too."""
