"""context layer; see DESIGN.md."""
