"""Small Qt helpers the editor's parts share: focus, signals, garbage collection, fonts."""
