"""Cloud Monitoring over the server's own state: `ListTimeSeries` (`service`) with
the metrics served (`metric_catalog`), the filter language subset (`tsfilter`),
alignment and reduction (`aggregation`, `distribution`), and the PromQL instant
query's parsing and evaluation (`promql`). Reads the Pub/Sub state; Pub/Sub never
imports it."""
