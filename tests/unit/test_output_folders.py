"""Output folders are made with their missing parents (``mkdir -p``) by every writer; a file
where a folder must go is a one-line error before anything loads."""

from __future__ import annotations

from pathlib import Path

import pytest
from hrefine._cli_support import check_folder, check_output_folder, write_output
from hrefine._folders import folder_problem, make_folder
from hrefine.errors import ConfigError


def test_a_folder_with_missing_parents_can_be_made(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    assert folder_problem(deep) == ""
    make_folder(deep, "adapter")
    assert deep.is_dir()
    make_folder(deep, "adapter")  # already there: fine


def test_a_file_on_the_way_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "notes.txt"
    blocker.write_text("x", encoding="utf-8")
    assert folder_problem(blocker) == "it is a file; give a folder"
    assert folder_problem(blocker / "a" / "b") == f"{blocker} is a file, not a folder"
    with pytest.raises(ConfigError, match=r"could not make the adapter folder .* is a file"):
        make_folder(blocker / "a", "adapter")


def test_cli_output_files_and_folders_take_missing_parents(tmp_path: Path) -> None:
    report = tmp_path / "reports" / "today" / "r.html"
    check_folder(report, "report")
    assert report.parent.is_dir() and not report.exists()
    write_output(tmp_path / "more" / "out.txt", "text", "output")
    assert (tmp_path / "more" / "out.txt").read_text(encoding="utf-8") == "text"
    check_output_folder(tmp_path / "trees" / "t", "tree")  # saving makes the parents
    blocker = tmp_path / "notes.txt"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        check_folder(blocker / "r.html", "report")
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        check_output_folder(blocker / "x" / "t", "tree")
    with pytest.raises(ConfigError, match="it is a folder"):
        check_folder(tmp_path, "report")


def _tree(root: Path) -> set[str]:
    """Every path under ``root``, relative."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize(
    "argv",
    [
        # the saved tree or graph is missing: found after --report's folders were made
        "raptor query {tmp}/none -q x --report {out}/r.html",
        "garlic query {tmp}/none -q x --report {out}/r.html",
        # an unknown scorer, or an LM that is not on disk: found after -o's and --report's
        "html prune {tmp}/page.html -q x --scorer nope -o {out}/o.html",
        "html prune {tmp}/page.html -q x --scorer nope --report {out}/r.html",
        "refine {tmp}/doc.txt -q x -n 50 --lm {tmp}/no-lm -o {out}/o.txt --report {out}/m/r.html",
    ],
)
def test_a_failed_command_leaves_no_folders_it_made(tmp_path: Path, argv: str) -> None:
    from hrefine.cli import main

    (tmp_path / "page.html").write_text("<p>Tides rise twice a day.</p>", encoding="utf-8")
    (tmp_path / "doc.txt").write_text("Tides rise twice a day.", encoding="utf-8")
    (tmp_path / "kept" / "empty").mkdir(parents=True)  # there before: never removed
    before = _tree(tmp_path)
    out = tmp_path / "kept" / "empty" / "a" / "b"
    args = [a.replace("{tmp}", str(tmp_path)).replace("{out}", str(out)) for a in argv.split()]
    assert main(args) == 2
    assert _tree(tmp_path) == before


def test_a_build_whose_save_fails_leaves_no_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    import hrefine.persist
    from hrefine.cli import app
    from typer.testing import CliRunner

    def full(_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(hrefine.persist, "_sync", full)  # the disk fills while saving
    (tmp_path / "doc.txt").write_text("Tides rise twice a day.", encoding="utf-8")
    before = _tree(tmp_path)
    out = tmp_path / "a" / "b" / "tree"
    res = CliRunner().invoke(app, ["raptor", "build", str(tmp_path / "doc.txt"), "-o", str(out)])
    assert isinstance(res.exception, OSError) and res.exit_code == 1
    assert _tree(tmp_path) == before


def test_only_a_failure_removes_the_empty_folders_made(tmp_path: Path) -> None:
    import typer
    from hrefine._cli_support import make_folders, removed_if_failed

    def command(status: int, *folders: str, written: str = "") -> None:
        """Make ``folders`` (and a file in ``written``), then exit with ``status``."""
        with removed_if_failed():
            for folder in folders:
                make_folders(tmp_path / folder)
            if written:
                (tmp_path / written / "out.txt").write_text("x", encoding="utf-8")
            raise typer.Exit(status)

    with removed_if_failed():  # a success (a plain return) keeps them
        make_folders(tmp_path / "ok" / "a")
    with pytest.raises(typer.Exit):
        command(0, "listed/a")  # so does exit status 0 (``eval --list``)
    with pytest.raises(typer.Exit):
        command(1, "failed/a", "written/a", written="written/a")
    # The empty ones went; one that holds a file stays, and so do the folders above it.
    assert _tree(tmp_path) == {
        "ok",
        "ok/a",
        "listed",
        "listed/a",
        "written",
        "written/a",
        "written/a/out.txt",
    }
    make_folders(tmp_path / "outside" / "a")  # outside a command nothing is noted: no error
    assert (tmp_path / "outside" / "a").is_dir()
