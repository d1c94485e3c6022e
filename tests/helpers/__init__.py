"""What the tests share: plug-in models, processes and paths. No test file imports another."""
