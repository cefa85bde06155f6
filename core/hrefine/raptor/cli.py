"""``hrefine raptor``: build a RAPTOR tree from files and query a saved one.

``hrefine raptor build DOCS... -o DIR`` reads text, Markdown or HTML files (or ``-`` for
stdin), builds the tree with the embedded models (or the ones named) and saves it in ``DIR``;
``hrefine raptor query DIR -q QUESTION`` prints the nodes that answer, as lines or JSON, and can
write an HTML report of the retrieval. Mistakes are one line, as everywhere in the CLI.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hrefine._atomic import echo
from hrefine._cli_support import check_folder, check_output_folder, read_input, say
from hrefine._encodable import encodable
from hrefine.errors import ConfigError, EmptyInputError

if TYPE_CHECKING:
    from hrefine.raptor import RaptorTree, RetrievedNode, Source

__all__ = [
    "build_summary",
    "node_dict",
    "node_line",
    "raptor_app",
    "read_sources",
]

raptor_app = typer.Typer(
    help="RAPTOR: build a tree of cluster summaries over documents, and query it.",
    no_args_is_help=True,
)

# Suffixes read as HTML and turned into text; anything else is read as text or Markdown.
_HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
# How many words of a node the plain listing shows.
_FIRST_WORDS = 16


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
    from hrefine.html._decode import decode_bytes
    from hrefine.raptor import Source

    if list(paths).count("-") > 1:
        msg = "stdin (-) is given more than once; give it once"
        raise ConfigError(msg)
    out: list[Source] = []
    for name in paths:
        raw = read_input(name, "text, Markdown or HTML files")
        text = decode_bytes(raw) if raw else ""
        is_html = (
            Path(name).suffix.lower() in _HTML_SUFFIXES if name != "-" else looks_like_html(text)
        )
        if is_html:
            text = html_to_text(text)
        label = "stdin" if name == "-" else name
        out.append(Source(text, metadata={"source": label}, id=label))
    return out


#: What a saved kind is called in messages.
_SAVED_NAMES = {"raptor": "RAPTOR tree", "garlic": "GARLIC graph"}


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


def _llm(name: str | None) -> Any:
    """A local generative LM by folder or cached name; ``"smollm2"`` the embedded SmolLM2;
    None: no model (the tree's extractive summaries)."""
    if name is None:
        return None
    if name.strip().lower() in ("smollm2", "default"):
        from hrefine.models import default_lm

        return default_lm()
    from hrefine.models._lm_name import local_lm_from

    return local_lm_from(name)


def build_summary(tree: RaptorTree, output: Path | None = None) -> str:
    """The closing line of a build: leaves, layers, nodes per layer, LLM calls, seconds."""
    stats = tree.stats
    per_layer = " / ".join(str(n) for n in stats.get("nodes_per_layer", []))
    line = (
        f"built {stats.get('leaves', 0)} leaves, {tree.layers} summary layers "
        f"(nodes per layer {per_layer}), {stats.get('llm_calls', 0)} LLM calls, "
        f"in {float(stats.get('build_seconds', 0.0)):.1f} s"
    )
    return line + ("" if output is None else encodable(f"; saved to {output}"))


@raptor_app.command("build")
def build(
    docs: Annotated[
        list[str],
        typer.Argument(
            help="Text, Markdown or HTML files (HTML becomes its text), or - for stdin."
        ),
    ],
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="Folder to save the tree in."),
    ],
    chunk_tokens: Annotated[
        int, typer.Option("--chunk-tokens", help="Leaf size in tokens (cut at sentence ends).")
    ] = 100,
    summary_tokens: Annotated[
        int, typer.Option("--summary-tokens", help="Most new tokens per summary.")
    ] = 100,
    max_layers: Annotated[
        int, typer.Option("--max-layers", help="Most summary layers above the leaves.")
    ] = 5,
    seed: Annotated[
        int, typer.Option(help="Seed of UMAP and the Gaussian mixtures (same seed, same tree).")
    ] = 224,
    tokenizer: Annotated[
        str | None,
        typer.Option(
            help="Tokenizer of every count (your reader LLM's): llama-3.2 (default), a "
            "tokenizer.json or model folder, a cached model name, a tiktoken name, or regex.",
        ),
    ] = None,
    llm: Annotated[
        str | None,
        typer.Option(
            help="Summariser: a local model folder or cached name, or 'smollm2' (the embedded "
            "SmolLM2-135M-Instruct; minutes on a CPU). Default: no model, each summary is the "
            "leading sentences of its cluster's texts.",
        ),
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option(
            help="Embedder: a local sentence-transformers folder or cached name (default: the "
            "embedded all-MiniLM-L6-v2). Saved with the tree; queries use it too.",
        ),
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", help="No progress lines, only the closing one.")
    ] = False,
) -> None:
    """Build a RAPTOR tree over documents and save it to a folder."""
    from hrefine.raptor import RaptorOptions, RaptorTree

    check_output_folder(output, "tree")
    check_no_other_save(output, "raptor")
    sources = read_sources(docs)
    settings: dict[str, Any] = {
        "chunk_tokens": chunk_tokens,
        "summary_tokens": summary_tokens,
        "max_layers": max_layers,
        "seed": seed,
    }
    # Names go into the options, so that the saved tree remembers them and a query embeds
    # with the same model and counts with the same tokenizer.
    if tokenizer is not None:
        settings["tokenizer"] = tokenizer
    if embedder is not None:
        settings["embedder"] = embedder
    RaptorOptions.build(**settings)  # a bad setting fails before any model loads
    if not any(s.text.strip() for s in sources):
        msg = f"nothing to build a tree from: all {len(sources)} documents are empty"
        raise EmptyInputError(msg)
    summariser = _llm(llm)  # a model that is not on disk fails here, before anything loads
    if not quiet:
        models = [embedder or "all-MiniLM-L6-v2", *([llm] if llm else [])]
        say(encodable(f"loading {' and '.join(models)}; {len(sources)} documents..."))
    tree = RaptorTree.build(sources, llm=summariser, progress=not quiet, **settings)
    saved = tree.save(output)
    say(build_summary(tree, saved))


