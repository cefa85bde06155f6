"""The cache of model-made structures: in memory (the most recent few) and, with a
``cache_dir``, on disk, one folder per document hash and settings.

A damaged, forged or linked entry is a miss, never an error: the model structures the
document again, and the note saying why goes on the next structure built for that key.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from hrefine.errors import PersistenceError, TreeError
from hrefine.longrefiner.document import StructuredDocument, check_structure

__all__ = ["StructureCache"]

logger = logging.getLogger("hrefine.longrefiner.pipeline")  # the logger it always wrote to

# Structures kept in memory per refiner.
_MEMORY_CACHE = 256
_STRUCTURE_KIND = "longrefiner_structure"


def _is_str_list(value: object) -> bool:
    """Whether ``value`` is a list of strings (a config's notes and raw outputs)."""
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


class StructureCache:
    """Structures by key, in memory and in ``folder`` (None: in memory only).

    Pickled as its folder: what it holds in memory is built again on first use.
    """

    def __init__(self, folder: str | os.PathLike[str] | None) -> None:
        self.folder = folder
        self._lock = threading.Lock()
        self._memory: OrderedDict[str, StructuredDocument] = OrderedDict()
        # Entries found damaged, by key, until the structure is built again (its note).
        self._damaged: dict[str, str] = {}

    def __reduce__(self) -> tuple[type[StructureCache], tuple[Any]]:
        return (StructureCache, (self.folder,))

    def pop_damaged(self, key: str) -> str | None:
        """Why the entry of ``key`` was not used, once (None when it was not found damaged)."""
        return self._damaged.pop(key, None)

    def get(self, key: str, text: str) -> StructuredDocument | None:
        """The structure of ``text`` stored under ``key``, or None (a miss)."""
        with self._lock:
            doc = self._memory.get(key)
            if doc is not None:
                self._memory.move_to_end(key)
                return doc
        entry = self._entry(key)
        if entry is None or not entry.exists():
            return None
        from hrefine.persist import load_tree

        try:
            tree, config, _ = load_tree(entry, kind=_STRUCTURE_KIND)
        except (OSError, PersistenceError) as exc:
            # A damaged entry (cut short by a crash, edited, not ours) is a miss: the model
            # structures the document again and the entry is written again, whole.
            self._miss(key, f"the cached structure {entry} is unreadable ({exc})")
            return None
        if (
            config.get("text_sha256")
            != hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        ):
            return None
        source, title = config.get("source", "model"), config.get("title", "")
        notes, raw_outputs = config.get("notes", []), config.get("raw_outputs", [])
        if not (
            isinstance(source, str)
            and isinstance(title, str)
            and _is_str_list(notes)
            and _is_str_list(raw_outputs)
        ):
            # Was a raw TypeError on every refine: a forged entry can pass the checksums.
            self._miss(key, f"the cached structure {entry} has a malformed config")
            return None
        doc = StructuredDocument(
            text, tree, source, title=title, notes=list(notes), raw_outputs=list(raw_outputs)
        )
        try:
            # A forged entry can pass the checksums (they are recomputed with it): the tree is
            # checked as a model's is, so no paragraph is lost to an emptied extent.
            check_structure(doc)
        except TreeError as exc:
            self._miss(key, f"the cached structure {entry} does not fit the text ({exc})")
            return None
        self._remember(key, doc)
        return doc

    def _entry(self, key: str) -> Path | None:
        """The cache folder of ``key`` (None without a cache), never a link out of it.

        A link in the entry's place is removed, not followed: reading through it would use a
        structure from elsewhere, and writing through it would put files outside ``cache_dir``.
        """
        folder = self.folder
        if folder is None:
            return None
        entry = Path(folder) / key
        if entry.is_symlink():
            note = f"the cached structure {entry} is a link, not a folder; removed"
            logger.warning("LongRefiner: %s", note)
            self._damaged[key] = f"{note}; structured again"
            with contextlib.suppress(OSError):  # _store fails cleanly if it is still there
                entry.unlink()
        return entry

    def _miss(self, key: str, why: str) -> None:
        note = f"{why}; structured again"
        logger.warning("LongRefiner: %s", note)
        self._damaged[key] = note

    def _remember(self, key: str, doc: StructuredDocument) -> None:
        with self._lock:
            self._memory[key] = doc
            while len(self._memory) > _MEMORY_CACHE:
                self._memory.popitem(last=False)

    def put(self, key: str, doc: StructuredDocument) -> None:
        """Keep ``doc`` under ``key``: in memory and, with a folder, on disk."""
        self._remember(key, doc)
        folder = self.folder
        entry = self._entry(key)
        if folder is None or entry is None:
            return
        if entry.is_symlink():
            note = f"the structure could not be cached: {entry} is a link that cannot be removed"
            doc.notes.append(note)
            logger.warning("LongRefiner: %s", note)
            return
        from hrefine.persist import save_tree

        config = {
            "text_sha256": hashlib.sha256(doc.text.encode("utf-8", "surrogatepass")).hexdigest(),
            "source": doc.source,
            "title": doc.title,
            "notes": list(doc.notes),
            "raw_outputs": list(doc.raw_outputs),
        }
        try:
            save_tree(doc.tree, entry, kind=_STRUCTURE_KIND, config=config)
        except (OSError, PersistenceError) as exc:
            # The cache only saves a model call next time: the structure is still good.
            note = f"the structure could not be cached in {folder}: {exc}"
            doc.notes.append(note)
            logger.warning("LongRefiner: %s", note)
