"""The results layer: the schema of a run as frozen dataclasses, its JSON, records and the summary view.

Plain Python, no torch: ``load_summary``, ``compare``, ``merge`` and the report run where torch is not
installed. Nothing here imports a layer above it.
"""
