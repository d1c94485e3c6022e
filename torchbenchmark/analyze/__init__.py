"""The analysis layer: what traces, step times and comparisons say. Plain Python, no torch."""
