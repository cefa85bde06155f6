"""``hrefine garlic``: build a GARLIC graph from files and search a saved one.

``hrefine garlic build DOCS... -o DIR`` reads text, Markdown or HTML files (or ``-`` for
stdin), builds the graph with a local LM (the embedded SmolLM2 by default; its attention gives
the edge weights) and saves it in ``DIR``, with one progress line per level on stderr.
``hrefine garlic query DIR -q QUESTION`` runs the LLM-controlled search and prints its Yes/No
trace and the visited text in document order (or JSON), and can write an HTML report. Mistakes
are one line, as everywhere in the CLI.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hrefine._atomic import echo
from hrefine._cli_settings import (
    build_settings,
    check_model_name,
    flag,
    local_embedder,
    named_embedder,
    query_embedder_option,
    saved_embedder_option,
)
from hrefine._cli_store import (
    BuildRequest,
    QueryRequest,
    ReportPage,
    StoreVerbs,
    built_line,
    named_lm,
)
from hrefine._cli_support import loading_line, say
from hrefine._encodable import encodable
from hrefine.errors import ConfigError
from hrefine.garlic.options import GarlicOptions

if TYPE_CHECKING:
    from pathlib import Path

    from hrefine.garlic import GarlicGraph, SearchResult, SearchStep

__all__ = ["build_summary", "garlic_app", "result_dict", "step_line", "summary_line"]

_verbs = StoreVerbs(
    "garlic",
    "graph",
    "GARLIC: build a graph of summary points over documents, and search it with an LLM.",
)
garlic_app = _verbs.app

_default = GarlicOptions.default
#: The graph's settings as flags, for ``garlic build`` and ``distributed garlic``.
ChunkTokensOpt = Annotated[int, flag(GarlicOptions, "chunk_tokens")]
MaxLevelsOpt = Annotated[int, flag(GarlicOptions, "max_levels")]
EdgesOpt = Annotated[
    str,
    flag(
        GarlicOptions,
        "edges",
        help="Edge weights: attention (the LM's), embedding (similarity), or auto "
        "(attention for a local LM).",
    ),
]
# The embedded LM's display name, for the "loading ..." line.
_DEFAULT_LM = "SmolLM2-135M-Instruct"


#: Names of the embedded SmolLM2 on the command line (as RAPTOR's --llm takes them).
_SMOLLM2_NAMES = ("smollm2", "default")


def _lm(name: str | None) -> Any:
    """A local generative LM by folder or cached name ('smollm2': the embedded SmolLM2); None:
    the library's choice (no model, or SmolLM2 to search a graph with attention edges)."""
    return None if name is None else named_lm(name, _SMOLLM2_NAMES)


def _models(lm: str | None, embedder: str | None, *, attention_graph: bool = False) -> str:
    """What a command loads: the LM (named, the embedded one, or none), the embedder (named,
    or the embedded one), the tokenizer."""
    shared = named_embedder(loading_line(scorer="embedding"), embedder) or ""
    others = shared.removeprefix("loading ").removesuffix("...")
    if lm is None:
        named = _DEFAULT_LM if attention_graph else "no LLM"
    elif lm.strip().lower() in _SMOLLM2_NAMES:
        named = _DEFAULT_LM
    else:
        named = f"the LM {lm!r}"
    return f"{named}, {others}"


def build_summary(graph: GarlicGraph, output: Path | None = None) -> str:
    """The closing line of a build: leaves, levels, nodes per level, LLM calls, seconds."""
    return built_line(
        graph.stats,
        graph.levels,
        "level",
        calls="calls",
        edges=graph.edge_mode,
        output=output,
    )


@_verbs.build(summary=build_summary)
def build(
    request: BuildRequest,
    lm: Annotated[
        str | None,
        typer.Option(
            "--llm",
            "--lm",
            help="The summariser: a local model folder or cached name, or 'smollm2' (the "
            "embedded SmolLM2-135M-Instruct; minutes a long document on a CPU). Default: no "
            "model, the summary points are the inputs' first sentences (embedding edges).",
        ),
    ] = None,
    chunk_tokens: ChunkTokensOpt = _default("chunk_tokens"),
    batch_tokens: Annotated[int, flag(GarlicOptions, "batch_tokens")] = _default("batch_tokens"),
    summary_tokens: Annotated[int, flag(GarlicOptions, "summary_tokens")] = _default(
        "summary_tokens"
    ),
    edges: EdgesOpt = _default("edges"),
    embedder: Annotated[str | None, saved_embedder_option("graph")] = None,
) -> GarlicGraph:
    """Build a GARLIC graph over documents and save it to a folder."""
    from hrefine.garlic import GarlicGraph

    sources, quiet = request.sources, request.quiet
    settings: dict[str, Any] = {
        "chunk_tokens": chunk_tokens,
        "batch_tokens": batch_tokens,
        "summary_tokens": summary_tokens,
        "edges": edges,
    }
    options = build_settings(GarlicOptions, settings, model=("lm", lm), embedder=embedder)
    request.require_text()
    model = _lm(lm)
    if not quiet:
        count = f"{len(sources)} document{'' if len(sources) == 1 else 's'}"
        say(encodable(f"loading {_models(lm, embedder)}; {count}..."))
    started = time.perf_counter()

    def progress(line: str) -> None:
        say(f"{time.perf_counter() - started:6.1f} s  {line}...")

    # The options, not keywords, carry the embedder's name: a model given as a keyword is not
    # saved, and the query would embed with another.
    return GarlicGraph.build(
        sources, lm=model, options=options, progress=None if quiet else progress
    )


