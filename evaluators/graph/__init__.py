"""The graph evaluators read: the IR, the expanded view, the patch graph, node paths, analysis."""
