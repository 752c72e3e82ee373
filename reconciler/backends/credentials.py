"""Application Default Credentials, loaded once for both clients, and google-auth's
own reason when they cannot be: a missing key file and a malformed one are different
problems with different fixes.

Key material and tokens are never printed. google-auth's messages may quote a value of
the key file (`['...'] could not be converted to bytes` for a `private_key` that is a
list, `Type is ...` for an unknown `type`), so every value of the file is taken out of
the reason before it is shown, replaced by the name of its field (`<private_key>`); a
reason that still shares text with a value after that is not shown at all. The key
file named by GOOGLE_APPLICATION_CREDENTIALS is read first with the bounded reader of
every user file (a FIFO would hang google-auth's `open`, /dev/zero exhaust memory).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler.errors import BackendError
from reconciler.fileio import FileProblem, read_bytes

CREDENTIALS_HINT = (
    "run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS "
    "to a valid service-account key file (JSON), or target --local / --emulator HOST:PORT"
)
CREDENTIALS_ENV = "GOOGLE_APPLICATION_CREDENTIALS"
MAX_KEY_FILE_BYTES = 1 << 20  # a service-account key is ~2.4 KB
TOO_LARGE = "a key file is a few kilobytes: point GOOGLE_APPLICATION_CREDENTIALS at one"
_MAX_REASON = 300
# Text shared with a value of the key file, this long or longer, is a leak (shorter
# runs are common words and URL prefixes: `https://` is in every key file).
_WINDOW = 12
# Values this short are taken out only where they are quoted (as 'ab'): elsewhere
# they are ordinary text ("line 1 column 1"), and carry no key material.
_SHORT = 3
# Public constants a message may name (google-auth lists the valid types).
_PUBLIC = frozenset(
    {
        "authorized_user",
        "service_account",
        "external_account",
        "external_account_authorized_user",
        "impersonated_service_account",
        "gdch_service_account",
    }
)


def default_credentials() -> Any:
    """google.auth.default(), or a BackendError carrying google-auth's reason."""
    import google.auth
    from google.auth import exceptions as auth_exc

    key = _read_key_file()
    try:
        credentials, _project = google.auth.default()
    except auth_exc.DefaultCredentialsError as exc:
        reason = auth_reason(exc, key)
        # No key file to read is "missing"; a file that is there was refused, even
        # when google-auth's reason says a field of it "was not found".
        what = (
            "no Google Cloud credentials found"
            if key is None
            else "Google Cloud credentials could not be loaded"
        )
        raise BackendError(f"{what}: {reason}", hint=CREDENTIALS_HINT) from None
    except OSError as exc:  # e.g. the key file vanished after it was read
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
    except Exception as exc:  # a shape google-auth does not expect (nested too deep...)
        where = f"{key.path}: " if key is not None else ""
        raise BackendError(
            f"Google Cloud credentials could not be loaded: {where}not a usable key file "
            f"({type(exc).__name__})",
            hint=CREDENTIALS_HINT,
        ) from None
    return credentials


@dataclass
class KeyFile:
    """The key file google-auth is about to read, as we read it: what its values are,
    so that no message repeats one."""

    path: str
    text: str
    values: dict[str, str] = field(default_factory=dict)  # value text -> its field
    parsed: bool = False


def _key_file_name() -> str | None:
    """The file google-auth will read: GOOGLE_APPLICATION_CREDENTIALS, else gcloud's
    application-default credentials when they are a file (google-auth's own rule)."""
    name = os.environ.get(CREDENTIALS_ENV, "")
    if name:
        return name if os.path.exists(name) else None  # missing: google-auth says so
    try:
        from google.auth import _cloud_sdk

        adc = str(_cloud_sdk.get_application_default_credentials_path())  # type: ignore[no-untyped-call]
    except Exception:  # a private helper: without it, nothing to read ahead
        return None
    return adc if os.path.isfile(adc) else None


