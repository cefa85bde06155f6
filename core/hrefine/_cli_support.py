"""What every ``hrefine`` command shares: one-line errors, quiet model loading, a "loading" line.

These change process-wide state (environment variables, warning filters, transformers'
verbosity), so only the command line calls them: the library itself never does.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import warnings
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from hrefine._folders import folder_problem
from hrefine.errors import ConfigError, HrefineError
from hrefine.models.embedder_folder import EMBEDDED_EMBEDDER

__all__ = [
    "DEBUG_ENV",
    "InputFile",
    "OneLineErrors",
    "announce_loading",
    "flags_for_names",
    "loading_line",
    "make_folders",
    "one_line",
    "plain_flags",
    "quiet_model_loading",
    "read_files",
    "read_input",
    "removed_if_failed",
    "say",
]

#: Environment variable that, set to 1, makes the CLI show tracebacks (as ``--debug`` does).
DEBUG_ENV = "HREFINE_DEBUG"

# Display names of the embedded models, for the "loading ..." line printed before they load.
_EMBEDDER = EMBEDDED_EMBEDDER
_LM = "SmolLM2-135M-Instruct"
_TOKENIZER = "the Llama-3.2 tokenizer"

# The folders each running command made (one list per command, the innermost last); none
# outside a command, so the library and direct calls note nothing.
_MADE: list[list[Path]] = []


def one_line(exc: BaseException) -> str:
    """``exc``'s message on one line (whitespace runs, newlines included, become one space)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def say(line: str) -> None:
    """Print ``line`` to stderr (stdout carries the command's output)."""
    typer.echo(line, err=True)


def plain_flags(command: Any) -> None:
    """Show the on/off flags of ``command`` and of every command under it as plain flags.

    typer's help prints a value type beside each option, ``<bool>`` for a flag that takes no
    value (``--quiet <bool>``, even ``--help <bool>``). An empty metavar leaves that column
    empty for flags; options that take a value keep their type.
    """
    help_option = command.get_help_option(typer.Context(command))
    for param in [*command.params, help_option]:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        plain_flags(sub)


# The parser's error class: click's, which typer re-exports only through BadParameter (typer
# 0.29 vendors click, older typers use the click package).
UsageError: Any = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")

# Values HREFINE_DEBUG turns --debug on with (click's for a bool: "yes", "on", "1", ...).
_TRUE = frozenset({"1", "true", "t", "yes", "y", "on"})
# Keys of the contexts' shared ``meta``: the root's arguments, and the innermost context an
# HrefineError left (the command whose flags its message is about).
_ARGS = "hrefine.args"
_FAILED_IN = "hrefine.failed_in"


def _help_shown(exc: BaseException) -> bool:
    """Whether ``exc`` is a group run without arguments (``hrefine``, ``hrefine raptor``):
    typer printed its help already and exits 2 with nothing more (matched by name, as typer
    itself does: the class is not exported)."""
    return type(exc).__name__ == "NoArgsIsHelpError"


def _debug_asked(args: Sequence[str]) -> bool:
    """Whether ``--debug`` (before any ``--``) or ``HREFINE_DEBUG`` asks for tracebacks; for a
    mistake in the root's own options, which fails before ``--debug`` is parsed."""
    end = args.index("--") if "--" in args else len(args)
    return "--debug" in args[:end] or os.environ.get(DEBUG_ENV, "").strip().lower() in _TRUE


def _usage_line(exc: Any) -> str:
    """The one line for a parser error: click's message and the help that explains it."""
    where = exc.ctx.command_path if exc.ctx is not None else "hrefine"
    message = " ".join(exc.format_message().split())
    return f"hrefine: error: {message} (see {where} --help)"


class _NotingContext(typer.Context):
    """A command's context that notes itself in the shared ``meta`` when an HrefineError leaves
    it. The innermost context is left first, so the root learns which command failed (and so
    whose flags its message names) after the contexts are gone."""

    def __exit__(self, exc_type: Any, exc_value: Any, tb: Any) -> Any:
        noted = self.meta.get(_FAILED_IN)
        if isinstance(exc_value, HrefineError) and (noted is None or noted[0] is not exc_value):
            self.meta[_FAILED_IN] = (exc_value, self)
        return super().__exit__(exc_type, exc_value, tb)


