"""What every room of the local server speaks: what one RPC is (`rpc`: `Rpc`,
`CallInfo`, the `Stream` a streaming handler opens), the status a handler answers
with (`status.ServiceError`), the protobuf classes (`protos`) and the wire pieces the
hot paths write themselves (`wire`), resource names and page tokens as the service
checks them (`names`, `paging`), and what is recorded of calls (`counters`: RPCs per
method and project; `outcomes`: each Publish's code and latency). Imports no room."""
