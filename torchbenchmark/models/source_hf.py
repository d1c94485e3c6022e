"""Any transformers model class by name, ``hf:<ClassName>``: built from its config class's defaults, random weights.

transformers' auto mappings name every model class and the task it serves without importing a model module; the
task decides the family, the default batch, the synthetic inputs and the labels a train step carries.
transformers is imported only when the names are listed or a model is made.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import torch
from torch import nn

from torchbenchmark.contract import BatchSizes, ModelMeta
from torchbenchmark.models._fit import SourceModel, token_cost_ratio

SOURCE = "hf"
PACKAGE = "transformers"

# The Hugging Face models PyTorch's dynamo benchmark harness builds offline, from a config class's defaults:
# pytorch/pytorch benchmarks/dynamo/huggingface_models_list.txt as benchmarks/dynamo/huggingface.py reads it
# (``_get_model_cls_and_config``: ``model_cls.config_class()``), less the EXTRA_MODELS whose configs it downloads
# (AllenaiLongformerBase, T5Small, DistillGPT2, GoogleFnet, YituTechConvBert), CamemBert (no transformers class of
# that name) and the hub checkpoints of HF_LLM_MODELS (meta-llama/Llama-3.2-1B, openai/whisper-tiny, ...).
DYNAMO_OFFLINE: tuple[str, ...] = (
    "AlbertForMaskedLM", "AlbertForQuestionAnswering", "BartForCausalLM", "BartForConditionalGeneration",
    "BertForMaskedLM", "BertForQuestionAnswering", "BlenderbotForCausalLM", "BlenderbotForConditionalGeneration",
    "BlenderbotSmallForCausalLM", "BlenderbotSmallForConditionalGeneration", "DebertaV2ForMaskedLM",
    "DebertaV2ForQuestionAnswering", "DistilBertForMaskedLM", "DistilBertForQuestionAnswering", "ElectraForCausalLM",
    "ElectraForQuestionAnswering", "GPT2ForSequenceClassification", "GPTJForCausalLM", "GPTJForQuestionAnswering",
    "GPTNeoForCausalLM", "GPTNeoForSequenceClassification", "LayoutLMForMaskedLM", "LayoutLMForSequenceClassification",
    "M2M100ForConditionalGeneration", "MBartForCausalLM", "MBartForConditionalGeneration", "MT5ForConditionalGeneration",
    "MegatronBertForCausalLM", "MegatronBertForQuestionAnswering", "MobileBertForMaskedLM", "MobileBertForQuestionAnswering",
    "OPTForCausalLM", "PLBartForCausalLM", "PLBartForConditionalGeneration", "PegasusForCausalLM",
    "PegasusForConditionalGeneration", "RobertaForCausalLM", "RobertaForQuestionAnswering", "T5ForConditionalGeneration",
    "TrOCRForCausalLM", "XGLMForCausalLM", "XLNetLMHeadModel",
)  # fmt: skip

SEQ_LEN = 128  # tokens per text sequence (at most the config's max_position_embeddings)
AUDIO_SAMPLES = 16_000  # one second of 16 kHz audio per raw-waveform input
IMAGE_SIZE = 224  # pixels a side where the config names no image_size
CHOICES = 2  # answers per multiple-choice question
CTC_TARGET = 8  # characters per CTC transcript: fewer than the frames a second of audio makes


@dataclasses.dataclass(frozen=True)
class Workload:
    """The default inputs of a kind of model and what a base-size one's steps cost with them."""

    batch_sizes: BatchSizes
    inputs: str
    measured: str  # single-thread CPU time per step, median of 3 after 2 warmup steps, on the shared 2-core machine


