"""The method registry: names and import paths resolved to :class:`~hrefine.eval.Compressor`.

A method is given as

- a registered name (any case), which says what the method is: ``"lead-text"`` (the start of
  the document's text), ``"chunks-bm25"`` and ``"chunks-embedding"`` (~128-token chunks of the
  text ranked by BM25 or by all-MiniLM-L6-v2 embeddings): the baselines; ``"htmlrag"``
  (:class:`hrefine.html.HtmlPruner` with its defaults), ``"htmlrag-bm25"``
  (``scorer="bm25"``, no model) and ``"htmlrag-generative"`` (``generative=True``);
  ``"raptor"`` and ``"raptor-traversal"`` (:class:`hrefine.eval.raptor_method.RaptorCompressor`:
  a RAPTOR tree per document, retrieved from the collapsed tree or by traversal; option
  ``llm="extractive"|"default"|<model folder>``, no model unless told, as the library);
  ``"garlic"``
  (:class:`hrefine.eval.garlic_method.GarlicCompressor`: a GARLIC graph per document, searched
  for each question to the budget; the same ``llm`` option and default, where ``"default"`` is
  the embedded SmolLM2-135M);
  ``"longrefiner"`` and ``"longrefiner-lm"``
  (:class:`hrefine.eval.longrefiner_method.LongRefinerCompressor`: LongRefiner with no model,
  or with ``lm="default"``, the embedded SmolLM2-135M, for query analysis and section
  selection; other LongRefiner options pass through), imported when first asked for. The old
  names ``"lead"``, ``"bm25"`` and ``"embedding"`` (:data:`RENAMED_METHODS`) still work and
  warn: ``"bm25"`` read like the BM25 pruner;
- an import path ``"package.module:Name"``: a class (instantiated with the options), a function
  ``(document, query, max_tokens) -> str``, or an instance;
- an object: a :class:`Compressor`, a LangChain document compressor, a LlamaIndex node
  postprocessor, or anything with ``prune(html, query, max_tokens)`` returning ``.html``.

Classes get the evaluation's token counter as ``tokenizer=`` (or ``counter=``) when their
constructor takes it, so the method and the harness count the same tokens.

A factory or class that raises :class:`ImportError` (a missing optional package:
:class:`~hrefine.errors.MissingDependencyError`) makes its method unavailable, which an
evaluation skips saying why. Any other exception it raises (a bug in the factory, an option it
passes on to something that does not take it) is a :class:`~hrefine.errors.ConfigError` naming
the method and the original error, chained to it; an error of hrefine's own passes as it is.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hrefine.budget import TokenCounter, get_counter
from hrefine.errors import ConfigError, HrefineError, InputTypeError, UnknownSettingError
from hrefine.eval.base import Compressor, FunctionCompressor
from hrefine.eval.text import looks_like_html, text_to_html

__all__ = [
    "RENAMED_METHODS",
    "PrunerCompressor",
    "available_methods",
    "build_methods",
    "get_method",
    "register_method",
    "resolve_method_name",
]

MethodEntry = str | Callable[..., Any]

_REGISTRY: dict[str, MethodEntry] = {}

#: Old method names and the names that replaced them; the old ones still work, with a warning.
RENAMED_METHODS: dict[str, str] = {
    "lead": "lead-text",
    "bm25": "chunks-bm25",
    "embedding": "chunks-embedding",
}


def register_method(name: str, entry: MethodEntry) -> None:
    """Register a method under ``name``.

    Parameters
    ----------
    name:
        The name used by :func:`get_method`, ``run_eval`` and ``hrefine eval --method``.
    entry:
        A factory ``(tokenizer=..., **options) -> object`` or an import path
        ``"module:Name"`` resolved lazily. A factory that raises :class:`ImportError` marks
        the method unavailable (skipped by an evaluation); any other exception is reported
        as a :class:`~hrefine.errors.ConfigError` naming the method (see :func:`get_method`).
    """
    _REGISTRY[name] = entry


def available_methods() -> list[str]:
    """Registered method names, sorted."""
    return sorted(_REGISTRY)


def _lead(tokenizer: Any = None, **options: Any) -> Compressor:
    from hrefine.eval.baselines import LeadCompressor

    _check_options(LeadCompressor, options, "lead-text")
    return LeadCompressor(tokenizer, **options)


def _chunks(scorer: str) -> Callable[..., Compressor]:
    def build(tokenizer: Any = None, **options: Any) -> Compressor:
        from hrefine.eval.baselines import ChunkCompressor

        _check_options(ChunkCompressor, options, f"chunks-{scorer}")
        options.setdefault("name", f"chunks-{scorer}")
        return ChunkCompressor(scorer, tokenizer=tokenizer, **options)

    return build


def _htmlrag(name: str, **preset: Any) -> Callable[..., Compressor]:
    def build(tokenizer: Any = None, **options: Any) -> Compressor:
        from hrefine.html import HtmlPruner

        options.pop("chunk_tokens", None)  # the pruner has no chunks; see _lead
        return PrunerCompressor(HtmlPruner(tokenizer=tokenizer, **{**preset, **options}), name)

    return build


register_method("lead-text", _lead)
register_method("chunks-bm25", _chunks("bm25"))
register_method("chunks-embedding", _chunks("embedding"))
register_method("htmlrag", "hrefine.html:HtmlPruner")
register_method("htmlrag-bm25", _htmlrag("htmlrag-bm25", scorer="bm25"))
register_method("htmlrag-generative", _htmlrag("htmlrag-generative", generative=True))


def _raptor(mode: str) -> Callable[..., Compressor]:
    def build(tokenizer: Any = None, **options: Any) -> Compressor:
        from hrefine.eval.raptor_method import RaptorCompressor

        return RaptorCompressor(mode, tokenizer=tokenizer, **options)

    return build


register_method("raptor", _raptor("collapsed"))
register_method("raptor-traversal", _raptor("traversal"))


def _garlic(tokenizer: Any = None, **options: Any) -> Compressor:
    from hrefine.eval.garlic_method import GarlicCompressor

    return GarlicCompressor(tokenizer=tokenizer, **options)


register_method("garlic", _garlic)


def _longrefiner(name: str, **preset: Any) -> Callable[..., Compressor]:
    def build(tokenizer: Any = None, **options: Any) -> Compressor:
        from hrefine.eval.longrefiner_method import LongRefinerCompressor

        return LongRefinerCompressor(tokenizer=tokenizer, name=name, **{**preset, **options})

    return build


register_method("longrefiner", _longrefiner("longrefiner"))
register_method("longrefiner-lm", _longrefiner("longrefiner-lm", lm="default"))


def resolve_method_name(name: str) -> str:
    """The registered name ``name`` stands for: the same name in any case, or the new name of
    a renamed one (:data:`RENAMED_METHODS`). Import paths (``"module:Name"``) come back as given.

    Parameters
    ----------
    name:
        A method name as a user typed it.

    Returns
    -------
    str
        A key of the registry, or the import path.

    Raises
    ------
    ConfigError
        ``name`` is neither registered, renamed nor an import path; the message lists the
        registered names and suggests the nearest one.
    """
    if ":" in name or name in _REGISTRY:
        return name
    key = name.strip().lower()
    if key in _REGISTRY:
        return key
    if key in RENAMED_METHODS:
        return RENAMED_METHODS[key]
    known = available_methods()
    close = difflib.get_close_matches(key, [*known, *RENAMED_METHODS], n=1, cutoff=0.6)
    hint = f"; did you mean {RENAMED_METHODS.get(close[0], close[0])!r}?" if close else ""
    msg = f"unknown method {name!r}; use one of {', '.join(known)} or 'module:Name'{hint}"
    raise ConfigError(msg)


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


# Parameters the evaluation fills in itself, not options of the user's.
_GIVEN = frozenset({"self", "tokenizer", "counter", "name"})


def _params(cls: type) -> set[str]:
    try:
        return set(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return set()


def _check_options(factory: Any, options: Mapping[str, Any], method: object) -> None:
    """Refuse options ``factory`` has no parameter for: a misspelt option is the caller's
    mistake (a ConfigError), not a method that is unavailable (which an evaluation skips)."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # no signature to read: the constructor says
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    unknown = sorted(set(options) - set(params))
    if unknown:
        named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        takes = [n for n, p in params.items() if p.kind in named and n not in _GIVEN]
        msg = (
            f"method {method!r} takes no option {', '.join(map(repr, unknown))}; "
            f"its options: {', '.join(takes) or 'none'}"
        )
        raise UnknownSettingError(msg, unknown)


