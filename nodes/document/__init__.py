"""The document: the Patch, definitions and instances, bindings, presets."""
