"""Live input node types: OSC and MIDI."""
