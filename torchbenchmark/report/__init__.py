"""The reporting layer: every text table and the HTML page, as strings. Never prints, never imports torch."""
