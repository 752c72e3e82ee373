"""Executing a plan: the fewest calls, concurrently, within the admin quota, through
faults and interruptions (`executor`, `guard`, `retry`, `ratelimit`, `freshness`,
`interrupt`, `result`). It prints nothing: progress is sent as events (`events`) and
the outcome returned as `TopicResults`; the `reconcile apply` flow that shows them
is reconciler/commands/apply.py."""
