"""The flat program: a patch compiled into steps over slots, derived incrementally, generated
code, memory order and plan."""
