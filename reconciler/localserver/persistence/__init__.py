"""How the state survives a crash: the on-disk format (`frames`), the snapshot
plus append-only journal with group commit (`journal`), and opening a state
directory: torn tails, damage, recovery (`loading`). Knows records, not what they
mean: the Pub/Sub state writes and applies them."""
