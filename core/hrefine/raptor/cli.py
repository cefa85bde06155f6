"""``hrefine raptor``: build a RAPTOR tree from files and query a saved one.

``hrefine raptor build DOCS... -o DIR`` reads text, Markdown or HTML files (or ``-`` for
stdin), builds the tree with the embedded models (or the ones named) and saves it in ``DIR``;
``hrefine raptor query DIR -q QUESTION`` prints the nodes that answer, as lines or JSON, and can
write an HTML report of the retrieval. Mistakes are one line, as everywhere in the CLI.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hrefine._atomic import echo
from hrefine._cli_settings import (
    build_settings,
    flag,
    query_embedder_option,
    saved_embedder_option,
)
from hrefine._cli_store import (
    BuildRequest,
    QueryRequest,
    ReportPage,
    StoreVerbs,
    built_line,
    check_no_other_save,
    named_lm,
    read_sources,
)
from hrefine._cli_support import say
from hrefine._encodable import encodable
from hrefine.errors import ConfigError
from hrefine.models.embedder_folder import EMBEDDED_EMBEDDER
from hrefine.raptor.options import RaptorOptions

if TYPE_CHECKING:
    from pathlib import Path

    from hrefine.raptor import RaptorTree, RetrievedNode

__all__ = [
    "build_summary",
    "check_no_other_save",
    "node_dict",
    "node_line",
    "raptor_app",
    "read_sources",
]

_verbs = StoreVerbs(
    "raptor", "tree", "RAPTOR: build a tree of cluster summaries over documents, and query it."
)
raptor_app = _verbs.app

# How many words of a node the plain listing shows.
_FIRST_WORDS = 16
_default = RaptorOptions.default
#: The tree's settings as flags, for ``raptor build`` and ``distributed raptor``.
ChunkTokensOpt = Annotated[int, flag(RaptorOptions, "chunk_tokens")]
SummaryTokensOpt = Annotated[int, flag(RaptorOptions, "summary_tokens")]
MaxLayersOpt = Annotated[int, flag(RaptorOptions, "max_layers")]
SeedOpt = Annotated[int, flag(RaptorOptions, "seed")]


def build_summary(tree: RaptorTree, output: Path | None = None) -> str:
    """The closing line of a build: leaves, layers, nodes per layer, LLM calls, seconds."""
    return built_line(tree.stats, tree.layers, "layer", calls="llm_calls", output=output)


@_verbs.build(summary=build_summary)
def build(
    request: BuildRequest,
    chunk_tokens: ChunkTokensOpt = _default("chunk_tokens"),
    summary_tokens: SummaryTokensOpt = _default("summary_tokens"),
    max_layers: MaxLayersOpt = _default("max_layers"),
    seed: SeedOpt = _default("seed"),
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
    embedder: Annotated[str | None, saved_embedder_option("tree")] = None,
) -> RaptorTree:
    """Build a RAPTOR tree over documents and save it to a folder."""
    from hrefine.raptor import RaptorTree

    sources = request.sources
    settings: dict[str, Any] = {
        "chunk_tokens": chunk_tokens,
        "summary_tokens": summary_tokens,
        "max_layers": max_layers,
        "seed": seed,
    }
    named = {"tokenizer": tokenizer, "embedder": embedder}
    options = build_settings(RaptorOptions, settings, model=("llm", llm), **named)
    request.require_text()
    # No model by default: the tree's extractive summaries. One not on disk fails here.
    summariser = None if llm is None else named_lm(llm, ("smollm2", "default"))
    if not request.quiet:
        models = [embedder or EMBEDDED_EMBEDDER, *([llm] if llm else [])]
        say(encodable(f"loading {' and '.join(models)}; {len(sources)} documents..."))
    # The options, not keywords, carry the names: a model given as a keyword is not saved.
    return RaptorTree.build(sources, options, llm=summariser, progress=not request.quiet)


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


@_verbs.query(
    json_help="Print the nodes as JSON.",
    report_help="Also write a self-contained HTML report of the tree and the retrieval.",
)
def query(
    request: QueryRequest,
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
    summary_rank: Annotated[
        str | None,
        typer.Option(
            "--summary-rank",
            help="off (leaves only), below (a summary never above the best node it "
            "summarises) or free (summaries by their own score, as in the paper); default: "
            "the tree's.",
        ),
    ] = None,
    tokenizer: Annotated[
        str | None,
        typer.Option(
            help="Tokenizer of the budget, instead of the one the tree was built with (needed "
            "when that one is a file outside the tree's folder; counts are made again).",
        ),
    ] = None,
    embedder: Annotated[str | None, query_embedder_option("tree")] = None,
) -> ReportPage:
    """Retrieve the nodes of a saved tree that answer a question."""
    from hrefine.raptor import RaptorTree
    from hrefine.raptor.report import render_report

    question = request.question
    k_ = _none_if_zero(k, "--k")
    budget = _none_if_zero(max_tokens, "--max-tokens")
    # A model the tree names by a path outside its folder is not opened: given here, it is.
    # --summary-rank changes the loaded tree's setting (the report replays it), not the saved one.
    ranked = {} if summary_rank is None else {"summary_rank": summary_rank}
    tree = RaptorTree.load(request.folder, tokenizer=tokenizer, embedder=embedder, **ranked)
    nodes = tree.retrieve(question, mode=mode, k=k_, max_tokens=budget)
    used = sum(n.tokens for n in nodes)
    how = (mode or tree.options.mode).lower()
    limit = tree.options.k if k_ == "default" else k_
    room = tree.options.max_tokens if budget == "default" else budget
    if request.as_json:
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
    return lambda: render_report(tree, question, nodes, mode=how, k=limit, max_tokens=room)
