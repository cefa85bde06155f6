"""Metrics for compressed context: is the gold still there, and how much was kept.

All text metrics compare *normalised* text (:func:`normalize_answer`): Unicode NFKC, case-folded,
thousands separators removed (``"1,000"`` == ``"1000"``), punctuation and symbols turned into
spaces, the articles *a*/*an*/*the* dropped, whitespace collapsed. Containment is whole-word: the
answer ``"1"`` is not found in ``"10"``.

The bag-of-words recalls (:func:`token_recall`, :func:`option_recall`) compare
:func:`hrefine.models.lexical_tokens` instead.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from hrefine.errors import ConfigError
from hrefine.models.lexical import lexical_tokens

__all__ = [
    "OPTION_STOPWORDS",
    "UNSCORABLE_ANSWERS",
    "answer_containment",
    "answer_recall",
    "compression_ratio",
    "exact_match",
    "normalize_answer",
    "option_recall",
    "paragraph_recall",
    "scorable_answers",
    "token_f1",
    "token_recall",
]

#: Answers that cannot be found verbatim in a context (Qasper's yes/no/unanswerable).
UNSCORABLE_ANSWERS = frozenset({"yes", "no", "unanswerable", "none", "n a"})

_THOUSANDS = re.compile(r"(?<=\d)[,\u00a0\u202f\u2009'’](?=\d{3}(?!\d))")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_SPACES = re.compile(r"\s+")

_OPTION_STOPWORD_GROUPS = {
    "articles and determiners": "a an the this that these those some any each every all both "
    "either neither such",
    "pronouns": "i me my mine myself we us our ours ourselves you your yours yourself yourselves "
    "he him his himself she her hers herself it its itself they them their theirs themselves "
    "who whom whose which what whoever whatever someone something anyone anything",
    "auxiliaries": "am is are was were be been being have has had having do does did doing "
    "will would shall should can could may might must",
    "prepositions": "about above across after against along among around as at before behind "
    "below beneath beside besides between beyond by despite down during except for from in "
    "inside into near of off on onto out outside over per since through throughout to toward "
    "towards under until unto up upon via with within without",
    "conjunctions": "and but or nor so yet if because although though while whereas unless than "
    "whether",
    # what lexical_tokens cuts from contractions and possessives: "Korvin's" -> "korvin", "s"
    "fragments": "s t d ll m re ve",
}
#: Function words :func:`option_recall` ignores, as :func:`hrefine.models.lexical_tokens` yields
#: them: articles and determiners, pronouns, auxiliaries, prepositions, conjunctions, and the
#: fragments the tokenizer cuts from contractions and possessives. Negations ("not", "never",
#: "no") are kept: they decide between options.
OPTION_STOPWORDS = frozenset(w for words in _OPTION_STOPWORD_GROUPS.values() for w in words.split())
#: A leading option letter: "(B) ", "B) ".
_OPTION_LABEL = re.compile(r"^\s*(?:\(\s*[A-Za-z]\s*\)|[A-Z]\))\s*")


def _fold_char(ch: str) -> str:
    cat = unicodedata.category(ch)
    if cat == "Cf":  # soft hyphens, zero-width joiners: invisible, not a word break
        return ""
    return " " if cat[0] in "PSCZ" else ch


def normalize_answer(text: str, *, drop_articles: bool = True) -> str:
    """Normalise text for answer matching.

    Parameters
    ----------
    text:
        Any text.
    drop_articles:
        Remove the words *a*, *an*, *the*.

    Returns
    -------
    str
        NFKC, case-folded text without thousands separators, punctuation, symbols and
        articles, with single spaces.

    Examples
    --------
    >>> normalize_answer("The 1,000 Islands!")
    '1000 islands'
    """
    s = _THOUSANDS.sub("", text)  # before NFKC, which turns no-break spaces into spaces
    s = _THOUSANDS.sub("", unicodedata.normalize("NFKC", s).casefold())
    s = "".join(_fold_char(ch) for ch in s)
    if drop_articles:
        s = _ARTICLES.sub(" ", s)
    return _SPACES.sub(" ", s).strip()


class _Context:
    """A context normalised on demand, with and without articles."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._norm: dict[bool, str] = {}

    def padded(self, drop_articles: bool) -> str:
        if drop_articles not in self._norm:
            norm = normalize_answer(self.text, drop_articles=drop_articles)
            self._norm[drop_articles] = f" {norm} "
        return self._norm[drop_articles]


def _contains(ctx: _Context, answer: str) -> bool:
    """Whole-word containment of ``answer``; an answer made only of articles ("A") keeps them."""
    ans = normalize_answer(answer)
    drop = True
    if not ans:
        ans, drop = normalize_answer(answer, drop_articles=False), False
        if not ans:
            return False
    return f" {ans} " in ctx.padded(drop)


def scorable_answers(answers: Sequence[str]) -> list[str]:
    """The answers containment can judge: non-empty after normalisation and not yes/no-like.

    Parameters
    ----------
    answers:
        Gold answers.

    Returns
    -------
    list[str]
        The scorable ones, in order.
    """
    out = []
    for a in answers:
        whole = normalize_answer(a, drop_articles=False)
        norm = normalize_answer(a) or whole
        # "N/A" is read as "n a" before the articles go ("a" is one): both forms are checked.
        if norm and norm not in UNSCORABLE_ANSWERS and whole not in UNSCORABLE_ANSWERS:
            out.append(a)
    return out


