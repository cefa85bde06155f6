"""``HtmlPageNodeParser``: HTML documents into index nodes that are whole HTML.

``VectorStoreIndex.from_documents(html_docs)`` splits documents with LlamaIndex's default
``SentenceSplitter``, which cuts raw HTML anywhere: inside tags, attributes and table rows, so
the retrieved nodes hold fragments that neither a reader nor the pruner can parse. This parser
cleans each document as :class:`~hrefine.html.HtmlPruner` does and gives either the whole
cleaned page as one node, or the cleaned page cut at block boundaries into well-formed HTML
pieces of at most ``chunk_size`` tokens, each opening with its headings and table header
(:func:`hrefine.html.split.split_page`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from hrefine._adapter_errors import OneLineSettingErrors
from hrefine.budget import MemoCounter, TokenCounter, get_counter
from hrefine.errors import ConfigError, EmptyInputError
from hrefine.html.clean import serialize
from hrefine.html.formats import check_input_format
from hrefine.html.split import check_piece_size, clean_page, split_page
from hrefine.options import check_bool
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.node_parser import NodeParser
from llama_index.core.schema import BaseNode, MetadataMode
from llama_index.core.utils import get_tqdm_iterable

from llamaindex_hrefine._convert import pieces_to_nodes

__all__ = ["HtmlPageNodeParser"]

logger = logging.getLogger(__name__)

_MODES = ("auto", "page", "blocks")


class HtmlPageNodeParser(OneLineSettingErrors, NodeParser):
    """A LlamaIndex node parser that never cuts HTML mid-tag.

    Notes
    -----
    Every field is a keyword of the constructor, as are ``NodeParser``'s own
    (``include_metadata``, ``include_prev_next_rel``, ``callback_manager``, ``id_func``).
    Each node copies its document's metadata (none with ``include_metadata=False``) and
    excluded metadata keys, has a SOURCE
    relationship to it and no embedding; documents are not changed. A document with no
    visible text gives no node (logged at INFO level). ``chunk_size`` counts the node's
    text, not the metadata an embed model may be shown with it.

    Examples
    --------
    >>> from llama_index.core import Document, VectorStoreIndex  # doctest: +SKIP
    >>> parser = HtmlPageNodeParser(chunk_size=512)
    >>> index = VectorStoreIndex.from_documents(docs, transformations=[parser])  # doctest: +SKIP
    """

    chunk_size: int | None = Field(
        default=None, description="Largest node in tokens; None: one node per document."
    )
    """Largest node, in tokens of ``tokenizer`` (at least 16). None (default): one node per
    document.
    """
    mode: str = Field(
        default="auto",
        description="'page' (one node per document), 'blocks' (pieces of chunk_size tokens) or "
        "'auto' ('blocks' when chunk_size is set).",
    )
    """``"page"``: one node per document, holding its cleaned page; ``"blocks"``: the cleaned
    page cut at block boundaries into pieces of at most ``chunk_size`` tokens, each whole
    HTML, opening with the headings in force and, inside a table, its header row;
    ``"auto"`` (default): ``"blocks"`` when ``chunk_size`` is set, else ``"page"``.
    """
    tokenizer: Any = Field(
        default=None, exclude=True, description="What counts chunk_size; None: Llama-3.2's."
    )
    """What counts ``chunk_size`` (:func:`hrefine.budget.get_counter`: a name such as
    ``"regex"``, a ``tokenizer.json`` path, a Hugging Face tokenizer or ``str -> int``;
    default: Llama-3.2's). Not serialised.
    """
    boilerplate: bool = Field(default=True, description="Remove navigation, footers, sidebars.")
    """Remove navigation, footers and other boilerplate while cleaning."""
    input_format: str = Field(default="auto", description="'auto', 'html', 'markdown' or 'text'.")
    """``"auto"`` (default), ``"html"``, ``"markdown"`` or ``"text"``: Markdown and plain text
    documents are written as HTML first (:func:`hrefine.html.formats.to_html`).
    """

    _counter: TokenCounter | None = PrivateAttr(default=None)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Checked here rather than in a validator: pydantic would wrap hrefine's errors.
        if self.mode not in _MODES:
            msg = f"mode must be one of {', '.join(map(repr, _MODES))}, got {self.mode!r}"
            raise ConfigError(msg)
        if self.chunk_size is not None:
            check_piece_size(self.chunk_size)
        elif self.mode == "blocks":
            msg = "mode='blocks' needs a chunk_size (the largest node in tokens); set one"
            raise ConfigError(msg)
        check_input_format(self.input_format)
        check_bool("boilerplate", self.boilerplate)

    @classmethod
    def class_name(cls) -> str:
        """Stable name used by LlamaIndex serialisation."""
        return "HtmlPageNodeParser"

    @property
    def splits(self) -> bool:
        """Whether documents are cut into pieces (else one node per document)."""
        return self.mode == "blocks" or (self.mode == "auto" and self.chunk_size is not None)

    def _count(self) -> TokenCounter:
        if self._counter is None:
            counter = get_counter(self.tokenizer)
            self._counter = counter if isinstance(counter, MemoCounter) else MemoCounter(counter)
        return self._counter

    def split_html(self, text: str | bytes) -> list[str]:
        """The node texts of one document's content (empty when it has no visible text)."""
        try:
            root, _ = clean_page(text, boilerplate=self.boilerplate, input_format=self.input_format)
        except EmptyInputError as exc:
            logger.info("HtmlPageNodeParser: no node for an empty document: %s", exc)
            return []
        if not self.splits:
            return [serialize(root)]
        assert self.chunk_size is not None
        return split_page(root, self.chunk_size, tokenizer=self._count())

    def _parse_nodes(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        out: list[BaseNode] = []
        for node in get_tqdm_iterable(nodes, show_progress, "Parsing HTML"):
            pieces = self.split_html(node.get_content(metadata_mode=MetadataMode.NONE))
            out.extend(
                pieces_to_nodes(node, pieces, self.id_func, include_metadata=self.include_metadata)
            )
        return out