def _note_failures(command: Any) -> None:
    """Make ``command`` and every command under it use :class:`_NotingContext`."""
    command.context_class = _NotingContext
    for sub in getattr(command, "commands", {}).values():
        _note_failures(sub)


# Python names a message may hold: whole identifiers, not part of a flag (--max-tokens), a path
# (out/max_tokens) or a dotted name (options.k).
_NAME = re.compile(r"(?<![\w./\\-])[A-Za-z_]\w*(?![\w-]|\.\w)")
# Text never rewritten: quotes ('...', "...", `...`) hold the values the user gave (``got
# 'max_tokens'`` for ``--mode max_tokens``) or a command; a call is Python
# (``RaptorTree.load(path, embedder=...)``). A quote after a letter is an apostrophe (tree's).
_KEPT = re.compile(r"""(?<!\w)(['"`]).*?\1|\w\([^()]*\)""")
# What follows a setting's name that opens a message: the options checks' ``{name} must ...``.
_CLAIM = re.compile(r"\s+(?:must|is)\b")


def _texts(value: Any) -> Iterator[str]:
    """The texts in a parameter's value (a str, a path, or a list of them)."""
    if isinstance(value, str | os.PathLike):
        yield str(value)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _texts(item)


def _flag(param: Any, typed: Collection[str]) -> str:
    """The flag to show for ``param``: the long one the user typed (``--lm`` of
    ``--llm/--lm``), else its first long one (``--max-tokens`` for ``-n``)."""
    longs = [o for o in param.opts if o.startswith("--")] or list(param.opts)
    return next((o for o in longs if o in typed), longs[0])


def flags_for_names(message: str, ctx: Any) -> str:
    """``message`` with the Python names of the options of ``ctx``'s command shown as the
    flags a user types (``summary_rank must be ...`` -> ``--summary-rank must be ...``).

    The library's messages name its settings, which the CLI's options share; only the CLI shows
    flags. To leave prose alone, a name is rewritten only where it can be nothing but the
    setting: a name with an underscore (never an English word) anywhere, a name without one
    only where it opens the message as the subject of ``must``/``is`` (``mode must be one of
    ...``; ``input format must ...`` stays, as ``the question is empty`` does). Nothing inside
    quotes or a call (:data:`_KEPT`), nor a value the user gave (a file named ``max_layers``),
    is rewritten; nor a flag's ``name=True`` (a flag takes no value).
    """
    given = [t for v in ctx.params.values() for t in _texts(v) if t]
    kept = [m.span() for m in _KEPT.finditer(message)]
    for text in given:
        pattern = rf"(?<![\w-]){re.escape(text)}(?![\w-])"
        kept += [m.span() for m in re.finditer(pattern, message)]
    options = {p.name: p for p in ctx.command.params if p.param_type_name == "option"}
    args = ctx.meta.get(_ARGS, [])
    typed = {a.split("=", 1)[0] for a in args if a.startswith("--")}

    def rewrite(match: re.Match[str]) -> str:
        name, start, end = match.group(), match.start(), match.end()
        param = options.get(name)
        if param is None or any(a < end and start < b for a, b in kept):
            return name
        if getattr(param, "is_flag", False) and message[end : end + 1] == "=":
            return name
        if "_" in name or (start == 0 and _CLAIM.match(message, end)):
            return _flag(param, typed)
        return name

    return _NAME.sub(rewrite, message)


