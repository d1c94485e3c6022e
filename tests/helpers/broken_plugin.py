"""A plug-in file whose own code raises on import: its cases are failed rows, not a crash of the sweep."""

raise RuntimeError("injected fault while importing the plug-in")
