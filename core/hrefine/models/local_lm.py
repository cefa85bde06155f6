"""LocalLM: a local causal language model that many threads and methods share.

A :class:`LocalLM` wraps any Hugging Face causal LM on disk (a local path, a name in the local
Hugging Face cache, or a GGUF file). It generates in length-sorted batches, gives the probability
of a fixed set of answers, runs LoRA adapters, and opens
:class:`~hrefine.models.lm_session.LMSession` objects (a conversation over one KV cache).

Every call runs under one adapter (or the base model): its ``adapter=``, else the innermost
:meth:`LocalLM.using` block of the calling thread or task, else the LM's default. The PEFT model
has one active adapter for everyone, so each pass goes through the LM's
:class:`~hrefine.models._gate.ModelGate`, which switches the model only between passes: threads
using different adapters on one LocalLM each get their own adapter's output. torch, transformers
and peft are imported on first use; nothing is ever downloaded. The embedded default model is in
:mod:`hrefine.models.smollm2`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from hrefine.errors import ConfigError, ModelNotFoundError
from hrefine.models._adapters import INHERIT, AdapterChoice, LoraAdapters
from hrefine.models._gate import ModelGate
from hrefine.models._hf_load import DTYPES, load_once
from hrefine.models._lm_passes import forward_pass, generate_batched
from hrefine.models._lm_text import answer_token_ids, chat_prompt_text, prompt_ids
from hrefine.models.device import pick_device
from hrefine.models.lm_session import ForwardResult, LMSession

__all__ = ["INHERIT", "AdapterChoice", "LocalLM"]

logger = logging.getLogger(__name__)


class LocalLM:
    """A local causal language model, loaded on first use and safe to share between threads.

    Parameters
    ----------
    model_name_or_path:
        A Hugging Face model's folder or a name in the local Hugging Face cache, an installed
        packaged model's name (``"qwen2.5-coder-1.5b"``: its converted folder), or the folder
        holding ``gguf_file``. Nothing is downloaded.
    gguf_file:
        File name of a GGUF checkpoint inside ``model_name_or_path``; its weights are
        de-quantised into a plain dense model on load.
    device:
        Torch device string; ``None`` picks CUDA, then MPS, then the CPU.
    dtype:
        ``"float32"``, ``"bfloat16"``, ``"float16"``, ``"auto"`` (the checkpoint's own) or
        ``"native"`` (bfloat16 where the device multiplies it in hardware: a CUDA GPU that
        supports it, a CPU with AVX512-BF16 or AMX; float32 elsewhere: faster on such a CPU, but
        the answers then differ from other CPUs'); ``None`` takes bfloat16 on a CUDA device that
        supports it and float32 on every CPU.
    attn_implementation:
        Attention kernel for ordinary passes. ``"sdpa"`` (default) is 4-5x faster than
        ``"eager"`` on a 5,000-token CPU prompt; passes that capture attention switch to
        ``"eager"`` for their duration, since only it returns the weights.
    name:
        A short name for logs and reports; defaults to the last part of the path.
    prepare:
        Called with this LM once, just before the weights first load (e.g. to build a local copy
        of them, or to point :attr:`model_name_or_path` elsewhere).

    Examples
    --------
    >>> lm = LocalLM("path/to/Qwen2.5-0.5B-Instruct")  # doctest: +SKIP
    >>> lm.generate("Summarise: ...", max_new_tokens=64)  # doctest: +SKIP
    >>> lm.load_adapter("path/to/lora", "structuring")  # doctest: +SKIP
    >>> with lm.using("structuring"):  # doctest: +SKIP
    ...     lm.generate("...")
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
        prepare: Callable[[LocalLM], None] | None = None,
    ) -> None:
        if dtype is not None and dtype not in {"auto", "native"} and dtype not in DTYPES:
            msg = f"unknown dtype {dtype!r}; expected one of {sorted(DTYPES)}, 'auto' or 'native'"
            raise ConfigError(msg)
        if gguf_file is None and not Path(model_name_or_path).exists():
            from hrefine.models.catalogue import find_packaged, installed_folder

            if (packaged := find_packaged(str(model_name_or_path), "lm")) is not None:
                model_name_or_path = str(installed_folder(packaged))  # or says how to install
                name = name or packaged.name
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
        self._prepare = prepare
        self._logits_kwargs: dict[str, int] = {}
        self._cache_key = "past_key_values"
        self._lora = LoraAdapters()
        self._init_sync()

    def _init_sync(self) -> None:
        self._lock = threading.Lock()
        # The model's adapter state is not known after a copy: the first pass sets it.
        self._gate = ModelGate(self._switch_adapter)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"], state["_gate"]  # copy.deepcopy and pickling (Ray) get their own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_sync()

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
        """The torch model, wrapped in a ``PeftModel`` once an adapter is loaded.

        Calling it directly bypasses the adapter gate: it runs in whatever state the last pass
        left it, so use :meth:`forward`, :meth:`generate` or a session when threads share it.
        """
        self._load()
        return self._model

    def _load(self) -> None:
        load_once(self)

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
        return chat_prompt_text(self.tokenizer, user, system=system)

    def _prompt_ids(self, prompt: str, *, chat: bool, system: str | None) -> list[int]:
        return prompt_ids(self, prompt, chat=chat, system=system)

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

    def answer_ids(self, context: str, choice: str) -> list[int]:
        """Token ids of ``choice`` as the model would write it right after ``context``.

        After a chat template's generation prompt, ``"Yes"`` is the token ``Yes``, not the
        `` Yes`` that the same text gets in the middle of a sentence.

        Parameters
        ----------
        context:
            The text before the answer (its last 48 characters are used).
        choice:
            The answer text; not empty.

        Returns
        -------
        list[int]
            The answer's token ids.
        """
        return answer_token_ids(self.encode, context, choice)

    # ------------------------------------------------------------------ the model's passes
    def forward(
        self,
        ids: Sequence[int],
        cache: Any = None,
        *,
        adapter: AdapterChoice = INHERIT,
        capture: Sequence[tuple[str, int, int]] | None = None,
    ) -> ForwardResult:
        """Run token ``ids`` through the model after a KV cache, as one pass through the gate.

        This is the hook :class:`~hrefine.models.lm_session.LMSession` is built on.

        Parameters
        ----------
        ids:
            New token ids (at least one).
        cache:
            The KV cache of the tokens before (``None`` to start), as the last result's
            :attr:`~ForwardResult.cache`; transformers' cache classes extend it in place.
        adapter:
            The adapter to run under (``None``: the base model); default :data:`INHERIT`.
        capture:
            ``(name, start, end)`` token spans of the cache to measure the new tokens' attention
            to. Weights are reduced layer by layer inside forward hooks, so memory stays that of
            one layer. The pass runs the eager attention kernel (the only one that returns
            weights), switched in for this pass, so it runs with no other pass beside it.

        Returns
        -------
        ForwardResult
            The cache, the next-token logits and, with ``capture``, attention per span.

        Raises
        ------
        EmptyInputError
            When ``ids`` is empty.
        ConfigError
            When attention is asked for and the model's layers return no weights.
        """
        return forward_pass(self, ids, cache, adapter=adapter, capture=capture)

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
        adapter: AdapterChoice = INHERIT,
        stop: Sequence[str] | None = None,
    ) -> list[str]:
        """Generate a completion for each prompt.

        Prompts run in length-sorted, left-padded batches; the output keeps the input order.
        Greedy batches of threads under the same adapter run side by side; sampled ones
        (``temperature > 0``) run alone, as the sampler seeds torch's global generator.

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
        adapter:
            The adapter to generate with (``None``: the base model); default :data:`INHERIT`.
        stop:
            Strings that end a completion as soon as it writes one (kept in the output): a
            list answer ends at ``"]"`` rather than running on to ``max_new_tokens``.

        Returns
        -------
        list[str]
            One completion per prompt (special tokens removed, whitespace stripped); a list of
            one for a single prompt.
        """
        return generate_batched(
            self,
            prompts,
            max_new_tokens=max_new_tokens,
            system=system,
            chat=chat,
            temperature=temperature,
            seed=seed,
            batch_size=batch_size,
            adapter=adapter,
            stop=stop,
        )

    def choice_probs(
        self,
        prompt: str,
        choices: Sequence[str],
        *,
        chat: bool = True,
        system: str | None = None,
        adapter: AdapterChoice = INHERIT,
    ) -> dict[str, float]:
        """Probability of each answer in ``choices`` as the model's reply to ``prompt``.

        Each choice is tokenised as it would follow the prompt (see :meth:`answer_ids`). Its
        score is the model's probability of its tokens up to the first one no other choice
        shares: the first token when the first tokens differ, ``Local`` after ``[`` for
        ``"[Local]"`` against ``"[Global]"``. Scores are renormalised over the choices.

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
        adapter:
            The adapter to score with (``None``: the base model); default :data:`INHERIT`.

        Returns
        -------
        dict[str, float]
            Choice → probability; the values sum to 1.

        Raises
        ------
        ConfigError
            When a choice is empty, repeated, or tokenises to a prefix of another choice.
        """
        session = self.session(adapter=adapter)
        session.append_ids(self._prompt_ids(prompt, chat=chat, system=system))
        return session.choice_probs(choices)

    def session(self, *, adapter: AdapterChoice = INHERIT) -> LMSession:
        """Open an empty KV-cache session over this model.

        Parameters
        ----------
        adapter:
            The adapter every pass of the session runs under (``None``: the base model);
            default :data:`INHERIT`, resolved now.

        Returns
        -------
        LMSession
            A new session; append text to it.
        """
        return LMSession(self, adapter=adapter)

    # ------------------------------------------------------------------ LoRA adapters
    @property
    def adapters(self) -> list[str]:
        """Names of the loaded LoRA adapters, in load order."""
        return list(self._lora.names)

    @property
    def active_adapter(self) -> str | None:
        """The LM's default adapter (:meth:`set_adapter`), or ``None`` for the base model.

        A call inside :meth:`using`, or with ``adapter=``, may run another one.
        """
        return self._lora.default

    def resolve_adapter(self, adapter: AdapterChoice = INHERIT) -> str | None:
        """The adapter that a call given ``adapter=`` here and now runs under.

        Parameters
        ----------
        adapter:
            A loaded adapter's name, ``None`` for the base model, or :data:`INHERIT`: the
            innermost :meth:`using` block of this thread or task, else :attr:`active_adapter`.

        Returns
        -------
        str | None
            An adapter name, or ``None`` for the base model.

        Raises
        ------
        ConfigError
            When no adapter of that name is loaded.
        """
        return self._lora.resolve(adapter)

    def using(self, adapter: str | None) -> AbstractContextManager[None]:
        """Run this thread's (or task's) calls on this LM inside the block under ``adapter``.

        Blocks nest; a call's own ``adapter=`` still wins. Other threads are not affected, so
        ``with lm.using("structuring"):`` is safe while another thread uses another adapter.

        Parameters
        ----------
        adapter:
            A loaded adapter's name, or ``None`` for the base model.

        Returns
        -------
        contextlib.AbstractContextManager
            The block's context manager.

        Raises
        ------
        ConfigError
            When no adapter of that name is loaded (raised on entry).
        """
        return self._lora.using(adapter)

    def load_adapter(self, path: str, name: str) -> None:
        """Load a PEFT (LoRA) adapter from ``path`` under ``name`` and make it the default.

        The first call wraps the base model in a ``PeftModel``; later calls add adapters to it.
        It waits for running passes to finish and keeps new ones out while it loads.

        Parameters
        ----------
        path:
            Folder written by ``PeftModel.save_pretrained``.
        name:
            Name to refer to the adapter by (``adapter=``, :meth:`using`, :meth:`set_adapter`).

        Raises
        ------
        ModelNotFoundError
            When ``path`` does not exist.
        ConfigError
            When an adapter of that name is already loaded.
        """
        if not Path(path).exists():
            msg = f"no adapter folder at {path!r}"
            raise ModelNotFoundError(msg)
        self._load()
        with self._lock, self._gate.exclusive():
            model = self._lora.load(self._model, path, name)
            model.to(self.device)
            model.eval()
            self._model = model
            self._lora.default = name
        logger.info("Loaded adapter %r from %s into %s", name, path, self.name)

    def set_adapter(self, name: str | None) -> None:
        """Make ``name`` the LM's default adapter, or the base model with ``None``.

        Calls that name no adapter and run outside :meth:`using` use it from then on; calls
        already running keep theirs. It is one attribute write, safe from any thread; for a
        choice that only one thread sees, use :meth:`using`.

        Parameters
        ----------
        name:
            A loaded adapter's name, or ``None`` for the base model.

        Raises
        ------
        ConfigError
            When no adapter of that name is loaded.
        """
        self._lora.default = self._lora.resolve(name)

    def _switch_adapter(self, state: Hashable) -> None:
        # The gate calls this with no pass running.
        self._lora.apply(self._model, state)
