"""Executing a plan: the fewest calls, concurrently, within the admin quota, through
faults and interruptions (`executor`, `guard`, `retry`, `ratelimit`, `freshness`,
`progress`, `result`; the CLI verb is `reconciler.commands.apply`)."""
