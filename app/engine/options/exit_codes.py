"""The exit statuses of every `patchbay` command, in one module that imports nothing.

Scripts and the engine's supervisor rely on them, so they are defined once and imported from here
by the command modules (cli, player, export, editor, the engine), never from each other: that
keeps `app/` free of import cycles. Every failure status comes with one line on stderr.
"""

EXIT_BAD_INPUT = 2
"""A file, an option or what the command needs (a display, a screen, OpenGL) is wrong or missing."""
EXIT_NO_GL = 3
"""`run --headless --out` or `--record` needs OpenGL and the machine has none."""
EXIT_NODE_FAILED = 4
"""`run --headless --print`: a printed node failed in at least one frame (printed as
`node.pin=<failed: ERROR>` in those frames); the frames all ran."""
EXIT_HUNG = 70
"""An engine whose watchdog stopped it (a frame ran past the limit); its supervisor restarts it."""
EXIT_INTERRUPTED = 130
"""Ctrl+C (128 + SIGINT, as shells report it)."""
