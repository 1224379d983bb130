"""Terminal front ends: the demo, chat and session commands."""
