"""Helpers shared by the plan tests (importable: conftest modules are not)."""

from __future__ import annotations

from typing import Any


def topic_doc(
    name: str,
    project: str = "proj-a",
    labels: dict[str, str] | None = None,
    storage: Any = None,
    hedging: str | None = None,
) -> str:
    """One `kind: Topic` YAML document (storage: None, "inherit" or (regions, eit))."""
    lines = [
        "apiVersion: reconcile.pubsub/v1",
        "kind: Topic",
        f"metadata: {{project: {project}, name: {name}}}",
        "spec:",
    ]
    if labels:
        lines.append("  labels: {" + ", ".join(f"{k}: {v}" for k, v in labels.items()) + "}")
    if storage == "inherit":
        lines.append("  messageStoragePolicy: inherit")
    elif storage is not None:
        regions, eit = storage
        lines.append("  messageStoragePolicy:")
        lines.append(f"    allowedPersistenceRegions: [{', '.join(regions)}]")
        if eit is not None:
            lines.append(f"    enforceInTransit: {str(eit).lower()}")
    if hedging:
        lines += [
            "  publishers:",
            "    retry: {initialRpcTimeout: 5s, totalTimeout: 60s}",
            f"    hedging: {{hedgeDelay: {hedging}, maxTokens: 20, refillRatio: 0.05}}",
        ]
    if lines[-1] == "spec:":
        lines[-1] = "spec: {}"
    return "\n".join(lines) + "\n"
