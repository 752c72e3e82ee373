"""Executing a plan: the fewest calls, concurrently, within the admin quota, through
faults and interruptions (`executor`, `guard`, `retry`, `ratelimit`, `freshness`,
`interrupt`, `progress`, `result`); `run` is the whole `reconcile apply` flow that the
thin CLI verb `reconciler.commands.apply` calls."""
