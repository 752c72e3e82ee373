"""reconcile: a declarative reconciler for Google Cloud Pub/Sub topics."""

__version__ = "0.1.0"  # the one place the version is written (pyproject.toml reads it)
