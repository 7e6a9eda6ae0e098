"""The study's fit loop: draws sized to the sampling standards by the library's
:func:`pragmodels.inference.top_up.top_up` (its own tests: tests/inference/test_top_up.py)."""

import json

import pytest

from pragmodels import datasets
from pragmodels.inference.fit_many import FitManyResult


class _Stop(Exception):
    pass


def test_the_fit_loop_hands_its_fits_to_the_librarys_top_up(monkeypatch):
    """``fit_all`` passes ``fit_many``'s result, with the study's executor, progress and log, to
    :func:`pragmodels.inference.top_up.top_up` itself (the study keeps no copy of it)."""
    from models.social_meaning import study
    from pragmodels.inference import top_up as sizing

    assert study.top_up is sizing.top_up
    first = FitManyResult([])
    monkeypatch.setattr(study.pm, "fit_many", lambda specs, **kw: first)
    seen = {}

    def spy(specs, result, **kw):
        seen.update(names=[s.name for s in specs], result=result, **kw)
        raise _Stop

    monkeypatch.setattr(study, "top_up", spy)
    sampler = json.loads((study.Path(study.__file__).parents[2] / "fits" / "social_meaning.json").read_text())["sampler"]

    def stamp(message):
        pass

    with pytest.raises(_Stop):  # conditions=[]: the three human fits only
        study.fit_all(datasets.load_social_human(), datasets.load_social_llm(), 0, sampler["quick"], False,
                      "uniform", [], stamp, stamp, executor="sequential")
    assert seen["names"] == ["human_rsa", "human_rsa_motives", "human_baseline"] and seen["result"] is first
    assert seen["executor"] == "sequential" and seen["progress"] is False and seen["log"] is stamp
    assert seen["rounds"] == 2
    seen.clear()
    with pytest.raises(_Stop):  # a quick run's short chains fall short by design: no round of refits
        study.fit_all(datasets.load_social_human(), datasets.load_social_llm(), 0, sampler["quick"], False,
                      "uniform", [], stamp, stamp, executor="sequential", resize=False)
    assert seen["rounds"] == 0
