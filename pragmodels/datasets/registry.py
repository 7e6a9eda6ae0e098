"""Registry of the upstream data sets: pinned URL, sha256, licence and citation for each file.

Layering: standard library only. Each URL is pinned to the upstream commit recorded in the
offline mirror's README (``shared/data/README.md``); ``path`` is the file's place inside the
mirror directory named by ``PRAGMODELS_DATA_DIR`` and inside the download cache.

A ``mirror_only`` file is data the mirror derived from upstream *code* at the pinned commit (the
social-meaning paper's prompts and stimuli, string constants of its scripts): there is no upstream
file to download, so it is read from the offline mirror only; its ``url`` names the source it was
derived from.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DataFile", "REGISTRY", "get"]

_SOCIAL = ("muehlenbernd/llm-social-calibration", "c60d6004781cafeb0cdd617105c96581cc93669f")
_WAVE = ("linlu-qiu/wavelength-eval", "6dfed5c35342245bf16ff28a8546137ecbd65aa1")
_DRINQ = ("hjarai/drinq", "96a5eaef3fc6fd127d6a76f8421ff921a8877221")

_SOCIAL_CITE = (
    "Mühlenbernd (2026). Social Meaning in Large Language Models: Structure, Magnitude, and "
    "Pragmatic Prompting. CMCL 2026, arXiv:2604.02512. Human data: Solt, Mühlenbernd & "
    "Burbelko (2025), ELM 3, 371-382, doi:10.17605/OSF.IO/M4RHN."
)


@dataclass(frozen=True)
class DataFile:
    key: str
    path: str  # relative path in the mirror / cache
    repo: str
    commit: str
    upstream_path: str
    sha256: str
    licence: str
    citation: str
    mirror_only: bool = False  # derived from upstream code: read from the offline mirror only

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.upstream_path}"


def _social_llm(prompt: str, sha: str) -> DataFile:
    return DataFile(
        f"social_llm_{prompt}", f"social/llm_ratings/results_{prompt}.json", *_SOCIAL,
        f"data/llm_ratings/results_{prompt}.json", sha, "CC BY 4.0 (repository README)", _SOCIAL_CITE,
    )


REGISTRY: dict[str, DataFile] = {
    f.key: f
    for f in [
        DataFile(
            "social_human", "social/human_ratings/experiment1.csv", *_SOCIAL,
            "data/human_ratings/experiment1.csv",
            "cf016530d90e64817a14c4e50e5401612d107dc971800c53dc4a13628396f9a8",
            "CC BY 4.0 (repository README)", _SOCIAL_CITE,
        ),
        _social_llm("MIN", "abdc1f9a512fca2c904f6795d58f9c32c52302f5f7a1740a4428b5c59a684d6e"),
        _social_llm("ALT", "1436e0a20a093f1e59a03697d1733fec7879b1682a19e92b945c8fcbe3a8807f"),
        _social_llm("KMA", "136865ec0297636d5ebcdcaf6da4dd2a9168f260477ff130b5ba7185a2aacd9b"),
        _social_llm("COM", "edc8985d7fdf186afd8085b3c8ed6aca5836fbc7e3c2525f79e0a50c39356fbc"),
        DataFile(
            "social_prompts", "social/prompts_from_build_prompts.json", *_SOCIAL, "prompts/build_prompts.py",
            "3de85f7a44dfd6232090889c26663b20a3036e225d3b33bfe6da578919e887ed",
            "MIT (repository LICENSE: code); cite the paper", _SOCIAL_CITE, mirror_only=True,
        ),
        DataFile(
            "social_stimuli", "social/stimuli_from_exp_texts.json", *_SOCIAL, "src/exp_texts.py",
            "101a477ebff95ba7353b5ba7a8d3701d16cfad7fc750bfa05a2a309bb6faa0bd",
            "MIT (repository LICENSE: code); cite the paper", _SOCIAL_CITE, mirror_only=True,
        ),
        DataFile(
            "wavelength", "wavelength/data.csv", *_WAVE, "data/data.csv",
            "27deb3728c688c466da5d7c73591b2584a0015724059e67c2a0d966259857aaa",
            "none stated upstream; cite the paper",
            "Qiu, Zhang, Tenenbaum, Kim & Levy (2025). On the Same Wavelength? Evaluating "
            "Pragmatic Reasoning in Language Models across Broad Concepts. EMNLP 2025, arXiv:2509.06952.",
        ),
        DataFile(
            "wavelength_prompts", "wavelength/prompts_from_upstream.json", *_WAVE, "listeners.py",
            "a85f3e0010a5ac24980b44494cd597747a6cdd1d5efd5f060f018bfb42bebf2c",
            "none stated upstream; cite the paper",
            "Qiu, Zhang, Tenenbaum, Kim & Levy (2025). On the Same Wavelength? Evaluating "
            "Pragmatic Reasoning in Language Models across Broad Concepts. EMNLP 2025, arXiv:2509.06952.",
            mirror_only=True,
        ),
        DataFile(
            "drinq", "drinq/drinq_validated.csv", *_DRINQ, "drinq_validated.csv",
            "541eb84c55d0d93143eaf3312ac321dbe3f86c7eb24a7c22c35e45a5a9536c4c",
            "none stated upstream; cite the paper",
            "Arai & Ren (2026). DRInQ: Evaluating Conversational Implicature with Controlled "
            "Context Variation. ACL 2026, arXiv:2605.24267.",
        ),
    ]
}


def get(key: str) -> DataFile:
    """The registry entry of data set ``key``.

    Parameters
    ----------
    key : str
        A key of :data:`REGISTRY` (``"social_human"``, ``"social_llm_MIN"``, ``"wavelength"``, ...).

    Returns
    -------
    DataFile
        Its pinned URL, sha256, path in the mirror and cache, licence and citation.

    Raises
    ------
    KeyError
        Naming ``key`` and the registered keys.
    """
    try:
        return REGISTRY[key]
    except KeyError:
        raise KeyError(f"unknown data set {key!r}; registered: {sorted(REGISTRY)}.") from None
