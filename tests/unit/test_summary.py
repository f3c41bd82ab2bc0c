"""The terminal summary prints no character a terminal would act on."""

from pathlib import Path

from memrl_bench.cli.summary import print_summary


def test_a_run_name_holding_terminal_escapes_is_printed_escaped(capsys):
    """57b: a model name typed with ESC sequences (a cleared screen, a window title) became part of the run folder's name,
    which the summary printed raw."""
    name = "llm=m\x1b[2J\x1b]0;OWNED\x07"
    print_summary(name, {"success_rate": {"test": {"0": 0.5}}}, Path("/results") / name)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "llm=m\\x1b[2J\\x1b]0;OWNED\\x07" in out.splitlines()[0] and out.count("\\x1b[2J") == 2, out
