"""The ``build`` and ``query`` verbs of a method that saves what it builds (RAPTOR's tree,
GARLIC's graph).

``hrefine KIND build DOCS... -o DIR [own options] [--quiet]`` and ``hrefine KIND query DIR -q
QUESTION [own options] [--json] [--report FILE]`` share their flow: the checks that fail before
any model loads, reading the documents, saving and the closing line, writing the report. A
method declares its two verbs with :class:`StoreVerbs` and writes only what differs: its
options, how it builds, and how it queries and prints (see ``raptor/cli.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hrefine._cli_outputs import write_report_page
from hrefine._cli_support import (
    check_folder,
    check_output_folder,
    make_folders,
    read_files,
    say,
)
from hrefine._cli_verbs import Shared, option, verb
from hrefine._encodable import encodable
from hrefine.errors import ConfigError, EmptyInputError

if TYPE_CHECKING:
    from hrefine.raptor import Source

__all__ = [
    "BuildRequest",
    "QueryRequest",
    "StoreVerbs",
    "built_line",
    "check_no_other_save",
    "named_lm",
    "read_sources",
]

# Suffixes read as HTML and turned into text; anything else is read as text or Markdown.
_HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
#: What a saved kind is called in messages.
_SAVED_NAMES = {"raptor": "RAPTOR tree", "garlic": "GARLIC graph"}

_Docs = Annotated[
    list[str],
    typer.Argument(help="Text, Markdown or HTML files (HTML becomes its text), or - for stdin."),
]
_Quiet = Annotated[bool, typer.Option("--quiet", help="No progress lines, only the closing one.")]
_Question = Annotated[str, typer.Option("--question", "-q", help="The user's question.")]


def read_sources(paths: Sequence[str]) -> list[Source]:
    """The documents named on the command line as :class:`~hrefine.raptor.Source` objects.

    Each file is decoded (BOM, UTF-16/32, UTF-8, a declared charset, detection; binary files
    are refused) and an HTML file (by its suffix, or by its content for stdin) becomes its
    visible text. Its metadata is ``{"source": <path>}`` (``"stdin"`` for ``-``).

    Raises
    ------
    ConfigError
        A path is missing, a folder or a URL; stdin is given twice.
    HtmlParseError
        A file is binary (a PDF, an image, an archive).
    """
    from hrefine.eval.text import html_to_text, looks_like_html
    from hrefine.raptor import Source

    out: list[Source] = []
    for file in read_files(paths, "text, Markdown or HTML files"):
        text = file.text
        is_html = (
            Path(file.name).suffix.lower() in _HTML_SUFFIXES
            if file.name != "-"
            else looks_like_html(text)
        )
        if is_html:
            text = html_to_text(text)
        out.append(Source(text, metadata={"source": file.label}, id=file.label))
    return out


def check_no_other_save(output: Path, kind: str) -> None:
    """Refuse ``output`` when it holds an hrefine save of another kind than ``kind``: saving
    there would silently replace it (checked before any model loads).

    Raises
    ------
    ConfigError
        ``output`` holds a saved tree of another kind.
    """
    manifest = output / "tree.json"
    if not manifest.is_file():
        return
    try:
        found = json.loads(manifest.read_bytes()).get("kind")
    except (OSError, ValueError, AttributeError):
        return  # not a readable save: nothing of value is replaced by this check's say-so
    if isinstance(found, str) and found != kind:
        what = _SAVED_NAMES.get(found, f"saved {found!r} tree")
        msg = (
            f"could not save the {_SAVED_NAMES.get(kind, kind)} to {output}: it holds a "
            f"{what}; give another folder (or delete that one)"
        )
        raise ConfigError(msg)


def named_lm(name: str, defaults: Sequence[str] = ("default",)) -> Any:
    """A local generative LM by folder or cached name; a name in ``defaults`` (any case) is the
    embedded SmolLM2. A model that is not on disk fails here, before anything loads."""
    if name.strip().lower() in defaults:
        from hrefine.models import default_lm

        return default_lm()
    from hrefine.models._lm_name import local_lm_from

    return local_lm_from(name)


def built_line(
    stats: dict[str, Any],
    height: int,
    unit: str,
    *,
    calls: str,
    edges: str | None = None,
    output: Path | None = None,
) -> str:
    """The closing line of a build: leaves, ``height`` summary layers or levels (``unit``), the
    nodes per ``unit``, ``edges`` (when given), LLM calls (``stats[calls]``: none for the no-model
    stand-ins), seconds, and the folder it was saved to."""
    per_unit = " / ".join(str(n) for n in stats.get(f"nodes_per_{unit}", []))
    line = (
        f"built {stats.get('leaves', 0)} leaves, {height} summary {unit}s "
        f"(nodes per {unit} {per_unit}), {'' if edges is None else f'{edges} edges, '}"
        f"{stats.get(calls, 0)} LLM calls, in {float(stats.get('build_seconds', 0.0)):.1f} s"
    )
    return line + ("" if output is None else encodable(f"; saved to {output}"))


@dataclass(frozen=True)
class BuildRequest:
    """What a ``build`` verb's own part gets: the documents read, checked and ready."""

    sources: list[Source]
    """The documents (:func:`read_sources`)."""
    quiet: bool
    """``--quiet``: no progress lines."""
    noun: str
    """What is built ("tree", "graph"), for messages."""

    def require_text(self) -> None:
        """Refuse documents that are all empty (call it after the options are checked).

        Raises
        ------
        EmptyInputError
            Every document is empty.
        """
        if not any(s.text.strip() for s in self.sources):
            msg = (
                f"nothing to build a {self.noun} from: all {len(self.sources)} documents are empty"
            )
            raise EmptyInputError(msg)


