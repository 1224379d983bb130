"""The agent: the turn loop (session.py), compaction and overflow recovery, tools,
permissions, and the per-workspace host (workspace.py) the front ends use."""
