"""Fuzz cases of saved folders (issue #55): save then load, and loading damaged or forged ones.

:class:`PersistFuzz` saves a RAPTOR tree and a GARLIC graph once, then each case
(:meth:`PersistFuzz.case`) is one of:

- ``roundtrip``: a random tree (texts with lone surrogates, metadata of every JSON type, huge
  whole numbers, NaN, values JSON cannot hold, random embeddings) saved and loaded: the load
  returns exactly what was saved, or the save or load raises an HrefineError;
- ``damaged``: a copy of a saved folder truncated, with bytes flipped, a file deleted, replaced
  by a folder or by a link (inside or outside), the manifest edited or cut, a stray file added:
  the load returns exactly what was saved or raises an HrefineError (anything else that loads
  is ``lost``: a change that went unnoticed);
- ``forged``: the manifest or an array edited and signed again (checksums made anew, as anyone
  can): the load may succeed, but it and a query of what it loaded raise nothing but
  HrefineErrors, and the query's budget and scores hold;
- ``lr-cache``: a LongRefiner structure cache damaged between two refinements of a document:
  the second gives the same text as the first (a damaged entry is a miss) or raises an
  HrefineError.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from hrefine.testing import KeywordEmbedder

from benchmarks._fuzz_inputs import call, random_text, repro
from benchmarks._fuzz_methods import fake_llm
from benchmarks._fuzzcases import Finding

__all__ = ["PersistFuzz"]

_DAMAGES = ("truncate", "flip", "delete", "folder", "link-out", "link-in", "edit", "cut-json",
            "stray", "unsigned")  # fmt: skip
_HOSTILE: tuple[Any, ...] = (
    None, -1, 0, 2**53, 2**64, -(2**70), 1e308, "x" * 5000, "", [], {}, [1, 2], True,
            "../../etc/passwd", "/etc/passwd", "\ud800", 1.5, "NaN",
)  # fmt: skip
_QUERY = "Which river is the longest in Europe?"


def _walk(value: Any, rng: random.Random, depth: int = 0) -> tuple[Any, Any] | None:
    """A random (container, key) inside ``value`` (a JSON document)."""
    if isinstance(value, dict) and value:
        key = rng.choice(list(value))
    elif isinstance(value, list) and value:
        key = rng.randrange(len(value))
    else:
        return None
    inner = value[key]
    if depth < 8 and isinstance(inner, (dict, list)) and inner and rng.random() < 0.75:
        return _walk(inner, rng, depth + 1) or (value, key)
    return value, key


def _edit(manifest: dict[str, Any], rng: random.Random) -> str:
    """Edit one random field of ``manifest`` in place; what was done."""
    spot = _walk(manifest, rng)
    if spot is None:
        return "nothing"
    holder, key = spot
    r = rng.random()
    if r < 0.3 and isinstance(holder, dict):
        del holder[key]
        return f"deleted {key!r}"
    if r < 0.45 and isinstance(holder[key], str):
        holder[key] = holder[key][::-1] + "x"
        return f"changed text at {key!r}"
    if r < 0.55 and isinstance(holder[key], (int, float)) and not isinstance(holder[key], bool):
        holder[key] = holder[key] + rng.choice((1, -1, 0.5))
        return f"nudged {key!r}"
    holder[key] = rng.choice(_HOSTILE)
    return f"set {key!r} to {holder[key]!r:.40}"


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _same_tree(a: Any, b: Any) -> bool:
    ea, eb = a.embeddings, b.embeddings
    if (ea is None) != (eb is None):
        return False
    if ea is not None and not np.array_equal(ea, eb, equal_nan=True):
        return False
    return _same(a.to_dict(), b.to_dict()) and bool(
        np.array_equal(a.embedding_mask, b.embedding_mask)
    )


class PersistFuzz:
    """Saved folders of each method and one :meth:`case` per fuzz case.

    Parameters
    ----------
    texts:
        Real documents (bytes) the saved tree and graph are built from.
    workdir:
        A folder of its own for the saved folders and their damaged copies.
    """

    def __init__(self, texts: Sequence[bytes], workdir: Path) -> None:
        from hrefine.garlic import GarlicGraph
        from hrefine.raptor import RaptorTree, Source

        self.texts = texts
        self.workdir = workdir
        self.keyword = KeywordEmbedder(dim=64)
        self.raised: Counter[str] = Counter()
        self.sources: Counter[str] = Counter()
        self._n = 0
        docs = [
            Source(t[:4000].decode("utf-8", "replace"), {"n": i, "name": f"doc {i}"}, f"d{i}")
            for i, t in enumerate(texts[:3])
        ]
        raptor = RaptorTree.build(
            docs, embedder=self.keyword, tokenizer="regex", reduction_dim=200, max_clusters=3
        )
        garlic = GarlicGraph.build(
            docs, llm=fake_llm(random.Random(0), 0.0), embedder=self.keyword, tokenizer="regex",
            chunk_tokens=64, batch_tokens=256, summary_tokens=48, retries=0,
        )  # fmt: skip
        saved = {
            "raptor": raptor.save(workdir / "saved" / "raptor"),
            "garlic": garlic.save(workdir / "saved" / "garlic"),
        }
        # What a load gives (token counts of the loading counter): what each case must get.
        self.saved = {name: (self._load(name, path), path) for name, path in saved.items()}
        self._outside = workdir / "outside"
        self._outside.mkdir(parents=True, exist_ok=True)
        (self._outside / "secret.txt").write_text("not part of any save\n")

    def _fresh(self, name: str) -> Path:
        self._n += 1
        path = self.workdir / "cases" / f"{self._n % 4}-{name}"
        if path.exists() or path.is_symlink():
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        return path

    def case(self, rng: random.Random) -> tuple[list[Finding], str]:
        """One case (see the module docstring): findings and a reproducer."""
        r = rng.random()
        if r < 0.2:
            return self._roundtrip(rng)
        if r < 0.27:
            return self._lr_cache(rng)
        name = rng.choice(("raptor", "garlic"))
        original, saved = self.saved[name]
        folder = self._fresh(name)
        shutil.copytree(saved, folder)
        if r < 0.8:
            done = [self._damage(folder, rng) for _ in range(rng.randint(1, 2))]
            self.sources[f"damaged {name}"] += 1
            return self._load_damaged(name, original, folder), repro(method=name, damage=done)
        done = [self._forge(folder, rng) for _ in range(rng.randint(1, 2))]
        self.sources[f"forged {name}"] += 1
        return self._load_forged(name, folder), repro(method=name, forged=done)

    # -- damage ----------------------------------------------------------------------------
    def _damage(self, folder: Path, rng: random.Random) -> str:
        files = sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink())
        if not files:
            return "no file left"
        how = rng.choice(_DAMAGES)
        target = rng.choice(files)
        data = target.read_bytes()
        if how == "truncate":
            target.write_bytes(data[: rng.randrange(len(data) + 1)])
        elif how == "flip" and data:
            buf = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
            target.write_bytes(bytes(buf))
        elif how == "delete":
            target.unlink()
        elif how == "folder":
            target.unlink()
            target.mkdir()
        elif how in ("link-out", "link-in"):
            there = self._outside if how == "link-out" else folder
            copy = there / f"copy-{self._n}-{target.name}"
            copy.write_bytes(data)
            target.unlink()
            os.symlink(copy, target)
        elif how == "stray":
            (folder / rng.choice(("evil.npy", "tree.json.tmp", "x.json"))).write_bytes(b"\x93NU")
        else:
            manifest = folder / "tree.json"
            if not manifest.is_file() or manifest.is_symlink():
                return f"{how}: no manifest"
            text = manifest.read_text("utf-8", "replace")
            if how == "cut-json":
                manifest.write_text(text[: rng.randrange(len(text))] + rng.choice(("", "}", "]")))
                return how
            doc = _json(text)
            if doc is None:
                return f"{how}: manifest not JSON"
            done = _edit(doc, rng) if how == "edit" else "deleted 'content_sha256'"
            if how == "unsigned":
                doc.pop("content_sha256", None)
            manifest.write_text(json.dumps(doc))
            return f"{how}: {done}"
        return f"{how} {target.name}"

    def _load(self, name: str, folder: Path) -> Any:
        from hrefine.garlic import GarlicGraph
        from hrefine.raptor import RaptorTree

        if name == "raptor":
            return RaptorTree.load(folder, embedder=self.keyword)
        return GarlicGraph.load(folder, embedder=self.keyword)

    def _load_damaged(self, name: str, original: Any, folder: Path) -> list[Finding]:
        found: list[Finding] = []
        where = f"load damaged {name}"
        ok, loaded = call(where, lambda: self._load(name, folder), self.raised, found)
        if ok and not _same_tree(loaded.tree, original.tree):
            found.append(Finding("lost", where, "loaded something else than was saved"))
        if ok:
            found += self._use(name, loaded)
        return found

    # -- forgery ---------------------------------------------------------------------------
    def _forge(self, folder: Path, rng: random.Random) -> str:
        from hrefine._saved import content_digest

        manifest = folder / "tree.json"
        doc = _json(manifest.read_text("utf-8", "replace")) if manifest.is_file() else None
        if doc is None:
            return "no manifest to forge"
        arrays = doc.get("arrays") if isinstance(doc, dict) else None
        sums = doc.get("sha256") if isinstance(doc, dict) else None
        if rng.random() < 0.35 and isinstance(arrays, list) and arrays and isinstance(sums, dict):
            done = _forge_array(folder, str(rng.choice(arrays)), sums, rng)
        else:
            done = _edit(doc, rng)
        if isinstance(doc, dict):
            doc["content_sha256"] = content_digest(doc)
        manifest.write_text(json.dumps(doc))
        return done

    def _load_forged(self, name: str, folder: Path) -> list[Finding]:
        found: list[Finding] = []
        where = f"load forged {name}"
        ok, loaded = call(where, lambda: self._load(name, folder), self.raised, found)
        return found + (self._use(name, loaded) if ok else [])

    def _use(self, name: str, loaded: Any) -> list[Finding]:
        """Query what was loaded: only HrefineErrors, budget and finite scores held."""
        from hrefine.garlic import GarlicSearcher

        found: list[Finding] = []
        where = f"query loaded {name}"
        if name == "raptor":
            ok, out = call(
                where, lambda: loaded.retrieve(_QUERY, max_tokens=200), self.raised, found
            )
            if ok and sum(loaded.counter.count(n.text) for n in out) > 200:
                found.append(Finding("over_budget", where, "retrieved over 200 tokens"))
            if ok and any(not math.isfinite(n.score) for n in out):
                found.append(Finding("crash", where, "a score is not finite"))
            return found
        llm = fake_llm(random.Random(1), 0.0)
        ok, _ = call(
            where,
            lambda: GarlicSearcher(loaded, llm=llm).search(_QUERY, max_tokens=400),
            self.raised,
            found,
        )
        return found

    # -- save then load --------------------------------------------------------------------
    def _roundtrip(self, rng: random.Random) -> tuple[list[Finding], str]:
        from hrefine.persist import load_tree, save_tree
        from hrefine.tree import Tree

        self.sources["roundtrip"] += 1
        tree = Tree(metadata={"sources": ["a"], "v": _value(rng)})
        n = rng.randint(1, 6)
        for i in range(n):
            _, text = random_text(rng, self.texts)
            text = text if isinstance(text, str) else repr(text)
            parents = [rng.randrange(i)] if i and rng.random() < 0.7 else []
            tree.add_node(text[:3000], level=i, parents=parents, metadata={"m": _value(rng)})
        ids: list[int] = []
        vectors = np.zeros((0, 4))
        if rng.random() < 0.6:
            ids = sorted(rng.sample(range(n), rng.randint(1, n)))
            vectors = np.asarray(
                [[rng.choice((0.0, 1.5, -2.0, 1e30, float("nan"))) for _ in range(4)] for _ in ids],
                dtype=rng.choice((np.float32, np.float64)),
            )
        found: list[Finding] = []
        if ids:
            call("set_embeddings", lambda: tree.set_embeddings(ids, vectors), self.raised, found)
        folder = self._fresh("roundtrip")
        config = {"x": _value(rng)}
        ok, _ = call(
            "save", lambda: save_tree(tree, folder, kind="t", config=config), self.raised, found
        )
        if not ok:
            return found, repro(tree=tree.to_dict(), config=config)
        ok, out = call("load saved", lambda: load_tree(folder, kind="t"), self.raised, found)
        if not ok:
            found.append(Finding("lost", "load saved", "a saved tree does not load"))
        elif not _same_tree(out[0], tree) or not _same(out[1], config):
            found.append(Finding("lost", "load saved", "loaded something else than was saved"))
        return found, repro(tree=tree.to_dict(), config=config)

    # -- LongRefiner's structure cache -----------------------------------------------------
    def _lr_cache(self, rng: random.Random) -> tuple[list[Finding], str]:
        from hrefine.longrefiner import LongRefiner

        self.sources["lr-cache"] += 1
        cache = self._fresh("lr-cache")
        page = rng.choice(self.texts)
        doc = page[:6000].decode("utf-8", "replace")
        llm = fake_llm(random.Random(rng.randrange(99)), 0.0)

        def refine() -> str:
            refiner = LongRefiner(
                scorer="bm25", tokenizer="regex", llm=llm, structure="model", cache_dir=str(cache)
            )
            return str(refiner.refine(_QUERY, doc, 300).text)

        found: list[Finding] = []
        ok, first = call("lr-cache first", refine, self.raised, found)
        if not ok:
            return found, repro(doc=doc)
        done = []
        for _ in range(rng.randint(1, 2)):
            # Listed again each time: the damage before may have removed a file.
            entries = sorted(p for p in cache.rglob("*") if p.is_file() and not p.is_symlink())
            if not entries:
                break
            target = rng.choice(entries)
            folder = target.parent
            if target.name == "tree.json" and rng.random() < 0.5:
                doc_json = _json(target.read_text("utf-8", "replace"))
                if doc_json is None:
                    continue
                done.append(_edit(doc_json, rng))
                if rng.random() < 0.5:
                    from hrefine._saved import content_digest

                    doc_json["content_sha256"] = content_digest(doc_json)
                    done[-1] += " (signed)"
                target.write_text(json.dumps(doc_json))
            else:
                done.append(self._damage(folder, rng))
        ok, second = call("lr-cache second", refine, self.raised, found)
        if ok and second != first:
            found.append(Finding("lost", "lr-cache", "a damaged cache changed the output"))
        return found, repro(doc=doc[:200], damage=done)


def _json(text: str) -> Any:
    """The JSON document ``text`` holds, or None."""
    try:
        return json.loads(text)
    except ValueError:
        return None


def _forge_array(folder: Path, name: str, sums: dict[str, Any], rng: random.Random) -> str:
    """Change the array ``name`` and record its new checksum in ``sums``; what was done."""
    import hashlib

    path = folder / f"{name}.npy"
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        return f"{name}.npy unreadable ({type(exc).__name__})"
    what = rng.choice(("nan", "inf", "huge", "shape", "dtype", "zeros"))
    if what in ("nan", "inf", "huge") and arr.dtype.kind == "f" and arr.size:
        arr = arr.copy()
        arr.flat[rng.randrange(arr.size)] = {"nan": np.nan, "inf": np.inf}.get(what, 1e38)
    elif what == "shape":
        arr = arr.reshape(-1)[: max(arr.size - 1, 0)]
    elif what == "dtype":
        arr = arr.astype(rng.choice((np.float64, np.int64, np.float16)))
    else:
        arr = np.zeros_like(arr)
    np.save(path, arr, allow_pickle=False)
    sums[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return f"{name}.npy: {what}"


def _value(rng: random.Random, depth: int = 0) -> Any:
    """A random metadata value: JSON types, NaN, huge numbers, text with lone surrogates, or
    (rarely) something JSON cannot hold."""
    r = rng.random()
    if r < 0.1 and depth < 3:
        return {f"k{i}\ud800"[: rng.randint(2, 4)]: _value(rng, depth + 1) for i in range(3)}
    if r < 0.2 and depth < 3:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if r < 0.23:
        return rng.choice((b"bytes", {1, 2}, object()))
    return rng.choice(
        (None, True, 0, -1, 2**53 - 1, 2**53, 2**64, -(2**63), 1.5, float("nan"), float("inf"),
         "", "text", "\ud800", "\U0001f600", "\x00", "a" * 10_000)
    )  # fmt: skip
