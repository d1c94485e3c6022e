"""The explicit registry: every model name and where its class lives, models named by their library
(``hf:``, ``timm:``, ``torchvision:``, shell patterns of them), and plug-in resolution.

Listing names imports nothing. A model's module is imported when its class is asked for, and its heavy
dependencies (torchvision, transformers) only when it is built, so ``import torchbenchmark`` stays cheap.
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import importlib
import importlib.util
import os
import sys
from typing import Any

from torchbenchmark.contract import BatchSizes, BenchmarkModel, ModelMeta

# name -> "module:attribute" under torchbenchmark.models. Sorted by name; tests check every entry.
_MODELS: dict[str, str] = {
    "alexnet": "vision_classification:alexnet",
    "convnext_tiny": "vision_classification:convnext_tiny",
    "dcgan": "gan:DCGAN",
    "deeplabv3_mobilenet_v3_large": "segmentation:deeplabv3_mobilenet_v3_large",
    "densenet121": "vision_classification:densenet121",
    "dlrm": "recommendation:DLRM",
    "efficientnet_b0": "vision_classification:efficientnet_b0",
    "fasterrcnn_mobilenet_v3_large_fpn": "detection:fasterrcnn_mobilenet_v3_large_fpn",
    "hf_Albert": "nlp:hf_Albert",
    "hf_Bart": "nlp:hf_Bart",
    "hf_Bert": "nlp:hf_Bert",
    "hf_DistilBert": "nlp:hf_DistilBert",
    "hf_GPT2": "nlp:hf_GPT2",
    "hf_T5": "nlp:hf_T5",
    "hf_Whisper": "speech:hf_Whisper",
    "llama": "llm:llama",
    "llama_decode": "llm:llama_decode",
    "lstm_lm": "sequence:LSTMLanguageModel",
    "mamba": "llm:mamba",
    "mamba_decode": "llm:mamba_decode",
    "maml": "meta_learning:MAML",
    "mixtral": "llm:mixtral",
    "mixtral_decode": "llm:mixtral_decode",
    "mnasnet1_0": "vision_classification:mnasnet1_0",
    "mobilenet_v2": "vision_classification:mobilenet_v2",
    "mobilenet_v3_large": "vision_classification:mobilenet_v3_large",
    "pyhpc_equation_of_state": "scientific:EquationOfState",
    "pytorch_unet": "segmentation:UNet",
    "resnet18": "vision_classification:resnet18",
    "resnet50": "vision_classification:resnet50",
    "resnext50_32x4d": "vision_classification:resnext50_32x4d",
    "shufflenet_v2_x1_0": "vision_classification:shufflenet_v2_x1_0",
    "soft_actor_critic": "rl:SoftActorCritic",
    "squeezenet1_1": "vision_classification:squeezenet1_1",
    "swin_t": "vision_classification:swin_t",
    "vgg16": "vision_classification:vgg16",
    "vit_b_16": "vision_classification:vit_b_16",
}


# A model named by its library: prefix -> (the module under torchbenchmark.models that builds it, how to install the library).
SOURCES: dict[str, tuple[str, str]] = {
    "hf": ("source_hf", "pip install transformers"),
    "timm": ("source_timm", "pip install timm (or pip install 'torchbenchmark[timm]')"),
    "torchvision": ("source_torchvision", "pip install torchvision"),
}
PATTERN_CHARACTERS = "*?["


class UnknownModelError(LookupError):
    """A model name or plug-in spec that names no model."""


class ModelUnavailableError(ImportError):
    """A registered model whose module or optional dependency cannot be imported."""


def list_models() -> list[str]:
    """Names of every registered model, sorted case-insensitively."""
    return sorted(_MODELS, key=str.lower)


def is_plugin_spec(spec: str) -> bool:
    """``package.module:ClassName`` or ``path/to/file.py:ClassName`` (a function returning a model class, too)."""
    return ":" in spec and source_of(spec) is None


def source_of(spec: str) -> str | None:
    """The library a spec names its model from (``hf``, ``timm``, ``torchvision``), or None."""
    prefix, colon, _ = spec.partition(":")
    return prefix if colon and prefix in SOURCES else None


def _source_module(source: str) -> Any:
    module = importlib.import_module(f"torchbenchmark.models.{SOURCES[source][0]}")
    try:
        importlib.import_module(module.PACKAGE)
    except ImportError as error:
        raise ModelUnavailableError(
            f"{source}: models need {module.PACKAGE}, which cannot be imported ({error}); {SOURCES[source][1]}"
        ) from None
    return module


def source_names(source: str) -> list[str]:
    """Every model name the library ``source`` offers, without its prefix; ModelUnavailableError without the library."""
    return list(_names_of(source))


@functools.cache
def _names_of(source: str) -> tuple[str, ...]:  # asked once per spec of a long --models list: read once
    return tuple(_source_module(source).names())


def expand_source(spec: str) -> list[str]:
    """A library spec as the specs it stands for: a pattern (``timm:convnext*``) as every match, sorted; a
    name as itself once the library offers it. UnknownModelError for one that names nothing."""
    source = source_of(spec)
    if source is None:
        raise UnknownModelError(f"{spec!r} names no library; prefixes: {', '.join(f'{prefix}:' for prefix in SOURCES)}")
    pattern = spec.partition(":")[2]
    names = source_names(source)
    if not any(character in pattern for character in PATTERN_CHARACTERS):
        if pattern not in names:
            close = difflib.get_close_matches(pattern, names, n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(f'{source}:{name}' for name in close)}?" if close else f"; see diagnostics.py list {source}"
            raise UnknownModelError(f"{source} has no model {pattern!r}{hint}")
        return [spec]
    matches = [f"{source}:{name}" for name in names if fnmatch.fnmatchcase(name, pattern)]
    if not matches:
        raise UnknownModelError(f"no {source} model matches {pattern!r}; see diagnostics.py list {source}")
    return matches


def closest_names(name: str, n: int = 3) -> list[str]:
    by_lower = {model.lower(): model for model in _MODELS}
    return [by_lower[m] for m in difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=0.5)]


def unknown_model_message(name: str) -> str:
    suggestions = closest_names(name)
    hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else "; see --list for every name"
    return f"unknown model {name!r}{hint}"


def model_class(spec: str) -> type:
    """The class behind a registered name or a plug-in spec.

    Raises :class:`UnknownModelError` for a name or spec that names nothing and
    :class:`ModelUnavailableError` when the model's own imports fail, with the reason.
    """
    source = source_of(spec)
    if source is not None:
        library = _source_module(source)
        try:
            return library.model_class(spec.partition(":")[2])  # type: ignore[no-any-return]
        except LookupError as error:
            raise UnknownModelError(str(error.args[0]) if error.args else f"{spec} names no model") from None  # it names the spec
        except ImportError as error:
            raise ModelUnavailableError(f"{spec}: {error}; {SOURCES[source][1]}") from error
    if is_plugin_spec(spec):
        return _plugin_class(spec)
    if spec not in _MODELS:
        raise UnknownModelError(unknown_model_message(spec))
    module_name, attribute = _MODELS[spec].split(":")
    try:
        module = importlib.import_module(f"torchbenchmark.models.{module_name}")
    except ImportError as error:
        raise ModelUnavailableError(f"{spec}: cannot import its module: {error}") from error
    return getattr(module, attribute)


def load_model(name: str, device: str = "cpu", batch_size: int | None = None, **config: Any) -> Any:
    """Build the model ``name`` (a registered name or a plug-in spec) on ``device``."""
    cls = model_class(name)
    try:
        return cls(device=device, batch_size=batch_size, **config)
    except ImportError as error:  # an optional dependency imported at build time
        raise ModelUnavailableError(f"{name}: missing dependency: {error}") from error


def meta_of(cls: type) -> ModelMeta:
    """A model class's metadata; a plug-in that declares none gets neutral defaults.

    A class that honours the contract without :class:`ModelMeta` may still declare ``name`` and
    ``family`` as class attributes: a string ``name`` names its rows and folder, else its class name does.
    """
    meta = getattr(cls, "meta", None)
    if isinstance(meta, ModelMeta):
        return meta
    name, family = getattr(cls, "name", None), getattr(cls, "family", None)
    return ModelMeta(
        name=name if isinstance(name, str) and name else cls.__name__,
        family=family if isinstance(family, str) and family else "plugin",
        batch_sizes=BatchSizes.same(cpu=1, cuda=1),
        annotated=bool(getattr(cls, "annotated", False)),
        note="plug-in without declared metadata",
    )


def models_markdown() -> str:
    """The README's table of models (name, family, annotated), generated so it cannot drift."""
    lines = ["| model | family | annotated |", "|---|---|---|"]
    for name in list_models():
        meta = meta_of(model_class(name))
        lines.append(f"| `{name}` | {meta.family} | {'yes' if meta.annotated else 'no'} |")
    return "\n".join(lines)


