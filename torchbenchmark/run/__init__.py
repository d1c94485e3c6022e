"""The running layer: sweeps, case processes and their guard, the engine, DDP, merge, shards and the output folder."""
