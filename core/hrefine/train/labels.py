"""The query-analysis label of a question whose answer location is known: local or global.

The rule (fixed before any training result was looked at):

- **global** when the gold says the answer needs several paragraphs: a HotpotQA question
  (its two supporting paragraphs are different articles), or a question whose reference answer
  is spread out — no single paragraph holds half of its content words, while two or more
  paragraphs together hold at least 80% of them;
- **local** when one paragraph holds the answer: it contains every required answer verbatim
  (any one of alternative references), or at least 80% of a reference's content words;
- otherwise **no label**: the item gives no example (counted as ``"unclear"``).

A paragraph is a HotpotQA paragraph, or a non-heading unit of the document's own markup
(:func:`hrefine.longrefiner.markup.markup_spans`: an HTML block, a Markdown paragraph, a
paragraph of plain text).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hrefine.eval.loaders import EvalItem, hotpot_paragraph_text
from hrefine.train.answers import contains_answers, norm

__all__ = ["LOCAL_SHARE", "SPREAD_SHARE", "label_of", "paragraphs_of"]

#: Share of a reference's content words one paragraph must hold for a local label.
LOCAL_SHARE = 0.8
#: A spread answer: no paragraph holds this share of its content words...
SPREAD_SHARE = 0.5
# ...and fewer content words than this cannot tell spread from paraphrase.
_MIN_WORDS = 4

_WORD = re.compile(r"\w{3,}")
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "from",
        "that",
        "this",
        "these",
        "those",
        "are",
        "was",
        "were",
        "been",
        "has",
        "have",
        "had",
        "not",
        "but",
        "its",
        "their",
        "there",
        "which",
        "who",
        "whom",
        "what",
        "when",
        "where",
        "how",
        "why",
        "also",
        "into",
        "than",
        "then",
        "they",
        "them",
        "such",
        "can",
        "will",
        "would",
        "could",
        "should",
        "may",
        "might",
        "does",
        "did",
    ]
)


def paragraphs_of(item: EvalItem) -> list[str]:
    """The paragraphs the label rule looks in (see the module docstring)."""
    paragraphs = item.extra.get("paragraphs")
    if paragraphs:
        return [hotpot_paragraph_text(p) for p in paragraphs]
    from hrefine.longrefiner.markup import markup_spans

    plain, spans, _ = markup_spans(item.document)
    return [plain[s.start : s.end] for s in spans if not s.heading]


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(norm(text)) if w not in _STOP}


def _spread(paragraphs: Sequence[set[str]], answer: set[str]) -> tuple[float, float, int]:
    """(best single share, greedy cover share, paragraphs the cover took) of ``answer``."""
    best = max((len(answer & p) / len(answer) for p in paragraphs), default=0.0)
    left, used = set(answer), 0
    while left:
        gain = max(paragraphs, key=lambda p: len(left & p), default=set())
        if not left & gain:
            break
        left -= gain
        used += 1
    return best, 1 - len(left) / len(answer), used


def label_of(item: EvalItem, paragraphs: Sequence[str] | None = None) -> tuple[str | None, str]:
    """``("local" | "global" | None, the rule that decided)`` for one question.

    Parameters
    ----------
    item:
        The question with its gold answers (and HotpotQA's supporting titles).
    paragraphs:
        The document's paragraphs (default: :func:`paragraphs_of`), to reuse across the
        questions of one document.
    """
    support = {str(t) for t in item.extra.get("supporting_titles", ())}
    if len(support) >= 2:
        return "global", "supporting paragraphs in different documents"
    answers = [a for a in item.answers if a.strip()]
    if not answers:
        return None, "no answer"
    paras = list(paragraphs) if paragraphs is not None else paragraphs_of(item)
    if any(contains_answers(p, answers, mode=item.answer_mode) for p in paras):
        return "local", "answer written in one paragraph"
    words = [_content_words(p) for p in paras]
    refs = [w for w in (_content_words(a) for a in answers) if len(w) >= _MIN_WORDS]
    for ref in refs:
        best, cover, used = _spread(words, ref)
        if best >= LOCAL_SHARE:
            return "local", f"one paragraph holds {best:.0%} of the answer's words"
        if best < SPREAD_SHARE and cover >= LOCAL_SHARE and used >= 2:
            return "global", f"answer's words spread over {used} paragraphs"
    return None, "unclear"