class OneLineErrors(TyperGroup):
    """The root command group: an :class:`~hrefine.errors.HrefineError` raised by any command
    is printed as ``hrefine: error: <message>`` on one line, exit status 2, with the options it
    names shown as flags (:func:`flags_for_names`); so is a mistake the parser finds, the
    root's own included (``hrefine --bogus``). With ``--debug`` (or ``HREFINE_DEBUG=1``) the
    error propagates, with its traceback. Flags show as plain flags in every command's help
    (:func:`plain_flags`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        plain_flags(self)
        _note_failures(self)

    def make_context(
        self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any
    ) -> Any:
        """Parse the root's own options: a mistake there (``hrefine --bogus``, before any
        command runs) is one line as well, not typer's boxed panel."""
        given = list(args)  # the parser consumes ``args``
        try:
            ctx = super().make_context(info_name, args, parent=parent, **extra)
        except UsageError as exc:
            if _help_shown(exc) or _debug_asked(given):
                raise
            say(_usage_line(exc))
            raise typer.Exit(2) from exc
        ctx.meta[_ARGS] = given
        return ctx

    def invoke(self, ctx: Any) -> Any:  # typer's own click.Context (typer vendors click)
        """Run the command line, turning a user's mistake into one line on stderr; a command
        that fails leaves none of the empty folders it made (:func:`removed_if_failed`)."""
        with removed_if_failed():
            try:
                return super().invoke(ctx)
            except HrefineError as exc:
                if ctx.params.get("debug"):
                    raise
                noted = ctx.meta.pop(_FAILED_IN, None)
                failed_in = noted[1] if noted is not None and noted[0] is exc else ctx
                say(f"hrefine: error: {flags_for_names(one_line(exc), failed_in)}")
                raise typer.Exit(2) from exc
            except UsageError as exc:  # a flag or value the parser refused: one line too
                if ctx.params.get("debug") or _help_shown(exc):
                    raise
                say(_usage_line(exc))
                raise typer.Exit(2) from exc


@contextlib.contextmanager
def removed_if_failed() -> Iterator[None]:
    """Run a command; when it fails (an exception, or an exit status other than 0), remove the
    folders it made with :func:`make_folders` that are still empty, deepest first.

    A folder that existed before, or that holds anything now, is never removed (nor, then, the
    folders above it).
    """
    made: list[Path] = []
    _MADE.append(made)
    try:
        yield
    except BaseException as exc:
        # typer.Exit(0) (``eval --list``) is a success; anything without a status is a failure.
        if getattr(exc, "exit_code", 1) != 0:
            for folder in reversed(made):
                with contextlib.suppress(OSError):  # not empty (or gone): it stays
                    folder.rmdir()
        raise
    finally:
        _MADE.pop()


def make_folders(folder: Path) -> None:
    """Make ``folder`` with its missing parents (as ``mkdir -p``), noting each folder made, so
    that a failed command removes them again (:func:`removed_if_failed`).

    Raises
    ------
    OSError
        A folder could not be made (those made before it are noted).
    """
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    finally:
        if _MADE:  # outermost first: removed deepest first
            _MADE[-1].extend(p for p in reversed(missing) if p.is_dir())


def quiet_model_loading() -> None:
    """Hide transformers' weight-loading progress bars, its log warnings and ``FutureWarning``s.

    A CLI user can act on none of them. Environment variables cover libraries not imported yet;
    those already imported (``main`` called in-process) are switched off in place.
    """
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    warnings.filterwarnings("ignore", category=FutureWarning)
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
        transformers_logging.set_verbosity_error()


def _join(names: Sequence[str]) -> str:
    if len(names) < 2:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"


def loading_line(
    *,
    tokenizer: str | None = None,
    scorer: str | None = None,
    generative: bool | str = False,
) -> str | None:
    """The line printed before the models of a command load (their first load takes seconds).

    Parameters
    ----------
    tokenizer:
        The budget tokenizer as given (None: Llama-3.2's; ``"regex"`` loads nothing).
    scorer:
        The block or chunk scorer: ``"embedding"`` loads all-MiniLM-L6-v2,
        ``"cross-encoder:<model>"`` that model; None or ``"bm25"`` load nothing.
    generative:
        The generative stage's LM loads too: True for SmolLM2-135M-Instruct, a str names it.

    Returns
    -------
    str | None
        ``"loading all-MiniLM-L6-v2 and the Llama-3.2 tokenizer..."``, or None when nothing
        loads.
    """
    models: list[str] = []
    given = scorer or ""
    spec = given.strip().lower()
    if spec == "embedding":
        models.append(_EMBEDDER)
    elif spec.startswith("cross-encoder:"):
        models.append(f"the cross-encoder {given.split(':', 1)[1].strip()!r}")
    if isinstance(generative, str):
        models.append(f"the LM {generative!r}")
    elif generative:
        models.append(_LM)
    if tokenizer is None or tokenizer.strip().lower() in {"default", "llama-3.2"}:
        models.append(_TOKENIZER)
    elif tokenizer.strip().lower() != "regex":
        models.append(f"the tokenizer {tokenizer!r}")
    return f"loading {_join(models)}..." if models else None


