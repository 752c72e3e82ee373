"""Performance devices, in one place with their reasons. The command flows call them;
the libraries never do. What each one bought is measured in benchmarks/README.md.

    gc_paused()               the cyclic collector off while a command builds objects
                              that live until it ends (nested use is one pause)
    gc_resumed()              on again for a command's long-running part
    leave_to_exit(*records)   a large run's records left for the process's exit
    skip_teardown()           the process ends without the interpreter's teardown
    DEFERRED_IMPORTS          every module with a function-level import, and why

The collector. Loading a spec tree, and the plan made from it, builds millions of
small objects and frees almost none of them in cycles: the cyclic collector would
re-scan all of them again and again, worse than linearly in the tree's size. Importing
click and a command's modules is the same pattern on a smaller scale. So the CLI runs
every command line with the collector paused, from click's import to the verb's exit
code (reconciler/cli.py); reference counting still frees everything, and the
collector runs again afterwards when it was on before. The parts that run long turn
it on again: `apply` while it makes its calls (minutes; their errors and retries do
make cycles) and `local-server` for as long as it runs.

Freeing at exit. At the end of a large `plan` its records are dropped one by one when
the command returns, after everything has been written; they are left for the
process's exit instead (`leave_to_exit`). Small runs (tests calling the CLI
in-process) free as usual.

Ending without teardown. A stopped `local-server` has closed its state and its
server; tearing down the gRPC and protobuf modules at interpreter exit would still
take seconds on a loaded machine, and a stop must be quick whatever was in flight. It
asks for `skip_teardown`, and the CLI (reconciler/cli.py, the one place that exits)
then ends the process with its exit code once the output is flushed.

Deferred imports. A command imports only what it runs: the CLI imports a verb's module
when that verb runs (the table in reconciler/commands/__init__.py), so `validate`, run
by pre-commit and CI on every change, never imports google-cloud, gRPC or the other
verbs; each command module then imports what it needs at its top. The few imports
made inside functions are listed in DEFERRED_IMPORTS with their reason
(tests/test_import_graph.py keeps the list complete).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# Declared topics from which freeing a run's records one by one shows in its time.
LARGE = 10_000

DEFERRED_IMPORTS: dict[str, str] = {
    "reconciler.cli": "click, imported with the collector paused; traceback only for a bug's "
    "traceback",
    "reconciler.clickapp": "a verb's module only when that verb runs (the commands table); "
    "importlib.metadata only for --version",
    "reconciler.commands._planning": "google-cloud only when `plan` opens the target itself "
    "(at scale the read-ahead's second process reads the live state: plan/readahead.py)",
    "reconciler.commands.hedging": "google-cloud (the backend and its Monitoring reader) only "
    "for --topic: a file of samples needs neither",
    "reconciler.commands.validate": "git's index reader (reconciler/gitrev.py) and tempfile "
    "only for --staged",
    "reconciler.commands.local_server": "gRPC and the server only once the options are checked",
    "reconciler.fileio": "tempfile only when a file is written",
    "reconciler.orgpolicy.snapshot.custom": "the custom constraints' rules and the condition "
    "evaluator only for a snapshot that holds custom constraints (validate's cold start "
    "without them is unchanged)",
    "reconciler.orgpolicy.snapshot.policies": "the custom constraints' rules only for a "
    "policy on a custom constraint",
    "reconciler.spec.checks": "the custom-constraint checks and their evaluator only for a "
    "snapshot that holds custom constraints",
    "reconciler.render.diagnostics": "the documents' codec only for --format json (the text "
    "output is validate's cold start)",
    "reconciler.render.sarif": "the documents' codec only when a SARIF log is written",
    "reconciler.orgpolicy.unjudged": "the custom constraints' rules only when "
    "--allow-unjudged is given (every validate parses the option), difflib only for an "
    "opt-out that names no constraint the run read",
    "reconciler.orgpolicy.cel.library": "the CEL library only when a custom constraint's "
    "condition is compiled (a snapshot or the live org holds custom constraints)",
    "reconciler.plan.readahead": "google-cloud only when a plan reads metrics (a change that "
    "removes regions, a prune's backlogs) and the read-ahead process that would read them is "
    "gone",
    "reconciler.backends.connect": "the embedded local server only for --local; each client "
    "library only for a client the target needs",
    "reconciler.backends.clients": "each Google client library only when that client is built "
    "(an --org-policy snapshot never loads the Org Policy client)",
    "reconciler.backends.credentials": "google.auth only when Google Cloud is the target",
    "reconciler.backends.promql": "requests and google-auth's transport only when the "
    "by-region gauges are read (the PromQL client)",
    "reconciler.backends.deadline": "google.api_core and grpc only when a call is made",
    "reconciler.localserver": "each entry point from its room when first asked for: the "
    "package's constants and the local-server command's option defaults load no grpc",
    "reconciler.localserver.persistence.journal":
        "fcntl only where a state directory is locked (POSIX)",
    "reconciler.localserver.pubsub.messages":
        "the generated protobuf modules only when a message is stored",
    "reconciler.localserver.pubsub.backlog":
        "the generated protobuf modules only when a message is delivered (the local-server "
        "command imports the defaults before its options are checked)",
    "reconciler.localserver.pubsub.exports":
        "the generated protobuf modules only when a subscription's state is written (the "
        "local-server command checks --destination-location keys with it)",
    "reconciler.localserver.pubsub.limits":
        "the descriptor pool of the Publish limit check is built at the first Publish, not "
        "when the server's modules load",
    "reconciler.localserver.schemas.avro":
        "fastavro when the first Avro definition is compiled: a server that meets no Avro "
        "schema (every `--local` run without one) never loads it",
    "reconciler.localserver.schemas.avro_binary":
        "fastavro's logical-type conversions with the first Avro definition compiled, as "
        "fastavro itself (reconciler.localserver.schemas.avro)",
    "reconciler.hedging": "the publisher's google-cloud classes only when one is asked for",
    "reconciler.hedging.channels": "the GAPIC client only for a locational endpoint",
    "reconciler.hedging.plot": "matplotlib (an optional extra) only for --plot",
    "reconciler.topicvalues": "hashlib only when a secret-looking parameter is redacted "
    "(validate's cold start)",
}


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector off for the block; a pause inside a pause changes nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def gc_resumed() -> Iterator[None]:
    """The cyclic collector on for the block, and as it was again after it."""
    enabled = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if not enabled:
            gc.disable()


_SKIP_TEARDOWN: list[bool] = []


def skip_teardown() -> None:
    """Ask the CLI to end the process without the interpreter's teardown, once the
    command has returned and the output is flushed (see the module's docstring)."""
    _SKIP_TEARDOWN[:] = [True]


def teardown_skipped() -> bool:
    """Did the command ask for `skip_teardown`? (Asked by the CLI; cleared.)"""
    asked = bool(_SKIP_TEARDOWN)
    _SKIP_TEARDOWN.clear()
    return asked


def leave_to_exit(*records: object, size: int) -> None:
    """Keep `records` (`size`: the run's declared topics) alive until the process
    exits, out of the collector's sight: a list that holds itself, then `gc.freeze()`,
    so that neither the collector nor interpreter shutdown ever examines them. Call it
    when everything has been written."""
    if size < LARGE:
        return
    held: list[object] = [*records]
    held.append(held)
    gc.freeze()
