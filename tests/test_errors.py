"""The scripts' one-line error wrapper."""

from __future__ import annotations

import pytest

from pragmodels.errors import ConfigError, one_line_cli


def test_a_failure_is_one_line_and_debug_keeps_the_traceback(capsys):
    def bad() -> int:
        raise ConfigError("key 'x': unknown")

    assert one_line_cli(bad, "prog", ["prog", "--flag"]) == 2
    assert capsys.readouterr().err == "prog: error: key 'x': unknown\n"
    argv = ["prog", "--debug"]
    with pytest.raises(ConfigError):
        one_line_cli(bad, "prog", argv)
    assert argv == ["prog"]
    assert one_line_cli(lambda: 0, "prog", ["prog"]) == 0


def test_a_bug_is_not_swallowed():
    def bug() -> int:
        raise KeyError("oops")

    with pytest.raises(KeyError):
        one_line_cli(bug, "prog", ["prog"])
