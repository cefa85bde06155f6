"""One options model per method: settings declared once, validated once, reachable everywhere.

Each method's settings are a keyword-only, frozen dataclass derived from :class:`Options`
(``HtmlPrunerOptions``, and the same for the next methods). The core object takes one
(``HtmlPruner(options)``, or its fields as keywords), and both framework adapters build their
fields from it (:func:`adapter_model`), so adding a setting is one change in one file and every
core setting can be set from LangChain and LlamaIndex alike.

A field is declared with :func:`setting`, which keeps its one-line description for the
adapters' field descriptions and the API docs. Checks live in the subclass's
``__post_init__``, written with :func:`check_int`, :func:`check_number`, :func:`check_bool`
and :func:`check_str`, so a bad value fails when the options are made, with a message that names
the setting and what it takes.
"""

from __future__ import annotations

import dataclasses
import inspect
import numbers
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar, get_args, get_type_hints

from hrefine.errors import ConfigError, InputTypeError, PersistenceError, UnknownSettingError

__all__ = [
    "Options",
    "Rebuilt",
    "adapter_model",
    "check_bool",
    "check_int",
    "check_number",
    "check_str",
    "setting",
]

_O = TypeVar("_O", bound="Options")
# Values compared by value in an options key; anything else (a model, a tokenizer) by identity.
_PLAIN = (str, int, float, bool, type(None))


def setting(default: Any = dataclasses.MISSING, *, help: str) -> Any:
    """A field of an options dataclass with its one-line description.

    Parameters
    ----------
    default:
        The default value (immutable: options are frozen).
    help:
        One line saying what the setting does; the adapters use it as their field's
        description.
    """
    return dataclasses.field(default=default, metadata={"help": help})


@dataclasses.dataclass(frozen=True, kw_only=True)
class Options:
    """Base of every method's options: frozen, keyword-only, validated in ``__post_init__``.

    Subclasses are ``@dataclass(frozen=True, kw_only=True)`` and declare each field with
    :func:`setting`. Models (an embedder, an LM, a tokenizer object) may be values; they are
    compared by identity in :meth:`key` and left out of :meth:`plain`.
    """

    #: Fields the framework adapters do not expose as fields of their own (each adapter has a
    #: field of its framework's type in their place, converted in its ``_convert`` package). They
    #: are the models, so :meth:`from_saved` checks what a save names for them.
    adapter_excluded: ClassVar[frozenset[str]] = frozenset()
    #: Other names a setting is also taken under, alias -> setting (GARLIC's ``llm`` for
    #: ``lm``: every method takes its model as ``llm=``).
    aliases: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The setting names, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def describe(cls, name: str) -> str:
        """The one-line description of setting ``name``."""
        return str(cls._field(name).metadata.get("help", ""))

    @classmethod
    def default(cls, name: str) -> Any:
        """The default value of setting ``name``."""
        return cls._field(name).default

    @classmethod
    def _field(cls, name: str) -> dataclasses.Field[Any]:
        for f in dataclasses.fields(cls):
            if f.name == name:
                return f
        raise cls._unknown([name])

    @classmethod
    def from_saved(
        cls: type[_O],
        config: Mapping[str, Any],
        where: str,
        /,
        *,
        folder: str | os.PathLike[str] | None = None,
        given: Iterable[str] = (),
        load: str = "pass {name}= to the load",
    ) -> _O:
        """The options a saved tree, graph or index recorded.

        Names this class does not know are left out (a save by another hrefine version). A
        saved model setting (one of ``adapter_excluded``: a tokenizer, an embedder, an LLM) is
        opened later, so it may only be a model name or a file inside ``folder``
        (:func:`hrefine._saved_names.saved_model`); one the caller gives the load itself
        (``given``) is left out unread, as the caller's value wins.

        Parameters
        ----------
        config:
            The saved settings.
        where:
            The save, in messages.
        folder:
            The saved folder, whose own files a model setting may name (None: names only).
        given:
            Settings the caller passes to the load (their saved model values are not used).
        load:
            How to pass a model to this load, for messages; ``{name}`` is the setting.

        Raises
        ------
        PersistenceError
            A saved value is out of range, of the wrong type or a whole number beyond
            :data:`~hrefine._saved.MAX_SAVED_INT`, or a saved model setting names a path
            outside ``folder`` (``where`` names the save).
        """
        from hrefine._saved import MAX_SAVED_INT, first_unsaveable_int
        from hrefine._saved_names import saved_model

        too_large = first_unsaveable_int(dict(config))
        if too_large is not None:  # would pass the range checks, then overflow an int64
            msg = (
                f"{where}: a saved setting holds the whole number {too_large}, beyond the "
                f"{MAX_SAVED_INT} a saved file may hold"
            )
            raise PersistenceError(msg)
        known = set(cls.names())
        passed = {cls.aliases.get(n, n) for n in given}
        root = None if folder is None else Path(folder)
        values = {name: v for name, v in config.items() if name in known}
        for name in [n for n in values if n in cls.adapter_excluded]:  # in a stable order
            if name in passed:
                del values[name]  # the caller's model wins; the saved one is never opened
            else:
                values[name] = saved_model(name, values[name], where=where, folder=root, load=load)
        try:
            return cls.build(**values)
        except (ValueError, TypeError) as exc:
            msg = f"{where}: the saved settings are not valid {cls.__name__} settings: {exc}"
            raise PersistenceError(msg) from exc

    @classmethod
    def build(cls: type[_O], options: _O | None = None, /, **settings: Any) -> _O:
        """``options`` (or the defaults) with ``settings`` changed, validated once.

        Raises
        ------
        ConfigError
            A setting name is not one of this class's (the message lists them), a setting is
            given under its name and an alias, or a value is out of range.
        InputTypeError
            ``options`` is not a ``cls`` or a value is of the wrong type.
        """
        if options is not None and not isinstance(options, cls):
            msg = f"options must be a {cls.__name__}, got {type(options).__name__}"
            raise InputTypeError(msg)
        settings = cls._unaliased(settings)
        unknown = sorted(set(settings) - set(cls.names()))
        if unknown:
            raise cls._unknown(unknown)
        if options is None:
            return cls(**settings)
        return dataclasses.replace(options, **settings) if settings else options

    @classmethod
    def _unaliased(cls, settings: dict[str, Any]) -> dict[str, Any]:
        """``settings`` with each alias turned into its setting's name (ConfigError: both)."""
        if not cls.aliases.keys() & settings.keys():
            return settings
        out = dict(settings)
        for alias, name in cls.aliases.items():
            if alias in out:
                if name in out:
                    msg = f"give {name}= or {alias}= (the same setting), not both"
                    raise ConfigError(msg)
                out[name] = out.pop(alias)
        return out

    def replace(self: _O, **changes: Any) -> _O:
        """A copy with ``changes`` applied and validated (unknown names raise ConfigError)."""
        return type(self).build(self, **changes)

    def key(self) -> tuple[Any, ...]:
        """What a component built from these options depends on: plain values by value, models
        and other objects by identity (an adapter rebuilds its core object when this changes)."""
        return _key(getattr(self, n) for n in self.names())

    def plain(self) -> dict[str, Any]:
        """The settings whose values are JSON-able (str, numbers, bools, None), by name; models
        and other objects are left out (they are never saved)."""
        return {n: v for n in self.names() if isinstance(v := getattr(self, n), _PLAIN)}

    @classmethod
    def _unknown(cls, names: Iterable[str]) -> UnknownSettingError:
        valid = ", ".join(cls.names())
        names = list(names)
        msg = f"{cls.__name__} has no setting {', '.join(map(repr, names))}; valid: {valid}"
        return UnknownSettingError(msg, names)


