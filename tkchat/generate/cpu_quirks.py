"""What llama.cpp must be kept from doing on this CPU. Tk-free; runs on the loader thread.

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
from functools import cache
from pathlib import Path
from typing import Any

ENV_VAR = "TKCHAT_LLAMA_EXTRA_BUFFERS"
CPUINFO = Path("/proc/cpuinfo")
# ``python -c LLAMA_CPP_SERVER --model …``: see run_llama_cpp_server
LLAMA_CPP_SERVER = (
    "from tkchat.generate.cpu_quirks import run_llama_cpp_server; run_llama_cpp_server()"
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
