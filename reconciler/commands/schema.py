"""`reconcile schema`: print the JSON Schema of the spec format."""

from __future__ import annotations

import click

from reconciler.commands import output
from reconciler.spec.schema import spec_schema_text


@click.command("schema")
def command() -> None:
    """Print the JSON Schema of the spec format (also checked in as specs/schema.json)."""
    output.stdout().data(spec_schema_text())
