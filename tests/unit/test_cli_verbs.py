"""The shared CLI verb pieces: a verb's signature is the shared options around its own."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from hrefine._cli_outputs import emit, written_to
from hrefine._cli_store import BuildRequest, StoreVerbs
from hrefine._cli_support import read_files
from hrefine._cli_verbs import Shared, option, verb
from hrefine.errors import ConfigError, EmptyInputError
from typer.testing import CliRunner

_Flag = Annotated[bool, typer.Option("--flag", help="A shared flag.")]


def test_verb_places_shared_options_around_its_own_and_splits_the_values() -> None:
    calls: list[tuple[Shared, dict[str, Any]]] = []

    def own(ctx: object, size: Annotated[int, typer.Option(help="Own.")] = 3) -> str:
        """Own help."""
        return f"{ctx}:{size}"

    def run(shared: Shared, fn: Any, values: dict[str, Any]) -> Any:
        calls.append((shared, dict(values)))
        return fn("ctx", **values)

    command = verb(
        own,
        run,
        before=[option("first", Annotated[str, typer.Argument()])],
        after=[option("flag", _Flag, False)],
        passed=1,
    )
    assert list(inspect.signature(command).parameters) == ["first", "size", "flag"]
    assert command.__doc__ == "Own help."
    assert command(first="a", size=5, flag=True) == "ctx:5"
    assert calls == [({"first": "a", "flag": True}, {"size": 5})]


def test_store_verbs_run_the_shared_checks_before_the_own_part(tmp_path: Path) -> None:
    verbs = StoreVerbs("kind", "thing", "Group help.")
    built: list[BuildRequest] = []

    class Saved:
        def save(self, folder: Path) -> Path:
            return folder

    @verbs.build(summary=lambda store, folder: f"saved {folder.name}")
    def build(request: BuildRequest) -> Saved:
        request.require_text()
        built.append(request)
        return Saved()

    @verbs.query(json_help="J.", report_help="R.")
    def query(request: Any) -> Any:
        raise AssertionError("not reached")  # pragma: no cover

    doc = tmp_path / "a.txt"
    doc.write_text("some text", encoding="utf-8")
    runner = CliRunner()
    out = runner.invoke(verbs.app, ["build", str(doc), "-o", str(tmp_path / "out"), "--quiet"])
    assert out.exit_code == 0, out.output
    assert built[0].quiet and built[0].sources[0].text == "some text"
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    out = runner.invoke(verbs.app, ["build", str(empty), "-o", str(tmp_path / "out")])
    assert isinstance(out.exception, EmptyInputError)
    assert "nothing to build a thing from" in str(out.exception)
    out = runner.invoke(verbs.app, ["query", str(tmp_path / "missing"), "-q", "why?"])
    assert isinstance(out.exception, ConfigError)
    assert "no saved thing at" in str(out.exception)
    assert "build one with `hrefine kind build`" in str(out.exception)


def test_read_files_refuses_stdin_twice() -> None:
    with pytest.raises(ConfigError, match="more than once"):
        list(read_files(["-", "-"], "files"))


def test_emit_writes_a_file_and_the_closing_line_says_so(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "out.txt"
    emit("hello\n", target, "output")
    assert target.read_text(encoding="utf-8") == "hello\n"
    assert written_to(target) == f"; written to {target}"
    assert written_to(None) == ""
