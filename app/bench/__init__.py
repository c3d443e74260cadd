"""Benchmarks (`patchbay bench`) and the patches and graphs they run."""
