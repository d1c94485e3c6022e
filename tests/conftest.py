"""Shared pytest setup: in-process tests run on one intra-op thread.

Behaviour, not speed, is tested here; one thread keeps intra-op threads from spinning at their barriers
while the other core is busy.
"""

import torch

torch.set_num_threads(1)
