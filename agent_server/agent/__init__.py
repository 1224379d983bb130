"""agent layer; see DESIGN.md."""
