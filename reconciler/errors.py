"""One error family; the CLI boundary (`reconciler.cli.main`) turns it into exit codes.

Anything a user can cause is raised as a `ReconcileError` subclass with a message that
names the file and line, or the topic and project, and says what to do. Anything else
that escapes is a bug in the tool and is reported as an internal error.

Exit codes (docs/ci.md has the table pipelines branch on):
    0   success (plan: no changes; apply: all applied, or nothing to do)
    1   an error before any change: the specs, the command line, the service,
        credentials (apply: anything not about the saved plan)
    2   click's usage errors; `plan`/`residency --detailed-exitcode`: changes found
    3   apply: partial failure, at least one topic failed (others may be applied)
    4   apply: the saved plan is refused before any change (`PlanRefused.reason`)
    130 interrupted (SIGINT), 143 terminated (SIGTERM)
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_CHANGES = 2
EXIT_PARTIAL = 3
EXIT_REFUSED = 4
EXIT_INTERRUPTED = 130  # SIGINT (Ctrl-C): 128 + 2
EXIT_TERMINATED = 143  # SIGTERM (what CI runners send on cancel): 128 + 15

class Refusal(StrEnum):
    """Why apply refused a saved plan, for pipelines (`apply --format json`'s `reason`)."""

    STALE = "stale"
    """The live topics or org policy inputs changed since the plan."""
    ALREADY_APPLIED = "already-applied"
    """This plan was applied already (a plan applies once)."""
    SUPERSEDED = "superseded"
    """Another plan was applied to its topics since it was made."""
    DIGEST_MISMATCH = "digest-mismatch"
    """Not the --expect-digest plan, or content that is not its digest's."""
    RETARGET = "retarget"
    """Another target, org-policy source or set of projects than recorded."""
    DAMAGED = "damaged"
    """Not a whole, readable, supported plan file."""
    TAKEOVER = "takeover"
    """A change takes over a topic another spec tree owns (--adopt-from)."""


class ReconcileError(Exception):
    """Root of every error a user can cause; carries its exit code."""

    exit_code: int = EXIT_ERROR

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}\n  hint: {self.hint}"
        return self.message


class UsageError(ReconcileError):
    """The command line itself is wrong (bad option combination, missing file)."""


class InputError(ReconcileError):
    """An input file (spec, org-policy snapshot, plan file) cannot be used."""


class ValidationFailed(ReconcileError):
    """Diagnostics with at least one error were reported; nothing was changed."""


class BackendError(ReconcileError):
    """The Pub/Sub or Org Policy service refused or failed; names project/topic.

    `status` is the gRPC status name (e.g. "UNAVAILABLE") when the service gave one,
    so that apply can tell transient failures from permanent ones. `rerun_helps` is
    False when running apply again cannot succeed (e.g. an emulator's missing feature),
    so that the summary does not advise it."""

    rerun_helps: bool = True

    def __init__(self, message: str, *, hint: str | None = None, status: str | None = None):
        super().__init__(message, hint=hint)
        self.status = status


# The service's words for "this project's org policy has not reached Pub/Sub yet" (a
# project created minutes ago): FAILED_PRECONDITION / INVALID_ARGUMENT carrying them are
# retried by apply (apply/retry.py), as Terraform does. Matched on the message because
# the status code alone also means permanent refusals.
PROPAGATION_PHRASES = ("recently created", "retry this operation")


def is_propagation_message(text: str) -> bool:
    """Does the service say the project is too new for its org policy to be in force?"""
    low = " ".join(text.lower().split())
    return any(phrase in low for phrase in PROPAGATION_PHRASES)


class PlanRefused(ReconcileError):
    """A saved plan that apply will not run, decided before any change: one class for
    every refusal, with a machine-readable `reason` (exit code 4), so that a pipeline
    tells "re-plan" (stale, already-applied, superseded) from "someone changed the
    file or the target" (digest-mismatch, damaged, retarget) without reading text."""

    exit_code = EXIT_REFUSED

    def __init__(
        self,
        reason: Refusal,
        message: str,
        *,
        hint: str | None = None,
        details: Sequence[str] = (),
    ) -> None:
        super().__init__(message, hint=hint)
        self.reason = reason
        self.details = tuple(details)  # each thing found, one line each (the JSON's)


class OwnershipRefused(PlanRefused):
    """Apply would take over a topic another spec tree owns without being told to
    (`--adopt-from OWNER`); nothing was changed (exit code 4, reason "takeover")."""

    def __init__(self, message: str, *, hint: str | None = None, details: Sequence[str] = ()):
        super().__init__(Refusal.TAKEOVER, message, hint=hint, details=details)


class Terminated(BaseException):
    """SIGTERM arrived: raised in the main thread by the CLI's handler (or apply's, at
    a second signal), a BaseException like KeyboardInterrupt so that no `except
    Exception` swallows it; the `finally` blocks on its way close what is open (the
    plan's read-ahead process, the clients) and the boundary exits 143."""
