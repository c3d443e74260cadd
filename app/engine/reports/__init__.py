"""What the engine reports about a patch: its summary, its profiled costs, what a refresh re-
reads."""
