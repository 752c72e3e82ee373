"""Export subscriptions' settings checked as the service can check them without the
destination (INVALID_ARGUMENT, naming the field):

- BigQuery (`BigQueryConfig`): the table as PROJECT.DATASET.TABLE (the field's
  documentation) or PROJECT:DATASET.TABLE (gcloud's `--bigquery-table` form);
  use_topic_schema and use_table_schema "cannot be enabled at the same time"; a
  service account given is an email address.
- Cloud Storage (`CloudStorageConfig`): the bucket's name "without any prefix like
  gs://" and within Cloud Storage's bucket naming rules; filename prefix, suffix and
  datetime format within its object naming rules (the suffix "must not end in /");
  max_duration 1 to 10 minutes, max_bytes 1 KB to 10 GiB, max_messages at least
  1,000 (the field documentation; gcloud states the same ranges); a service account
  given is an email address. Text or Avro output is a oneof: the proto keeps one.

Not modelled (only the service can know): that the table or bucket exists, its
schema matches, the service agent or the given account may write to it, the bucket's
domain is verified (a name with dots), and the datetime format's own rules (the
"datetime format guidance" page).
"""

from __future__ import annotations

import re
from typing import Any

from reconciler.localserver.api.status import invalid
from reconciler.localserver.pubsub.limits import duration_seconds
from reconciler.names import service_account_problem

# PROJECT.DATASET.TABLE or PROJECT:DATASET.TABLE: a project ID, a dataset ID (letters,
# digits, underscores) and a table ID.
BQ_TABLE = re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9][.:][A-Za-z0-9_]{1,1024}\.[^.]{1,1024}")

MIN_MAX_DURATION_S = 60
MAX_MAX_DURATION_S = 600
MIN_MAX_BYTES = 1000
MAX_MAX_BYTES = 10 * 1024**3
MIN_MAX_MESSAGES = 1000

_BUCKET_CHARS = re.compile(r"[a-z0-9][a-z0-9._-]*[a-z0-9]")
_DOTTED_QUAD = re.compile(r"\d{1,3}(\.\d{1,3}){3}")
MAX_OBJECT_NAME_BYTES = 1024


def check_bigquery(config: Any) -> None:
    table = config.table
    if not BQ_TABLE.fullmatch(table):
        raise invalid(
            f"Invalid bigquery_config.table {table!r}: expected PROJECT_ID.DATASET_ID.TABLE_ID."
        )
    if config.use_topic_schema and config.use_table_schema:
        raise invalid(
            "bigquery_config: use_topic_schema and use_table_schema cannot be enabled at the "
            "same time."
        )
    _check_account(config.service_account_email, "bigquery_config")


def bucket_problem(name: str) -> str | None:
    """Why `name` is no Cloud Storage bucket name (its naming rules), or None."""
    if name.lower().startswith("gs://"):
        return "is a URL; give the bucket's name alone, without the gs:// prefix"
    if not _BUCKET_CHARS.fullmatch(name):
        return (
            "must hold only lowercase letters, digits, dashes, underscores and dots, and "
            "start and end with a letter or digit"
        )
    parts = name.split(".")
    if len(name) > (222 if len(parts) > 1 else 63) or len(name) < 3:
        return "must be 3 to 63 characters long (222 with dots)"
    if any(not 1 <= len(part) <= 63 for part in parts):
        return "must have dot-separated parts of 1 to 63 characters"
    if _DOTTED_QUAD.fullmatch(name):
        return "must not be an IP address"
    if name.startswith("goog") or "google" in name:
        return 'must not begin with "goog" or contain "google"'
    return None


def _object_part_problem(text: str) -> str | None:
    if "\r" in text or "\n" in text:
        return "must not contain a carriage return or line feed"
    if len(text.encode("utf-8", "surrogatepass")) > MAX_OBJECT_NAME_BYTES:
        return f"must be at most {MAX_OBJECT_NAME_BYTES} bytes (UTF-8)"
    return None


def check_cloud_storage(config: Any) -> None:
    bucket = config.bucket
    if not bucket:
        raise invalid("cloud_storage_config.bucket must name a bucket.")
    problem = bucket_problem(bucket)
    if problem is not None:
        raise invalid(f"Invalid cloud_storage_config.bucket {bucket!r}: it {problem}.")
    for field in ("filename_prefix", "filename_suffix", "filename_datetime_format"):
        value = getattr(config, field)
        problem = _object_part_problem(value)
        if problem is None and field == "filename_suffix" and value.endswith("/"):
            problem = 'must not end in "/"'
        if problem is None and field == "filename_prefix" and value.startswith(
            ".well-known/acme-challenge/"
        ):
            problem = 'must not start with ".well-known/acme-challenge/"'
        if problem is not None:
            shown = value if len(value) <= 80 else value[:80] + "..."
            raise invalid(f"Invalid cloud_storage_config.{field} {shown!r}: it {problem}.")
    if config.HasField("max_duration"):
        seconds = duration_seconds(config.max_duration)
        if not MIN_MAX_DURATION_S <= seconds <= MAX_MAX_DURATION_S:
            raise invalid(
                f"cloud_storage_config.max_duration out of bounds: {seconds:g} s (it must be "
                "1 to 10 minutes)."
            )
    if config.max_bytes and not MIN_MAX_BYTES <= config.max_bytes <= MAX_MAX_BYTES:
        raise invalid(
            f"cloud_storage_config.max_bytes out of bounds: {config.max_bytes} (it must be "
            f"{MIN_MAX_BYTES} bytes to 10 GiB)."
        )
    if config.max_messages and config.max_messages < MIN_MAX_MESSAGES:
        raise invalid(
            f"cloud_storage_config.max_messages out of bounds: {config.max_messages} (it must "
            f"be at least {MIN_MAX_MESSAGES})."
        )
    _check_account(config.service_account_email, "cloud_storage_config")


def _check_account(email: str, path: str) -> None:
    if not email:
        return  # the Pub/Sub service agent writes
    problem = service_account_problem(email)
    if problem is not None:
        raise invalid(f"Invalid {path}.service_account_email {email!r}: it {problem}.")
