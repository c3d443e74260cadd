"""The `.patchbay` file format: load, save, validate, encode values."""
