"""Services, the long-lived I/O of a running patch: the registry, OSC, MIDI, audio and GL."""