def announce_loading(
    *, tokenizer: str | None = None, scorer: str | None = None, generative: bool | str = False
) -> None:
    """Print :func:`loading_line` to stderr, when something loads."""
    line = loading_line(tokenizer=tokenizer, scorer=scorer, generative=generative)
    if line:
        say(line)


def read_input(source: str, what: str) -> bytes:
    """The bytes of file ``source`` (``-``: stdin); a URL, a folder or a missing file is a
    one-line :class:`ConfigError` that says to give ``what`` (e.g. "an HTML file")."""
    if source == "-":
        return sys.stdin.buffer.read()
    path = Path(source)
    if "://" in source and not path.exists():
        msg = f"{source!r} looks like a URL; hrefine reads files or stdin only (no network)"
        raise ConfigError(msg)
    if path.is_dir():
        msg = f"{source} is a folder; give {what} (or - for stdin)"
        raise ConfigError(msg)
    if not path.is_file():
        msg = f"no such file: {source}; give {what} (or - for stdin)"
        raise ConfigError(msg)
    return path.read_bytes()


@dataclass(frozen=True)
class InputFile:
    """A file named on the command line, decoded."""

    name: str
    """The path as given (``-`` for stdin)."""
    label: str
    """What messages and outputs call it: the path, or ``"stdin"``."""
    text: str
    """Its text (BOM, UTF-16/32, UTF-8, a declared charset, detection)."""


def read_files(paths: Sequence[str], what: str) -> Iterator[InputFile]:
    """The files named on the command line, read and decoded one at a time (so that a caller's
    work on one file comes before the next file is read, as its errors do).

    Raises
    ------
    ConfigError
        A path is missing, a folder or a URL (the message says to give ``what``); stdin is
        given more than once.
    HtmlParseError
        A file is binary (a PDF, an image, an archive).
    """
    from hrefine._decode import decode_bytes

    if list(paths).count("-") > 1:
        msg = "stdin (-) is given more than once; give it once"
        raise ConfigError(msg)
    for name in paths:
        raw = read_input(name, what)
        text = decode_bytes(raw) if raw else ""
        yield InputFile(name, "stdin" if name == "-" else name, text)


def check_folder(path: Path | None, what: str) -> None:
    """Fail before the models load (and before anything is printed) when the file could not be
    written anyway: a folder stands at ``path``, a part of its folder is a file, or it is not
    writable. Missing parent folders are made here (as ``mkdir -p``), so any writer can write
    the file later."""
    if path is None:
        return
    problem = ""
    if path.is_dir():
        problem = "it is a folder; give a file name"
    elif path.parent.exists() and not path.parent.is_dir():
        problem = f"{path.parent} is a file, not a folder"
    elif not path.parent.is_dir():
        problem = folder_problem(path.parent)
        if not problem:
            try:
                make_folders(path.parent)
            except OSError as exc:
                problem = exc.strerror or str(exc)
    elif not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        problem = "permission denied"
    if problem:
        msg = f"could not write the {what} to {path}: {problem}"
        raise ConfigError(msg)


def write_output(path: Path, text: str, what: str) -> None:
    """Write ``text`` to ``path`` whole or not at all: a failure leaves the old file as it was.
    Missing parent folders are made first."""
    from hrefine._atomic import write_text

    try:
        make_folders(path.parent)
        write_text(path, text)
    except OSError as exc:
        msg = f"could not write the {what} to {path}: {exc.strerror or exc}"
        raise ConfigError(msg) from exc


def check_output_folder(path: Path, what: str) -> None:
    """Fail before the models load when ``path`` cannot become a folder to save ``what`` in
    (missing parents are fine: saving makes them)."""
    problem = folder_problem(path)
    if problem:
        msg = f"could not save the {what} to {path}: {problem}"
        raise ConfigError(msg)
