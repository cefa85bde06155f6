"""A command's flags for a method's settings have the settings' defaults: with no flag, the CLI
builds what the library builds."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import typer.main
from hrefine.cli import app
from hrefine.garlic import GarlicOptions
from hrefine.html.options import HtmlPrunerOptions
from hrefine.longrefiner import LongRefinerOptions
from hrefine.options import Options
from hrefine.raptor import RaptorOptions
from hrefine.train.options import TrainOptions
from typer.testing import CliRunner

# Each command and the options its flags set.
_COMMANDS: list[tuple[tuple[str, ...], type[Options]]] = [
    (("raptor", "build"), RaptorOptions),
    (("garlic", "build"), GarlicOptions),
    (("distributed", "raptor"), RaptorOptions),
    (("distributed", "garlic"), GarlicOptions),
    (("distributed", "html"), HtmlPrunerOptions),
    (("html", "prune"), HtmlPrunerOptions),
    (("refine",), LongRefinerOptions),
    (("train", "html-pruner"), TrainOptions),
    (("train", "structuring"), TrainOptions),
]


def _command(path: tuple[str, ...]) -> Any:
    command: Any = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return command


@pytest.mark.parametrize(("path", "options"), _COMMANDS, ids=lambda v: getattr(v, "__name__", v))
def test_setting_flags_default_to_the_settings_defaults(
    path: tuple[str, ...], options: type[Options]
) -> None:
    fields = {f.name: f.default for f in dataclasses.fields(options)}
    checked = 0
    for param in _command(path).params:
        if param.name not in fields:
            continue
        checked += 1
        # None: the flag was not given and the setting keeps its default.
        assert param.default is None or param.default == fields[param.name], (
            f"{' '.join(path)} --{param.name} defaults to {param.default!r}, "
            f"{options.__name__}.{param.name} to {fields[param.name]!r}"
        )
    assert checked


def test_options_default_names_the_unknown_setting() -> None:
    assert GarlicOptions.default("chunk_tokens") == 128
    with pytest.raises(Exception, match="chunk_token"):
        GarlicOptions.default("chunk_token")


def test_garlic_build_without_flags_builds_the_librarys_default_graph(tmp_path: Path) -> None:
    # The CLI once kept its own 300-token leaves after the library's default became 128.
    from hrefine.garlic import GarlicGraph

    text = " ".join(f"Sentence {i} says that item {i} weighs {i * 3} grams." for i in range(120))
    doc = tmp_path / "doc.txt"
    doc.write_text(text, encoding="utf-8")
    out = tmp_path / "graph"
    result = CliRunner().invoke(app, ["garlic", "build", str(doc), "-o", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    graph = GarlicGraph.load(out)
    assert graph.options.chunk_tokens == GarlicOptions.default("chunk_tokens")
    library = GarlicGraph.build([text])
    assert [n.text for n in graph.tree] == [n.text for n in library.tree]