def _key(values: Iterable[Any]) -> tuple[Any, ...]:
    """Plain values by value, anything else (a model, a tokenizer) by identity."""
    return tuple(v if isinstance(v, _PLAIN) else ("id", id(v)) for v in values)


def _typed(name: str, value: Any, numeric: type, kind: str, *, none: bool) -> bool:
    """Whether setting ``name`` is a ``numeric`` value (never a bool) to check further: False
    for None where ``none`` allows it; :class:`InputTypeError` for anything else."""
    if value is None and none:
        return False
    if isinstance(value, bool) or not isinstance(value, numeric):
        kind = f"{kind} or None" if none else kind
        msg = f"{name} must be {kind}, got {type(value).__name__} {value!r}"
        raise InputTypeError(msg)
    return True


def _check_minimum(name: str, value: Any, minimum: float | None, *, none: bool) -> None:
    if minimum is not None and value < minimum:
        msg = f"{name} must be >= {minimum}" + (" or None" if none else "") + f", got {value}"
        raise ConfigError(msg)


def check_int(name: str, value: Any, *, minimum: int | None = None, none: bool = False) -> None:
    """Check that setting ``name`` is an int (not a bool) of at least ``minimum`` (or None,
    where ``none``)."""
    if _typed(name, value, numbers.Integral, "an int", none=none):
        _check_minimum(name, value, minimum, none=none)


def check_number(
    name: str, value: Any, *, minimum: float | None = None, none: bool = False
) -> None:
    """Check that setting ``name`` is a finite number of at least ``minimum`` (or None, where
    ``none``)."""
    if not _typed(name, value, numbers.Real, "a number", none=none):
        return
    if value != value or value in (float("inf"), float("-inf")):
        msg = f"{name} must be a finite number, got {value}"
        raise ConfigError(msg)
    _check_minimum(name, value, minimum, none=none)


def check_model_name(setting: str, value: object) -> None:
    """Refuse a model named by an empty (or blank) string: the path ``""`` is the working
    folder, which would be loaded as a model. ``setting`` names it in the message (``lm``; the
    CLI shows its flag).

    Raises
    ------
    ConfigError
        ``value`` is a string of blanks only.
    """
    if isinstance(value, str) and not value.strip():
        msg = f"{setting} is an empty string; give a model folder or name, or None for the default"
        raise ConfigError(msg)


def named_models(**models: Any) -> dict[str, str]:
    """The ``models`` given by name or folder (a str or a path), as strings: the settings a
    method's options take from its keyword arguments, so that a save records them and a load
    uses the same models. A model object, or None, is left out (it cannot be saved)."""
    return {k: os.fspath(v) for k, v in models.items() if isinstance(v, (str, os.PathLike))}


