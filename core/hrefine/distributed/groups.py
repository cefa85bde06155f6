"""The group stages: one RAPTOR tree (:meth:`RaptorTree.build`) or one GARLIC graph
(:meth:`GarlicGraph.build`) per group of documents.

Rows are grouped by a column (``group``; without one each document is its own group) and Ray
hands each actor one whole group at a time. The actor loads the embedder and the LLM once, in
``__init__``, and passes them to every build. The graph goes into the output row as JSON and
``.npy`` bytes (never pickle), so it lives wherever the Parquet output lives;
:func:`raptor_tree_from_row` and :func:`garlic_graph_from_row` make it an object again.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from hrefine.distributed.rows import INPUT_ERROR
from hrefine.distributed.stages import Stage
from hrefine.errors import ConfigError, EmptyInputError, InputTypeError

__all__ = [
    "GarlicStage",
    "GroupStage",
    "RaptorStage",
    "garlic_graph_from_row",
    "raptor_tree_from_row",
]


def _npy(array: Any) -> bytes:
    import numpy as np

    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def _from_npy(data: bytes) -> Any:
    import numpy as np

    return np.load(io.BytesIO(data), allow_pickle=False)


def _llm(value: Any) -> Any:
    """The actor's LLM: a callable as given, a model name or folder loaded; None stays None, so
    the stage builds what the method builds by default (no model), as the core does."""
    if value is None or not isinstance(value, str):
        return value
    from hrefine.models._lm_name import local_lm_from

    return local_lm_from(value)


class GroupStage(Stage):
    """Base of the stages that build one graph per group of rows.

    Output columns: ``members`` (JSON list of the group's row ids, in id order), ``leaves``,
    ``levels`` (summary layers above the leaves), ``nodes``, ``tree``
    (:meth:`~hrefine.tree.Tree.to_dict` JSON), ``config`` (the options' JSON),
    ``embeddings`` and ``embedding_mask`` (``.npy`` bytes).
    """

    uses_model = True
    # a failed group records its members too, so that a rerun sees whether they changed
    error_columns = ("members",)
    #: The setting that names the stage's LM; the build takes the model by the same keyword.
    lm_setting: ClassVar[str] = "lm"
    fields = (
        ("members", "string"),
        ("leaves", "int64"),
        ("levels", "int64"),
        ("nodes", "int64"),
        ("tree", "string"),
        ("config", "string"),
        ("embeddings", "binary"),
        ("embedding_mask", "binary"),
    )

    def __init__(
        self, settings: Mapping[str, Any], provenance: Mapping[str, str], text_column: str
    ) -> None:
        super().__init__(settings, provenance, text_column)
        from hrefine.models import get_embedder

        options_type, _ = self.types()
        # The models load once per actor; every group's build reuses them.
        rest = dict(self.settings)
        self.lm = _llm(rest.pop(self.lm_setting, None))
        self.embedder = get_embedder(rest.pop("embedder", None))
        self.options = options_type.build(**rest)

    def __call__(self, batch: Any) -> Any:
        """Build the graph of one group (a Table of its rows) into a one-row Table."""
        rows = sorted(batch.to_pylist(), key=lambda r: str(r["id"]))
        group = {
            "id": str(rows[0]["group"]),
            "input_path": rows[0].get("input_path"),
            "members": json.dumps([str(r["id"]) for r in rows]),
        }
        started = time.perf_counter()
        try:
            sources = self.sources(rows)
            built = self.build(sources)
            result: Any = self.result(sources, built)
        except Exception as exc:  # a bad group is recorded, never fatal
            result = exc
        return self.table([(group, result, time.perf_counter() - started)])

    def sources(self, rows: Sequence[Mapping[str, Any]]) -> list[Any]:
        """The group's documents (ordered by id, so a rerun builds the same graph)."""
        from hrefine.raptor import Source

        bad = [f"row {r['id']!r}: {r[INPUT_ERROR]}" for r in rows if r.get(INPUT_ERROR)]
        if bad:
            raise InputTypeError("; ".join(bad))
        sources = [
            Source(self.text(r), metadata={"id": str(r["id"])}, id=str(r["id"])) for r in rows
        ]
        if not any(s.text.strip() for s in sources):
            msg = f"all {len(sources)} documents of the group are empty"
            raise EmptyInputError(msg)
        return sources

    @staticmethod
    def types() -> tuple[Any, Any]:
        """The method's options class and graph class (imported in the actor, on first use)."""
        raise NotImplementedError

    def build(self, sources: list[Any]) -> Any:
        """The method's graph object over ``sources``."""
        _, graph_type = self.types()
        model = {self.lm_setting: self.lm}
        return graph_type.build(sources, options=self.options, embedder=self.embedder, **model)

    @staticmethod
    def result(sources: Sequence[Any], built: Any) -> dict[str, Any]:
        """The output columns of a built RaptorTree or GarlicGraph."""
        inner = built.tree
        if inner.embeddings is None:
            msg = "the built graph has no embeddings"
            raise ConfigError(msg)
        return {
            "members": json.dumps([s.id for s in sources]),
            "leaves": len(inner.at_level(0)),
            "levels": inner.top_level,
            "nodes": len(inner),
            "tree": json.dumps(inner.to_dict(), ensure_ascii=False),
            "config": json.dumps(built.options.plain(), ensure_ascii=False),
            "embeddings": _npy(inner.embeddings),
            "embedding_mask": _npy(inner.embedding_mask),
        }


class RaptorStage(GroupStage):
    """Build a RAPTOR tree over each group of documents.

    Settings: any :class:`~hrefine.raptor.RaptorOptions` field. ``llm`` may be None (no model:
    extractive summaries, as :meth:`~hrefine.raptor.RaptorTree.build`), a local model folder or
    cached name such as ``"smollm2-135m-instruct"`` (loaded once per actor), or any picklable
    ``str -> str`` callable; ``embedder`` likewise a name or None.
    """

    name = "raptor"
    lm_setting = "llm"

    @staticmethod
    def types() -> tuple[Any, Any]:
        """:class:`~hrefine.raptor.RaptorOptions` and :class:`~hrefine.raptor.RaptorTree`."""
        from hrefine.raptor import RaptorOptions, RaptorTree

        return RaptorOptions, RaptorTree

    @property
    def llm(self) -> Any:
        """The summariser (the model of the ``llm`` setting)."""
        return self.lm


class GarlicStage(GroupStage):
    """Build a GARLIC graph over each group of documents.

    Settings: any :class:`~hrefine.garlic.GarlicOptions` field. ``lm`` may be None (no model:
    :class:`~hrefine.garlic.ExtractiveGarlicLM`, embedding edges), a local model folder or
    cached name such as ``"smollm2-135m-instruct"`` (attention edges), or any picklable
    ``str -> str`` callable (embedding edges); ``embedder`` a name or None.
    """

    name = "garlic"

    @staticmethod
    def types() -> tuple[Any, Any]:
        """:class:`~hrefine.garlic.GarlicOptions` and :class:`~hrefine.garlic.GarlicGraph`."""
        from hrefine.garlic import GarlicGraph
        from hrefine.garlic.options import GarlicOptions

        return GarlicOptions, GarlicGraph


def raptor_tree_from_row(row: Mapping[str, Any], **models: Any) -> Any:
    """The :class:`~hrefine.raptor.RaptorTree` an output row of the RAPTOR stage holds.

    Parameters
    ----------
    row:
        One ``status="ok"`` row of the output (as a dict: ``table.to_pylist()[i]``).
    **models:
        ``llm``, ``embedder`` or ``tokenizer`` for the loaded tree (as
        :meth:`~hrefine.raptor.RaptorTree.load` takes them).

    Raises
    ------
    ConfigError
        The row is an error row, or not from the RAPTOR stage.
    PersistenceError
        Its tree is not shaped as a RAPTOR tree.
    """
    return _graph_of(row, RaptorStage, **models)


def garlic_graph_from_row(row: Mapping[str, Any], *, embedder: Any = None) -> Any:
    """The :class:`~hrefine.garlic.GarlicGraph` an output row of the GARLIC stage holds.

    Parameters
    ----------
    row:
        One ``status="ok"`` row of the output (as a dict).
    embedder:
        The embedder of the loaded graph (None: the one its options name).

    Raises
    ------
    ConfigError, PersistenceError
        As :func:`raptor_tree_from_row` does, for the GARLIC stage and graph.
    """
    return _graph_of(row, GarlicStage, embedder=embedder)


def _graph_of(row: Mapping[str, Any], stage: type[GroupStage], **models: Any) -> Any:
    """The graph object (of ``stage``'s method) that an output row of ``stage`` holds."""
    options_type, graph_type = stage.types()
    tree = _tree_of(row, stage.name)
    options = options_type.build(**json.loads(row["config"]))
    return graph_type.from_tree(tree, options, where=f"row {row['id']!r}", **models)


def _tree_of(row: Mapping[str, Any], stage: str) -> Any:
    from hrefine.tree import Tree

    if row.get("status") != "ok" or not row.get("tree") or row.get("stage") != stage:
        msg = (
            f"row {row.get('id')!r} holds no {stage} graph "
            f"(stage {row.get('stage')!r}, status {row.get('status')!r})"
        )
        raise ConfigError(msg)
    return Tree.from_dict(
        json.loads(row["tree"]),
        embeddings=_from_npy(row["embeddings"]),
        embedding_mask=_from_npy(row["embedding_mask"]),
    )
