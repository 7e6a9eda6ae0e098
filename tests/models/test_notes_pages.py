"""The studies' notes pages (docs/studies/<study>.md) hold the design notes and measurements; the
study modules' docstrings say what a module is for in at most 15 lines and point there; every
reference to a page's section, in the code, the tests and the notebooks, names a heading it has."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STUDIES = ("social_meaning", "wavelength", "implicature")
#: docs/studies/<study>.md, "<section>" (a line break may fall inside the reference)
REFERENCE = re.compile(r'docs/studies/(\w+)\.md[`"]?,?\s+(?:#:\s*|#\s*)?"([^"]+)"')


def _headings(study: str) -> set[str]:
    text = (ROOT / "docs" / "studies" / f"{study}.md").read_text(encoding="utf-8")
    return {m.group(1).strip() for m in re.finditer(r"^#{1,6} (.+)$", text, flags=re.M)}


@pytest.mark.parametrize("path", sorted((ROOT / "models").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_study_module_docstring_is_short_and_says_what_the_module_is_for(path):
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert doc, f"{path}: no module docstring"
    assert len(doc.splitlines()) <= 15, f"{path}: {len(doc.splitlines())} lines; design notes go to docs/studies/"


def test_every_reference_to_a_notes_section_names_a_heading_of_that_page():
    files = [*ROOT.joinpath("models").rglob("*.py"), *ROOT.joinpath("tests", "models").rglob("*.py"),
             *ROOT.joinpath("notebooks").glob("*.ipynb")]
    found = []
    for f in files:
        text = f.read_text(encoding="utf-8").replace('\\"', '"')
        for m in REFERENCE.finditer(text):
            study, section = m.group(1), re.sub(r"\s+", " ", m.group(2))
            found.append((f.name, study, section))
            assert study in STUDIES, (f, study)
            assert section in _headings(study), f"{f}: docs/studies/{study}.md has no section {section!r}"
    assert len(found) >= 20  # the social-meaning model alone cites its notes some twenty times


@pytest.mark.parametrize("study, sections, measurements", [
    ("social_meaning",
     ["The RSA model", "Scenario knowledge", "Scenario effects", "Link to ratings", "Why this parametrisation",
      "Features that vanish", "What the ratings cannot identify", "Noise per attribute", "Identification",
      "The motive prior", "Effects in units of the noise", "Raters who saw one cell", "The ESR measurement model",
      "Sufficient statistics", "Sampler settings"],
     ["Chung et al. 2013", "van der Henst, Carles & Sperber 2002", "r_hat 1.55 and bulk ESS 7 at 600 draws",
      "bulk ESS 194 at 750 draws", "tail ESS 155 at 1,500", "r_hat 2.8"]),
    ("wavelength",
     ["The models", "The game", "Responses", "Priors", "Prompts", "Scoring with a language model",
      "Production: direct clues against Inverse-RSA clues"],
     ["18.1% of the 4,000 guesses are multiples of 10", "linlu-qiu/wavelength-eval @ 6dfed5c"]),
    ("implicature",
     ["The listener models", "Agents", "Responses and the likelihood", "Identification", "Prompts",
      "Running the benchmark with a language model"],
     ["P(E_j) = 5 p_j^4 (1 - p_j) + p_j^5", "its 94% interval was -3.8 to 1.0"]),
])
def test_the_notes_page_holds_the_design_notes_and_measurements(study, sections, measurements):
    text = (ROOT / "docs" / "studies" / f"{study}.md").read_text(encoding="utf-8")
    assert text.startswith("# ") and set(sections) <= _headings(study), set(sections) - _headings(study)
    flat = re.sub(r"\s+", " ", text)
    for m in measurements:
        assert m in flat, m
    assert "```python" not in text  # nothing on a notes page is meant to run
