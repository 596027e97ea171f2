"""What llama.cpp may use on this machine: the GPU (how many layers go there) and the CPU
(what it must be kept from). Tk-free; runs on the loader thread.

**GPU offload.** llama-cpp-python is compiled for one backend. ``pip install
llama-cpp-python`` builds with Metal on Apple Silicon; on Linux and Windows it builds for the
CPU alone unless told otherwise
(``CMAKE_ARGS="-DGGML_CUDA=on"``, ``-DGGML_VULKAN=on`` …) or installed from one of the
prebuilt wheel indexes the project publishes (docs/using.md, "Your GPU"). Whether the
installed one can offload at all is ``llama_supports_gpu_offload()``.

The setting (Settings, ``--gpu-layers``): ``None`` is *automatic*, every layer where this
build can offload and none where it cannot; ``0`` keeps the model on the CPU; ``N`` puts the
first N layers on the GPU (more than the model has: all of them); :data:`ALL_LAYERS` all.

**AMX.** A llama-cpp-python built from source (what ``pip install`` does) is compiled for the
machine it is built on, and where the CPU advertises Intel AMX (Sapphire Rapids and later
Xeons: ``amx_tile`` in ``/proc/cpuinfo``) llama.cpp puts the weights in an AMX "extra
buffer" and multiplies prompt batches with AMX tiles. On the machines this project is built
and tested on (2-core Intel Xeon VMs, llama-cpp-python 0.3.36, 2026-12-01) the first batch
of more than one token then dies in ``ggml_backend_amx_mul_mat`` with a general protection
fault on ``ldtilecfg``: the whole process, with no Python exception to catch. A model loaded
with ``use_extra_bufts = false`` never reaches that code, and reads its prompt with the
ordinary AVX-512 kernels.

So on a CPU that advertises AMX, tkchat loads models without the extra buffers (which also
hold the weight repacking some quantisations get: a prompt may read a little slower there,
never wrongly). ``TKCHAT_LLAMA_EXTRA_BUFFERS=1`` keeps them, for a machine where AMX works.
"""

from __future__ import annotations

import os
import runpy
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
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


# -- the CPU --------------------------------------------------------------------------------

ENV_VAR = "TKCHAT_LLAMA_EXTRA_BUFFERS"
CPUINFO = Path("/proc/cpuinfo")
# ``python -c LLAMA_CPP_SERVER --model …``: see run_llama_cpp_server
LLAMA_CPP_SERVER = (
    "from tkchat.generate.hardware import run_llama_cpp_server; run_llama_cpp_server()"
)


def cpu_flags(cpuinfo: str) -> set[str]:
    """The feature flags of the first processor in a ``/proc/cpuinfo`` text."""
    for line in cpuinfo.splitlines():
        key, colon, value = line.partition(":")
        if colon and key.strip() == "flags":
            return set(value.split())
    return set()


@cache
def avoid_extra_buffers() -> bool:
    """True where the CPU advertises AMX and nobody asked for the extra buffers."""
    if os.environ.get(ENV_VAR, "").strip() == "1":
        return False
    try:
        flags = cpu_flags(CPUINFO.read_text(encoding="utf-8", errors="replace"))
    except OSError:  # not Linux, or no /proc: nothing known to avoid
        return False
    return "amx_tile" in flags


def adjust(params: Any) -> Any:
    """``params`` (llama.cpp's model parameters) with what this CPU must not use turned off.
    A llama-cpp-python too old to have the field is left as it is."""
    if avoid_extra_buffers() and hasattr(params, "use_extra_bufts"):
        params.use_extra_bufts = False
    return params


def run_llama_cpp_server() -> None:
    """``python -c LLAMA_CPP_SERVER --model …``: llama-cpp-python's own OpenAI-compatible server
    (the real peer of the tests and the SSE bench), with the same adjustment as tkchat's
    loads, since that server builds its model parameters itself."""
    import llama_cpp.llama_cpp as low

    plain = low.llama_model_default_params

    def adjusted() -> Any:
        return adjust(plain())

    low.llama_model_default_params = adjusted
    sys.argv[0] = "llama_cpp.server"
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