def _none_if_zero(value: int | None, name: str) -> int | str | None:
    """``value`` as the library takes it: not given -> the tree's setting; 0 -> no limit."""
    if value is None:
        return "default"
    if value < 0:
        msg = f"{name} must be a positive number (0: no limit), got {value}"
        raise ConfigError(msg)
    return None if value == 0 else value


def node_line(rank: int, node: RetrievedNode) -> str:
    """One retrieved node as a line: rank, layer, kind, score, tokens, id and first words."""
    words = node.text.split()
    first = " ".join(words[:_FIRST_WORDS]) + (" ..." if len(words) > _FIRST_WORDS else "")
    return (
        f"{rank:>3}. layer {node.layer} {node.kind:<7} score {node.score:.3f} "
        f"{node.tokens:>5} tokens  #{node.id:<5} {first}"
    )


def node_dict(node: RetrievedNode) -> dict[str, Any]:
    """``node`` as JSON-able values (every field of :class:`~hrefine.raptor.RetrievedNode`)."""
    out = dataclasses.asdict(node)
    out["sources"] = list(node.sources)
    return out


@raptor_app.command("query")
def query(
    folder: Annotated[Path, typer.Argument(help="A tree saved by `hrefine raptor build`.")],
    question: Annotated[str, typer.Option("--question", "-q", help="The user's question.")],
    mode: Annotated[
        str | None,
        typer.Option(
            help="collapsed (every layer ranked together) or traversal (top k per layer)."
        ),
    ] = None,
    k: Annotated[
        int | None,
        typer.Option(
            "--k", help="Most nodes (collapsed) or nodes per layer (traversal); 0: no limit."
        ),
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-tokens", "-n", help="Token budget of the nodes together; 0: no budget."
        ),
    ] = None,
    tokenizer: Annotated[
        str | None,
        typer.Option(
            help="Tokenizer of the budget, instead of the one the tree was built with (needed "
            "when that one is a file outside the tree's folder; counts are made again).",
        ),
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option(
            help="Embedder of the question: the model the tree was built with, needed when "
            "the tree names it by a folder outside its own.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the nodes as JSON.")] = False,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            help="Also write a self-contained HTML report of the tree and the retrieval.",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Retrieve the nodes of a saved tree that answer a question."""
    from hrefine.raptor import RaptorTree
    from hrefine.raptor.report import write_report

    if not question.strip():
        msg = "the question is empty; give one with -q"
        raise EmptyInputError(msg)
    check_folder(report, "report")
    if not folder.is_dir():
        msg = f"no saved tree at {folder}: not a folder; build one with `hrefine raptor build`"
        raise ConfigError(msg)
    k_ = _none_if_zero(k, "--k")
    budget = _none_if_zero(max_tokens, "--max-tokens")
    # A model the tree names by a path outside its folder is not opened: given here, it is.
    tree = RaptorTree.load(folder, tokenizer=tokenizer, embedder=embedder)
    nodes = tree.retrieve(question, mode=mode, k=k_, max_tokens=budget)
    used = sum(n.tokens for n in nodes)
    how = (mode or tree.options.mode).lower()
    limit = tree.options.k if k_ == "default" else k_
    room = tree.options.max_tokens if budget == "default" else budget
    if as_json:
        payload = {
            "question": question,
            "mode": how,
            "k": limit,
            "max_tokens": room,
            "tokens": used,
            "nodes": [node_dict(n) for n in nodes],
        }
        echo(json.dumps(payload, ensure_ascii=False, indent=1) + "\n")
    else:
        echo("".join(node_line(r, n) + "\n" for r, n in enumerate(nodes, 1)))
    say(
        f"{len(nodes)} nodes, {used} tokens"
        + ("" if room is None else f" of {room}")
        + f" ({how}; tree of {len(tree)} nodes, {tree.layers} summary layers)"
    )
    if report is not None:
        try:
            write_report(tree, question, nodes, report, mode=how, k=limit, max_tokens=room)
        except OSError as exc:
            msg = f"could not write the report to {report}: {exc.strerror or exc}"
            raise ConfigError(msg) from exc
        say(encodable(f"report written to {report}"))