# Batches chosen so a base-size (~110M parameter) model's train step takes about a second on an idle 2-core CPU.
TEXT = Workload(
    BatchSizes(cpu_train=2, cpu_eval=4, cuda_train=32, cuda_eval=64),
    f"sequences of {SEQ_LEN} tokens (at most the config's max_position_embeddings)",
    "BertForMaskedLM (110M) train 1.66 s, eval 0.86 s; GPT2ForSequenceClassification (124M) 1.46 s, 0.72 s",
)
IMAGES = Workload(
    BatchSizes(cpu_train=2, cpu_eval=4, cuda_train=32, cuda_eval=64),
    f"images of the config's image_size ({IMAGE_SIZE} pixels where it names none)",
    "ViTForImageClassification (86M) train 1.72 s, eval 1.02 s",
)
SPEECH = Workload(
    BatchSizes(cpu_train=1, cpu_eval=2, cuda_train=16, cuda_eval=32),
    f"2 x max_source_positions log-mel frames (3000, 30 s, for Whisper) and {SEQ_LEN} decoder tokens",
    "WhisperForConditionalGeneration (whisper-tiny, 38M) train 1.44 s, eval 0.77 s",
)
AUDIO = Workload(
    BatchSizes(cpu_train=2, cpu_eval=4, cuda_train=32, cuda_eval=64),
    f"{AUDIO_SAMPLES // 1000} s of 16 kHz audio",
    "Wav2Vec2ForCTC (94M) train 1.06 s, eval 0.45 s",
)


@dataclasses.dataclass(frozen=True)
class Task:
    """What a model class is for, as the auto mapping that lists it says: family, default inputs and labels."""

    name: str  # the kind of labels a train step carries; "" for a class whose labels are not known
    mapping: str  # the modeling_auto dict that lists its classes
    family: str
    workload: Workload


