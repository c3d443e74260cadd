"""The engine's channel: the messages between the editor and the engine and how they are framed."""
