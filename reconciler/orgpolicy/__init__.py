"""Org policy: the location catalog, Policy resources, hierarchy evaluation, snapshots."""
