"""Fault injection for tests and benchmarks: latency and error rules per RPC
method (`injection`), their command-line form (`faultspec`), and held calls a test
releases one by one (`holds`)."""
