"""The editor's session without Qt: the open patch, where new nodes go, the node examples."""
