"""``hrefine train``: build training data and fine-tune LoRA adapters.

``hrefine train build-data TASK -o examples.jsonl`` builds a task's examples from the evaluation
data (the tuning half by default) or from a user's question JSONL (``--from mine.jsonl``).
``hrefine train TASK --data examples.jsonl --out DIR`` trains an adapter on them (or on examples
built on the fly with ``--from``), with a progress bar on stderr, a closing line and the
``hrefine eval`` command that evaluates the adapter (:func:`~hrefine.train.eval_command`). Malformed
rows are skipped and counted; an existing output folder is refused without ``--overwrite``;
``--resume`` goes on from the folder's last checkpoint. Mistakes are one line, as everywhere in
the CLI.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hrefine._atomic import echo
from hrefine._cli_settings import check_limit, check_model_name
from hrefine._cli_support import check_folder, say
from hrefine._encodable import encodable
from hrefine.errors import ConfigError
from hrefine.train.examples import TASKS

if TYPE_CHECKING:
    from hrefine.train.builders import BuildReport
    from hrefine.train.trainer import TrainResult

__all__ = ["build_line", "result_line", "train_app"]

train_app = typer.Typer(
    help="Fine-tune LoRA adapters for the generative HTML pruner and LongRefiner's steps.",
    no_args_is_help=True,
)

_SOURCES_HELP = (
    "A dataset of the evaluation data (wtq, hotpotqa, leval-nq, ...) or a question JSONL "
    "(id, question, answers, document or doc); repeat for several. Default: the task's usual "
    "datasets."
)


def _counts(skipped: Counter[str]) -> str:
    return ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in skipped.most_common())


def build_line(task: str, report: BuildReport, output: Path | None = None) -> str:
    """The closing line of ``build-data``: examples, questions read, what was skipped."""
    line = (
        f"built {len(report.examples)} {task} examples from {report.items} questions "
        f"({', '.join(report.sources)})"
    )
    if report.skipped:
        line += f"; skipped {sum(report.skipped.values())} ({_counts(report.skipped)})"
    return line + ("" if output is None else encodable(f"; wrote {output}"))


def result_line(result: TrainResult) -> str:
    """The closing line of a training run: steps, losses, held-out numbers, cuts, seconds."""
    first = result.losses[0][1] if result.losses else float("nan")
    last = result.losses[-1][1] if result.losses else float("nan")
    parts = [
        f"{'stopped at' if result.interrupted else 'trained'} {result.steps} steps "
        f"on {result.train_examples} examples"
        + (f" (resumed from step {result.resumed_from})" if result.resumed_from else ""),
        f"loss {first:.3f} -> {last:.3f}",
    ]
    if result.evals:
        e = result.evals[-1]
        parts.append(
            f"held-out ({result.eval_examples}) loss {e['loss']:.3f}, "
            f"token accuracy {e['token_accuracy']:.3f}, exact {e['exact']:.3f}"
        )
    if result.truncated or result.dropped:
        parts.append(f"{result.truncated} prompts cut to fit, {result.dropped} dropped")
    parts.append(f"{result.seconds:.0f} s; adapter in {result.out}")
    return encodable("; ".join(parts))


@train_app.command("build-data")
def build_data(
    task: Annotated[str, typer.Argument(help=f"One of: {', '.join(TASKS)}.")],
    output: Annotated[Path, typer.Option("--out", "-o", help="The examples JSONL to write.")],
    sources: Annotated[
        list[str] | None, typer.Option("--from", help=_SOURCES_HELP, show_default=False)
    ] = None,
    half: Annotated[
        str,
        typer.Option(help="Half of an evaluation dataset's documents: tune, check or all."),
    ] = "tune",
    limit: Annotated[
        int | None, typer.Option(help="At most this many questions per source.")
    ] = None,
    lm: Annotated[
        str | None,
        typer.Option(help="structuring: the model to train (its tokenizer); default SmolLM2."),
    ] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace the output file.")] = False,
) -> None:
    """Build a task's training examples and write them as JSONL."""
    from hrefine.train.builders import build_examples
    from hrefine.train.examples import write_examples

    if task not in TASKS:
        msg = f"unknown task {task!r}; use one of {', '.join(TASKS)}"
        raise ConfigError(msg)
    check_limit(limit, "--limit", "question per source")  # 0 would build nothing, and say so
    check_model_name("lm", lm)
    if output.exists() and not overwrite:
        msg = f"{output} exists; pass --overwrite to replace it"
        raise ConfigError(msg)
    check_folder(output, "examples")  # makes missing parent folders
    report = build_examples(task, sources, half=half, limit=limit, lm=lm)  # type: ignore[arg-type]
    write_examples(output, report.examples)
    say(build_line(task, report, output))


