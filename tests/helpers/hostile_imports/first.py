"""A plug-in file that fails at import; ``second.py`` fails too, with a class of the same name."""

raise RuntimeError("the first file's own import error")
