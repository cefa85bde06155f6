"""The output-identity script's ``--compare``: identical snapshots pass, any difference fails."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from benchmarks.output_identity import compare, main


def _snapshot(path: Path, cases: dict[str, str], where: str = "/old/hrefine") -> str:
    data = {"_meta": {"hrefine": where}}
    data.update({name: {"sha256": digest, "head": name} for name, digest in cases.items()})
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_identical_snapshots_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _snapshot(tmp_path / "a.json", {"x": "1", "y": "2"})
    b = _snapshot(tmp_path / "b.json", {"y": "2", "x": "1"}, where="/new/hrefine")
    assert main(["--compare", a, b]) == 0  # the _meta entry is not a case
    assert "all 2 cases identical" in capsys.readouterr().out


def test_a_changed_or_missing_case_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _snapshot(tmp_path / "a.json", {"same": "1", "changed": "2", "gone": "3"})
    b = _snapshot(tmp_path / "b.json", {"same": "1", "changed": "9", "new": "4"})
    assert main(["--compare", a, b]) == 1
    out = capsys.readouterr().out
    assert "changed: differs" in out
    assert f"gone: only in {a}" in out
    assert f"new: only in {b}" in out
    assert "same" not in out.replace("3 of 4 cases differ", "")
    assert "3 of 4 cases differ" in out


def test_compare_lists_the_differing_cases() -> None:
    a = {"_meta": {}, "p": {"sha256": "1"}, "q": {"sha256": "2"}}
    b = {"_meta": {"other": 1}, "p": {"sha256": "1"}, "q": {"sha256": "3"}}
    assert compare(a, b) == ["q"]
    assert compare(a, a) == []


def test_texts_holds_each_cases_whole_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The script fixes the terminal's variables; the test puts them back afterwards.
    for name in ("COLUMNS", "LINES", "NO_COLOR", "TERM"):
        monkeypatch.setenv(name, "")
    out, texts = tmp_path / "snap.json", tmp_path / "texts"
    assert main(["--out", str(out), "--only", "help/raptor query", "--texts", str(texts)]) == 0
    snapshot = json.loads(out.read_text(encoding="utf-8"))
    assert [n for n in snapshot if n != "_meta"] == ["help/raptor query"]
    written = (texts / "help__raptor_query.txt").read_text(encoding="utf-8")
    assert "--summary-rank" in written
    digest = hashlib.sha256(written.encode("utf-8")).hexdigest()
    assert snapshot["help/raptor query"]["sha256"] == digest
