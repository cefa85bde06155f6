"""The embedding rows of a :class:`~hrefine.tree.Tree`: a matrix that grows with its nodes.

Row ``i`` belongs to node ``i``. Nodes are often added after some are embedded (RAPTOR embeds
its leaves, then adds summaries), so the matrix is sized on demand to the node count, and a
boolean mask records which rows hold a vector and which are zero because nothing was set.
"""

from __future__ import annotations

import numpy as np

from hrefine.errors import TreeError

__all__ = ["VectorRows"]


class VectorRows:
    """A ``(n_rows, dim)`` float32 matrix with a mask of the rows that were set.

    The buffer grows by doubling, so setting rows one node at a time stays linear. An array
    passed in (a memory map from :func:`hrefine.persist.load_tree`) is used as it is until the
    first write, which copies it: the caller's array is never written to.

    Parameters
    ----------
    data:
        The initial ``(n_rows, dim)`` matrix.
    mask:
        ``(n_rows,)`` booleans, True where ``data`` holds a vector.
    """

    __slots__ = ("_data", "_mask", "_owned")

    def __init__(self, data: np.ndarray, mask: np.ndarray) -> None:
        self._data = data
        self._mask = mask
        self._owned = False

    @classmethod
    def empty(cls, dim: int, n_rows: int) -> VectorRows:
        """``n_rows`` unset rows of size ``dim``."""
        rows = cls(np.zeros((n_rows, dim), dtype=np.float32), np.zeros(n_rows, dtype=bool))
        rows._owned = True
        return rows

    @classmethod
    def checked(cls, data: np.ndarray, mask: np.ndarray | None, n_rows: int) -> VectorRows:
        """Wrap a saved matrix (and mask) after checking they fit ``n_rows`` nodes.

        Parameters
        ----------
        data:
            ``(n_rows, dim)`` matrix.
        mask:
            ``(n_rows,)`` booleans; None means every row is set (format-1 saves had no mask).
        n_rows:
            Number of nodes in the tree the rows belong to.

        Raises
        ------
        TreeError
            A shape or dtype does not fit, or a value is NaN or infinite.
        """
        if data.ndim != 2 or data.shape[0] != n_rows:
            msg = (
                f"embeddings of shape {data.shape} do not fit {n_rows} nodes; "
                f"expected ({n_rows}, dim), one row per node"
            )
            raise TreeError(msg)
        if mask is None:
            mask = np.ones(n_rows, dtype=bool)
        if mask.dtype != np.bool_ or mask.shape != (n_rows,):
            msg = (
                f"embedding mask of shape {mask.shape} and dtype {mask.dtype} does not fit "
                f"{n_rows} nodes; expected ({n_rows},) booleans"
            )
            raise TreeError(msg)
        data = data if data.dtype == np.float32 else data.astype(np.float32)
        _check_finite(data)
        return cls(data, np.array(mask, dtype=bool))

    @property
    def dim(self) -> int:
        """Vector size."""
        return int(self._data.shape[1])

    def matrix(self, n_rows: int) -> np.ndarray:
        """Read-only ``(n_rows, dim)`` view; rows never set are zero."""
        self._reserve(n_rows)
        view = self._data[:n_rows]
        view.flags.writeable = False
        return view

    def mask(self, n_rows: int) -> np.ndarray:
        """Read-only ``(n_rows,)`` view, True where a row was set."""
        self._reserve(n_rows)
        view = self._mask[:n_rows]
        view.flags.writeable = False
        return view

    def is_set(self, row: int) -> bool:
        """Whether ``row`` holds a vector."""
        return row < self._mask.shape[0] and bool(self._mask[row])

    def set(self, rows: np.ndarray, vectors: np.ndarray, n_rows: int) -> None:
        """Store ``vectors[k]`` in row ``rows[k]`` (ids already checked against ``n_rows``).

        Raises
        ------
        TreeError
            ``vectors`` is not ``(len(rows), dim)``, or a value is NaN or infinite.
        """
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            msg = (
                f"vectors of shape {vectors.shape} do not fit this tree's embeddings of size "
                f"{self.dim}; embed every node with the same model"
            )
            raise TreeError(msg)
        _check_finite(vectors)
        self._reserve(n_rows)
        if not self._owned:
            self._data = np.array(self._data, dtype=np.float32)
            self._mask = np.array(self._mask, dtype=bool)
            self._owned = True
        self._data[rows] = vectors
        self._mask[rows] = True

    def _reserve(self, n_rows: int) -> None:
        have = self._data.shape[0]
        if n_rows <= have:
            return
        size = max(n_rows, 2 * have)
        data = np.zeros((size, self.dim), dtype=np.float32)
        data[:have] = self._data
        mask = np.zeros(size, dtype=bool)
        mask[:have] = self._mask
        self._data, self._mask, self._owned = data, mask, True


def _check_finite(data: np.ndarray) -> None:
    """Raise TreeError naming the first row with a NaN or infinite value: such a vector scores
    NaN against every query (the embedders refuse to make one; this catches a stored one)."""
    finite = np.isfinite(data).all(axis=1) if data.size else None
    if finite is not None and not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        msg = f"embedding row {row} holds NaN or infinite values; every value must be finite"
        raise TreeError(msg)
