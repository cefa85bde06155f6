"""The method registry: names and import paths resolved to :class:`~hrefine.eval.Compressor`.

A method is given as

- a registered name: ``"lead"``, ``"bm25"``, ``"embedding"`` (the baselines) or ``"htmlrag"``
  (:class:`hrefine.html.HtmlPruner`, imported when first asked for);
- an import path ``"package.module:Name"``: a class (instantiated with the options), a function
  ``(document, query, max_tokens) -> str``, or an instance;
- an object: a :class:`Compressor`, a LangChain document compressor, a LlamaIndex node
  postprocessor, or anything with ``prune(html, query, max_tokens)`` returning ``.html``.

Classes get the evaluation's token counter as ``tokenizer=`` (or ``counter=``) when their
constructor takes it, so the method and the harness count the same tokens.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from hrefine.budget import TokenCounter, get_counter
from hrefine.errors import ConfigError, InputTypeError
from hrefine.eval.base import Compressor, FunctionCompressor
from hrefine.eval.text import looks_like_html, text_to_html

__all__ = ["PrunerCompressor", "available_methods", "get_method", "register_method"]

MethodEntry = str | Callable[..., Any]

_REGISTRY: dict[str, MethodEntry] = {}


def register_method(name: str, entry: MethodEntry) -> None:
    """Register a method under ``name``.

    Parameters
    ----------
    name:
        The name used by :func:`get_method`, ``run_eval`` and ``hrefine eval --method``.
    entry:
        A factory ``(tokenizer=..., **options) -> object`` or an import path
        ``"module:Name"`` resolved lazily.
    """
    _REGISTRY[name] = entry


def available_methods() -> list[str]:
    """Registered method names, sorted."""
    return sorted(_REGISTRY)


def _lead(tokenizer: Any = None, **options: Any) -> Compressor:
    from hrefine.eval.baselines import LeadCompressor

    options.pop("chunk_tokens", None)  # lead has no chunks; accepted so mixed runs share options
    return LeadCompressor(tokenizer, **options)


def _bm25(tokenizer: Any = None, **options: Any) -> Compressor:
    from hrefine.eval.baselines import ChunkCompressor

    return ChunkCompressor("bm25", tokenizer=tokenizer, **options)


def _embedding(tokenizer: Any = None, **options: Any) -> Compressor:
    from hrefine.eval.baselines import ChunkCompressor

    return ChunkCompressor("embedding", tokenizer=tokenizer, **options)


register_method("lead", _lead)
register_method("bm25", _bm25)
register_method("embedding", _embedding)
register_method("htmlrag", "hrefine.html:HtmlPruner")


class PrunerCompressor:
    """Adapts an object with ``prune(html, query, max_tokens)`` (e.g. ``HtmlPruner``).

    Plain-text documents are wrapped as HTML first (one ``<p>`` per paragraph). The result's
    ``.html`` (or the result itself, when it is a string) is returned.

    Parameters
    ----------
    pruner:
        The pruner.
    name:
        Report name (default: the class name).
    """

    def __init__(self, pruner: Any, name: str | None = None) -> None:
        self.pruner = pruner
        self.name = name or type(pruner).__name__

    def compress(self, document: str, query: str, max_tokens: int) -> str:
        """Prune ``document`` (HTML, or plain text wrapped as a page) for ``query`` to
        ``max_tokens``; return the pruned HTML."""
        markup = document if looks_like_html(document) else text_to_html(document)
        result = self.pruner.prune(markup, query, max_tokens)
        return result if isinstance(result, str) else str(result.html)


def _import(path: str) -> Any:
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        msg = f"expected an import path 'package.module:Name', got {path!r}"
        raise ConfigError(msg)
    module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            msg = f"{module_name!r} has no attribute {attr!r}"
            raise ConfigError(msg) from exc
    return obj


def _params(cls: type) -> set[str]:
    try:
        return set(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return set()


def _instantiate(cls: type, counter: TokenCounter, options: dict[str, Any]) -> Any:
    kwargs = dict(options)
    params = _params(cls)
    for key in ("tokenizer", "counter"):
        if key in params and key not in kwargs:
            kwargs[key] = counter
            break
    return cls(**kwargs)


def _adapt(obj: Any, counter: TokenCounter, name: str | None, chunk_tokens: int) -> Compressor:
    from hrefine.eval import _frameworks

    if callable(getattr(obj, "compress", None)):
        if name is not None or not isinstance(getattr(obj, "name", None), str):
            return FunctionCompressor(obj.compress, name=name or type(obj).__name__)
        return obj  # type: ignore[no-any-return]
    if _frameworks.is_langchain(obj):
        return _frameworks.LangChainCompressor(
            obj, tokenizer=counter, chunk_tokens=chunk_tokens, name=name
        )
    if _frameworks.is_llamaindex(obj):
        return _frameworks.LlamaIndexCompressor(
            obj, tokenizer=counter, chunk_tokens=chunk_tokens, name=name
        )
    if callable(getattr(obj, "prune", None)):
        return PrunerCompressor(obj, name=name)
    if callable(obj):
        return FunctionCompressor(obj, name=name)
    msg = (
        f"cannot evaluate a {type(obj).__name__}: expected compress(document, query, max_tokens), "
        "a LangChain compressor, a LlamaIndex postprocessor or prune(html, query, max_tokens)"
    )
    raise InputTypeError(msg)


def get_method(
    method: Any,
    *,
    tokenizer: Any = None,
    name: str | None = None,
    **options: Any,
) -> Compressor:
    """Resolve ``method`` into a :class:`Compressor`.

    Parameters
    ----------
    method:
        A registered name, an import path ``"module:Name"``, a class, a function or an instance
        (see the module docstring).
    tokenizer:
        The evaluation's tokenizer (anything :func:`hrefine.budget.get_counter` accepts); given
        to classes whose constructor takes ``tokenizer`` or ``counter``.
    name:
        Report name (default: the registered name, or the class/function name).
    **options:
        Constructor keyword arguments. For a LangChain or LlamaIndex component,
        ``chunk_tokens`` (default 128) is taken out and sets the size of the chunks it receives.

    Returns
    -------
    Compressor
        The method, ready for ``compress(document, query, max_tokens)``.

    Raises
    ------
    ValueError
        An unknown name or a bad import path.
    ImportError
        The method's module cannot be imported (e.g. ``htmlrag`` before ``hrefine.html`` exists).
    """
    counter = get_counter(tokenizer)
    label = name
    target: Any = method
    if isinstance(method, str):
        if method in _REGISTRY:
            label = label or method
            target = _REGISTRY[method]
            if not isinstance(target, str):
                comp = target(tokenizer=counter, **options)
                if label != getattr(comp, "name", None):
                    return FunctionCompressor(comp.compress, name=label)
                return comp  # type: ignore[no-any-return]
        elif ":" not in method:
            msg = f"unknown method {method!r}; use one of {available_methods()} or 'module:Name'"
            raise ConfigError(msg)
        if isinstance(target, str):
            target = _import(target)
    chunk_tokens = int(options.get("chunk_tokens", 128))
    if not (inspect.isclass(target) and "chunk_tokens" in _params(target)):
        options.pop("chunk_tokens", None)
    if inspect.isclass(target):
        label = label or target.__name__
        target = _instantiate(target, counter, options)
    elif options:
        msg = f"options {sorted(options)} given, but {method!r} is not a class to construct"
        raise ConfigError(msg)
    return _adapt(target, counter, label, chunk_tokens)