@dataclass(frozen=True)
class QueryRequest:
    """What a ``query`` verb's own part gets, checked: a saved folder and a question."""

    folder: Path
    """The saved folder (it is a folder)."""
    question: str
    """The question (not blank)."""
    as_json: bool
    """``--json``: print JSON."""


#: A query's own part returns what draws its HTML report (called only when one is asked for).
ReportPage = Callable[[], str]


class StoreVerbs:
    """The ``build`` and ``query`` verbs of one method, on its own typer group :attr:`app`.

    Parameters
    ----------
    kind:
        The method's command and saved kind (``"raptor"``): ``hrefine KIND build``.
    noun:
        What it builds (``"tree"``), in help and messages.
    help:
        The group's help.
    """

    def __init__(self, kind: str, noun: str, help: str) -> None:
        self.kind = kind
        self.noun = noun
        self.app = typer.Typer(help=help, no_args_is_help=True)

    def build(
        self, summary: Callable[[Any, Path], str]
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a function as ``build``: ``DOCS... -o DIR``, its own options, ``--quiet``.

        The function takes a :class:`BuildRequest` and its own options, checks them, calls
        :meth:`BuildRequest.require_text`, builds and returns what it built; the verb saves it
        in ``DIR`` and prints ``summary(built, saved_folder)``.
        """
        before = [
            option("docs", _Docs),
            option(
                "output",
                Annotated[
                    Path,
                    typer.Option("--output", "-o", help=f"Folder to save the {self.noun} in."),
                ],
            ),
        ]

        def run(shared: Shared, own: Callable[..., Any], values: dict[str, Any]) -> None:
            output = shared["output"]
            check_output_folder(output, self.noun)
            check_no_other_save(output, self.kind)
            request = BuildRequest(read_sources(shared["docs"]), shared["quiet"], self.noun)
            built = own(request, **values)
            try:
                # Made here, not by the save, so that a failed save leaves no empty folders.
                make_folders(output)
            except OSError as exc:
                msg = f"could not save the {self.noun} to {output}: {exc.strerror or exc}"
                raise ConfigError(msg) from exc
            say(summary(built, built.save(output)))

        def register(own: Callable[..., Any]) -> Callable[..., Any]:
            after = [option("quiet", _Quiet, False)]
            self.app.command("build")(verb(own, run, before=before, after=after, passed=1))
            return own

        return register

    def query(
        self, *, json_help: str, report_help: str
    ) -> Callable[[Callable[..., ReportPage]], Callable[..., ReportPage]]:
        """Register a function as ``query``: ``DIR -q QUESTION``, its own options, ``--json``
        (``json_help``) and ``--report FILE`` (``report_help``).

        The function takes a :class:`QueryRequest` and its own options, prints the answer and
        returns a :data:`ReportPage`; the verb writes the page when ``--report`` is given.
        """
        folder_help = f"A {self.noun} saved by `hrefine {self.kind} build`."
        before = [
            option("folder", Annotated[Path, typer.Argument(help=folder_help)]),
            option("question", _Question),
        ]
        after = [
            option("as_json", Annotated[bool, typer.Option("--json", help=json_help)], False),
            option(
                "report",
                Annotated[Path | None, typer.Option("--report", help=report_help, dir_okay=False)],
                None,
            ),
        ]

        def run(shared: Shared, own: Callable[..., ReportPage], values: dict[str, Any]) -> None:
            folder, question, report = shared["folder"], shared["question"], shared["report"]
            if not question.strip():
                msg = "the question is empty; give one with -q"
                raise EmptyInputError(msg)
            check_folder(report, "report")
            if not folder.is_dir():
                msg = (
                    f"no saved {self.noun} at {folder}: not a folder; build one with "
                    f"`hrefine {self.kind} build`"
                )
                raise ConfigError(msg)
            page = own(QueryRequest(folder, question, shared["as_json"]), **values)
            if report is not None:
                write_report_page(report, page)

        def register(own: Callable[..., ReportPage]) -> Callable[..., ReportPage]:
            self.app.command("query")(verb(own, run, before=before, after=after, passed=1))
            return own

        return register
