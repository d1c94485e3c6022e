"""A plug-in file that fails at import; ``first.py`` fails too, with a class of the same name."""

raise RuntimeError("the second file's own import error")
