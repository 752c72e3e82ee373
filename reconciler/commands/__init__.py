"""One module per verb, each holding that verb's flow; each exposes `command`, a
click.Command.

The table maps a verb to its module so that the CLI imports only the verb that runs
(reconciler/clickapp.py): `validate` stays free of google-cloud, gRPC and the other
verbs (reconciler/perf.py says why that matters). Shared by the verbs: `output` (the
one output boundary), `_options` (the shared click options), `_planning` (the steps
`plan` and `apply PATH...` share).
"""

COMMANDS: dict[str, str] = {
    "validate": "reconciler.commands.validate",
    "projects": "reconciler.commands.projects",
    "schema": "reconciler.commands.schema",
    "plan": "reconciler.commands.plan",
    "show": "reconciler.commands.show",
    "apply": "reconciler.commands.apply",
    "import": "reconciler.commands.import_",
    "policy": "reconciler.commands.policy",
    "local-server": "reconciler.commands.local_server",
    "hedging": "reconciler.commands.hedging",
    "residency": "reconciler.commands.residency",
    "ci": "reconciler.commands.ci",
}