def _build(factory: Callable[..., Any], kwargs: Mapping[str, Any], method: object) -> Any:
    """``factory(**kwargs)``. Only a missing package (an ImportError) may leave a method
    unavailable, which an evaluation skips: any other failure, a bug in the factory or an
    option passed on to something that does not take it, would be skipped as one too, so it
    is a ConfigError naming the method (hrefine's own errors already say what is wrong)."""
    try:
        return factory(**kwargs)
    except (ImportError, HrefineError):
        raise
    except Exception as exc:
        what = getattr(factory, "__qualname__", None) or type(factory).__name__
        msg = f"method {method!r} could not be built: {what}() raised {type(exc).__name__}: {exc}"
        raise ConfigError(msg) from exc


def _chunk_tokens(options: Mapping[str, Any]) -> int:
    """The ``chunk_tokens`` option (default 128) as a whole number."""
    value = options.get("chunk_tokens", 128)
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        msg = f"option chunk_tokens must be a whole number of tokens, got {value!r}"
        raise ConfigError(msg) from exc


def _instantiate(cls: type, counter: TokenCounter, options: dict[str, Any], method: object) -> Any:
    label = method if isinstance(method, str) else cls.__name__
    _check_options(cls, options, label)
    kwargs = dict(options)
    params = _params(cls)
    for key in ("tokenizer", "counter"):
        if key in params and key not in kwargs:
            kwargs[key] = counter
            break
    return _build(cls, kwargs, label)


