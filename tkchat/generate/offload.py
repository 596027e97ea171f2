"""GPU offload: how many of a model's layers llama.cpp is asked to put on the GPU, and what
this llama-cpp-python can do. Tk-free; runs on the loader thread.

llama-cpp-python is compiled for one backend. ``pip install llama-cpp-python`` builds with
Metal on Apple Silicon; on Linux and Windows it builds for the CPU alone unless told otherwise
(``CMAKE_ARGS="-DGGML_CUDA=on"``, ``-DGGML_VULKAN=on`` …) or installed from one of the
prebuilt wheel indexes the project publishes (docs/using.md, "Your GPU"). Whether the
installed one can offload at all is ``llama_supports_gpu_offload()``.

The setting (Settings, ``--gpu-layers``): ``None`` is *automatic*, every layer where this
build can offload and none where it cannot; ``0`` keeps the model on the CPU; ``N`` puts the
first N layers on the GPU (more than the model has: all of them); :data:`ALL_LAYERS` all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tkchat.events import Offload

ALL_LAYERS = -1  # llama-cpp-python's "all of them" (it hands llama.cpp 0x7FFFFFFF)


def gpu_offload_supported() -> bool:
    """Whether the installed llama-cpp-python was built with a GPU backend (Metal, CUDA,
    Vulkan, ROCm, SYCL …). Loads the native library: call it where a model loads."""
    try:
        from llama_cpp import llama_supports_gpu_offload
    except ImportError:  # not installed, or too old to say: offloading is not to be counted on
        return False
    return bool(llama_supports_gpu_offload())


def layers_to_offload(chosen: int | None, supported: bool) -> int:
    """The ``n_gpu_layers`` llama.cpp is given for the setting ``chosen`` (None: automatic)."""
    if chosen is None:
        return ALL_LAYERS if supported else 0
    return chosen


def model_layers(metadata: dict[str, Any]) -> int | None:
    """The layers llama.cpp can offload for a model with this GGUF metadata: its blocks and
    the output layer (what llama.cpp's "offloaded 31/31 layers" counts), None if unsaid."""
    architecture = metadata.get("general.architecture")
    blocks = metadata.get(f"{architecture}.block_count")
    if isinstance(blocks, str) and blocks.isdigit():
        return int(blocks) + 1
    return None


@dataclass(frozen=True)
class OffloadChoice:
    """One load's offload: what the setting said (None: automatic), what llama.cpp was given
    and whether the build can offload at all."""

    chosen: int | None
    requested: int
    supported: bool

    @classmethod
    def for_setting(cls, chosen: int | None) -> OffloadChoice:
        supported = gpu_offload_supported()
        return cls(chosen, layers_to_offload(chosen, supported), supported)

    def outcome(self, total: int | None) -> Offload:
        """Where the loaded model runs, for the window to say (the model's ``total`` layers,
        when its metadata says)."""
        if not self.supported or self.requested == 0:
            return Offload(self.supported, 0, total)
        if self.requested < 0 or total is None:
            layers = total if total is not None else self.requested
        else:
            layers = min(self.requested, total)
        return Offload(self.supported, layers, total)
