"""The suite's models, one module per family; the registry says which class each name is."""
