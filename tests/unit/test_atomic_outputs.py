"""Outputs are written whole or not at all, and odd code points never crash a write (issue #41,
item 2): the CLI once printed the pruned HTML, died on a lone surrogate and left the report
file at 0 bytes."""

from __future__ import annotations

import errno
import io
import os
import stat
from pathlib import Path

import numpy as np
import pytest
from hrefine import Tree
from hrefine._atomic import echo, write_text
from hrefine.cli import main
from hrefine.persist import load_tree, save_tree

PAGE = (
    "<html><head><title>Springfield</title></head><body>"
    "<p>Springfield has a population of 42,000 people.</p>"
    "<p>The weather in spring is mild.</p></body></html>"
)


def _no_temp_files(folder: Path) -> bool:
    return not [p for p in folder.iterdir() if p.name.startswith(".")]


def _full_disk(*_: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_write_text_replaces_lone_surrogates_and_keeps_the_file_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o640)
    write_text(target, "caf\udce9 \ud83d\ude00")
    assert target.read_text(encoding="utf-8") == "caf\ufffd \U0001f600"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert _no_temp_files(tmp_path)


def test_a_failed_write_leaves_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.txt"
    target.write_text("the previous report", encoding="utf-8")
    monkeypatch.setattr(os, "fsync", _full_disk)
    with pytest.raises(OSError, match="No space"):
        write_text(target, "new text " * 1000)
    assert target.read_text(encoding="utf-8") == "the previous report"
    assert _no_temp_files(tmp_path)


def test_echo_never_fails_on_odd_code_points() -> None:
    raw = io.BytesIO()
    ascii_out = io.TextIOWrapper(raw, encoding="ascii")
    echo("caf\u00e9 \ud800 日本\n", ascii_out)
    ascii_out.flush()
    assert raw.getvalue() == b"caf? ? ??\n"
    raw = io.BytesIO()
    utf8_out = io.TextIOWrapper(raw, encoding="utf-8")
    echo("caf\u00e9 \ud800\n", utf8_out)
    utf8_out.flush()
    assert raw.getvalue().decode("utf-8") == "caf\u00e9 \ufffd\n"


def _odd_page(tmp_path: Path) -> Path:
    # A file name with an undecodable byte reaches Python as a lone surrogate (surrogateescape),
    # and the report uses the name as its title.
    page = Path(os.fsdecode(bytes(tmp_path) + b"/page\xff.html"))
    page.write_bytes(PAGE.replace("mild", "mild \ud800").encode("utf-8", "surrogatepass"))
    return page


def test_cli_prune_with_lone_surrogates_writes_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page, report = _odd_page(tmp_path), tmp_path / "report.html"
    report.write_text("the previous report", encoding="utf-8")
    query = "population of Springfield \udce9?"
    code = main(["html", "prune", str(page), "-q", query, "-n", "60", "--report", str(report)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "42,000" in captured.out
    text = report.read_text(encoding="utf-8")  # strict UTF-8: whole and valid
    assert "42,000" in text and "page\ufffd.html" in text and "Springfield \ufffd?" in text
    assert _no_temp_files(tmp_path)


def test_cli_output_file_with_lone_surrogates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page, out = _odd_page(tmp_path), tmp_path / "pruned.html"
    argv = ["html", "prune", str(page), "-q", "people \ud800", "--scorer", "bm25", "-o", str(out)]
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    assert '"query": "people \ufffd"' in out.read_text(encoding="utf-8")
    assert main(["html", "clean", str(page)]) == 0
    assert "Springfield" in capsys.readouterr().out


def test_cli_report_survives_a_failed_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    page, report = _odd_page(tmp_path), tmp_path / "report.html"
    report.write_text("the previous report", encoding="utf-8")
    monkeypatch.setattr(os, "fsync", _full_disk)
    argv = ["html", "prune", str(page), "-q", "people", "--scorer", "bm25"]
    code = main([*argv, "--report", str(report)])
    err = capsys.readouterr().err
    assert code == 2 and "could not write the report" in err and "No space" in err
    assert report.read_text(encoding="utf-8") == "the previous report"
    assert _no_temp_files(tmp_path)


def test_a_failed_save_tree_leaves_the_previous_save_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = Tree()
    old.add_node("old")
    save_tree(old, tmp_path)
    new = Tree()
    new.add_node("new")
    new.set_embeddings([0], np.ones((1, 4)))
    monkeypatch.setattr(os, "fsync", _full_disk)
    with pytest.raises(OSError, match="No space"):
        save_tree(new, tmp_path)
    monkeypatch.undo()
    assert load_tree(tmp_path)[0][0].text == "old"
    assert _no_temp_files(tmp_path)
