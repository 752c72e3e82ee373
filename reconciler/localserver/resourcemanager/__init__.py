"""Resource Manager v3 (`Projects`, `Folders`, `Organizations`): the hierarchy the
org-policy evaluation walks, read and built through the real client library."""
