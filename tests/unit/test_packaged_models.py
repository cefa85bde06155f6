"""Optional packaged models: part discovery, the checked join, conversion, names and the CLI.

The parts here are made by the tests (small zips, the embedded SmolLM2 GGUF split in three), so
neither large model is needed; the real models are exercised by
``benchmarks/packaged_models.py``.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import zipfile
from pathlib import Path

import pytest
from cli_checks import one_line_error
from hrefine.cli import main
from hrefine.errors import ConfigError, ModelIntegrityError, ModelNotFoundError
from hrefine.models import LocalLM, get_embedder, packaged
from hrefine.models._lm_name import local_lm_from
from hrefine.models._model_cache import COMPLETE_MARKER, is_complete
from hrefine.models.packaged import (
    PACKAGED,
    PackagedModel,
    build,
    find_packaged,
    install,
    join_parts,
    part_files,
)


@pytest.fixture(autouse=True)
def own_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Every test gets an empty hrefine cache: a model installed on this machine is never seen."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("HREFINE_CACHE", str(cache))
    return cache


def _split(data: bytes, folder: Path, pieces: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    step = -(-len(data) // pieces)
    paths = []
    for i in range(pieces):
        path = folder / f"part{i + 1:02d}.bin"
        path.write_bytes(data[i * step : (i + 1) * step])
        paths.append(path)
    return paths


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _model_zip(extra: dict[str, str] | None = None) -> bytes:
    """A zipped sentence-transformers-like folder, as the all-mpnet-base-v2 parts hold."""
    members = {
        "m/modules.json": json.dumps([{"idx": 0, "name": "0", "path": "", "type": "x"}]),
        "m/config.json": '{"model_type": "toy"}',
        "m/1_Pooling/config.json": '{"pooling_mode_mean_tokens": true}',
        "m/desktop.ini": "[.ShellClassInfo]",
        **(extra or {}),
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        for name, text in members.items():
            zipped.writestr(name, text)
    return buffer.getvalue()


def _zip_model(
    data: bytes, distributions: tuple[str, ...] = ("a", "b", "c"), part_pattern: str = r"\.bin$"
) -> PackagedModel:
    return PackagedModel(
        name="toy-embedder",
        kind="embedder",
        distributions=distributions,
        version="1.0",
        part_pattern=part_pattern,
        size=len(data),
        sha256=_sha(data),
        form="zip",
    )


# ----------------------------------------------------------------------------- the checked join
def test_join_keeps_exactly_the_pinned_bytes(tmp_path: Path) -> None:
    data = bytes(range(256)) * 40_000  # 10 MB: more than one read chunk per part
    parts = _split(data, tmp_path / "parts", 3)
    out = tmp_path / "joined.bin"
    join_parts(parts, out, size=len(data), sha256=_sha(data))
    assert out.read_bytes() == data


@pytest.mark.parametrize("damage", ["flipped byte", "reordered", "missing slice", "extra byte"])
def test_join_refuses_any_other_bytes(tmp_path: Path, damage: str) -> None:
    data = b"".join(i.to_bytes(4, "little") for i in range(50_000))
    parts = _split(data, tmp_path / "parts", 3)
    if damage == "flipped byte":
        raw = bytearray(parts[1].read_bytes())
        raw[1234] ^= 0x01
        parts[1].write_bytes(bytes(raw))
    elif damage == "reordered":
        parts = [parts[1], parts[0], parts[2]]
    elif damage == "missing slice":
        parts = parts[:2]
    else:
        parts[2].write_bytes(parts[2].read_bytes() + b"\0")
    out = tmp_path / "joined.bin"
    with pytest.raises(ModelIntegrityError, match="Refusing them"):
        join_parts(parts, out, size=len(data), sha256=_sha(data))
    assert not out.exists()
    assert not list(tmp_path.glob("joined.bin*"))  # no partial file left behind


def test_join_names_a_missing_part_file(tmp_path: Path) -> None:
    parts = _split(b"x" * 100, tmp_path / "parts", 2)
    parts[1].unlink()
    with pytest.raises(ModelNotFoundError, match=r"part02\.bin is missing"):
        join_parts(parts, tmp_path / "out", size=100, sha256=_sha(b"x" * 100))


# ----------------------------------------------------------------------------- finding the parts
def _fake_distribution(site: Path, name: str, version: str, files: dict[str, bytes]) -> None:
    """Install a distribution by hand: its files and a dist-info with METADATA and RECORD."""
    for relative, content in files.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_bytes(content)
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    record = [f"{relative},," for relative in files] + [f"{info.name}/METADATA,,"]
    (info / "RECORD").write_text("\n".join(record) + "\n")


@pytest.fixture
def toy_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[PackagedModel, bytes]:
    """Three installed part packages (their module folders named with hyphens, as the
    all-mpnet-base-v2 parts' are) that join to a zipped model."""
    data = _model_zip()
    site = tmp_path / "site"
    step = -(-len(data) // 3)
    names = ("toy-part-1", "toy-part-2", "toy-part-3")
    for i, name in enumerate(names):
        files = {
            f"{name}/__init__.py": b"",
            f"{name}/data/toy.zip.{i + 1:03d}": data[i * step : (i + 1) * step],
        }
        _fake_distribution(site, name, "1.0", files)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    spec = _zip_model(data, names, r"\.zip\.\d{3}$")
    return spec, data


def test_part_files_are_found_in_order_without_importing(
    toy_parts: tuple[PackagedModel, bytes],
) -> None:
    spec, data = toy_parts
    found = part_files(spec)
    assert [p.name for p in found] == ["toy.zip.001", "toy.zip.002", "toy.zip.003"]
    assert b"".join(p.read_bytes() for p in found) == data


def test_part_files_name_the_install_command(toy_parts: tuple[PackagedModel, bytes]) -> None:
    spec, _ = toy_parts
    absent = PackagedModel(**{**spec.__dict__, "distributions": ("toy-part-1", "no-such-part")})
    with pytest.raises(ModelNotFoundError, match="hrefine models install toy-embedder"):
        part_files(absent)
    other = PackagedModel(**{**spec.__dict__, "version": "2.0"})
    with pytest.raises(ModelNotFoundError, match=r"version 1\.0, expected 2\.0"):
        part_files(other)


def test_build_extracts_the_model_and_writes_the_marker_last(
    toy_parts: tuple[PackagedModel, bytes], tmp_path: Path
) -> None:
    spec, _ = toy_parts
    target = tmp_path / "models" / "toy"
    folder = build(spec, part_files(spec), target=target)
    assert folder == target and is_complete(target)
    assert json.loads((target / "modules.json").read_text())[0]["idx"] == 0
    assert (target / "1_Pooling" / "config.json").is_file()
    assert not (target / "desktop.ini").exists()  # Windows folder settings are not copied
    assert not (target / ".join").exists()  # the joined zip is not kept
    marker = json.loads((target / COMPLETE_MARKER).read_text())
    assert marker["sha256"] == spec.sha256 and marker["kind"] == "embedder"
    assert [p.name for p in target.parent.iterdir()] == ["toy"]


def test_a_refused_join_leaves_no_folder(
    toy_parts: tuple[PackagedModel, bytes], tmp_path: Path
) -> None:
    spec, data = toy_parts
    wrong = PackagedModel(**{**spec.__dict__, "sha256": _sha(data + b"!")})
    target = tmp_path / "models" / "toy"
    with pytest.raises(ModelIntegrityError):
        build(wrong, part_files(wrong), target=target)
    assert not target.exists()
    assert list(target.parent.iterdir()) == []


def test_an_unsafe_member_name_is_refused(tmp_path: Path) -> None:
    data = _model_zip({"m/../../evil.txt": "x"})
    spec = _zip_model(data, ("only",))
    parts = _split(data, tmp_path / "parts", 1)
    with pytest.raises(ModelIntegrityError, match="unsafe member"):
        build(spec, parts, target=tmp_path / "models" / "toy")
    assert not list(tmp_path.rglob("evil.txt"))


# ----------------------------------------------------------------------------- names
def test_known_names_and_aliases() -> None:
    assert find_packaged("Qwen2.5-Coder-1.5B").name == "qwen2.5-coder-1.5b"  # type: ignore[union-attr]
    assert find_packaged("Qwen/Qwen2.5-Coder-1.5B-Instruct", "lm") is PACKAGED["qwen2.5-coder-1.5b"]
    assert find_packaged("sentence-transformers/all-mpnet-base-v2", "embedder") is not None
    assert find_packaged("all-mpnet-base-v2", "lm") is None
    assert find_packaged(None) is None
    assert PACKAGED["qwen2.5-coder-1.5b"].size == 1_117_320_768
    assert len(PACKAGED["qwen2.5-coder-1.5b"].distributions) == 22


def test_a_missing_packaged_model_names_its_install_command() -> None:
    with pytest.raises(ModelNotFoundError, match=r"hrefine models install qwen2\.5-coder-1\.5b"):
        local_lm_from("qwen2.5-coder-1.5b")
    with pytest.raises(ModelNotFoundError, match=r"hrefine models install all-mpnet-base-v2"):
        get_embedder("all-mpnet-base-v2")
    with pytest.raises(ModelNotFoundError, match=r"hrefine models install qwen2\.5-coder-1\.5b"):
        LocalLM("qwen2.5-coder-1.5b")  # at construction, before any load is tried


def test_an_installed_name_gives_its_folder_in_the_default_dtype(own_cache: Path) -> None:
    for name in ("qwen2.5-coder-1.5b", "all-mpnet-base-v2"):
        folder = own_cache / "models" / name
        folder.mkdir(parents=True)
        (folder / COMPLETE_MARKER).write_text("{}")
    lm = local_lm_from("Qwen2.5-Coder-1.5B-Instruct")
    assert lm.model_name_or_path == str(own_cache / "models" / "qwen2.5-coder-1.5b")
    # The default dtype: float32 on every CPU ("native" bfloat16 answered otherwise on CPUs
    # with AVX512-BF16 or AMX than on the rest).
    assert lm.name == "qwen2.5-coder-1.5b" and lm._dtype is None
    assert local_lm_from("qwen2.5-coder-1.5b") is lm  # one model per process, shared
    own = LocalLM("qwen2.5-coder-1.5b")  # the class itself takes the name too
    assert own.model_name_or_path == lm.model_name_or_path and own.name == "qwen2.5-coder-1.5b"
    assert (
        own._dtype is None
        and LocalLM("qwen2.5-coder-1.5b", dtype="native")._dtype == "native"
        and LocalLM("qwen2.5-coder-1.5b", dtype="float32")._dtype == "float32"
    )
    assert LocalLM(str(own_cache), name="x").model_name_or_path == str(own_cache)  # a folder wins
    embedder = get_embedder("all-mpnet-base-v2")
    assert embedder.name == "all-mpnet-base-v2"  # type: ignore[attr-defined]
    assert embedder.model_name_or_path == str(own_cache / "models" / "all-mpnet-base-v2")  # type: ignore[attr-defined]


def test_unknown_packaged_names_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="known: all-mpnet-base-v2"):
        install("no-such-model", use_pip=False)
    with pytest.raises(ConfigError, match="no packaged LM"):
        packaged.packaged_lm("all-mpnet-base-v2")


def test_native_dtype_follows_the_hardware(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    from hrefine.models import _hf_load

    monkeypatch.setattr(_hf_load, "native_bf16", lambda device: True)
    assert _hf_load._torch_dtype("native", "cpu") is torch.bfloat16
    monkeypatch.setattr(_hf_load, "native_bf16", lambda device: False)
    assert _hf_load._torch_dtype("native", "cpu") is torch.float32


# ----------------------------------------------------------------------------- the CLI
def test_cli_lists_and_installs(
    toy_parts: tuple[PackagedModel, bytes],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    own_cache: Path,
) -> None:
    spec, _ = toy_parts
    monkeypatch.setitem(packaged.PACKAGED, spec.name, spec)
    assert main(["models", "list"]) == 0
    listed = capsys.readouterr().out
    assert "qwen2.5-coder-1.5b" in listed and "toy-embedder" in listed
    assert "not installed" in listed
    assert main(["models", "install", "--no-pip", "toy-embedder"]) == 0
    out = capsys.readouterr()
    folder = own_cache / "models" / "toy-embedder"
    assert out.out.strip() == str(folder) and is_complete(folder)
    assert "ready in" in out.err
    assert main(["models", "list"]) == 0
    assert "toy-embedder         embedder installed" in capsys.readouterr().out


def test_cli_unknown_name_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_error(capsys, ["models", "install", "no-such-model"])
    assert "no packaged model is called 'no-such-model'" in line


# ----------------------------------------------------------------------------- a real GGUF
@pytest.mark.lm
def test_split_gguf_joins_converts_and_answers(tmp_path: Path) -> None:
    """The LM path end to end on the embedded SmolLM2 GGUF split in three parts: join, check,
    convert to safetensors, load from the folder by name; it answers as the embedded model."""
    from hrefine.models.smollm2 import _smollm2_gguf, default_lm

    data = _smollm2_gguf().read_bytes()
    parts = _split(data, tmp_path / "parts", 3)
    spec = PackagedModel(
        name="qwen2.5-coder-1.5b",  # the real name, so that name resolution is exercised too
        kind="lm",
        distributions=("p1", "p2", "p3"),
        version="1",
        part_pattern=r"\.bin$",
        size=len(data),
        sha256=_sha(data),
        form="gguf",
    )
    folder = build(spec, parts)
    assert (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()
    assert not list(folder.rglob("*.gguf"))
    lm = local_lm_from("qwen2.5-coder-1.5b")
    assert lm.model_name_or_path == str(folder)
    question = "Is Paris the capital of France? Answer Yes or No."
    probs = lm.choice_probs(question, ["Yes", "No"])
    embedded = default_lm().choice_probs(question, ["Yes", "No"])
    assert probs == pytest.approx(embedded, abs=1e-5)  # the same weights, converted once
    assert lm.generate(question, max_new_tokens=8) == default_lm().generate(
        question, max_new_tokens=8
    )


# ----------------------------------------------------------------------------- one name, everywhere
_TEXTS = [
    f"Paragraph {i} tells about the river, the mill and harvest number {i}. " * 8 for i in range(4)
]


def _raptor() -> object:
    from hrefine.raptor import RaptorTree

    return RaptorTree.build(_TEXTS, llm="qwen2.5-coder-1.5b")


def _garlic() -> object:
    from hrefine.garlic import GarlicGraph

    return GarlicGraph.build(_TEXTS, lm="qwen2.5-coder-1.5b")


def _longrefiner_lm() -> object:
    from hrefine.longrefiner import LongRefiner

    return LongRefiner(lm="qwen2.5-coder-1.5b").refine("\n\n".join(_TEXTS), "mill?", max_tokens=40)


def _longrefiner_llm() -> object:
    from hrefine.longrefiner import LongRefiner

    return LongRefiner(llm="qwen2.5-coder-1.5b").refine("\n\n".join(_TEXTS), "mill?", max_tokens=40)


def _htmlrag() -> object:
    from hrefine.html import HtmlPruner

    page = "".join(f"<p>{t}</p>" for t in _TEXTS)
    return HtmlPruner(generative=True, lm="qwen2.5-coder-1.5b").prune(page, "mill?", 60)


def _eval_method(name: str, key: str) -> object:
    from hrefine.eval.methods import get_method

    return get_method(name, **{key: "qwen2.5-coder-1.5b"}).compress(
        "\n\n".join(_TEXTS), "mill?", 60
    )


@pytest.mark.parametrize(
    "call",
    [
        _raptor,
        _garlic,
        _longrefiner_lm,
        _longrefiner_llm,
        _htmlrag,
        lambda: _eval_method("raptor", "llm"),
        lambda: _eval_method("garlic", "llm"),
        lambda: _eval_method("longrefiner", "lm"),
        lambda: _eval_method("htmlrag", "lm"),
    ],
    ids=[
        "raptor",
        "garlic",
        "longrefiner-lm",
        "longrefiner-llm",
        "htmlrag",
        "eval-raptor",
        "eval-garlic",
        "eval-longrefiner",
        "eval-htmlrag",
    ],
)
def test_every_method_takes_the_packaged_name(call: object) -> None:
    """The name reaches the packaged model in every method: not installed here, each fails
    with the command that installs it (never a type error, never a download)."""
    with pytest.raises(ModelNotFoundError, match=r"hrefine models install qwen2\.5-coder-1\.5b"):
        call()  # type: ignore[operator]


@pytest.mark.parametrize(
    "argv",
    [
        ["html", "prune", "-", "-q", "mill?", "--lm", "qwen2.5-coder-1.5b"],
        ["raptor", "build", "-", "-o", "{out}", "--llm", "qwen2.5-coder-1.5b"],
        ["garlic", "build", "-", "-o", "{out}", "--lm", "qwen2.5-coder-1.5b"],
        ["refine", "-", "-q", "mill?", "-n", "60", "--lm", "qwen2.5-coder-1.5b"],
    ],
    ids=["html", "raptor", "garlic", "refine"],
)
def test_every_cli_verb_takes_the_packaged_name(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    page = "<html><body>" + "".join(f"<p>{t}</p>" for t in _TEXTS) + "</body></html>"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(page.encode())))
    line = one_line_error(capsys, [a.replace("{out}", str(tmp_path / "out")) for a in argv])
    assert "hrefine models install qwen2.5-coder-1.5b" in line


@pytest.mark.lm
def test_a_packaged_lm_runs_in_bfloat16_where_the_hardware_has_it_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``native`` path, taken on AVX512-BF16 and AMX CPUs when asked for, forced here
    (emulated where the CPU lacks it): the packaged model loads in bfloat16 and answers as
    float32 does, within bfloat16's rounding; by name it loads in float32, as everywhere."""
    import torch
    from hrefine.models import _hf_load
    from hrefine.models.smollm2 import _smollm2_gguf, default_lm

    data = _smollm2_gguf().read_bytes()
    spec = PackagedModel(
        name="qwen2.5-coder-1.5b",
        kind="lm",
        distributions=("p1", "p2"),
        version="1",
        part_pattern=r"\.bin$",
        size=len(data),
        sha256=_sha(data),
        form="gguf",
    )
    build(spec, _split(data, tmp_path / "parts", 2))
    monkeypatch.setattr(_hf_load, "native_bf16", lambda device: True)
    assert local_lm_from("qwen2.5-coder-1.5b").model.dtype is torch.float32
    lm = LocalLM("qwen2.5-coder-1.5b", dtype="native")
    question = "Is Paris the capital of France? Answer Yes or No."
    probs = lm.choice_probs(question, ["Yes", "No"])
    assert lm.model.dtype is torch.bfloat16
    assert probs == pytest.approx(default_lm().choice_probs(question, ["Yes", "No"]), abs=0.05)
