"""Local LMs for tests: the embedded SmolLM2 (loaded once per process) and a tiny random Llama.

The tiny model and its LoRA adapters are built from nothing in a second, offline, so tests of
plumbing that needs a real transformers model (threads, adapters, batching) need no download and
no embedded weights.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from hrefine.models import LocalLM, default_lm

#: The tiny model's words (plus ``<unk>`` and ``<eos>``); prompts are made of these.
TINY_WORDS = [f"w{i}" for i in range(60)]


@functools.lru_cache(maxsize=1)
def load_default_lm() -> LocalLM:
    """Return the embedded SmolLM2 with its weights loaded (offline; the first run converts it)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    lm = default_lm()
    lm.model  # noqa: B018 - load now, so that test timings do not include it
    return lm


def build_tiny_lm(folder: Path, *, seed: int = 0) -> Path:
    """Save a random two-layer Llama with a word-level tokenizer (no chat template) to ``folder``.

    Parameters
    ----------
    folder:
        Where to save the model and tokenizer.
    seed:
        Seed of the random weights.

    Returns
    -------
    Path
        ``folder``, loadable with ``LocalLM(str(folder))``.
    """
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<eos>": 1, **{word: i + 2 for i, word in enumerate(TINY_WORDS)}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", eos_token="<eos>", pad_token="<eos>"
    )
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        bos_token_id=1,
        eos_token_id=1,
        pad_token_id=1,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    LlamaForCausalLM(config).save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def build_tiny_adapter(base: Path, folder: Path, *, seed: int) -> Path:
    """Save a random LoRA adapter for the model at ``base`` to ``folder``.

    The adapter's weights are random rather than the usual zero start
    (``init_lora_weights=False``), so each seed changes the model's outputs its own way.

    Returns
    -------
    Path
        ``folder``, loadable with ``LocalLM.load_adapter``.
    """
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(base, local_files_only=True)
    torch.manual_seed(seed)
    config = LoraConfig(
        r=4,
        lora_alpha=16,
        target_modules=["q_proj", "v_proj", "o_proj"],
        init_lora_weights=False,
    )
    get_peft_model(model, config).save_pretrained(str(folder))
    return folder


def build_tiny_cross_encoder(folder: Path) -> Path:
    """A random one-layer BERT cross-encoder with a word-level vocabulary, saved to ``folder``
    (the plumbing of a cross-encoder scorer, offline and in a second)."""
    folder.mkdir(parents=True, exist_ok=True)
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    words = [
        "the",
        "wolf",
        "is",
        "a",
        "classic",
        "rock",
        "station",
        "kk93",
        "plays",
        "country",
        "music",
        "weather",
    ]
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    config = BertConfig(
        vocab_size=5 + len(words),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=1,
    )
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(folder)
    BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(folder)
    return folder


class PairsOnly:
    """LangChain's ``HuggingFaceCrossEncoder`` surface: ``score(text_pairs) -> list[float]``
    (a fake: the point is the plumbing; the score counts the query's words in the text, and
    every pair asked for is recorded)."""

    model_name = "fake/keyword-cross-encoder"

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []

    def score(self, text_pairs: list[tuple[str, str]]) -> list[float]:
        self.pairs.extend(text_pairs)
        return [
            float(sum(w in text.lower() for w in query.lower().split()))
            for query, text in text_pairs
        ]
