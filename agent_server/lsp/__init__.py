"""lsp layer; see DESIGN.md."""
