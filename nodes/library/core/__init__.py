"""Core node types: values, inputs, time, math, logic, arrays, vectors, outputs."""
