"""context layer: pure functions over messages and ledger entries (no I/O, no SDK types).

estimate (invariant 3), trigger (invariant 4), cut_point (invariant 5), projection
(invariants 5 and 6) and summary_prompt (invariant 7); see DESIGN.md and docs/sessions.md.
"""
