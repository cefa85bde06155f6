"""``hrefine distributed``, the actor plan, and the error without Ray."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hrefine.cli import main
from hrefine.distributed import plan_actors
from hrefine.errors import ConfigError


def test_cli_html_writes_results_and_names_the_failures(
    local_ray: Any,
    wtq_pages: list[dict[str, Any]],
    tmp_path: Path,
    write_jsonl: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    from hrefine.distributed import read_output

    rows = [*wtq_pages[:1], {"id": "broken", "html": ""}]
    source = write_jsonl(tmp_path / "pages.jsonl", rows)
    out = tmp_path / "runs" / "out"  # its parent is made, as by run_stage
    args = ["distributed", "html", "-i", str(source), "-o", str(out), "--workers", "1"]
    assert main([*args, "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "broken: EmptyInputError" in err
    assert "html: 1 done, 1 errors" in err
    table = read_output(str(out), ["id", "status"])
    assert table is not None
    assert sorted(table.column("id").to_pylist()) == sorted([wtq_pages[0]["id"], "broken"])

    assert main([*args, "--quiet"]) == 0
    assert "html: 0 done, 0 errors, 2 finished before and skipped" in capsys.readouterr().err


def test_cli_counts_the_input_rows_it_skipped(
    local_ray: Any,
    wtq_pages: list[dict[str, Any]],
    tmp_path: Path,
    write_jsonl: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A second shard into the same output skips none of its rows, whatever the output holds
    (the line counted the ids in the output)."""
    shard_a = write_jsonl(tmp_path / "a.jsonl", wtq_pages[:2])
    shard_b = write_jsonl(tmp_path / "b.jsonl", [*wtq_pages[2:], {"id": "broken", "html": ""}])
    out = str(tmp_path / "out")

    def run(source: Path) -> str:
        args = ["distributed", "html", "-i", str(source), "-o", out, "--workers", "1"]
        assert main([*args, "--quiet"]) == 0
        return capsys.readouterr().err

    assert "html: 2 done, 0 errors, 0 finished before and skipped" in run(shard_a)
    assert "html: 1 done, 1 errors (in " in (second := run(shard_b))
    assert ", 0 finished before and skipped" in second
    assert "html: 0 done, 0 errors, 2 finished before and skipped" in run(shard_b)


def test_cli_refuses_an_output_that_is_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "taken").write_text("x")
    code = main(["distributed", "html", "-i", "x.jsonl", "-o", str(tmp_path / "taken")])
    assert code == 2
    assert "is a file; give a folder" in capsys.readouterr().err
    code = main(["distributed", "html", "-i", "x.jsonl", "-o", str(tmp_path / "taken" / "out")])
    assert code == 2
    assert "is a file, not a folder" in capsys.readouterr().err


def test_actor_plan_asks_for_gpus_only_where_there_are_some() -> None:
    gpu = plan_actors(None, uses_model=True, resources={"CPU": 16.0, "GPU": 4.0})
    assert (gpu.workers, gpu.num_gpus, gpu.num_cpus) == (4, 1.0, 1.0)
    half = plan_actors(None, uses_model=True, gpus_per_worker=0.5, resources={"CPU": 16, "GPU": 2})
    assert (half.workers, half.num_gpus) == (4, 0.5)
    # a stage without a model runs on CPUs, even on a GPU node
    html = plan_actors(None, uses_model=False, resources={"CPU": 16.0, "GPU": 4.0})
    assert (html.workers, html.num_gpus) == (14, 0.0)
    # two CPUs: the pool leaves room for the read and write tasks
    cpu = plan_actors(2, uses_model=True, resources={"CPU": 2.0})
    assert cpu.num_gpus == 0.0
    assert cpu.workers * cpu.num_cpus <= 2.0 - 1.5
    assert cpu.split_blocks
    # one CPU: no room for Ray's block-splitting task beside the pool, so no splitting
    one = plan_actors(None, uses_model=False, resources={"CPU": 1.0})
    assert (one.workers, one.split_blocks) == (1, False)
    assert one.num_cpus + 2 * 0.25 <= 1.0
    with pytest.raises(ConfigError, match="at least 1"):
        plan_actors(0, uses_model=False, resources={"CPU": 2.0})


def test_without_ray_the_error_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from hrefine.distributed import run_stage\n"
        "from hrefine.errors import MissingDependencyError\n"
        "try:\n"
        "    run_stage('html', 'pages.jsonl', 'out')\n"
        "except MissingDependencyError as exc:\n"
        "    print(exc.extra)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "distributed"


@pytest.mark.parametrize("module", ["hrefine.distributed", "hrefine.distributed.cli"])
def test_import_leaves_ray_and_torch_out(module: str) -> None:
    code = (
        f"import sys, {module}; "
        "print(','.join(m for m in ('ray', 'torch', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_quiet_keeps_rays_info_lines_off_the_terminal() -> None:
    import logging

    from hrefine.distributed.cli import quiet_ray_logs

    pytest.importorskip("ray.data")
    core = logging.getLogger("ray")
    consoles = [
        h
        for h in logging.getLogger("ray.data").handlers
        if type(h).__name__ != "SessionFileHandler"
    ]
    assert consoles  # Ray Data prints its INFO lines through a handler of its own
    before = (core.level, [h.level for h in consoles])
    with quiet_ray_logs(True):
        assert not core.isEnabledFor(logging.WARNING)  # token authentication, progress bars
        assert all(h.level == logging.ERROR for h in consoles)  # "Starting execution of ..."
    assert (core.level, [h.level for h in consoles]) == before
    with quiet_ray_logs(False):
        assert core.level == before[0]
