"""Residency: where each declared topic's messages are stored, which of those regions
are not allowed, when the last of them ages out, and which exports are paused
(`reconcile residency`; docs/residency.md)."""
