"""The editor window's actions, one module per menu."""
