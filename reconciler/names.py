"""Google's naming rules for projects, topics and labels, as pure functions.

Shared by the spec validator (as diagnostics) and the local server (as
INVALID_ARGUMENT), so both refuse exactly the same names. Each returns None when the
name is fine, else a sentence saying what is wrong.
"""

from __future__ import annotations

import re
import unicodedata

_TOPIC_CHARS = re.compile(r"[A-Za-z0-9\-_.~+%]+")
_PROJECT = re.compile(r"[a-z][a-z0-9-]*")
MAX_LABELS = 64
MAX_LABEL_CHARS = 63
MAX_LABEL_BYTES = 128  # UTF-8


def _label_start(char: str) -> bool:
    """Google's `[\\p{Ll}\\p{Lo}]`: a lowercase letter, international ones included, or
    a letter without case (e.g. CJK)."""
    return unicodedata.category(char) in ("Ll", "Lo")


def _label_char(char: str) -> bool:
    """Google's `[\\p{Ll}\\p{Lo}\\p{N}_-]`."""
    return char in "_-" or unicodedata.category(char) in ("Ll", "Lo", "Nd", "Nl", "No")


def _bad_chars(text: str) -> str:
    bad = sorted({c for c in text if not _label_char(c)})
    return " ".join(repr(c) for c in bad[:5])


def _too_many_bytes(text: str) -> int | None:
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return -1
    return size if size > MAX_LABEL_BYTES else None


def topic_id_problem(topic_id: str) -> str | None:
    if not 3 <= len(topic_id) <= 255:
        return f"topic ID {topic_id!r} must be 3 to 255 characters long (it has {len(topic_id)})"
    if not topic_id[0].isascii() or not topic_id[0].isalpha():
        return f"topic ID {topic_id!r} must start with a letter"
    if not _TOPIC_CHARS.fullmatch(topic_id):
        bad = sorted({c for c in topic_id if not _TOPIC_CHARS.fullmatch(c)})
        return (
            f"topic ID {topic_id!r} may contain only letters, digits and - _ . ~ + %"
            f" (found {' '.join(repr(c) for c in bad)})"
        )
    if topic_id.lower().startswith("goog"):
        return f"topic ID {topic_id!r} must not start with 'goog' (reserved by Google)"
    return None


def project_id_problem(project_id: str) -> str | None:
    if not 6 <= len(project_id) <= 30:
        return (
            f"project ID {project_id!r} must be 6 to 30 characters long "
            f"(it has {len(project_id)})"
        )
    if not _PROJECT.fullmatch(project_id):
        return (
            f"project ID {project_id!r} must start with a lowercase letter and contain only "
            "lowercase letters, digits and hyphens"
        )
    if project_id.endswith("-"):
        return f"project ID {project_id!r} must not end with a hyphen"
    return None


def label_key_problem(key: str) -> str | None:
    """Google's label rules: 1 to 63 characters, starting with a lowercase letter
    (international ones allowed), then lowercase letters, digits, '_' and '-'; at most
    128 bytes in UTF-8."""
    if not 1 <= len(key) <= MAX_LABEL_CHARS:
        return f"label key {key!r} must be 1 to 63 characters long (it has {len(key)})"
    if not _label_start(key[0]):
        return (
            f"label key {key!r} must start with a lowercase letter (international letters "
            "allowed) and contain only lowercase letters, digits, '_' and '-'"
        )
    if not all(_label_char(c) for c in key):
        return (
            f"label key {key!r} must start with a lowercase letter and contain only "
            f"lowercase letters, digits, '_' and '-' (found {_bad_chars(key)})"
        )
    if size := _too_many_bytes(key):
        return f"label key {key!r} is not valid UTF-8 text of at most 128 bytes ({size})"
    return None


def label_value_problem(key: str, value: str) -> str | None:
    """0 to 63 characters of the key's character classes, at most 128 bytes in UTF-8."""
    return _value_problem(value, f"label {key!r} value {value!r}", f"label {key!r} has a value of")


def owner_name_problem(name: str) -> str | None:
    """A spec tree's owner identity is a label value (it is recorded as one on every
    topic the tree manages), and never empty."""
    if not name:
        return "the owner name is empty; name the spec tree, e.g. `team-payments`"
    return _value_problem(name, f"the owner name {name!r}", "the owner name has")


def _value_problem(value: str, named: str, sized: str) -> str | None:
    """A label value's rules; `named` and `sized` begin the messages."""
    if len(value) > MAX_LABEL_CHARS:
        return f"{sized} {len(value)} characters; the limit is 63"
    if not all(_label_char(c) for c in value):
        return (
            f"{named} may contain only lowercase letters, digits, '_' and '-' "
            f"(found {_bad_chars(value)})"
        )
    if size := _too_many_bytes(value):
        return f"{named} is not valid UTF-8 text of at most 128 bytes ({size})"
    return None


# -- resource names ---------------------------------------------------------------


def is_resource_number(text: str) -> bool:
    """Is `text` a resource number as the service writes it (organizations/123,
    folders/456, projects/789): ASCII digits without a leading zero. `01001` would be
    another key than the organization 1001 while meaning it, and `١٢٣` (Arabic-Indic
    digits, which str.isdigit takes) names nothing."""
    return text.isascii() and text.isdigit() and not text.startswith("0")


def topic_name(project: str, topic_id: str) -> str:
    """`projects/P/topics/T`."""
    return f"projects/{project}/topics/{topic_id}"


def topics_prefix(project: str) -> str:
    """What every topic name of the project starts with."""
    return f"projects/{project}/topics/"


def split_topic_name(name: str) -> tuple[str, str] | None:
    """(project, topic ID) of `projects/P/topics/T` (shape only, not the naming rules);
    None for anything else."""
    parts = name.split("/")
    if len(parts) != 4 or parts[0] != "projects" or parts[2] != "topics":
        return None
    if not parts[1] or not parts[3]:
        return None
    return parts[1], parts[3]


def project_of(name: str) -> str:
    """`projects/P/...` -> `P`; anything else is returned as it is."""
    parts = name.split("/")
    return parts[1] if len(parts) > 1 and parts[0] == "projects" else name


_EMAIL = re.compile(r"[^@\s]+@[^@\s.]+(\.[^@\s.]+)+")


def service_account_problem(email: str) -> str | None:
    """Why `email` cannot name a service account (push authentication, an export's
    writer): it must be an email address, such as NAME@PROJECT.iam.gserviceaccount.com.
    Whether the account exists only the service knows."""
    if not email:
        return "is empty; name a service account (NAME@PROJECT.iam.gserviceaccount.com)"
    if not email.isprintable() or not _EMAIL.fullmatch(email):
        return "is not an email address (NAME@PROJECT.iam.gserviceaccount.com)"
    return None
