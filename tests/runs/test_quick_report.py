"""The report of a quick run says what it checked (that the pipeline runs) and nothing else."""

from pragmodels.runs.quick_report import quick_report


def test_a_quick_report_lists_the_steps_and_files_and_no_finding(tmp_path):
    (tmp_path / "tables").mkdir()
    (tmp_path / "figures").mkdir()
    for name in ("tables/loo.csv", "tables/metrics.csv", "figures/items.png"):
        (tmp_path / name).write_text("x")
    text = quick_report("Wavelength", tmp_path, ["data loaded", "5 fits by NUTS: a, b, c, d, e"],
                        full_report="fits/wavelength/full/report.md")
    lines = text.splitlines()
    assert lines[0] == "# Wavelength: quick run"
    assert "checks that the pipeline runs end to end, and nothing else" in text
    assert "`fits/wavelength/full/report.md`" in text
    assert "- data loaded" in lines and "- 5 fits by NUTS: a, b, c, d, e" in lines
    assert "- `tables/`: `loo.csv`, `metrics.csv`" in lines and "- `figures/`: `items.png`" in lines
    assert "- `posteriors/`: nothing" in lines
    assert "**" not in text  # no bold finding