def _finite(value: float | None) -> float | None:
    """``value`` as JSON takes it (NaN is not JSON)."""
    return None if value is None or math.isnan(value) else value


def result_dict(result: SearchResult) -> dict[str, Any]:
    """``result`` as JSON-able values: every field, and the visited texts in document order."""
    out = dataclasses.asdict(result)
    for node in out["visited"]:
        for name in ("score", "attention", "p_yes"):
            node[name] = _finite(node[name])
    out["said_yes"] = result.said_yes
    out["texts_in_document_order"] = result.texts_in_document_order()
    return out


def step_line(step: SearchStep) -> str:
    """One Yes/No question as a line: step, node read, P(Yes), P(No), answer, new tokens."""
    node = "top level" if step.node_id is None else f"node #{step.node_id}"
    return (
        f"step {step.step:>3}  {node:<12} P(Yes) {step.p_yes:.3f}  P(No) {step.p_no:.3f}  "
        f"{'Yes' if step.said_yes else 'No ':<3}  {step.new_tokens:>6} new tokens"
    )


def summary_line(result: SearchResult, graph: GarlicGraph) -> str:
    """The closing line of a search: nodes and tokens read, why it stopped, tokens run."""
    added = sum(1 for v in result.visited if v.step > 0)
    return (
        f"{len(result.visited)} nodes read ({added} added to the top level), stopped by "
        f"{result.stopped_by} after {len(result.trace)} questions; {result.prefilled_tokens} "
        f"tokens pre-filled, {result.recompute_tokens} recomputing "
        f"({result.mode} mode; graph of {len(graph)} nodes, {graph.levels} summary levels)"
    )


@_verbs.query(
    json_help="Print the search as JSON.",
    report_help="Also write a self-contained HTML report of the search to this file.",
)
def query(
    request: QueryRequest,
    patience: Annotated[
        int | None,
        typer.Option(help="Stop after the LM has said Yes this many times (default 1)."),
    ] = None,
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", help="Most nodes added to the visited set.")
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-tokens",
            "-n",
            help="Most tokens of visited nodes; 0: no limit. The top level is always read, "
            "whatever its size (the notes say when it alone passes the limit).",
        ),
    ] = None,
    fill_tokens: Annotated[
        int | None,
        typer.Option(
            "--fill-tokens",
            help="Read on past Yes answers until leaf chunks hold this many tokens (what a "
            "compressor does); default: the first Yes stops the search, as in the paper.",
        ),
    ] = None,
    lm: Annotated[
        str | None,
        typer.Option(
            "--llm",
            "--lm",
            help="The LM that reads and says Yes or No: a local model folder or cached name, "
            "or 'smollm2' (the embedded SmolLM2-135M-Instruct). Default: SmolLM2 for a graph "
            "an LM built (attention edges), else no model (a word-overlap Yes/No).",
        ),
    ] = None,
    embedder: Annotated[str | None, query_embedder_option("graph")] = None,
) -> ReportPage:
    """Search a saved graph for what answers a question."""
    from hrefine.garlic import GarlicGraph, GarlicSearcher

    if max_tokens is not None and max_tokens < 0:
        msg = f"--max-tokens must be a positive number (0: no limit), got {max_tokens}"
        raise ConfigError(msg)
    # The search's limits are checked here, before the graph and the model load.
    for name, value in (
        ("--patience", patience),
        ("--max-steps", max_steps),
        ("--fill-tokens", fill_tokens),
    ):
        if value is not None and value < 1:
            msg = f"{name} must be at least 1, got {value}"
            raise ConfigError(msg)
    check_model_name("lm", lm)
    local_embedder(embedder)  # a model not on disk fails before the graph loads
    settings: dict[str, Any] = {}
    if max_tokens is not None:
        settings["max_tokens"] = max_tokens or None
    # A model the graph names by a path outside its folder is not opened: given here, it is.
    graph = GarlicGraph.load(request.folder, embedder=embedder)
    model = _lm(lm)
    attention = graph.edge_mode == "attention"
    say(encodable(f"loading {_models(lm, embedder, attention_graph=attention)}..."))
    searcher = GarlicSearcher(graph, lm=model, **settings)
    result = searcher.search(
        request.question, patience=patience, max_steps=max_steps, fill_tokens=fill_tokens
    )
    if request.as_json:
        echo(json.dumps(result_dict(result), ensure_ascii=False, indent=1) + "\n")
    else:
        lines = [step_line(s) for s in result.trace]
        texts = result.texts_in_document_order()
        echo("\n".join(lines) + "\n\n" + "\n\n".join(texts) + "\n")
    say(summary_line(result, graph))
    return lambda: result.to_html(graph)
