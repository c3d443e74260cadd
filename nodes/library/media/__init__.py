"""Media node types: video, audio (and its DSP), text."""
