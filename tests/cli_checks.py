"""Checks shared by the CLI tests."""

from __future__ import annotations

import pytest
from hrefine.cli import main


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run ``hrefine argv``; assert it failed (exit 2) with exactly one line on stderr and no
    traceback, and return that line."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("hrefine: error: "), err
    return err.strip()
