"""When hrefine has numba compile UMAP for AVX2 (hrefine._numba_target), and when it
leaves numba's choice alone."""

from __future__ import annotations

import sys
import types

import pytest
from hrefine import _numba_target as target


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No numba settings, numba not imported, an x86-64 CPU with every AVX2 feature."""
    for name in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", target.ENV_SWITCH):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delitem(sys.modules, "numba", raising=False)
    monkeypatch.setattr(target.platform, "machine", lambda: "x86_64")
    binding = types.SimpleNamespace(get_host_cpu_features=lambda: dict.fromkeys(target._HAVE, True))
    monkeypatch.setitem(sys.modules, "llvmlite.binding", binding)
    monkeypatch.setitem(sys.modules, "llvmlite", types.SimpleNamespace(binding=binding))
    return monkeypatch


def test_an_avx2_cpu_gets_numbas_avx2_settings(clean: pytest.MonkeyPatch) -> None:
    assert target.hold_to_avx2()
    assert target.os.environ["NUMBA_CPU_NAME"] == "haswell"
    features = target.os.environ["NUMBA_CPU_FEATURES"].split(",")
    assert "+avx2" in features and "+fma" in features and "-avx512f" in features
    assert target.hold_to_avx2()  # again: already numba's settings


@pytest.mark.parametrize(
    "case", ["user's own name", "switched off", "arm", "numba first", "no fma"]
)
def test_numbas_own_choice_is_left_alone(clean: pytest.MonkeyPatch, case: str) -> None:
    if case == "user's own name":
        clean.setenv("NUMBA_CPU_NAME", "znver4")
    elif case == "switched off":
        clean.setenv(target.ENV_SWITCH, "0")
    elif case == "arm":
        clean.setattr(target.platform, "machine", lambda: "aarch64")
    elif case == "numba first":
        clean.setitem(sys.modules, "numba", types.ModuleType("numba"))
    else:
        features = dict.fromkeys(target._HAVE, True) | {"fma": False}
        binding = types.SimpleNamespace(get_host_cpu_features=lambda: features)
        clean.setitem(sys.modules, "llvmlite.binding", binding)
        clean.setitem(sys.modules, "llvmlite", types.SimpleNamespace(binding=binding))
    assert not target.hold_to_avx2()
    assert target.os.environ.get("NUMBA_CPU_FEATURES") is None


def bm25_first() -> str:
    """Run in a process of its own: numba's instruction set after a BM25 score came first
    (bm25s, whose stopword list the scorer reads, imports numba)."""
    from hrefine.models.lexical import BM25Scorer

    BM25Scorer().score("what is held", ["numba is held to AVX2", "nothing else"])
    import numba

    return f"{'numba' in sys.modules} {numba.config.CPU_NAME}"


def test_a_bm25_score_before_the_first_umap_still_holds_numba() -> None:
    from fresh_process import call_in_process

    env = {k: v for k, v in target.os.environ.items() if not k.startswith("NUMBA_CPU")}
    env.pop(target.ENV_SWITCH, None)
    # The session's conftest held numba where this CPU lets it; a fresh process must do the same.
    held = target.os.environ.get("NUMBA_CPU_NAME") == "haswell"
    expected = "haswell" if held else "None"
    assert call_in_process(__file__, "t.bm25_first()", env=env) == f"True {expected}"
