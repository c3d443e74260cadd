"""The editor's dialogs: allowing a patch to send, exporting, settings."""
