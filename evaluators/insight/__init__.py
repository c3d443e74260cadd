"""Looking into a running patch: the profiler and GPU timers."""