TASKS: tuple[Task, ...] = (  # in priority order: a class listed by several mappings takes the first
    Task("seq2seq", "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES", "nlp", TEXT),
    Task("causal-lm", "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "nlp", TEXT),
    Task("masked-lm", "MODEL_FOR_MASKED_LM_MAPPING_NAMES", "nlp", TEXT),
    Task("sequence-classification", "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES", "nlp", TEXT),
    Task("token-classification", "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES", "nlp", TEXT),
    Task("question-answering", "MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES", "nlp", TEXT),
    Task("multiple-choice", "MODEL_FOR_MULTIPLE_CHOICE_MAPPING_NAMES", "nlp", TEXT),
    Task("next-sentence", "MODEL_FOR_NEXT_SENTENCE_PREDICTION_MAPPING_NAMES", "nlp", TEXT),
    Task("image-classification", "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES", "vision-classification", IMAGES),
    Task("speech-seq2seq", "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES", "speech", SPEECH),
    Task("ctc", "MODEL_FOR_CTC_MAPPING_NAMES", "speech", AUDIO),
    Task("audio-classification", "MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES", "speech", AUDIO),
)
# Families of the classes no task above lists, by a word of their mapping's name; else their model type's family.
FAMILY_WORDS = (
    ("IMAGE_TEXT", "multimodal"), ("MULTIMODAL", "multimodal"), ("OBJECT_DETECTION", "detection"),
    ("SEGMENTATION", "segmentation"), ("IMAGE", "vision"), ("AUDIO", "speech"),
)  # fmt: skip

# A configuration small enough for a fast CPU smoke test. transformers maps the common names onto each config's
# own (GPT2's n_embd, T5's d_model) and keeps a name a config does not use as an inert attribute, so one set
# serves most text and speech classes; the few whose configs check more are fixed below, by model type.
SMOKE_CONFIG: Mapping[str, Any] = {
    "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2,
    "intermediate_size": 128, "decoder_layers": 2, "decoder_attention_heads": 2, "encoder_ffn_dim": 128,
    "decoder_ffn_dim": 128, "num_decoder_layers": 2, "d_ff": 128, "d_kv": 32, "d_inner": 128,
}  # fmt: skip
# Hierarchical vision configs (Swin's heads per stage, ConvNeXt's widths) take no common names: only images shrink.
SMOKE_BY_FAMILY: Mapping[str, Mapping[str, Any]] = {
    **dict.fromkeys(("vision-classification", "vision", "detection", "segmentation"), {"image_size": 64}),
    "speech": {**SMOKE_CONFIG, "max_source_positions": 16},  # Whisper: 32 frames
}
# None: leave that field at its default.
SMOKE_FIXES: Mapping[str, Mapping[str, Any]] = {
    "codegen": {"rotary_dim": 16},  # at most the head's width
    "gemma3n_text": {"num_kv_shared_layers": 0},  # the shared layers are the last 15 of 35
    "gpt_neo": {"attention_types": [[["global", "local"], 1]]},  # one entry per layer
    "gptj": {"rotary_dim": 16},
    "helium": {"head_dim": 32},  # its output projection assumes heads x head_dim = hidden_size
    "mamba2": {"num_heads": 2, "head_dim": 64, "n_groups": 1},  # num_heads * head_dim = hidden_size * expand
    "mimo_v2_flash": {"num_key_value_heads": 1},  # its sliding layers double the key-value heads: at most the heads
    "mobilebert": {"embedding_size": 32, "true_hidden_size": 32, "intra_bottleneck_size": 32},  # under hidden_size
    "prophetnet": {"num_hidden_layers": None, "decoder_layers": None, "num_encoder_layers": 2},  # refuses those two
    "reformer": {"axial_pos_embds_dim": [32, 32], "attention_head_size": 32, "lsh_attn_chunk_length": 8, "local_attn_chunk_length": 8},
    "xlnet": {"d_head": 32},  # must be d_model // n_head
    "zamba": {"num_hidden_layers": None},  # its layer pattern is fixed
    "zamba2": {"num_hidden_layers": None},
    # Plain ViTs take the common names; Swin's windows of 7 patches need its 224-pixel images; Hiera takes a pair.
    **dict.fromkeys(("vit", "deit"), {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128}),
    **dict.fromkeys(("swin", "swinv2", "donut-swin", "maskformer-swin", "hiera"), {"image_size": None}),
}


# Model types whose inputs this source cannot make, and those it can feed but not train, with the reason.
INPUTS_UNKNOWN: Mapping[str, str] = {
    "musicgen": "it takes a row of audio codebook ids per codebook (batch x num_codebooks rows), not text",
    "musicgen_melody": "it takes a row of audio codebook ids per codebook (batch x num_codebooks rows), not text",
    "siglip2": "it takes images cut into flattened patches, with their spatial shapes and a patch mask",
    "siglip2_vision_model": "it takes images cut into flattened patches, with their spatial shapes and a patch mask",
}
TRAIN_DECLINED: Mapping[str, str] = {
    "git": "its loss skips the image tokens its vision tower puts before the text, so it needs pixel_values too",
}


def names() -> list[str]:
    """Every transformers model class this source offers, sorted."""
    return sorted(_index())


@functools.cache
def model_class(name: str) -> type[TransformersModel]:
    """The model of transformers class ``name``; LookupError naming close matches if transformers has none."""
    index = _index()
    if name not in index:
        folded = [known for known in index if known.lower() == name.lower()]
        close = folded or difflib.get_close_matches(name, index, n=5, cutoff=0.6)
        hint = f"; close matches: {', '.join(close)}" if close else "; `list hf` names them all"
        raise LookupError(f"hf:{name} is not a model class of transformers' auto mappings{hint}")
    model_type, task = index[name]
    smoke_config = {**SMOKE_BY_FAMILY.get(task.family, SMOKE_CONFIG), **SMOKE_FIXES.get(model_type, {})}
    meta = ModelMeta(
        name=f"{SOURCE}:{name}",
        family=task.family,
        batch_sizes=task.workload.batch_sizes,
        smoke={"batch_size": 2, "seq_len": 16, "config": {k: v for k, v in smoke_config.items() if v is not None}},
        annotated=True,
        note=_note(task) + (f" Not trained: {TRAIN_DECLINED[model_type]}." if model_type in TRAIN_DECLINED else ""),
        requires=(PACKAGE,),
    )
    attributes = {"meta": meta, "class_name": name, "model_type": model_type, "task": task, "__module__": __name__, "__qualname__": name}
    return type(name, (TransformersModel,), attributes)


def _note(task: Task) -> str:
    work, sizes = task.workload, task.workload.batch_sizes
    trains = f"train labels for {task.name}" if task.name else "no train step: no labels known for its task"
    return (
        f"Its config class's defaults, random weights; task from transformers' {task.mapping} ({trains}). "
        f"Batch {sizes.cpu_train}/{sizes.cpu_eval} (train/eval) on CPU, {sizes.cuda_train}/{sizes.cuda_eval} on CUDA, "
        f"{work.inputs}: a base-size (~110M parameter) model's train step takes about a second on an idle 2-core CPU "
        f"({work.measured}: single-thread CPU time per step, measured beside other load; an idle 2-thread step takes "
        "roughly half). Larger default configs take longer; one that does not fit in memory is skipped before its "
        "weights are made."
    )


@functools.cache
def _index() -> dict[str, tuple[str, Task]]:
    """Class name -> (model type, task), from transformers' auto mappings: no model module is imported."""
    import transformers
    from transformers.models.auto import modeling_auto

    mappings = {n: getattr(modeling_auto, n) for n in dir(modeling_auto) if n.endswith("_MAPPING_NAMES")}
    mappings.pop("CONFIG_MAPPING_NAMES", None)
    exported = set(dir(transformers))  # the lazy module's names: a mapped class it does not export cannot be made
    index: dict[str, tuple[str, Task]] = {}
    type_task: dict[str, Task] = {}
    for task in TASKS:
        for model_type, class_name in _entries(mappings.get(task.mapping, {})):
            index.setdefault(class_name, (model_type, task))
            type_task.setdefault(model_type, task)
    for mapping in sorted(mappings, key=lambda name: (name != "MODEL_MAPPING_NAMES", name)):  # bare models first
        for model_type, class_name in _entries(mappings[mapping]):
            if class_name not in index:
                index[class_name] = (model_type, _untrained(mapping, type_task.get(model_type)))
    # A causal LM by its name is one whatever mapping lists it, and one no mapping lists (Clvp's decoder) is offered too.
    causal_lm = next(task for task in TASKS if task.name == "causal-lm")
    for class_name in exported:
        if class_name.endswith("ForCausalLM") and not class_name.startswith(("Auto", "TF", "Flax")):
            index[class_name] = (index.get(class_name, ("", causal_lm))[0], causal_lm)
    return {name: entry for name, entry in index.items() if name in exported}


def _entries(mapping: Mapping[str, str | tuple[str, ...]]) -> Iterator[tuple[str, str]]:
    for model_type, value in mapping.items():
        for class_name in (value,) if isinstance(value, str) else value:
            yield model_type, class_name


def _untrained(mapping: str, sibling: Task | None) -> Task:
    """The task of a class no known task lists: eval only, its family from its mapping or its model type."""
    family = next((family for word, family in FAMILY_WORDS if word in mapping), sibling.family if sibling else "nlp")
    by_family = {"speech": AUDIO, "vision": IMAGES, "detection": IMAGES, "segmentation": IMAGES}  # else text (multimodal too)
    return Task("", mapping, family, sibling.workload if sibling else by_family.get(family, TEXT))


class TransformersModel(SourceModel):
    """A transformers model class made from its config, fed synthetic inputs of its main input and task."""

    class_name: ClassVar[str]
    model_type: ClassVar[str]  # the config's, as the auto mappings key it; "" for a class no mapping lists
    task: ClassVar[Task]
    seq_len: int = SEQ_LEN

    def __init__(
        self,
        device: str | torch.device = "cpu",
        batch_size: int | None = None,
        seq_len: int | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        if seq_len is not None:
            if seq_len < 1:
                raise ValueError(f"seq_len must be positive, got {seq_len}")
            self.seq_len = seq_len
        self.config_overrides = dict(config or {})
        super().__init__(device=device, batch_size=batch_size)

    def make_module(self) -> nn.Module:
        import transformers

        if self.model_type in INPUTS_UNKNOWN:
            raise NotImplementedError(f"{self.class_name}: {INPUTS_UNKNOWN[self.model_type]}")
        cls = getattr(transformers, self.class_name)
        make_config = getattr(cls, "config_class", None) or functools.partial(transformers.AutoConfig.for_model, self.model_type)
        config = make_config(**self.config_overrides)
        self.plan_inputs(cls, config)  # before any weights: a class it cannot feed is skipped
        module = cls(config)
        languages = getattr(config, "languages", None)
        if hasattr(module, "set_default_language") and languages:
            module.set_default_language(languages[0])  # X-MOD runs each input through its language's adapter
        return module

    def plan_inputs(self, cls: type[nn.Module], config: Any) -> None:
        """Read what the inputs of ``cls`` need from ``config``, adjusting it where the defaults cannot take them."""
        input_name = cls.main_input_name
        if self.task.family == "nlp" and self.task.name and input_name != "input_ids":
            raise NotImplementedError(f"{self.class_name} takes {input_name!r}, not the token ids its {self.task.name} labels need")
        self.input_name = input_name
        self.encoder_decoder = "decoder_input_ids" in inspect.signature(cls.forward).parameters
        self.num_labels = int(getattr(config, "num_labels", 2))
        if self.task.name == "causal-lm":
            config.is_decoder = True  # BERT-like and Reformer decoders read their causal mask from it
        if hasattr(config, "use_cache"):
            config.use_cache = False  # eval times one forward pass; a key-value cache nobody reads is not part of it
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        self.cost_ratio = token_cost_ratio(text)
        self.vocab_size = getattr(text, "vocab_size", None)
        if isinstance(self.vocab_size, int):
            self.plan_tokens(config)
        elif input_name == "input_ids" or self.encoder_decoder:
            raise NotImplementedError(f"{self.class_name}: its config names no vocab_size to draw token ids from")
        positions = getattr(config, "max_position_embeddings", None)
        self.length = min(self.seq_len, positions) if isinstance(positions, int) and positions > 0 else self.seq_len
        if getattr(config, "axial_pos_shape", None) is not None:
            # Reformer: in training its axial position embeddings must factor the sequence length exactly.
            rows = max(d for d in range(1, int(self.length**0.5) + 1) if self.length % d == 0)
            config.axial_pos_shape = (rows, self.length // rows)
        if input_name == "pixel_values":
            vision = getattr(config, "vision_config", None) or config  # CLIP-like classifiers keep it in a sub-config
            size = getattr(vision, "image_size", IMAGE_SIZE)
            height, width = (size, size) if isinstance(size, int) else tuple(size)[-2:]
            self.input_shape: tuple[int, ...] = (getattr(vision, "num_channels", 3), height, width)
        elif input_name == "input_features" and hasattr(config, "num_mel_bins") and hasattr(config, "max_source_positions"):
            # Whisper-like: the encoder takes exactly 2 * max_source_positions frames (its second convolution strides 2).
            self.input_shape = (config.num_mel_bins, 2 * config.max_source_positions)
        elif input_name == "input_values":
            self.input_shape = (AUDIO_SAMPLES,)
        elif input_name != "input_ids":
            raise NotImplementedError(f"{self.class_name} takes {input_name!r}: no synthetic input of that kind is known")

    def plan_tokens(self, config: Any) -> None:
        """Token ids drawn above the small special ids, so a random sequence holds none of them by chance."""
        if self.task.name == "sequence-classification" and getattr(config, "pad_token_id", 0) is None:
            # The head pools each sequence's last non-padding token and refuses a batch over 1 with no pad id.
            config.pad_token_id = 0
        special = [getattr(config, f"{kind}_token_id", None) for kind in ("pad", "bos", "eos", "unk", "decoder_start")]
        small = [token for token in special if isinstance(token, int) and 0 <= token < 1000]
        self.first_id = min(max(small, default=-1) + 1, self.vocab_size - 1)
        eos = getattr(config, "eos_token_id", None)
        self.eos_id = eos if isinstance(eos, int) else None

    def tokens(self, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
        return torch.randint(self.first_id, self.vocab_size, shape, generator=generator)

    def make_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> dict[str, torch.Tensor]:
        if self.input_name == "input_ids":
            inputs = self.text_inputs(batch_size, generator)
        else:
            inputs = {self.input_name: torch.randn(batch_size, *self.input_shape, generator=generator)}
        if self.encoder_decoder:
            inputs.update(self.decoder_inputs(batch_size, mode, generator))
        if mode == "train" and self.task.name:
            inputs.update(self.labels(inputs, batch_size, generator))
        return inputs

    def text_inputs(self, batch_size: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
        choices = (CHOICES,) if self.task.name == "multiple-choice" else ()
        ids = self.tokens((batch_size, *choices, self.length), generator)
        if self.task.name == "sequence-classification" and self.eos_id is not None:
            ids[..., -1] = self.eos_id  # heads that pool at <eos> (BART's) need one per sequence
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

    def decoder_inputs(self, batch_size: int, mode: str, generator: torch.Generator) -> dict[str, torch.Tensor]:
        """Teacher-forced decoder inputs, and in train the next tokens they predict: shifted here, since a model
        shifts labels by its config's decoder_start_token_id, which not every default config carries."""
        tokens = self.tokens((batch_size, self.length + 1), generator)
        inputs = {"decoder_input_ids": tokens[:, :-1].clone()}
        if mode == "train":
            inputs["labels"] = tokens[:, 1:].clone()
        return inputs

    def labels(self, inputs: dict[str, torch.Tensor], batch_size: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
        """What the task's loss compares the output with."""
        task = self.task.name
        if task in ("causal-lm", "masked-lm") and "labels" not in inputs:
            # Causal heads like GPT-2's shift them to the next token; BART-like decoder heads score each token as is.
            return {"labels": inputs["input_ids"].clone()}
        if task in ("sequence-classification", "image-classification", "audio-classification"):
            if self.num_labels == 1:  # one label is regression
                return {"labels": torch.randn(batch_size, generator=generator)}
            return {"labels": torch.randint(0, self.num_labels, (batch_size,), generator=generator)}
        if task == "token-classification":
            return {"labels": torch.randint(0, self.num_labels, inputs["input_ids"].shape, generator=generator)}
        if task == "question-answering":
            start, end = (torch.randint(0, self.length, (batch_size,), generator=generator) for _ in range(2))
            return {"start_positions": start, "end_positions": end}
        if task in ("multiple-choice", "next-sentence"):
            classes = CHOICES if task == "multiple-choice" else 2
            return {"labels": torch.randint(0, classes, (batch_size,), generator=generator)}
        if task == "ctc" and isinstance(self.vocab_size, int):
            return {"labels": self.tokens((batch_size, CTC_TARGET), generator)}  # above the pad id, CTC's blank
        return {}  # seq2seq: the decoder's labels are already there

    def make_optimizers(self) -> list[torch.optim.Optimizer]:
        # Fused, as the transformers Trainer defaults to; the unfused loop costs more than a base model's step on CPU.
        return [torch.optim.AdamW(self.module.parameters(), lr=1e-4, fused=True)]

    def loss(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        if self.model_type in TRAIN_DECLINED:
            raise NotImplementedError(f"{self.class_name}: {TRAIN_DECLINED[self.model_type]}")
        if not self.task.name:
            raise NotImplementedError(
                f"{self.class_name} has no loss to train: transformers lists it in {self.task.mapping}, whose labels"
                " this source does not make"
            )
        loss = getattr(self.module(**inputs), "loss", None)
        if loss is None:  # a distillation head (DeiT's with teacher) and a few others compute none
            raise NotImplementedError(f"{self.class_name} returned no loss for the labels {sorted(inputs)}")
        return loss

    def infer(self, inputs: dict[str, torch.Tensor]) -> Any:
        output = self.module(**inputs)
        logits = getattr(output, "logits", None)
        return logits if logits is not None else output[0]
