"""What an evaluation run returns: per-item scores, per-budget summaries and the whole result."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from hrefine.errors import ConfigError
from hrefine.eval.baselines import as_plain_text
from hrefine.eval.loaders import EvalItem
from hrefine.eval.metrics import (
    answer_containment,
    compression_ratio,
    option_recall,
    paragraph_recall,
    token_recall,
)

__all__ = ["BudgetSummary", "EvalResult", "ItemResult", "score_output", "summarise"]


@dataclass
class ItemResult:
    """One item at one budget."""

    item_id: str
    """The question's id."""
    doc_id: str
    """Its document's id."""
    budget: int
    """The token budget it was run at."""
    tokens_in: int
    """Tokens of the raw document."""
    tokens_out: int
    """Tokens of the returned context."""
    seconds: float
    """Wall time of the ``compress`` call."""
    over_budget: bool
    """True when ``tokens_out > budget``."""
    error: str | None
    """``"ErrorType: message"`` when the method raised (then the context counts as empty)."""
    metrics: dict[str, float | None]
    """Metric name to value; None where the item cannot be scored for it."""
    prediction: str | None = None
    """The reader LLM's answer, when a reader was given."""


@dataclass
class BudgetSummary:
    """Means over the items of one run at one budget."""

    budget: int
    """Token budget."""
    n: int
    """Items run."""
    errors: int
    """Items where the method raised."""
    over_budget: int
    """Items whose context exceeded the budget."""
    metrics: dict[str, float]
    """Mean of each metric over the items it could score."""
    scored: dict[str, int]
    """How many items each metric scored."""
    tokens_in: float
    """Mean tokens of the documents."""
    tokens_out: float
    """Mean tokens of the contexts."""
    compression: float
    """Mean of ``tokens_out / tokens_in``."""
    ms_per_item: float
    """Mean milliseconds per ``compress`` call."""


@dataclass
class EvalResult:
    """A method's results on one dataset."""

    method: str
    """The method's name."""
    dataset: str
    """The dataset's name."""
    budgets: list[int]
    """Budgets run."""
    primary_metric: str
    """The dataset's headline metric."""
    metrics: list[str]
    """Every metric reported, headline first."""
    n_items: int = 0
    """Items evaluated."""
    summaries: list[BudgetSummary] = field(default_factory=list)
    """One :class:`BudgetSummary` per budget."""
    items: list[ItemResult] = field(default_factory=list)
    """Every :class:`ItemResult`."""
    skipped: str | None = None
    """Why the run did not happen (missing dataset or method), else None."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Run settings: tokenizer, limit, filters, data sha256."""

    def summary(self, budget: int) -> BudgetSummary:
        """The :class:`BudgetSummary` for ``budget``.

        Parameters
        ----------
        budget:
            One of :attr:`budgets`.

        Returns
        -------
        BudgetSummary
            The summary.

        Raises
        ------
        ConfigError
            ``budget`` was not run, or the whole run was skipped (the message says why).
        """
        for s in self.summaries:
            if s.budget == budget:
                return s
        if self.skipped:
            msg = f"{self.method} on {self.dataset} was skipped: {self.skipped}"
            raise ConfigError(msg)
        msg = f"no summary for budget {budget}; budgets run: {self.budgets}"
        raise ConfigError(msg)

    def score(self, budget: int, metric: str | None = None) -> float | None:
        """Mean of ``metric`` (default: the primary one) at ``budget``; None if never scored."""
        return self.summary(budget).metrics.get(metric or self.primary_metric)

    def to_dict(self, *, include_items: bool = False) -> dict[str, Any]:
        """A JSON-ready dict (items only when ``include_items``)."""
        data = asdict(self)
        if not include_items:
            data.pop("items")
        return data


def score_output(item: EvalItem, context: str) -> dict[str, float | None]:
    """Score a compressed context against the gold an item carries.

    - ``containment``: the answers occur (all of them, or any for alternative references);
    - ``support_recall``: fraction of gold supporting paragraphs fully present;
    - ``fact_recall``: fraction of gold supporting sentences fully present;
    - ``token_recall``: bag-of-words recall of the gold text;
    - ``option_recall``: bag-of-words recall of a multiple-choice gold option's content words
      (``extra["gold_option"]``, QuALITY), a reader-free proxy where the option paraphrases the
      document and containment is almost always 0.

    Parameters
    ----------
    item:
        The item (its ``answers`` and ``extra`` hold the gold).
    context:
        The compressed context; HTML is converted to text first.

    Returns
    -------
    dict[str, float | None]
        Only the metrics the item has gold for; None where the gold is not scorable (e.g. a
        yes/no answer).
    """
    text = as_plain_text(context) if context else ""
    out: dict[str, float | None] = {}
    if item.answers:
        out["containment"] = answer_containment(text, item.answers, mode=item.answer_mode)
    extra = item.extra
    if "supporting_paragraphs" in extra:
        out["support_recall"] = paragraph_recall(text, extra["supporting_paragraphs"])
    if "supporting_sentences" in extra:
        out["fact_recall"] = paragraph_recall(text, extra["supporting_sentences"])
    if "gold_text" in extra:
        out["token_recall"] = token_recall(text, str(extra["gold_text"]))
    if "gold_option" in extra:
        out["option_recall"] = option_recall(text, str(extra["gold_option"]))
    return out


def summarise(budget: int, rows: Sequence[ItemResult]) -> BudgetSummary:
    n = len(rows)
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for row in rows:
        for key, value in row.metrics.items():
            counts.setdefault(key, 0)
            if value is not None:
                sums[key] = sums.get(key, 0.0) + value
                counts[key] += 1
    means = {k: sums.get(k, 0.0) / c for k, c in counts.items() if c}

    def mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else 0.0

    return BudgetSummary(
        budget=budget,
        n=n,
        errors=sum(r.error is not None for r in rows),
        over_budget=sum(r.over_budget for r in rows),
        metrics=means,
        scored=counts,
        tokens_in=mean([r.tokens_in for r in rows]),
        tokens_out=mean([r.tokens_out for r in rows]),
        compression=mean([compression_ratio(r.tokens_out, r.tokens_in) for r in rows]),
        ms_per_item=mean([r.seconds * 1000 for r in rows]),
    )
