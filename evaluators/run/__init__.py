"""What a running patch keeps and watches: the context, the frame observer, the step runtime, the
watchdog, the memory budget."""
