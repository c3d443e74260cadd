"""Options of the engine and the commands that start it: exit codes, resource limits, service
flags."""
