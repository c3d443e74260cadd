"""The engine: the process that runs a patch, its client and supervisor, the transport, and
headless playing and exporting. Never imports Qt."""
