"""Live control: the controls runtime and the events the services hand it."""
