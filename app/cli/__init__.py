"""The `patchbay` command line and its subcommands."""
