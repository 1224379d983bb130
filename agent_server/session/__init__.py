"""The session ledger: append-only JSONL entries (entries.py), the open file with its tree and
lock (ledger.py), and the per-workspace store (store.py)."""