def _run(
    task: str,
    data: Path | None,
    sources: list[str] | None,
    out: Path,
    lm: str | None,
    settings: dict[str, Any],
    *,
    overwrite: bool,
    resume: bool,
    as_json: bool,
) -> None:
    from hrefine.train.options import TrainOptions

    options = TrainOptions.build(**settings)  # a bad setting fails before anything loads
    check_model_name("lm", lm)
    if (data is None) == (sources is None):
        msg = "give the examples with --data FILE, or build them with --from SOURCE (not both)"
        raise ConfigError(msg)
    if data is not None:
        from hrefine.train.examples import read_examples

        read = read_examples(data, task=task)
        if read.malformed:
            first = "; ".join(f"line {n}: {why}" for n, why in read.malformed[:3])
            say(
                encodable(
                    f"skipped {len(read.malformed)} of {read.lines} rows of {data} "
                    f"({first}{'; ...' if len(read.malformed) > 3 else ''})"
                )
            )
        examples = read.examples
    else:
        from hrefine.train.builders import build_examples

        report = build_examples(task, sources, lm=lm)
        say(build_line(task, report))
        examples = report.examples
    from hrefine.train.trainer import check_output, train

    # The output folder is checked before the model loads, with messages that name the flags.
    check_output(out, examples, options, overwrite=overwrite, resume=resume, spelling="cli", lm=lm)
    say(encodable(f"training a {task} adapter on {len(examples)} examples..."))
    result = train(examples, out, lm=lm, options=options, overwrite=overwrite, resume=resume)
    if as_json:
        echo(json.dumps(result.to_dict(), indent=2))
    say(result_line(result))
    if not result.interrupted:
        from hrefine.train.checking import eval_command

        say(encodable(f"evaluate it with: {eval_command(task, out, lm=lm)}"))


def _command(task: str) -> None:
    def command(
        out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the adapter.")],
        data: Annotated[
            Path | None,
            typer.Option(
                help="Examples JSONL (from `hrefine train build-data`).", show_default=False
            ),
        ] = None,
        sources: Annotated[
            list[str] | None,
            typer.Option("--from", help="Build the examples first: " + _SOURCES_HELP),
        ] = None,
        lm: Annotated[
            str | None, typer.Option(help="Base model folder or cached name; default SmolLM2.")
        ] = None,
        # Each option is named as its TrainOptions setting, whatever its flag (--lr, --steps):
        # the error line then shows the flag for the setting's name in a library message.
        max_steps: Annotated[int, typer.Option("--steps", help="Optimizer steps.")] = 100,
        batch_size: Annotated[int, typer.Option(help="Examples per forward pass.")] = 4,
        grad_accumulation: Annotated[int, typer.Option(help="Passes per optimizer step.")] = 1,
        learning_rate: Annotated[float, typer.Option("--lr", help="Peak learning rate.")] = 2e-4,
        rank: Annotated[int, typer.Option(help="LoRA rank.")] = 8,
        alpha: Annotated[float, typer.Option(help="LoRA alpha.")] = 16.0,
        top_layers: Annotated[
            int | None, typer.Option(help="LoRA on the last N layers only (faster on CPU).")
        ] = None,
        max_length: Annotated[
            int, typer.Option(help="Most tokens of prompt + target (prompts cut, counted).")
        ] = 2048,
        precision: Annotated[str, typer.Option(help="auto, fp32, bf16 or fp16.")] = "auto",
        eval_fraction: Annotated[float, typer.Option(help="Share of documents held out.")] = 0.1,
        eval_every: Annotated[
            int, typer.Option(help="Evaluate every N steps (0: at the end).")
        ] = 0,
        save_every: Annotated[int, typer.Option(help="Checkpoint every N steps.")] = 50,
        gradient_checkpointing: Annotated[
            bool, typer.Option(help="Recompute activations (long prompts on a small GPU).")
        ] = False,
        seed: Annotated[int, typer.Option(help="Seed of split, order and initialisation.")] = 0,
        device: Annotated[str | None, typer.Option(help="Torch device; default: best.")] = None,
        overwrite: Annotated[bool, typer.Option(help="Replace an existing output folder.")] = False,
        resume: Annotated[
            bool,
            typer.Option(help="Go on from the last checkpoint (or to more --steps after a run)."),
        ] = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
        quiet: Annotated[bool, typer.Option(help="No progress bar.")] = False,
    ) -> None:
        settings = {
            "max_steps": max_steps,
            "batch_size": batch_size,
            "grad_accumulation": grad_accumulation,
            "learning_rate": learning_rate,
            "rank": rank,
            "alpha": alpha,
            "top_layers": top_layers,
            "max_length": max_length,
            "precision": precision,
            "eval_fraction": eval_fraction,
            "eval_every": eval_every,
            "save_every": save_every,
            "gradient_checkpointing": gradient_checkpointing,
            "seed": seed,
            "device": device,
            "progress": not quiet,
        }
        _run(
            task,
            data,
            sources,
            out,
            lm,
            settings,
            overwrite=overwrite,
            resume=resume,
            as_json=as_json,
        )

    command.__doc__ = f"Train a LoRA adapter for {task} and save it in a folder."
    train_app.command(task)(command)


for _task in TASKS:
    _command(_task)
