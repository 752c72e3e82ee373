"""How calls reach the services: one public address (`front`, bytes relayed by
`relay`), the gRPC face (`grpc_face`), HTTP/1.1 (`http1`) with the REST mapping
(`rest`) and PromQL's HTTP side (`promql_face`), and the one call path both faces
share (`dispatch`: count, inject faults, run the handler, turn failures into a
status). It knows the services only through the tables of `Rpc`s the server
assembly hands it."""