def _read_key_file() -> KeyFile | None:
    """The key file, read within bounds and parsed, before google-auth reads it."""
    name = _key_file_name()
    if name is None:
        return None
    try:
        raw = read_bytes(Path(name), MAX_KEY_FILE_BYTES, TOO_LARGE)
    except FileProblem as exc:
        raise BackendError(
            f"Google Cloud credentials could not be read: {name}: {exc.message}",
            hint=CREDENTIALS_HINT,
        ) from None
    key = KeyFile(name, raw.decode("utf-8", "replace"))
    try:
        info = json.loads(key.text)
    except (ValueError, RecursionError):
        return key  # nothing to name the values by: the whole text is guarded
    key.parsed = True
    for where, value in _values(info):
        key.values.setdefault(value, where)
    if not isinstance(info, dict):
        raise BackendError(
            f"Google Cloud credentials could not be loaded: {name}: a key file holds a "
            f"JSON object, not {_json_kind(info)}",
            hint=CREDENTIALS_HINT,
        )
    return key


def _json_kind(data: Any) -> str:
    if isinstance(data, list):
        return "a list"
    if isinstance(data, str):
        return "a string"
    if data is None:
        return "null"
    return "a boolean" if isinstance(data, bool) else "a number"


def _values(info: Any) -> Iterator[tuple[str, str]]:
    """Every value of the file in every form a message may quote it in (str, repr,
    JSON), each with the top-level field it sits under: the leaves, and the top-level
    fields' lists and objects whole (a message may quote one: taken out in one go)."""
    stack: list[tuple[Any, str, int]] = [(info, "", 0)]
    while stack:
        data, where, depth = stack.pop()
        # Pushed last first: the first field a value appears in names it.
        if isinstance(data, dict):
            stack.extend((v, where or str(k), depth + 1) for k, v in reversed(data.items()))
        elif isinstance(data, list):
            stack.extend((v, where, depth + 1) for v in reversed(data))
        if isinstance(data, dict | list) and depth != 1:
            continue
        forms = {str(data), repr(data), json.dumps(data), json.dumps(data, ensure_ascii=False)}
        if isinstance(data, str):
            forms.add(repr(data.encode("utf-8", "replace")))
        for form in forms - _PUBLIC:
            yield where or "file", form


def auth_reason(exc: BaseException, key: KeyFile | None = None) -> str:
    """google-auth's message, with the error it wraps (the JSON or PEM problem):
    `DefaultCredentialsError(message, cause)` prints as a tuple otherwise. No value
    of the key file survives in it (see the module's docstring)."""
    args = exc.args
    text = str(args[0]) if args else type(exc).__name__
    cause = exc.__cause__
    if cause is None and len(args) > 1 and isinstance(args[1], BaseException):
        cause = args[1]
    if cause is not None:
        text = f"{text.rstrip('.')}: {cause}"
    if key is not None:
        text = _without_values(text, key)
    first = text.splitlines()[0] if text else text
    if len(first) > _MAX_REASON:
        first = first[: _MAX_REASON - 3] + "..."
    if key is not None and _shares_text(first, key):
        first = (
            f"{type(exc).__name__} reading {key.path} (google-auth's message quotes the "
            "file's content, so it is not shown)"
        )
    return first


def _without_values(text: str, key: KeyFile) -> str:
    """`text` with every value of the key file replaced by `<field>` (the file's path
    left as it is, whatever the values)."""
    parts = text.split(key.path)
    for value in sorted(key.values, key=len, reverse=True):
        if value.strip() != value:
            continue  # its stripped form is in the list too
        tag = f"<{key.values[value]}>"
        quoted = (f"'{value}'", f'"{value}"') if len(value) <= _SHORT else (value,)
        for form in quoted:
            parts = [part.replace(form, tag) if form in part else part for part in parts]
    return key.path.join(parts)


def _shares_text(text: str, key: KeyFile) -> bool:
    """True when some `_WINDOW` characters of `text` (outside the file's path) occur
    in a value of the file (in the whole file, when it is not JSON)."""
    guarded = "\x00".join(key.values) if key.parsed else key.text
    for part in text.split(key.path):
        for start in range(len(part) - _WINDOW + 1):
            window = part[start : start + _WINDOW]
            if window.strip() and window in guarded:
                return True
    return False
