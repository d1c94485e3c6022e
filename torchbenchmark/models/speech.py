"""Speech models from transformers: Whisper trained on synthetic log-mel spectrograms, random weights."""

from __future__ import annotations

import torch

from torchbenchmark.contract import BatchSizes, Published
from torchbenchmark.models.nlp import HuggingFaceModel, hf_model


class SpeechSeq2SeqModel(HuggingFaceModel):
    """The transformers template with log-mel ``input_features`` in place of encoder token ids."""

    def build(self) -> torch.nn.Module:
        module = super().build()
        # The encoder accepts exactly 2 * max_source_positions frames (two convolutions, the second
        # strided), so the input length follows the config rather than ``seq_len``.
        self.num_mel_bins = module.config.num_mel_bins
        self.frames = 2 * module.config.max_source_positions
        return module

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> dict[str, torch.Tensor]:
        # Whisper's feature extractor scales log-mels to about [-1, 1]; a standard normal is close enough.
        features = torch.randn(batch_size, self.num_mel_bins, self.frames, generator=generator)
        return {"input_features": features, **self.decoder_inputs(batch_size, mode, generator)}


# WhisperConfig() is whisper-tiny; only its audio window is shrunk. 1500 source positions (30 s of audio,
# 3000 frames) make one train sample cost about a second on 2 CPU cores, mostly encoder attention over
# 1500 positions; 375 positions (7.5 s, 750 frames) keep the same layers at a quarter of the length.
hf_Whisper = hf_model(
    "hf_Whisper",
    "WhisperConfig",
    "WhisperForConditionalGeneration",
    "seq2seq",
    batch_sizes=BatchSizes(cpu_train=4, cpu_eval=8, cuda_train=16, cuda_eval=32),
    smoke_config={
        "encoder_layers": 1,
        "decoder_layers": 1,
        "d_model": 64,
        "encoder_attention_heads": 2,
        "decoder_attention_heads": 2,
        "encoder_ffn_dim": 128,
        "decoder_ffn_dim": 128,
        "max_source_positions": 16,
        "num_mel_bins": 16,
    },
    seq_len=64,
    config={"max_source_positions": 375},
    family="speech",
    note=(
        "whisper-tiny with max_source_positions 1500 -> 375 (750 frames): at 1500 one sample's train step cost "
        "1.45 s single-thread CPU, as much as four samples at 375. CPU batch 4/8 (train/eval): default train "
        "step 1.53 s CPU, eval 0.82 s, peak RSS 1.7 GiB, measured as single-thread CPU time per step (median "
        "of 3; the shared 2-core machine was loaded); an idle 2-thread step is roughly half that."
    ),
    base=SpeechSeq2SeqModel,
    published=Published(
        "whisper-tiny (WhisperForConditionalGeneration, head tied to the embeddings)",
        params=37_760_640,
        params_difference=-432_000,
        differs="Parameters: -432,000, the encoder's position embeddings for 375 positions, not 1500 (1125 x 384).",
    ),
)