def _adapt(obj: Any, counter: TokenCounter, name: str | None, chunk_tokens: int) -> Compressor:
    import hrefine.eval._frameworks as _frameworks

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
        A registered name (any case; a renamed one warns with :class:`FutureWarning`), an
        import path ``"module:Name"``, a class, a function or an instance (see the module
        docstring).
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
    ConfigError
        An unknown name (with the nearest registered one), a bad import path, an option the
        method does not take, or a factory or class that failed for any reason other than a
        missing package (the message names the method and the error, chained as its cause).
    ImportError
        The method's module, or an optional package its factory needs, cannot be imported
        (:class:`~hrefine.errors.MissingDependencyError` names the extra to install).
    """
    counter = get_counter(tokenizer)
    label = name
    target: Any = method
    if isinstance(method, str):
        key = resolve_method_name(method)
        if method.strip().lower() in RENAMED_METHODS:
            msg = f"method {method!r} is now called {key!r}; the old name will be removed"
            warnings.warn(msg, FutureWarning, stacklevel=2)
        if key in _REGISTRY:
            label = label or key
            target = _REGISTRY[key]
            if not isinstance(target, str):
                _check_options(target, options, key)
                comp = _build(target, {"tokenizer": counter, **options}, key)
                if label == getattr(comp, "name", None) and callable(
                    getattr(comp, "compress", None)
                ):
                    return comp  # type: ignore[no-any-return]
                # A factory may return any documented form (a plain function included).
                return _adapt(comp, counter, label, _chunk_tokens(options))
        if isinstance(target, str):
            target = _import(target)
    chunk_tokens = _chunk_tokens(options)
    if not (inspect.isclass(target) and "chunk_tokens" in _params(target)):
        options.pop("chunk_tokens", None)
    if inspect.isclass(target):
        label = label or target.__name__
        target = _instantiate(target, counter, options, method)
    elif options:
        msg = f"options {sorted(options)} given, but {method!r} is not a class to construct"
        raise UnknownSettingError(msg, sorted(options))
    return _adapt(target, counter, label, chunk_tokens)


def _taking(
    method: Any, options: Mapping[str, Any], tokenizer: Any
) -> tuple[Compressor, tuple[str, ...]]:
    """``method`` built with the options it takes, and the names of those it does not."""
    left: list[str] = []
    while True:
        given = {k: v for k, v in options.items() if k not in left}
        try:
            return get_method(method, tokenizer=tokenizer, **given), tuple(sorted(left))
        except UnknownSettingError as exc:
            fresh = [name for name in exc.unknown if name in given]
            if not fresh:  # not one of ours: an option a factory passes on itself
                raise
            left.extend(fresh)


def build_methods(
    methods: Sequence[Any],
    options: Mapping[str, Any] | None = None,
    *,
    tokenizer: Any = None,
    fail_fast: bool = False,
) -> list[tuple[Compressor | ImportError, tuple[str, ...]]]:
    """Build the methods of one run, which share ``options``.

    One method must take every option (as :func:`get_method` says). Several methods are each
    built with the options they take, so that ``embedder=...`` can go to a run that also has
    ``lead-text``; an option that no method takes is a misspelling, and a ConfigError.

    Returns
    -------
    list
        Per method, in order: the method, or the :class:`ImportError` that makes it unavailable
        (a missing optional package; raised with ``fail_fast``), and the names of the options
        it was built without.

    Raises
    ------
    ConfigError
        An option no method takes, or anything :func:`get_method` raises but an ImportError.
    """
    shared = dict(options or {})
    out: list[tuple[Compressor | ImportError, tuple[str, ...]]] = []
    for method in methods:
        try:
            if len(methods) == 1:
                out.append((get_method(method, tokenizer=tokenizer, **shared), ()))
            else:
                out.append(_taking(method, shared, tokenizer))
        except ImportError as exc:
            if fail_fast:
                raise
            out.append((exc, ()))
    taken_by_none = set(shared)
    for comp, left in out:
        if not isinstance(comp, ImportError):
            taken_by_none &= set(left)
    if taken_by_none and all(not isinstance(comp, ImportError) for comp, _ in out):
        msg = (
            f"no method of the run takes option {', '.join(map(repr, sorted(taken_by_none)))}; "
            "check its spelling (`hrefine eval --list` shows each method)"
        )
        raise ConfigError(msg)
    return out
