"""The editor's docked panels: inspector, library, presets, bindings, profiler, messages, help,
preview, code editor."""