def _plugin_class(spec: str) -> type:
    target, _, class_name = spec.rpartition(":")
    if not target or not class_name:
        raise UnknownModelError(f"plug-in {spec!r} must be 'package.module:ClassName' or 'file.py:ClassName'")
    if not class_name.isidentifier():
        raise UnknownModelError(f"plug-in {spec!r}: {class_name!r} is not a class name")
    if target.endswith(".py") or os.sep in target or "/" in target or os.path.isfile(target):
        module = _import_file(target, spec)
    else:
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as error:
            if error.name and target.startswith(error.name):
                raise UnknownModelError(f"plug-in {spec!r}: no module named {target!r}") from error
            raise ModelUnavailableError(f"plug-in {spec!r}: {error}") from error
    cls = getattr(module, class_name, None)
    if callable(cls) and not isinstance(cls, type):  # a function that makes the model class (from_module's)
        cls = _made_class(cls, spec, class_name)
    if not isinstance(cls, type):
        raise UnknownModelError(f"plug-in {spec!r}: {target} has no class {class_name!r}")
    for method in ("train", "eval"):
        if not callable(getattr(cls, method, None)):
            raise UnknownModelError(f"plug-in {spec!r}: {class_name} has no {method}() method")
    return cls


def _made_class(make: Any, spec: str, name: str) -> type:
    """What ``make()`` returns, when it is a class: a plug-in may name a function that returns its model."""
    try:
        made = make()
    except TypeError as error:
        raise UnknownModelError(f"plug-in {spec!r}: {name}() must take no arguments and return a model class ({error})") from error
    if not isinstance(made, type):
        kind = type(made).__name__
        shown = f"{made!r:.40} ({'an' if kind[0] in 'aeiouAEIOU' else 'a'} {kind})"
        raise UnknownModelError(f"plug-in {spec!r}: {name}() returned {shown}, not a model class (torchbenchmark.from_module returns one)")
    return made