def check_ints(options: object, minimum: int | None, *names: str, none: bool = False) -> None:
    """:func:`check_int` on each named field of ``options``, in order, with one ``minimum``."""
    for name in names:
        check_int(name, getattr(options, name), minimum=minimum, none=none)


def check_numbers(options: object, minimum: float | None, *names: str, none: bool = False) -> None:
    """:func:`check_number` on each named field of ``options``, in order, with one
    ``minimum``."""
    for name in names:
        check_number(name, getattr(options, name), minimum=minimum, none=none)


def check_bool(name: str, value: Any) -> None:
    """Check that setting ``name`` is a bool."""
    if not isinstance(value, bool):
        msg = f"{name} must be True or False, got {type(value).__name__} {value!r}"
        raise InputTypeError(msg)


def check_str(name: str, value: Any, *, none: bool = False) -> None:
    """Check that setting ``name`` is a string (or None, where ``none``)."""
    if not (isinstance(value, str) or (value is None and none)):
        msg = f"{name} must be a string, got {type(value).__name__}"
        raise InputTypeError(msg)


def adapter_model(base: type, options: type[Options], *, name: str) -> type:
    """A pydantic model class deriving from ``base`` with one field per setting of ``options``.

    Both framework adapters make their component's fields this way, so a setting is declared
    once (in the options dataclass) and reaches LangChain and LlamaIndex alike: each field has
    the setting's type, default and description. Settings in ``options.adapter_excluded`` are
    left out (the adapter declares a field of its framework's type in their place). Values are
    checked by the options class when the adapter builds its options from the fields. A
    ``ValidationError`` raised while the component is made names the field and its rule on its
    first line (:class:`~hrefine._adapter_errors.OneLineSettingErrors`).

    Parameters
    ----------
    base:
        The framework's pydantic base class (``BaseDocumentCompressor``,
        ``BaseNodePostprocessor``...).
    options:
        The method's options dataclass.
    name:
        Name of the generated class (the adapter subclasses it).
    """
    from pydantic import Field, create_model

    hints = get_type_hints(options)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(options):
        if f.name in options.adapter_excluded:
            continue
        description = str(f.metadata.get("help", ""))
        hint = hints[f.name]
        # Numbers and flags are strict: pydantic's lax mode would turn ``max_tokens=True`` or
        # ``top_n="2"`` into 1 and 2 before the options class could refuse them.
        strict = any(arg in (int, float, bool) for arg in get_args(hint) or (hint,))
        field = Field(default=f.default, description=description, strict=strict or None)
        fields[f.name] = (hint, field)
    from hrefine._adapter_errors import OneLineSettingErrors

    # Once in a class's bases is enough (the adapters stack two calls).
    bases: Any = base if issubclass(base, OneLineSettingErrors) else (OneLineSettingErrors, base)
    model: type = create_model(name, __base__=bases, __module__=base.__module__, **fields)
    return model


_T = TypeVar("_T")


class Rebuilt(Generic[_T]):
    """The core object a framework adapter makes from its fields, made again when a field
    changed since (a LangChain or LlamaIndex component's fields may be set after construction).

    Parameters
    ----------
    options:
        The method's options dataclass; the adapter has one field per setting outside
        ``options.adapter_excluded``.
    make:
        Builds the core object from validated options.
    """

    def __init__(self, options: type[Options], make: Callable[[Any], _T]) -> None:
        self.options = options
        self.make = make
        self._built: _T | None = None
        self._key: tuple[Any, ...] | None = None

    def get(self, owner: object, models: Mapping[str, tuple[Any, Callable[[Any], Any]]]) -> _T:
        """The object for ``owner``'s current fields.

        Parameters
        ----------
        owner:
            The adapter component; each setting is read from its field of the same name.
        models:
            Setting name -> (the adapter's framework object, its conversion to the core type):
            the excluded settings, converted only when the object is made again.
        """
        excluded = self.options.adapter_excluded
        values = {n: getattr(owner, n) for n in self.options.names() if n not in excluded}
        key = _key([*values.values(), *(raw for raw, _ in models.values())])
        if self._built is None or key != self._key:
            converted = {n: convert(raw) for n, (raw, convert) in models.items()}
            self._built = self.make(self.options.build(**values, **converted))
            self._key = key
        return self._built


def show_settings_as_keywords(init: Callable[..., None], options_type: type[Options]) -> None:
    """Give ``init``, an ``__init__(self, options=None, /, **settings)``, a signature that names
    every setting of ``options_type`` as a keyword with its default and type, which ``help()``
    and IDEs show instead of ``**settings``."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    init.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY),
            inspect.Parameter(
                "options",
                inspect.Parameter.POSITIONAL_ONLY,
                default=None,
                annotation=f"{options_type.__name__} | None",
            ),
            *(
                inspect.Parameter(f.name, keyword, default=f.default, annotation=f.type)
                for f in dataclasses.fields(options_type)
            ),
        ],
        return_annotation=None,
    )
