"""The code blocks of README.md and docs/*.md, and a runner that runs them as a reader would.

``tests/unit/test_docs_examples.py`` runs every ```` ```python ```` and ```` ```bash ```` block
(``sh``, ``shell`` and ``console`` too) of README.md and docs/*.md. The blocks of one file run
in order, in one subprocess (``python tests/doc_blocks.py SPEC``), in one empty working folder
and one namespace, so a block may use what an earlier block of its page defined, as a reader
would; the models load once per page. Shell blocks run their ``hrefine ...`` commands through
the CLI's own entry point (``hrefine.cli.main``, what the ``hrefine`` script calls), in-process,
with the pipes and redirections of the block (``cat f | hrefine ...``, ``< f``, ``> f``); each
command must exit 0. Blocks of other languages (``text``, ``json``, none) are output or formats
and are not run.

What the examples take as given is filled in from ``../shared/data`` by three documented tables:

* :data:`FILES`: placeholder file names (``page.html``, ``contract.txt``, ``mine.jsonl``, ...)
  and the shared data each is made from, written into the working folder before the page runs;
* :data:`NAMES`: placeholder variables (``page_html``, ``texts``, ``llm``, ``my_retriever``, ...)
  and what each is, per page where pages mean different things;
* :data:`SUBSTITUTIONS`: text replaced in a block before it runs: "your model folder" paths by
  the embedded models' folders, and step counts and question limits made small.

A block that cannot run here (a network, a GPU, a large optional model, a Ray cluster, an LLM
API key, or the set-up itself) is marked in the Markdown, on the line right before its fence,
with a visible ``<!-- docs-test: skip REASON -->``; the test lists them and requires a reason.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import io
import json
import os
import re
import shlex
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


#: The Markdown files whose blocks are run (docs/design.md holds only diagrams).
def markdown_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


RUN_LANGUAGES = {
    "python": "python",
    "bash": "bash",
    "sh": "bash",
    "shell": "bash",
    "console": "bash",
}
#: Fenced blocks that are output, data formats or diagrams: never run.
SHOWN_LANGUAGES = {"", "text", "json", "jsonl", "toml", "yaml", "html", "markdown", "md"}

_FENCE = re.compile(r"^```(?P<lang>[\w+-]*)[^\n]*\n(?P<code>.*?)^```[ \t]*$", re.M | re.S)
_MARKER = re.compile(r"<!--\s*docs-test:\s*(?P<verb>\w+)(?P<reason>.*?)-->")


@dataclass(frozen=True)
class Block:
    """One fenced code block: its file (relative to the repository), line, language, text."""

    file: str
    line: int
    lang: str
    code: str
    skip: str | None = None  # the reason given by a ``<!-- docs-test: skip REASON -->`` marker

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def kind(self) -> str | None:
        """``"python"`` or ``"bash"`` for a block that runs, else None."""
        return RUN_LANGUAGES.get(self.lang)


def blocks(markdown: str, file: str = "<text>") -> list[Block]:
    """The fenced blocks of a Markdown text, with the skip reason of a marker right before each.

    Raises ValueError for a marker that is not right before a fence, or that is not ``skip``.
    """
    found: list[Block] = []
    used: set[int] = set()
    for m in _FENCE.finditer(markdown):
        line = markdown.count("\n", 0, m.start()) + 1
        before = markdown[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.fullmatch(before.strip())
        skip = None
        if marker:
            used.add(m.start() - len(before) - 1)
            if marker.group("verb") != "skip":
                raise ValueError(f"{file}:{line - 1}: unknown docs-test marker {before.strip()!r}")
            skip = marker.group("reason").strip()
        found.append(Block(file, line, m.group("lang"), m.group("code"), skip))
    markers = [m.start() for m in _MARKER.finditer(markdown)]
    if len(markers) != sum(b.skip is not None for b in found):
        lines = [markdown.count("\n", 0, pos) + 1 for pos in markers]
        raise ValueError(f"{file}: a docs-test marker (lines {lines}) is not right before a fence")
    return found


def python_blocks(markdown: str) -> list[tuple[int, str]]:
    """The ```` ```python ```` blocks of a Markdown text, each with the line it starts on."""
    return [(b.line, b.code) for b in blocks(markdown) if b.lang == "python"]


def file_blocks(path: Path) -> list[Block]:
    return blocks(path.read_text(encoding="utf-8"), path.relative_to(REPO).as_posix())


# ---------------------------------------------------------------------------------------------
# The substitution table
# ---------------------------------------------------------------------------------------------

#: Placeholder files -> how each is made from the shared data (a path under ../shared/data,
#: optionally cut to its first N characters, or a builder name). Written into the page's
#: working folder before its first block runs, when a block of the page names the file.
FILES: dict[str, tuple[str, int | None]] = {
    # HTML pages: small real Wikipedia pages of WikiTableQuestions
    "page.html": ("wtq/pages/203-284.html", None),
    "b.html": ("wtq/pages/202-79.html", None),
    # long documents, cut to a few thousand characters so that each example takes seconds
    "contract.txt": ("leval/cuad/docs/cuad_15.txt", 6000),
    "paper.txt": ("leval/qasper/docs/qasper_17.txt", 3000),
    "paper.md": ("leval/qasper/docs/qasper_17.txt", 3000),
    "story.txt": ("leval/quality/docs/quality_01.txt", 1500),
    "notes.md": ("@markdown_notes", None),
    "notes.txt": ("leval/quality/docs/quality_01.txt", 800),
    "a.md": ("@markdown_notes", None),
    "docs/*.md": ("@markdown_notes", None),  # one small page in a docs/ folder
    # question files in the format of `hrefine eval --dataset FILE` (3 real WTQ questions)
    "my_pages.jsonl": ("@wtq_questions", None),
    "mine.jsonl": ("@wtq_questions", None),
    # the input of `hrefine distributed html`: id, html, query rows
    "pages.jsonl": ("@wtq_rows", None),
    # `hrefine eval -m mypkg.compress:MyCompressor`: your package, importable from the folder
    "mypkg.compress": ("@my_package", None),
}

#: Placeholder variables of the Python blocks -> what each is; "*" for every page, a page's
#: own entry where it means something else there. Each value names a builder in _NAMES.
NAMES: dict[str, dict[str, str]] = {
    "*": {
        "page_html": "page.html as text",
        "page_a": "a real WTQ page",
        "page_b": "a real WTQ page",
        "page_c": "a real WTQ page",
        "pages": "(path, html) pairs of three real WTQ pages",
        "question": "a HotpotQA question",
        "texts": "the ten paragraphs of that HotpotQA item",
        "docs": "those paragraphs as LangChain Documents",
        "documents": "those paragraphs as LlamaIndex Documents",
        "base_retriever": "a LangChain retriever returning those Documents",
        "my_retriever": "a LangChain retriever returning the WTQ pages",
        "llm": "hrefine's instant extractive GARLIC LM (hrefine.eval.garlic_method)",
        "chat_model": "langchain_core's FakeListChatModel",
        "answer_llm": "llama_index's MockLLM",
        "my_llm": "llama_index's MockLLM",
        "my_embed_model": "HrefineEmbedding() (the embedded MiniLM)",
        "embed_model": "HrefineEmbedding() (the embedded MiniLM)",
        "embeddings": "HrefineEmbeddings() (the embedded MiniLM)",
        "my_langchain_embeddings": "HrefineEmbeddings() (the embedded MiniLM)",
        "my_langchain_compressor": "HtmlRagCompressor(max_tokens=512)",
        "my_tiktoken_encoding": "tiktoken's cl100k_base, from the files llama_index ships",
        "client": "an object whose complete(prompt) echoes the prompt's first line",
        "lm": "the embedded SmolLM2 (default_lm())",
        "questions": "two short questions",
    },
    "docs/raptor.md": {
        "story_text": "the QuALITY story of story.txt",
        "docs": "its paragraphs as LangChain Documents",
        "more_docs": "one more LangChain Document",
        "documents": "its paragraphs as LlamaIndex Documents",
        "document": "one more LlamaIndex Document",
        "my_llm": "a str -> str summariser that keeps the first sentence",
        "llm": "llama_index's MockLLM",
    },
    "docs/longrefiner.md": {
        "contract_text": "contract.txt as text",
        "contract": "contract.txt as text",
        "amendment": "a short amendment",
        "question": "When does the licence renew?",
        "documents": "the contract and the amendment, as strings",
        "docs": "the contract as a LangChain Document",
        "store": "a LangChain InMemoryVectorStore holding it",
        "nodes": "the contract as a LlamaIndex NodeWithScore",
        "index": "a LlamaIndex VectorStoreIndex holding it",
        "llm": "llama_index's MockLLM",
    },
    "docs/evaluation.md": {
        "my_llm": "a str -> str reader that answers with the context's first words",
    },
}

#: Text replaced in a block before it runs: (pattern, replacement, why). Applied in order.
SUBSTITUTIONS: list[tuple[str, str | Callable[[re.Match[str]], str], str]] = [
    # "your model folder" placeholders -> the embedded models
    (r"~/models/Qwen2\.5-1\.5B-Instruct", "{smollm2}", "your model folder: embedded SmolLM2"),
    (r"/models/Qwen2\.5-(0\.5|7)B-Instruct", "{smollm2}", "your model folder: embedded SmolLM2"),
    (r"path/to/(reader|base)-model", "{smollm2}", "your model folder: embedded SmolLM2"),
    (
        r"/models/(bge-small-en-v1\.5|all-MiniLM-L6-v2|e5-small-v2)",
        "{minilm}",
        "your embedder folder: the embedded MiniLM",
    ),
    # small runs: a few training steps, a few questions
    # a hundredth of the steps, at least 1: 200 -> 2, and a resumed run to 400 -> 4 goes on
    (
        r"--steps (\d+)",
        lambda m: f"--steps {max(1, int(m[1]) // 100)}",
        "training: 1% of the steps",
    ),
    # a training command that leaves --steps to the default (100 on a CPU: half an hour)
    (
        r"^(?!.*--steps)((?:\.venv/bin/)?hrefine train (?!build-data)[^#\n]*?)(\s+\\|\s+#.*)?$",
        r"\1 --steps 2\2",
        "training: 2 steps",
    ),
    (r"max_steps=\d+, rank", "max_steps=2, rank", "training: 2 steps"),
    # before a line's trailing comment, which would swallow it
    (r"(hrefine train build-data [^#\n]*?)(\s+\\|\s+#.*)?$", r"\1 --limit 3\2", "3 questions"),
    (r"(hrefine eval .*?)(?: (?:--limit|-n) \d+)?( \\)?$", r"\1 --limit 2\2", "2 questions"),
    (r"limit=\d+", "limit=2", "2 questions"),
    (r"(build_examples\(.*?)\)$", r"\1, limit=3)", "3 questions per source"),
]


def substitute(code: str, values: dict[str, str]) -> str:
    """``code`` with :data:`SUBSTITUTIONS` applied (``{smollm2}``-style values filled in)."""
    for pattern, replacement, _why in SUBSTITUTIONS:
        if not re.search(pattern, code, flags=re.M):
            continue
        if isinstance(replacement, str) and "{" in replacement:  # a folder: taken literally
            folder = replacement.format(**values)
            code = re.sub(pattern, lambda _m, f=folder: f, code, flags=re.M)
        else:
            code = re.sub(pattern, replacement, code, flags=re.M)
    return code


# ---------------------------------------------------------------------------------------------
# Builders (used in the runner's subprocess only)
# ---------------------------------------------------------------------------------------------


def data_dir() -> Path:
    return Path(os.environ.get("HREFINE_DATA", REPO.parent / "shared" / "data"))


HOTPOT_ITEM = "5ac3165c5542995ef918c10a"  # the item the GARLIC guide's picture is drawn from
WTQ_PAGES = ["203-284.html", "202-79.html", "201-0.html"]


def _markdown_notes() -> str:
    return (
        "# Notes on the QuALITY story\n\n## The plot\n\n"
        + (data_dir() / "leval/quality/docs/quality_01.txt").read_text(encoding="utf-8")[:600]
        + "\n\n## Open questions\n\nWhy was the story untrue? Who hosted the awards?\n"
    )


def _wtq_questions() -> str:
    rows = []
    for line in (data_dir() / "wtq/questions.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if (
            row["strict"]
            and row["doc"].rsplit("/", 1)[-1] in WTQ_PAGES
            and not any(r["doc"] == row["doc"] for r in rows)
        ):
            rows.append(row)
    out = []
    for row in rows:
        html = (data_dir() / "wtq" / row["doc"]).read_text(encoding="utf-8")
        out.append(
            {
                "id": row["id"],
                "question": row["question"],
                "answers": row["answers"],
                "strict": True,
                "document": html,
            }
        )
    return "".join(json.dumps(r) + "\n" for r in out)


def _wtq_rows() -> str:
    out = []
    for line in _wtq_questions().splitlines():
        row = json.loads(line)
        out.append({"id": row["id"], "html": row["document"], "query": row["question"]})
    return "".join(json.dumps(r) + "\n" for r in out)


MY_PACKAGE = '''"""A compressor of your own: the first lines of the document that fit."""


class MyCompressor:
    def __init__(self, top_k: int = 3, tokenizer=None):
        self.top_k, self.tokenizer = int(top_k), tokenizer

    def compress(self, document: str, query: str, max_tokens: int) -> str:
        kept = []
        for line in document.splitlines()[: self.top_k * 20]:
            if self.tokenizer.count("\\n".join([*kept, line])) > max_tokens:
                break
            kept.append(line)
        return "\\n".join(kept)
'''


def _my_package() -> dict[str, str]:
    return {"mypkg/__init__.py": "", "mypkg/compress.py": MY_PACKAGE}


def write_files(folder: Path, code: str) -> list[str]:
    """Write into ``folder`` every placeholder file of :data:`FILES` that ``code`` names."""
    made = []
    for name, (source, cut) in FILES.items():
        if name not in code:
            continue
        if source.startswith("@"):
            text = globals()["_" + source[1:]]()
        else:
            text = (data_dir() / source).read_text(encoding="utf-8")
        if isinstance(text, dict):
            for rel, content in text.items():
                (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                (folder / rel).write_text(content, encoding="utf-8")
            made.append(name)
            continue
        if cut:
            text = text[:cut]
        target = folder / (name.replace("*", "notes") if "*" in name else name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        made.append(name)
    return made


def _hotpot() -> Any:
    from hrefine.eval.loaders import load_dataset

    (item,) = [i for i in load_dataset("hotpotqa", data_dir=data_dir()) if i.id == HOTPOT_ITEM]
    return item


def _paragraphs() -> list[tuple[str, str]]:
    from hrefine.eval.loaders import hotpot_paragraph_text

    return [(p["title"], hotpot_paragraph_text(p)) for p in _hotpot().extra["paragraphs"]]


def _lc_retriever(docs: list[Any]) -> Any:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class Fixed(BaseRetriever):
        """A LangChain retriever that returns the same documents for every query."""

        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return [d.model_copy(deep=True) for d in docs]

    return Fixed()


def _wtq_pages() -> list[tuple[str, str]]:
    folder = data_dir() / "wtq" / "pages"
    return [(p, (folder / p).read_text(encoding="utf-8")) for p in WTQ_PAGES]


def _first_sentence(prompt: str) -> str:
    text = prompt.strip().splitlines()[-1] if prompt.strip() else ""
    return (text.split(". ")[0] or "Nothing to summarise.").strip()[:200] + "."


class _Client:
    def complete(self, prompt: str) -> str:
        return prompt.splitlines()[0] if prompt else ""


def _tiktoken_encoding() -> Any:
    import hrefine._tiktoken as tk
    import tiktoken

    folder = tk._data_folder("cl100k_base")
    old = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    try:
        return tiktoken.get_encoding("cl100k_base")
    finally:
        if old is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = old


def _mock_llm() -> Any:
    from llama_index.core.llms import MockLLM

    return MockLLM(max_tokens=16)


def _lc_docs(texts: list[tuple[str, str]]) -> list[Any]:
    from langchain_core.documents import Document

    return [Document(page_content=t, metadata={"title": n}, id=n) for n, t in texts]


def _li_docs(texts: list[tuple[str, str]]) -> list[Any]:
    from llama_index.core import Document

    return [Document(text=t, id_=n, metadata={"title": n}) for n, t in texts]


def _story_parts() -> list[tuple[str, str]]:
    story = (data_dir() / FILES["story.txt"][0]).read_text(encoding="utf-8")[:3000]
    parts = [p.strip() for p in story.split("\n\n") if p.strip()]
    return [(f"part-{i}", p) for i, p in enumerate(parts)]


def _contract() -> str:
    source, cut = FILES["contract.txt"]
    return (data_dir() / source).read_text(encoding="utf-8")[:cut]


AMENDMENT = (
    "AMENDMENT 1\n\n1. The term of the Agreement is extended by one (1) year.\n\n"
    "2. All other terms remain in force."
)


def _li_index(docs: list[Any]) -> Any:
    from llama_index.core import VectorStoreIndex

    from llamaindex_hrefine import HrefineEmbedding

    return VectorStoreIndex.from_documents(docs, embed_model=HrefineEmbedding())


def _lc_store(docs: list[Any]) -> Any:
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_hrefine import HrefineEmbeddings

    store = InMemoryVectorStore(HrefineEmbeddings())
    store.add_documents(docs)
    return store


def _nodes_of(text: str) -> list[Any]:
    from llama_index.core.schema import NodeWithScore, TextNode

    return [NodeWithScore(node=TextNode(text=text, metadata={"title": "Licence"}), score=0.8)]


def _builders(page: str) -> dict[str, Callable[[], Any]]:
    """What each placeholder variable is on ``page`` (see :data:`NAMES`)."""

    def lc_embeddings() -> Any:
        from langchain_hrefine import HrefineEmbeddings

        return HrefineEmbeddings()

    def li_embedding() -> Any:
        from llamaindex_hrefine import HrefineEmbedding

        return HrefineEmbedding()

    def garlic_llm() -> Any:
        from hrefine.eval.garlic_method import ExtractiveGarlicLM

        return ExtractiveGarlicLM()

    def fake_chat() -> Any:
        from langchain_core.language_models.fake_chat_models import FakeListChatModel

        return FakeListChatModel(responses=["The answer is in the context."])

    def compressor() -> Any:
        from langchain_hrefine import HtmlRagCompressor

        return HtmlRagCompressor(max_tokens=512)

    def default_lm() -> Any:
        from hrefine.models import default_lm

        return default_lm()

    pages = _wtq_pages
    common: dict[str, Callable[[], Any]] = {
        "page_html": lambda: (data_dir() / "wtq/pages" / WTQ_PAGES[0]).read_text(encoding="utf-8"),
        "page_a": lambda: pages()[0][1],
        "page_b": lambda: pages()[1][1],
        "page_c": lambda: pages()[2][1],
        "pages": pages,
        "question": lambda: _hotpot().question,
        "texts": lambda: [t for _, t in _paragraphs()],
        "docs": lambda: _lc_docs(_paragraphs()),
        "documents": lambda: _li_docs(_paragraphs()),
        "base_retriever": lambda: _lc_retriever(_lc_docs(_paragraphs())),
        "my_retriever": lambda: _lc_retriever(_lc_docs([(p, h) for p, h in pages()])),
        "llm": garlic_llm,
        "chat_model": fake_chat,
        "answer_llm": _mock_llm,
        "my_llm": _mock_llm,
        "my_embed_model": li_embedding,
        "embed_model": li_embedding,
        "embeddings": lc_embeddings,
        "my_langchain_embeddings": lc_embeddings,
        "my_langchain_compressor": compressor,
        "my_tiktoken_encoding": _tiktoken_encoding,
        "client": _Client,
        "lm": default_lm,
        "questions": lambda: ["Where is Rome?", "Who wrote Hamlet?"],
    }
    own: dict[str, dict[str, Callable[[], Any]]] = {
        "docs/raptor.md": {
            "story_text": lambda: "\n\n".join(t for _, t in _story_parts()),
            "docs": lambda: _lc_docs(_story_parts()),
            "more_docs": lambda: _lc_docs([("more", "A new chapter: the ship reached Mars.")]),
            "documents": lambda: _li_docs(_story_parts()),
            "document": lambda: _li_docs([("more", "A new chapter: the ship reached Mars.")])[0],
            "my_llm": lambda: _first_sentence,
            "llm": _mock_llm,
        },
        "docs/longrefiner.md": {
            "contract_text": _contract,
            "contract": _contract,
            "amendment": lambda: AMENDMENT,
            "question": lambda: "When does the licence renew?",
            "documents": lambda: [_contract(), AMENDMENT],
            "docs": lambda: _lc_docs([("Licence", _contract())]),
            "store": lambda: _lc_store(_lc_docs([("Licence", _contract())])),
            "nodes": lambda: _nodes_of(_contract()),
            "index": lambda: _li_index(_li_docs([("Licence", _contract())])),
            "llm": _mock_llm,
        },
        "docs/evaluation.md": {
            "my_llm": lambda: lambda prompt: " ".join(prompt.split()[:5]),
        },
    }
    merged = dict(common)
    merged.update(own.get(page, {}))
    return merged


def names_used(code: str, page: str) -> list[str]:
    """The placeholder variables of :data:`NAMES` that ``code`` reads before it assigns them."""
    table = {**NAMES["*"], **NAMES.get(page, {})}
    loads: dict[str, int] = {}
    stores: dict[str, int] = {}
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name) and node.id in table:
            seen = stores if isinstance(node.ctx, ast.Store) else loads
            seen[node.id] = min(seen.get(node.id, node.lineno), node.lineno)
    return [n for n in table if n in loads and loads[n] <= stores.get(n, loads[n])]


def unbound_names(code: str) -> set[str]:
    """Names ``code`` reads that it neither binds (assigns, imports, defines) nor has built in."""
    import builtins

    bound: set[str] = set(dir(builtins))
    loads: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return loads - bound


# ---------------------------------------------------------------------------------------------
# Shell commands
# ---------------------------------------------------------------------------------------------


@dataclass
class Command:
    args: list[str]  # after "hrefine"
    stdin: str | None = None
    stdout: str | None = None
    text: str = ""


def commands(code: str) -> list[Command]:
    """The commands of a shell block: continuation lines joined, comments dropped.

    A command is ``hrefine ARGS`` (or ``.venv/bin/hrefine``), optionally fed by ``cat FILE |``
    or ``< FILE`` and written with ``> FILE``. Anything else raises ValueError: such a block
    must carry a skip marker.
    """
    out = []
    for raw in code.replace("\\\n", " ").splitlines():
        words = shlex.split(raw, comments=True)
        if not words:
            continue
        cmd = Command(args=[], text=raw.strip())
        if words[0] == "cat" and "|" in words:
            bar = words.index("|")
            (cmd.stdin,) = words[1:bar]
            words = words[bar + 1 :]
        if words[0] not in ("hrefine", ".venv/bin/hrefine"):
            raise ValueError(f"not an hrefine command: {raw.strip()!r}")
        rest = words[1:]
        while len(rest) >= 2 and rest[-2] in ("<", ">"):
            if rest[-2] == "<":
                cmd.stdin = rest[-1]
            else:
                cmd.stdout = rest[-1]
            rest = rest[:-2]
        if any(w in ("|", "<", ">", ">>", "&&", ";") for w in rest):
            raise ValueError(f"a shell construct the runner does not take: {raw.strip()!r}")
        cmd.args = rest
        out.append(cmd)
    return out


def _expand(args: list[str]) -> list[str]:
    import glob

    out = []
    for a in args:
        a = os.path.expanduser(a)
        matched = sorted(glob.glob(a)) if any(c in a for c in "*?[") else []
        out.extend(matched or [a])
    return out


def run_command(cmd: Command) -> tuple[int, str]:
    """Run one command through ``hrefine.cli.main`` in-process; (status, last output)."""
    from hrefine.cli import main

    out = io.StringIO()
    with contextlib.ExitStack() as stack:
        if cmd.stdin:
            raw = stack.enter_context(open(cmd.stdin, "rb"))
            stack.enter_context(_swap(sys, "stdin", io.TextIOWrapper(raw, encoding="utf-8")))
        target: Any = out
        if cmd.stdout:
            target = stack.enter_context(open(cmd.stdout, "w", encoding="utf-8"))
        stack.enter_context(_swap(sys, "stdout", target))
        status = main(_expand(cmd.args))
    return status, out.getvalue()[-2000:]


@contextlib.contextmanager
def _swap(obj: Any, attr: str, value: Any) -> Iterator[None]:
    old = getattr(obj, attr)
    setattr(obj, attr, value)
    try:
        yield
    finally:
        setattr(obj, attr, old)


# ---------------------------------------------------------------------------------------------
# The runner (a subprocess per page)
# ---------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    id: str
    ok: bool
    seconds: float
    error: str = ""


def model_values() -> dict[str, str]:
    """The folders that "your model" placeholders become."""
    from hrefine.models import default_embedder, default_lm

    lm = default_lm()
    lm.tokenizer  # noqa: B018  (makes the cached copy on a fresh machine)
    minilm = default_embedder().model_name_or_path
    return {"smollm2": str(lm.model_name_or_path), "minilm": str(minilm)}


def run_page(
    page: str, folder: Path, results: Path, kinds: tuple[str, ...] = ("python", "bash")
) -> list[Outcome]:
    """Run every block of ``page`` that has no skip marker, in order, in ``folder``."""
    todo = [b for b in file_blocks(REPO / page) if b.kind in kinds and b.skip is None]
    os.chdir(folder)
    sys.path.insert(0, str(folder))  # a package of yours there imports, as if installed
    code = "\n".join(b.code for b in todo)
    write_files(folder, code)
    values = model_values() if any(re.search(p, code, re.M) for p, *_ in SUBSTITUTIONS[:4]) else {}
    builders = _builders(page)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    outcomes: list[Outcome] = []
    seen: dict[str, str] = {}
    for block in todo:
        start = time.perf_counter()
        try:
            source = substitute(block.code, values)
            if block.kind == "python":
                for name in names_used(source, page):
                    if name not in namespace:
                        namespace[name] = builders[name]()
                compiled = compile(source, block.id, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
                with contextlib.redirect_stdout(io.StringIO()):
                    made = eval(compiled, namespace)  # the page's own example
                    if asyncio.iscoroutine(made):
                        asyncio.run(made)
            else:
                for cmd in commands(source):
                    if cmd.text in seen:  # the same command earlier on the page
                        continue
                    status, shown = run_command(cmd)
                    if status != 0:
                        raise RuntimeError(f"`{cmd.text}` exited {status}:\n{shown}")
                    seen[cmd.text] = block.id
            outcome = Outcome(block.id, True, time.perf_counter() - start)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            tb = traceback.format_exc()
            outcome = Outcome(block.id, False, time.perf_counter() - start, tb[-4000:])
        outcomes.append(outcome)
        results.write_text(json.dumps([asdict(o) for o in outcomes]), encoding="utf-8")
    return outcomes


if __name__ == "__main__":
    page_arg, folder_arg, results_arg = sys.argv[1:4]
    sys.path.insert(0, str(REPO / "tests"))
    kinds_arg = tuple(sys.argv[4].split(",")) if len(sys.argv) > 4 else ("python", "bash")
    run_page(page_arg, Path(folder_arg), Path(results_arg), kinds_arg)
