"""Application Default Credentials, loaded once for both clients, and google-auth's
own reason when they cannot be: a missing key file and a malformed one are different
problems with different fixes. Key material and tokens are never printed: google-auth's
loading messages name the file and what is wrong with it, not its content.
"""

from __future__ import annotations

from typing import Any

from reconciler.errors import BackendError

CREDENTIALS_HINT = (
    "run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS "
    "to a valid service-account key file (JSON), or target --local / --emulator HOST:PORT"
)
_MAX_REASON = 300


def default_credentials() -> Any:
    """google.auth.default(), or a BackendError carrying google-auth's reason."""
    import google.auth
    from google.auth import exceptions as auth_exc

    try:
        credentials, _project = google.auth.default()
    except auth_exc.DefaultCredentialsError as exc:
        reason = auth_reason(exc)
        missing = "not found" in reason.lower()
        what = (
            "no Google Cloud credentials found"
            if missing
            else "Google Cloud credentials could not be loaded"
        )
        raise BackendError(f"{what}: {reason}", hint=CREDENTIALS_HINT) from None
    except OSError as exc:  # e.g. GOOGLE_APPLICATION_CREDENTIALS names a directory
        raise BackendError(
            f"Google Cloud credentials could not be read: {exc.filename}: {exc.strerror}",
            hint=CREDENTIALS_HINT,
        ) from None
    except auth_exc.GoogleAuthError as exc:
        # Other google-auth errors may quote a token endpoint's answer: name the type only.
        raise BackendError(
            f"Google Cloud credentials could not be used: {type(exc).__name__}",
            hint=CREDENTIALS_HINT,
        ) from None
    return credentials


def auth_reason(exc: BaseException) -> str:
    """google-auth's message, with the error it wraps (the JSON or PEM problem):
    `DefaultCredentialsError(message, cause)` prints as a tuple otherwise."""
    args = exc.args
    text = str(args[0]) if args else type(exc).__name__
    cause = exc.__cause__
    if cause is None and len(args) > 1 and isinstance(args[1], BaseException):
        cause = args[1]
    if cause is not None:
        text = f"{text.rstrip('.')}: {cause}"
    first = text.splitlines()[0] if text else text
    return first if len(first) <= _MAX_REASON else first[: _MAX_REASON - 3] + "..."
