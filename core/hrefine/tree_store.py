"""What RAPTOR's tree and GARLIC's graph share: a :class:`~hrefine.tree.Tree` of embedded
nodes, the options it was built with, an embedder loaded on first use, and a save."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from hrefine.models import get_embedder
from hrefine.options import Options
from hrefine.persist import save_tree

if TYPE_CHECKING:
    from hrefine.tree import Tree

__all__ = ["TreeStore"]

_O = TypeVar("_O", bound=Options)


class TreeStore(Generic[_O]):
    """Base of :class:`~hrefine.raptor.RaptorTree` and :class:`~hrefine.garlic.GarlicGraph`.

    A subclass sets ``tree``, ``options`` and ``_embedder_arg`` (what :meth:`embedder` loads)
    and names its saved ``kind``.
    """

    #: The ``kind`` its saves record (``load`` refuses another).
    kind: ClassVar[str]
    tree: Tree
    options: _O
    _embedder_arg: Any

    def __len__(self) -> int:
        return len(self.tree)

    @functools.cached_property
    def embedder(self) -> Any:
        """The embedder of the node vectors (loaded on first use); embed queries with it."""
        return get_embedder(self._embedder_arg)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save it (JSON and .npy files, checksummed, never pickle) into folder ``path``; the
        class's ``load`` reads it back."""
        return save_tree(self.tree, path, kind=self.kind, config=self.options.plain())
