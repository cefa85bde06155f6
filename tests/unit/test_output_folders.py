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
