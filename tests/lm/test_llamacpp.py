"""The in-process llama.cpp backend on a real model (SmolLM2-135M-Instruct).

References that this code did not write: llama.cpp's own logits from a from-scratch evaluation
(no prefix reuse), the model's own greedy generation, and the probability axioms.
"""

from __future__ import annotations

import numpy as np
import pytest

from pragmodels.lm import ContextLengthError, LlamaCppLM, ModelFileError, PromptFormat, smollm2_path
from pragmodels.lm.llamacpp import check_gguf

PROMPT = "Scale: Cold (0) to Hot (100).\nClue: warm bath.\nAnswer with a number in <answer></answer> tags."
ANSWERS = [f"<answer>{v}</answer>" for v in range(0, 101, 5)]


@pytest.fixture(scope="module")
def reference():
    """llama-cpp-python's own high-level path: ``Llama(logits_all=True)``, ``eval``, ``scores``."""
    from llama_cpp import Llama

    # one thread, as the smollm2 fixture (tests/lm/conftest.py): a second one stalls on shared cores
    return Llama(model_path=str(smollm2_path()), n_ctx=512, logits_all=True, n_threads=1, n_threads_batch=1,
                 verbose=False)


def _from_scratch(ref, lm: LlamaCppLM, prompt: str, cont: str) -> float:
    """log P(cont | prompt) from a fresh, one-sequence evaluation of the whole text (no reuse, no batching)."""
    p, c = lm.split_tokens(prompt, cont)
    ref.reset()
    ref.eval(p + c)
    logits = np.asarray(ref.scores[len(p) - 1:len(p) + len(c) - 1], np.float64)
    logz = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
    return float(sum(logits[i, t] - logz[i] for i, t in enumerate(c)))


def test_chat_format_from_the_gguf_template(smollm2):
    fmt = smollm2.prompt_format
    assert fmt.name == "chat"
    assert "<|im_start|>user\n" in fmt.before and fmt.between.endswith("<|im_start|>assistant\n")
    assert fmt.end == "<|im_end|>"


def test_scores_equal_a_from_scratch_evaluation(smollm2, reference):
    got = smollm2.score(PROMPT, ANSWERS)
    ref = np.array([_from_scratch(reference, smollm2, PROMPT, a) for a in ANSWERS[::4]])
    # same model, same tokens: equal up to float32 logit noise of different batch splits
    np.testing.assert_allclose(got[::4], ref, atol=2e-3)
    assert np.all(np.isfinite(got)) and np.all(got < 0)
    # the 21 answers are disjoint events: their probabilities cannot sum past 1
    assert np.exp(got).sum() <= 1.0 + 1e-6


def test_prefix_reuse_and_order_do_not_change_scores(smollm2):
    a = smollm2.score(PROMPT, ANSWERS)
    smollm2.score("Something else entirely.", ["<answer>5</answer>"])  # the cache now holds another prompt
    b = smollm2.score(PROMPT, ANSWERS[::-1])[::-1]
    c = np.concatenate([smollm2.score(PROMPT, ANSWERS[:7]), smollm2.score(PROMPT, ANSWERS[7:])])
    np.testing.assert_allclose(a, b, atol=2e-3)
    np.testing.assert_allclose(a, c, atol=2e-3)
    # a prompt that shares the first part (the few-shot block) re-evaluates only the rest
    n0 = smollm2.tokens_evaluated
    smollm2.score(PROMPT.replace("warm bath", "snow"), ANSWERS)
    p, _ = smollm2.split_tokens(PROMPT, ANSWERS[0])
    assert smollm2.tokens_evaluated - n0 < len(p) // 2 + sum(len(smollm2.split_tokens(PROMPT, x)[1]) for x in ANSWERS)


def test_closing_tag_and_end_of_turn_are_scored(smollm2):
    p, c7 = smollm2.split_tokens(PROMPT, "<answer>7</answer>")
    _, c75 = smollm2.split_tokens(PROMPT, "<answer>75</answer>")
    eot = smollm2.tokenize("<|im_end|>")
    assert c7[-len(eot):] == eot and c75[-len(eot):] == eot
    s7, s75 = smollm2.score(PROMPT, ["<answer>7</answer>", "<answer>75</answer>"])
    # "7" is a token prefix of "75", but once closed the two are different answers
    assert s7 != s75


def test_length_normalisation_divides_by_the_token_count(smollm2):
    cont = "<answer>warm bath</answer>"
    _, c = smollm2.split_tokens(PROMPT, cont)
    total, = smollm2.score(PROMPT, [cont])
    mean, = smollm2.score(PROMPT, [cont], length_normalize=True)
    assert len(c) > 3
    assert mean == pytest.approx(total / len(c), rel=1e-9)


def test_greedy_sample_is_the_model_s_own_best_first_token(smollm2):
    # temperature near 0 takes the most likely token at each step; its first answer token must
    # be the argmax of the scores the backend reads for that position
    text, = smollm2.sample(PROMPT, 1, temperature=1e-4, max_tokens=8, seed=1)
    p = smollm2.tokenize(smollm2.prompt_format.prefix(PROMPT), bos=True)
    smollm2._scorer._set_prompt(p)
    best = int(np.argmax(smollm2._scorer._last))
    assert smollm2.tokenize(text)[:1] == [best]


def test_samples_are_reproducible_by_seed(smollm2):
    a = smollm2.sample(PROMPT, 3, temperature=1.0, max_tokens=6, seed=7)
    b = smollm2.sample(PROMPT, 3, temperature=1.0, max_tokens=6, seed=7)
    assert a == b and len(a) == 3


def test_bad_model_files(tmp_path):
    with pytest.raises(ModelFileError, match="does not exist"):
        LlamaCppLM(tmp_path / "nope.gguf")
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model at all")
    with pytest.raises(ModelFileError, match="not a GGUF file"):
        check_gguf(junk)
    with pytest.raises(ModelFileError, match="is a folder"):
        LlamaCppLM(tmp_path)


def test_prompt_longer_than_the_context(smollm2):
    with pytest.raises(ContextLengthError, match="n_ctx = 512"):
        smollm2.score("word " * 600, ["<answer>5</answer>"])
    with pytest.raises(ContextLengthError, match="max_tokens"):
        smollm2.sample("word " * 480, 1, max_tokens=64)


def test_bad_candidates_and_settings(smollm2):
    with pytest.raises(ValueError, match="continuations is empty"):
        smollm2.score(PROMPT, [])
    with pytest.raises(ValueError, match=r"continuations\[1\] = ''"):
        smollm2.score(PROMPT, ["a", ""])
    with pytest.raises(ValueError, match="max_tokens = 0"):
        smollm2.sample(PROMPT, 1, max_tokens=0)
    with pytest.raises(ValueError, match="n_ctx"):
        LlamaCppLM(smollm2_path(), n_ctx=0)


def test_plain_format():
    fmt = PromptFormat.plain()
    assert fmt.prefix("Q") == "Q\n" and fmt.end == ""


def test_answer_prefix_begins_every_sample(smollm2):
    texts = smollm2.sample(PROMPT, 2, max_tokens=4, stop=["</answer>"], seed=3, answer_prefix="<answer>")
    assert all(t.startswith("<answer>") for t in texts)