def _import_file(path: str, spec: str) -> Any:
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise UnknownModelError(f"plug-in {spec!r}: no such file {path}")
    if not path.endswith(".py"):
        raise UnknownModelError(f"plug-in {spec!r}: a plug-in file must be a Python file ending in .py")
    module_name = "torchbenchmark_plugin_" + os.path.splitext(os.path.basename(path))[0]
    if module_name in sys.modules and getattr(sys.modules[module_name], "__file__", None) == path:
        return sys.modules[module_name]
    import_spec = importlib.util.spec_from_file_location(module_name, path)
    if import_spec is None or import_spec.loader is None:
        raise UnknownModelError(f"plug-in {spec!r}: {path} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(import_spec)
    sys.modules[module_name] = module  # dataclasses and pickling look the module up by name
    try:
        import_spec.loader.exec_module(module)
    except BaseException as error:
        # A module whose import failed is not kept: asked again, it fails again with its own error.
        sys.modules.pop(module_name, None)
        if isinstance(error, ImportError):
            raise ModelUnavailableError(f"plug-in {spec!r}: {error}") from error
        raise
    return module


__all__ = [
    "BenchmarkModel",
    "ModelUnavailableError",
    "UnknownModelError",
    "SOURCES",
    "closest_names",
    "expand_source",
    "is_plugin_spec",
    "list_models",
    "load_model",
    "meta_of",
    "model_class",
    "models_markdown",
    "source_names",
    "source_of",
]
