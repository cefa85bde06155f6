"""The docs site, API reference included, builds strictly (a broken reference fails it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_docs_site_with_api_reference_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip("mkdocstrings")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    api = (tmp_path / "api" / "index.html").read_text(encoding="utf-8")
    for path in (
        "hrefine.tree.Tree",
        "hrefine.html.options.HtmlPrunerOptions",
        "hrefine.models.text_generator.TextGenerator",
        "langchain_hrefine.compressors.HtmlRagCompressor",
        "llamaindex_hrefine.postprocessors.HtmlRagNodePostprocessor",
    ):
        assert f'id="{path}"' in api, f"{path} is not on the API page"
