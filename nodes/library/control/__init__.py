"""Control node types: stateful triggers, edges and smoothers, and value shaping."""
