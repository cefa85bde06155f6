"""``hrefine refine``: refine documents to a token budget for a query with LongRefiner.

``hrefine refine DOC... -q QUERY -n N`` reads text, Markdown or HTML files (or ``-`` for
stdin), structures each into sections (from its own markup, or with a model given by ``--lm``),
scores every section and paragraph and keeps the best that fit ``N`` tokens together. By
default it prints each document's outline with what was kept marked, the kept units, then the
refined text; ``--no-show-structure`` prints the refined text alone, ``--json`` everything as
JSON, ``-o`` writes the refined text (or the JSON) to a file and ``--report`` an HTML report of
what was kept and why. Mistakes are one line, as everywhere in the CLI.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hrefine._atomic import echo
from hrefine._cli_outputs import (
    BudgetTokenizer,
    KeptReport,
    emit,
    finish,
    output_option,
)
from hrefine._cli_settings import (
    ScorerEmbedderOpt,
    announce_loading_with,
    check_model_name,
    local_embedder,
)
from hrefine._cli_support import check_folder, loading_line, read_files
from hrefine.errors import ConfigError, EmptyInputError
from hrefine.longrefiner.document import section_path

if TYPE_CHECKING:
    from hrefine.longrefiner import RefinedDocument, RefineResult

__all__ = [
    "check_model_switches",
    "kept_lines",
    "read_documents",
    "refine",
    "result_dict",
    "structure_lines",
]

#: Most outline lines printed per document (what was kept and what holds it come first).
OUTLINE_LINES = 60
# Most kept units listed per document, and the words shown of each.
_KEPT_LINES = 100
_FIRST_WORDS = 14
_WHAT = "text, Markdown or HTML files"


def read_documents(paths: Sequence[str]) -> tuple[list[str], list[str]]:
    """The documents named on the command line, decoded, and a label for each.

    Each file is decoded (BOM, UTF-16/32, UTF-8, a declared charset, detection; binary files
    are refused) and kept as it is: HTML and Markdown keep their markup, which gives their
    structure. The label is the path as given (``"stdin"`` for ``-``). A missing, binary or
    twice-given file fails as in :func:`hrefine._cli_support.read_files`.
    """
    files = list(read_files(paths, _WHAT))
    return [f.text for f in files], [f.label for f in files]


# -- what the command prints ------------------------------------------------------------------
def _path(doc: RefinedDocument, node_id: int) -> list[str]:
    """Titles of the sections from the top down to ``node_id`` (itself included)."""
    return section_path(doc.structure, node_id)


def _first_words(text: str, n: int = _FIRST_WORDS) -> str:
    words = text.split()
    return " ".join(words[:n]) + (" ..." if len(words) > n else "")


def _more(count: int) -> str:
    return f"{count} more section{'' if count == 1 else 's'}"


def _header(doc: RefinedDocument, label: str) -> str:
    s = doc.structure
    name = " | ".join(x for x in (f"[{doc.index + 1}]", label, " ".join(s.title.split())) if x)
    return f"== {name} =="


def structure_lines(
    doc: RefinedDocument, label: str = "", *, limit: int = OUTLINE_LINES
) -> list[str]:
    """A document's outline as lines, each section marked by what happened to it.

    ``+`` marks a kept section, ``=`` one inside a kept section, ``~`` one with kept parts and
    ``*`` one chosen by step 3; the number is its combined score. A long outline shows the
    marked sections first, then the shallowest others, up to ``limit`` lines; a run of
    sections left out is one ``...`` line.
    """
    s = doc.structure
    head = [_header(doc, label)]
    if s.source == "empty":
        return [*head, "empty document: nothing to refine"]
    tree = s.tree
    sections = [n for n in tree if n.kind == "section"]
    paragraphs = sum(1 for n in tree if n.kind == "paragraph")
    drops = Counter(doc.dropped.values())
    head.append(
        f"structure from {s.source}: {len(sections)} sections, {paragraphs} paragraphs; "
        f"step 3: {doc.selection.source}; kept {len(doc.kept)} units, {doc.tokens} tokens"
        + (
            "; dropped: " + ", ".join(f"{n} {why}" for why, n in sorted(drops.items()))
            if drops
            else ""
        )
    )
    if not sections:
        return head
    kept = set(doc.kept)
    inside = {c for k in doc.kept for c in tree.descendants(k)}
    holds = {a for k in doc.kept for a in tree.ancestors(k)}
    chosen = set(doc.selection.selected)
    marked = [n.id for n in sections if n.id in kept | inside | holds | chosen]
    rest = sorted(
        (n.id for n in sections if n.id not in set(marked)),
        key=lambda i: (int(tree[i].metadata.get("depth", 1)), i),
    )
    shown = set((marked + rest)[:limit])
    head.append("outline (+ kept, = inside kept, ~ has kept parts, * chosen by step 3; score):")
    out = head
    skipped = 0
    for node in sorted(sections, key=lambda n: (int(n.metadata["start"]), n.id)):
        if node.id not in shown:
            skipped += 1
            continue
        if skipped:
            out.append(f"      ... {_more(skipped)}")
            skipped = 0
        meta = node.metadata
        mark = (
            "+"
            if node.id in kept
            else "="
            if node.id in inside
            else "~"
            if node.id in holds
            else " "
        )
        star = "*" if node.id in chosen else " "
        title = "(lead text)" if meta.get("abstract") else str(meta.get("title", ""))
        indent = "  " * (int(meta.get("depth", 1)) - 1)
        score = float(doc.combined[node.id]) if node.id < len(doc.combined) else 0.0
        out.append(f"  {mark}{star} {score:.3f}  {indent}{' '.join(title.split())}")
    if skipped:
        out.append(f"      ... {_more(skipped)}")
    return out


def kept_lines(doc: RefinedDocument, *, limit: int = _KEPT_LINES) -> list[str]:
    """The kept units of a document, one line each: id, kind, score, where and first words."""
    if not doc.kept:
        return ["kept: nothing from this document"]
    out = [f"kept ({len(doc.kept)} units, {doc.tokens} tokens):"]
    for k in doc.kept[:limit]:
        node = doc.structure.tree[k]
        where = " > ".join(" ".join(t.split()) for t in _path(doc, k))
        words = _first_words(doc.structure.node_text(k))
        out.append(
            f"  #{k:<5} {node.kind:<9} {float(doc.combined[k]):.3f}  "
            + (f"{where}: " if where else "")
            + words
        )
    if len(doc.kept) > limit:
        out.append(f"  ... and {len(doc.kept) - limit} more")
    return out


def result_dict(result: RefineResult, labels: Sequence[str] | None = None) -> dict[str, Any]:
    """``result`` as JSON-able values: the query analysis, timings and notes, and per document
    its kept text, tokens, kept nodes (kind, section titles, extent, scores), step 3's choice
    and how many nodes were dropped for each reason."""
    names = list(labels) if labels is not None else []
    a = result.analysis
    docs = []
    for d in result.documents:
        s = d.structure
        kept = []
        for k in d.kept:
            node = s.tree[k]
            start, end = s.extent(k)
            kept.append(
                {
                    "id": k,
                    "kind": str(node.kind),
                    "title": str(node.metadata.get("title", ""))
                    if node.kind == "section"
                    else None,
                    "path": _path(d, k),
                    "start": start,
                    "end": end,
                    "local": float(d.local[k]),
                    "global": float(d.global_[k]),
                    "combined": float(d.combined[k]),
                }
            )
        sel = d.selection
        docs.append(
            {
                "index": d.index,
                "source": names[d.index] if d.index < len(names) else None,
                "structure": s.source,
                "title": s.title,
                "sections": sum(1 for n in s.tree if n.kind == "section"),
                "paragraphs": sum(1 for n in s.tree if n.kind == "paragraph"),
                "text": d.text,
                "tokens": d.tokens,
                "score": d.score,
                "kept": kept,
                "dropped": dict(sorted(Counter(d.dropped.values()).items())),
                "selection": {
                    "selected": list(sel.selected),
                    "titles": [str(s.tree[i].metadata.get("title", "")) for i in sel.selected],
                    "names": list(sel.names),
                    "unmatched": list(sel.unmatched),
                    "raw": sel.raw,
                    "source": sel.source,
                },
                "notes": list(s.notes),
            }
        )
    return {
        "query": result.query,
        "budget": result.budget,
        "tokens": result.tokens,
        "tokenizer": result.tokenizer,
        "trimmed": result.trimmed,
        "analysis": {
            "label": a.label,
            "p_local": a.p_local,
            "p_global": a.p_global,
            "w_local": a.w_local,
            "w_global": a.w_global,
            "source": a.source,
            "raw": a.raw,
        },
        "timings": dict(result.timings),
        "notes": list(result.notes),
        "text": result.text,
        "documents": docs,
    }


# -- the command ------------------------------------------------------------------------------


def _loading(tokenizer: str | None, scorer: str, lm: str | None) -> str | None:
    """The "loading ..." line: the shared one, with a model given by path named first."""
    line = loading_line(tokenizer=tokenizer, scorer=scorer, generative=lm == "default")
    if lm is None or lm == "default":
        return line
    named = f"the LM {lm!r}"
    if line is None:
        return f"loading {named}..."
    others = line.removeprefix("loading ").removesuffix("...")
    return f"loading {named}{', ' if ' and ' in others else ' and '}{others}..."


def check_model_switches(lm: str | None, switches: dict[str, str | None]) -> None:
    """Refuse the model steps turned on without ``--lm``, in the CLI's words (before loading;
    ``hrefine distributed structure`` too)."""
    if lm is not None:
        return
    for flag, value in switches.items():
        if value in ("on", "model") or (flag.endswith("adapter") and value is not None):
            msg = (
                f"{flag} {value} needs a model: give --lm (a model folder, a cached name, "
                "or default)"
            )
            raise ConfigError(msg)


def _step_switch(step: str) -> Any:
    """``--<step>``: a model step switched auto, on or off (``step`` opens its help)."""
    return typer.Option(help=f"{step}: auto (on with --lm), on or off.")


# The model step each ``--<name>-adapter`` option is for, as its help names it.
_ADAPTER_STEPS = {
    "query-analysis": "step 1",
    "structuring": "step 2 (structuring)",
    "selection": "step 3 (global selection)",
}


def _adapter_option(name: str) -> Any:
    """``--<name>-adapter`` (or ``--adapter-<name>``): a LoRA adapter folder of ``--lm`` for
    one model step (:data:`_ADAPTER_STEPS`)."""
    return typer.Option(
        f"--{name}-adapter",
        f"--adapter-{name}",
        help=f"Folder of a LoRA adapter of --lm for {_ADAPTER_STEPS[name]}.",
    )


def refine(
    docs: Annotated[
        list[str],
        typer.Argument(help="Text, Markdown or HTML files, or - for stdin; they share the budget."),
    ],
    query: Annotated[str, typer.Option("--query", "-q", "--question", help="The user's question.")],
    max_tokens: Annotated[
        int,
        typer.Option("--max-tokens", "-n", help="Token budget of the kept text of all documents."),
    ],
    tokenizer: BudgetTokenizer = None,
    scorer: Annotated[
        str,
        typer.Option(help="Local scorer: embedding, bm25 or cross-encoder:<model>."),
    ] = "embedding",
    embedder: ScorerEmbedderOpt = None,
    structure: Annotated[
        str,
        typer.Option(
            help="Where sections come from: auto (the document's markup, else the model when "
            "--lm is given, else paragraphs), markup, model or paragraphs."
        ),
    ] = "auto",
    lm: Annotated[
        str | None,
        typer.Option(
            "--lm",
            help="A local model folder or cached name, or 'default' (the embedded "
            "SmolLM2-135M-Instruct), for the model steps: query analysis, structuring and "
            "global selection.",
        ),
    ] = None,
    query_analysis: Annotated[str, _step_switch("Step 1, query analysis")] = "auto",
    global_selection: Annotated[str, _step_switch("Step 3, global selection")] = "auto",
    query_analysis_adapter: Annotated[str | None, _adapter_option("query-analysis")] = None,
    structuring_adapter: Annotated[str | None, _adapter_option("structuring")] = None,
    selection_adapter: Annotated[str | None, _adapter_option("selection")] = None,
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            help="Folder where model-made structures are kept between runs (by document hash).",
            file_okay=False,
        ),
    ] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print everything as JSON: per document the kept text, tokens, kept nodes with "
            "their titles and scores; the query analysis and timings.",
        ),
    ] = False,
    report: KeptReport = None,
    output: Annotated[Path | None, output_option("the refined text (or the --json output)")] = None,
    show_structure: Annotated[
        bool,
        typer.Option(
            "--show-structure/--no-show-structure",
            help="Print each document's outline with what was kept, and the kept units, before "
            "the refined text.",
        ),
    ] = True,
) -> None:
    """Refine documents to a token budget for a query (LongRefiner: structure, score, keep)."""
    from hrefine.longrefiner import LongRefiner, LongRefinerOptions
    from hrefine.models.scorers import canonical_scorer, check_embedder_scorer

    if not query.strip():
        msg = "the question is empty; give one with -q"
        raise EmptyInputError(msg)
    if max_tokens < 1:
        msg = f"--max-tokens must be at least 1, got {max_tokens}"
        raise ConfigError(msg)
    check_folder(output, "refined text")
    check_folder(report, "report")
    if cache_dir is not None and cache_dir.exists() and not cache_dir.is_dir():
        msg = f"--cache-dir {cache_dir} is a file; give a folder"
        raise ConfigError(msg)
    scorer = str(canonical_scorer(scorer))  # an unknown name fails before anything loads
    check_embedder_scorer(embedder, scorer)  # the options check it too, once models are named
    check_model_name("lm", lm)
    texts, labels = read_documents(docs)
    if not any(t.strip() for t in texts):
        what = labels[0] if len(labels) == 1 else f"all {len(labels)} documents"
        msg = f"nothing to refine: {what} {'is' if len(labels) == 1 else 'are'} empty"
        raise EmptyInputError(msg)
    settings: dict[str, Any] = {
        "scorer": scorer,
        "structure": structure,
        "query_analysis": query_analysis,
        "global_selection": global_selection,
        "query_analysis_adapter": query_analysis_adapter,
        "structuring_adapter": structuring_adapter,
        "selection_adapter": selection_adapter,
        "cache_dir": None if cache_dir is None else str(cache_dir),
    }
    if tokenizer is not None:
        settings["tokenizer"] = tokenizer
    if embedder is not None:
        settings["embedder"] = local_embedder(embedder)  # a model not on disk fails here
    if lm is not None:
        from hrefine.models._lm_name import local_lm_from

        settings["lm"] = local_lm_from(lm)  # a model not on disk fails before any line
    LongRefinerOptions.build(**settings)  # a bad setting fails before any model loads
    check_model_switches(
        lm,
        {
            "--structure": structure,
            "--query-analysis": query_analysis,
            "--global-selection": global_selection,
            "--query-analysis-adapter": query_analysis_adapter,
            "--structuring-adapter": structuring_adapter,
            "--selection-adapter": selection_adapter,
        },
    )
    announce_loading_with(_loading(tokenizer, scorer, lm), embedder)
    refiner = LongRefiner(**settings)
    result = refiner.refine(query, texts, max_tokens)
    if as_json:
        text = json.dumps(result_dict(result, labels), ensure_ascii=False, indent=1) + "\n"
        emit(text, output, "JSON output")
    else:
        if show_structure:
            lines: list[str] = []
            for d in result.documents:
                lines += [*structure_lines(d, labels[d.index]), *kept_lines(d), ""]
            echo("\n".join(lines) + "\n")
        if output is None and show_structure:
            echo(f"== refined text ({result.tokens} tokens) ==\n")
        emit(result.text + "\n", output, "refined text")
    kept_docs = sum(1 for d in result.documents if d.text)
    units = sum(len(d.kept) for d in result.documents)
    title = labels[0] if len(labels) == 1 else f"{len(labels)} documents"

    def page() -> str:
        from hrefine.longrefiner.report import render_report

        return render_report(result, title=title, sources=labels)

    finish(
        f"{result.tokens} / {result.budget} tokens ({result.tokenizer}); kept {units} units "
        f"from {kept_docs} of {len(result.documents)} documents in "
        f"{result.timings.get('total', 0.0):.1f} s",
        output,
        report,
        page,
    )
