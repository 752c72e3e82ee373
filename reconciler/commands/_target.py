"""`--local | --emulator HOST:PORT` for the verbs that only read from a server and take
no org-policy snapshot (`import`, `policy pull`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def server_options(fn: F) -> F:
    fn = click.option(
        "--emulator",
        "emulator",
        metavar="HOST:PORT",
        help="A Pub/Sub (+ Org Policy) server at HOST:PORT, plaintext "
        "(default: $PUBSUB_EMULATOR_HOST, else Google Cloud).",
    )(fn)
    fn = click.option(
        "--local",
        "local",
        is_flag=True,
        help="The embedded local server, state kept under .reconcile/local/.",
    )(fn)
    return fn
