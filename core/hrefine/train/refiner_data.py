"""Examples for LongRefiner's three steps, with the prompts its pipeline writes when the
step's adapter is loaded (the published prompts) and targets in the form the pipeline reads.

- **Query analysis**: the answer is ``[Local]`` or ``[Global]`` (:data:`prompts.CHOICES`, whose
  probabilities the pipeline reads); labels follow :mod:`hrefine.train.labels`.
- **Structuring**: a document whose markup already has sections (HTML or Markdown headings,
  numbered clauses, heading lines) is cut into the windows the pipeline cuts
  (:func:`~hrefine.longrefiner.skeleton.windows`, ``window_tokens`` of the model's tokens); each
  window's target is its skeleton in the published format
  (:func:`~hrefine.longrefiner.skeleton.skeleton_from_spans`: abbreviated paragraphs under
  ``<section: T>`` tags), which :func:`~hrefine.longrefiner.skeleton.parse_skeleton` reads.
- **Global selection**: the document structured from its markup, the prompt of
  :func:`~hrefine.longrefiner.select.selection_prompt`; the target is a JSON list of the
  outline titles (or ``abstract``) of the sections that hold the answer: HotpotQA's supporting
  paragraphs (each paragraph is a section titled with its article), or the sections whose text
  contains the gold answer verbatim (at most ``max_sections`` of them, else the answer is too
  common to locate and the question is skipped).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from hrefine.errors import EmptyInputError
from hrefine.eval.loaders import EvalItem, hotpot_paragraph_text
from hrefine.longrefiner import prompts
from hrefine.longrefiner.options import LongRefinerOptions
from hrefine.longrefiner.spans import Span
from hrefine.train.answers import contains_answers
from hrefine.train.examples import Example
from hrefine.train.labels import label_of, paragraphs_of

__all__ = [
    "global_selection_examples",
    "query_analysis_example",
    "query_analysis_examples",
    "structuring_examples",
]


def query_analysis_example(
    question: str,
    local: bool,
    group: str,
    opts: LongRefinerOptions | None = None,
    meta: dict[str, Any] | None = None,
) -> Example:
    """One step-1 example: the analysis prompt LongRefiner writes for ``question`` (with
    ``opts``' prompts; default the published ones) and ``[Local]`` or ``[Global]`` as target."""
    opts = opts or LongRefinerOptions()
    return Example(
        task="query-analysis",
        system=opts.analysis_system,
        user=opts.analysis_user.format(question=question),
        target=prompts.CHOICES[0] if local else prompts.CHOICES[1],
        group=group,
        meta=dict(meta or {}),
    )


def _group(item: EvalItem) -> str:
    return f"{item.dataset}:{item.doc_id}"


def query_analysis_examples(
    items: Iterable[EvalItem],
    *,
    options: LongRefinerOptions | None = None,
    skipped: Counter[str] | None = None,
) -> list[Example]:
    """Label each question local or global and write step 1's published prompt for it.

    Parameters
    ----------
    items:
        Questions with gold answers over their documents.
    options:
        The LongRefiner options whose ``analysis_system``/``analysis_user`` are used.
    skipped:
        Counts of skipped items by reason, filled in when given.

    Returns
    -------
    list[Example]
        One example per labelled question; ``meta["label"]`` is ``"local"`` or ``"global"``.
    """
    opts = options or LongRefinerOptions()
    skipped = skipped if skipped is not None else Counter()
    paragraphs: dict[str, list[str]] = {}
    out: list[Example] = []
    for item in items:
        key = _group(item)
        if key not in paragraphs:
            paragraphs[key] = paragraphs_of(item)
        label, rule = label_of(item, paragraphs[key])
        if label is None:
            skipped[rule.replace(" ", "_")] += 1
            continue
        out.append(
            query_analysis_example(
                item.question,
                label == "local",
                key,
                opts,
                {"dataset": item.dataset, "id": item.id, "label": label, "rule": rule},
            )
        )
    return out


def _window_spans(spans: list[Span], start: int, end: int) -> list[Span]:
    """The spans inside ``[start, end)``, clipped to it and counted from ``start``."""
    out: list[Span] = []
    for s in spans:
        a, b = max(s.start, start), min(s.end, end)
        if a < b:
            out.append(Span(a - start, b - start, s.path, s.heading))
    return out


def structuring_examples(
    items: Iterable[EvalItem],
    *,
    encode: Callable[[str], list[int]],
    decode: Callable[[list[int]], str],
    options: LongRefinerOptions | None = None,
    skipped: Counter[str] | None = None,
) -> list[Example]:
    """One example per window of each structured document (each document once).

    Parameters
    ----------
    items:
        Questions over documents; only their documents are used, each once.
    encode, decode:
        The tokenizer of the model to be trained (``str -> ids`` without special tokens, and
        back): it sizes the windows and abbreviates paragraphs, as at inference.
    options:
        The LongRefiner options (``window_tokens``, ``anchor_tokens``, ``structure_system``,
        ``structure_user``).
    skipped:
        Counts of skipped documents by reason, filled in when given.

    Returns
    -------
    list[Example]
        The windows' examples, document by document.
    """
    from hrefine.longrefiner.markup import markup_spans
    from hrefine.longrefiner.pipeline import lift_single_root
    from hrefine.longrefiner.skeleton import skeleton_from_spans, windows

    opts = options or LongRefinerOptions()
    skipped = skipped if skipped is not None else Counter()
    seen: set[str] = set()
    out: list[Example] = []
    for item in items:
        key = _group(item)
        if key in seen:
            continue
        seen.add(key)
        plain, spans, source = markup_spans(item.document)
        if source == "paragraphs" or not any(s.path for s in spans):
            skipped["no_sections_in_markup"] += 1
            continue
        # The pipeline reads a single top-level heading as the title, not as a section.
        spans, _ = lift_single_root(plain, spans)
        cuts = windows(plain, lambda t: len(encode(t)), opts.window_tokens)
        for w, (a, b) in enumerate(cuts):
            text = plain[a:b]
            target = skeleton_from_spans(
                text, _window_spans(spans, a, b), encode, decode, opts.anchor_tokens
            )
            if not target:
                skipped["empty_window"] += 1
                continue
            out.append(
                Example(
                    task="structuring",
                    system=opts.structure_system,
                    user=opts.structure_user.format(doc_content=text),
                    target=target,
                    group=key,
                    meta={"dataset": item.dataset, "doc_id": item.doc_id, "window": w},
                )
            )
    return out


def _hotpot_markdown(item: EvalItem) -> str:
    """A HotpotQA document with each paragraph a section titled with its article."""
    return "\n\n".join(
        f"## {p['title']}\n\n{hotpot_paragraph_text(p)}" for p in item.extra["paragraphs"]
    )


def _section_of(doc: Any, node_id: int) -> int | None:
    """The outline entry (depth 1 or 2, or the lead) holding a node, or None."""
    tree = doc.tree
    node = tree[node_id]
    best: int | None = None
    while node.parents:
        if node.kind == "section" and (
            node.metadata.get("abstract") or int(node.metadata.get("depth", 1)) <= 2
        ):
            best = node.id
        node = tree[node.parents[0]]
    return best


def global_selection_examples(
    items: Iterable[EvalItem],
    *,
    options: LongRefinerOptions | None = None,
    max_sections: int = 3,
    skipped: Counter[str] | None = None,
) -> list[Example]:
    """Step 3's prompt over each question's document, structured from its markup, and the
    titles of the sections that hold the answer.

    Parameters
    ----------
    items:
        Questions with gold answers (HotpotQA's supporting titles are used where present).
    options:
        The LongRefiner options (its ``selection_*`` prompts; structuring is from markup).
    max_sections:
        Most sections a target may name; an answer found in more is not located.
    skipped:
        Counts of skipped items by reason, filled in when given.

    Returns
    -------
    list[Example]
        One example per located question; the target is a JSON list of titles.
    """
    from hrefine.longrefiner import LongRefiner
    from hrefine.longrefiner.select import selection_prompt

    opts = (options or LongRefinerOptions()).replace(structure="markup")
    refiner = LongRefiner(opts)
    skipped = skipped if skipped is not None else Counter()
    docs: dict[str, Any] = {}
    out: list[Example] = []
    for item in items:
        key = _group(item)
        hotpot = bool(item.extra.get("paragraphs"))
        if key not in docs:
            text = _hotpot_markdown(item) if hotpot else item.document
            try:
                docs[key] = refiner.structure(text)
            except EmptyInputError:
                # One empty document skips its questions, not the whole build.
                docs[key] = None
        doc = docs[key]
        if doc is None:
            skipped["empty_document"] += 1
            continue
        outline = doc.outline()
        if not outline:
            skipped["no_sections_in_markup"] += 1
            continue
        titles: list[str] = []
        if hotpot:
            support = set(item.extra.get("supporting_titles", ()))
            titles = [t for _, t, _ in outline if t in support]
        else:
            lead = doc.abstract_id()
            chosen: list[int] = []
            for node in doc.tree:
                if node.children or node.id == 0:
                    continue
                if contains_answers(doc.node_text(node.id), item.answers, mode=item.answer_mode):
                    sec = _section_of(doc, node.id)
                    if sec is not None and sec not in chosen:
                        chosen.append(sec)
            names = {i: t for i, t, _ in outline}
            titles = [
                "abstract" if i == lead else names[i] for i in chosen if i == lead or i in names
            ]
        if not titles:
            skipped["answer_not_located"] += 1
            continue
        if len(titles) > max_sections:
            skipped["answer_in_too_many_sections"] += 1
            continue
        system, user = selection_prompt(item.question, doc, opts, tuned=True)
        out.append(
            Example(
                task="global-selection",
                system=system,
                user=user,
                target=json.dumps(titles, ensure_ascii=False),
                group=key,
                meta={"dataset": item.dataset, "id": item.id, "titles": titles},
            )
        )
    return out
