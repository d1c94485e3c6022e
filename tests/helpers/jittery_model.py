"""A model whose step time jumps: every third train step sleeps 20 ms longer, as a busy machine would make it."""

from __future__ import annotations

import time
from typing import Any

from tests.helpers.tiny_models import TinyMLP
from torchbenchmark.contract import BatchSizes, ModelMeta

SLOW_EVERY, SLOW_S = 3, 0.02


class Jittery(TinyMLP):
    meta = ModelMeta(name="jittery", family="test", batch_sizes=BatchSizes.same(cpu=4, cuda=4))
    steps = 0

    def train_step(self, inputs: Any) -> None:
        super().train_step(inputs)
        self.steps += 1
        if self.steps % SLOW_EVERY == 0:  # one step in three: any three in a row share a median, so warmup settles
            time.sleep(SLOW_S)