def answer_containment(context: str, answers: Sequence[str], *, mode: str = "all") -> float | None:
    """1.0 when the gold answer(s) occur in ``context``, else 0.0.

    Parameters
    ----------
    context:
        The compressed context (plain text).
    answers:
        Gold answers.
    mode:
        ``"all"``: every answer must occur (multi-valued answers); ``"any"``: one of them
        (alternative references).

    Returns
    -------
    float or None
        None when no answer is scorable (see :func:`scorable_answers`).
    """
    if mode not in {"all", "any"}:
        msg = f"mode must be 'all' or 'any', got {mode!r}"
        raise ConfigError(msg)
    golds = scorable_answers(answers)
    if not golds:
        return None
    ctx = _Context(context)
    hits = [_contains(ctx, a) for a in golds]
    return float(all(hits) if mode == "all" else any(hits))


def answer_recall(context: str, answers: Sequence[str]) -> float | None:
    """Fraction of the scorable gold ``answers`` (see :func:`scorable_answers`) that occur in
    the compressed ``context``; None when no answer is scorable."""
    return _share_contained(context, scorable_answers(answers))


def paragraph_recall(context: str, gold_texts: Sequence[str]) -> float | None:
    """Fraction of ``gold_texts`` (supporting paragraphs or sentences) fully present in the
    compressed ``context``; None when there is no gold text."""
    golds = [g for g in gold_texts if normalize_answer(g, drop_articles=False)]
    return _share_contained(context, golds)


def _share_contained(context: str, golds: Sequence[str]) -> float | None:
    """Fraction of ``golds`` that occur in ``context`` (None for no golds)."""
    if not golds:
        return None
    ctx = _Context(context)
    return sum(_contains(ctx, g) for g in golds) / len(golds)


def token_recall(context: str, gold_text: str) -> float | None:
    """Bag-of-words recall of a gold text: matched gold tokens over all gold tokens.

    Tokens are :func:`hrefine.models.lexical_tokens` (case- and accent-folded words); each gold
    token counts as many times as it occurs, matched at most as often as it occurs in
    ``context``.

    Parameters
    ----------
    context:
        The compressed context.
    gold_text:
        The gold text (e.g. an article body).

    Returns
    -------
    float or None
        None when the gold text has no tokens.
    """
    return _bag_recall(context, lexical_tokens(gold_text))


def _bag_recall(context: str, gold_tokens: Sequence[str]) -> float | None:
    """Gold tokens matched in ``context``'s tokens (each at most as often as it occurs there)."""
    gold = Counter(gold_tokens)
    total = sum(gold.values())
    if not total:
        return None
    got = Counter(lexical_tokens(context))
    return sum(min(n, got[t]) for t, n in gold.items()) / total


def option_recall(context: str, gold_option: str) -> float | None:
    """Bag-of-words recall of a multiple-choice gold option's content words.

    A reader-free proxy for multiple choice (QuALITY): options paraphrase the story, so the
    option text is rarely found verbatim, but a context that keeps the passage the option is
    about keeps much of its wording. The option's leading letter ("(B)") is stripped, its
    :func:`hrefine.models.lexical_tokens` (case- and accent-folded words, as for
    :func:`token_recall`) minus :data:`OPTION_STOPWORDS` are the gold, each counted as often as
    it occurs and matched at most as often as it occurs in ``context``. It measures how much of
    the gold option's wording the context keeps, not whether a reader would pick that option.

    Parameters
    ----------
    context:
        The compressed context (plain text).
    gold_option:
        The text of the correct option, with or without its letter.

    Returns
    -------
    float or None
        Matched content tokens over all content tokens; None when the option has none (only
        function words).

    Examples
    --------
    >>> option_recall("They let him escape.", "(B) They wanted him to escape")
    0.5
    """
    text = _OPTION_LABEL.sub("", gold_option, count=1)
    return _bag_recall(context, [t for t in lexical_tokens(text) if t not in OPTION_STOPWORDS])


def compression_ratio(tokens_out: int, tokens_in: int) -> float:
    """``tokens_out / tokens_in`` (0.0 for an empty input).

    Parameters
    ----------
    tokens_out:
        Tokens of the compressed context.
    tokens_in:
        Tokens of the original document.

    Returns
    -------
    float
        The kept fraction.
    """
    return tokens_out / tokens_in if tokens_in > 0 else 0.0


def _golds(answers: Sequence[str], mode: str) -> list[str]:
    if mode == "all" and len(answers) > 1:
        return [" ".join(answers)]
    return list(answers)


def exact_match(prediction: str, answers: Sequence[str], *, mode: str = "any") -> float:
    """Exact match of a reader's answer after normalisation (max over references).

    Parameters
    ----------
    prediction:
        The reader LLM's answer.
    answers:
        Gold answers.
    mode:
        ``"all"`` compares against all answers joined (multi-valued); ``"any"`` takes the best
        reference.

    Returns
    -------
    float
        1.0 or 0.0.
    """
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in _golds(answers, mode)))


def token_f1(prediction: str, answers: Sequence[str], *, mode: str = "any") -> float:
    """Token-level F1 of a reader's answer (SQuAD style), max over references.

    The parameters are those of :func:`exact_match`.

    Returns
    -------
    float
        F1 in [0, 1].
    """
    pred = normalize_answer(prediction).split()
    best = 0.0
    for gold in _golds(answers, mode):
        ref = normalize_answer(gold).split()
        common = sum((Counter(pred) & Counter(ref)).values())
        if not pred or not ref or not common:
            score = float(pred == ref)
        else:
            precision, recall = common / len(pred), common / len(ref)
            score = 2 * precision * recall / (precision + recall)
        best = max(best, score)
    return best
