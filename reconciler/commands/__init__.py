"""One module per verb. Each module exposes `command`, a click.Command.

The table maps verb name to module path so that the CLI imports only the verb that
runs: keeping `validate` free of google-cloud and deepdiff imports.
"""

COMMANDS: dict[str, str] = {
    "validate": "reconciler.commands.validate",
    "schema": "reconciler.commands.schema",
    "plan": "reconciler.commands.plan",
    "show": "reconciler.commands.show",
    "apply": "reconciler.commands.apply",
    "import": "reconciler.commands.import_",
    "policy": "reconciler.commands.policy",
    "local-server": "reconciler.commands.local_server",
    "hedging": "reconciler.commands.hedging",
}

