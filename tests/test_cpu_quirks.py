"""What llama.cpp is kept from doing on a CPU that advertises AMX (generate/hardware.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tkchat.generate import hardware as cpu_quirks

CPUINFO = "processor\t: 0\nflags\t\t: fpu sse avx512f amx_tile amx_int8\n\nprocessor\t: 1\n"


def test_the_flags_are_read_from_cpuinfo() -> None:
    assert {"amx_tile", "avx512f"} <= cpu_quirks.cpu_flags(CPUINFO)
    assert cpu_quirks.cpu_flags("processor : 0\n") == set()


@pytest.mark.parametrize(
    ("cpuinfo", "env", "avoided"),
    [(CPUINFO, "", True), (CPUINFO, "1", False), ("flags : fpu avx2\n", "", False)],
)
def test_extra_buffers_are_turned_off_only_where_amx_is_advertised(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cpuinfo: str, env: str, avoided: bool
) -> None:
    path = tmp_path / "cpuinfo"
    path.write_text(cpuinfo)
    monkeypatch.setattr(cpu_quirks, "CPUINFO", path)
    monkeypatch.setenv(cpu_quirks.ENV_VAR, env)
    cpu_quirks.avoid_extra_buffers.cache_clear()
    try:
        params = cpu_quirks.adjust(SimpleNamespace(use_extra_bufts=True))
        assert params.use_extra_bufts is (not avoided)
        # a llama-cpp-python without the field is left alone
        assert not hasattr(cpu_quirks.adjust(SimpleNamespace()), "use_extra_bufts")
    finally:
        cpu_quirks.avoid_extra_buffers.cache_clear()
