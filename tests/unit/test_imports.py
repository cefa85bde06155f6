"""Importing hrefine (and its adapters) must stay light: no torch, no transformers."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "hrefine",
        "hrefine.models",
        "hrefine.budget",
        "hrefine.chunk",
        "hrefine.persist",
        "hrefine.options",
        "hrefine.html",
        "hrefine.raptor",
        "hrefine.longrefiner",
        "hrefine.garlic",
        "hrefine.cli",
    ],
)
def test_import_leaves_heavy_libraries_out(module: str) -> None:
    code = (
        f"import sys, {module}; "
        "heavy = [m for m in ('torch', 'transformers', 'sentence_transformers', 'umap', 'ray') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "", f"importing {module} pulled in {out}"


def test_missing_dependency_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from hrefine import MissingDependencyError
    from hrefine._optional import require

    with pytest.raises(MissingDependencyError, match=r"pip install 'hrefine\[raptor\]'") as err:
        require("surely_not_a_module_xyz", "raptor")
    assert isinstance(err.value, ImportError)


def test_public_names_resolve() -> None:
    import hrefine
    import hrefine.models as models

    for name in hrefine.__all__:
        assert getattr(hrefine, name) is not None
    for name in models.__all__:
        assert getattr(models, name) is not None
