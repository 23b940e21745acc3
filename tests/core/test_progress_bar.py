"""The command line's progress bar (``--progress``; on a terminal by default): every measure moves it."""

import io
import json
import re

import pytest

from kalos_core.cli import main
from kalos_core.demo_data import make_synthetic_boxes
from kalos_core.progress import TextBar

LINE = re.compile(r"^\[([#.]{30})\] +(\d+)%")


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_log_gets_one_line_per_tenth():
    out = io.StringIO()
    bar = TextBar(out)                     # not a terminal: lines, not redraws
    for f in (0.0, 0.02, 0.09, 0.1, 0.15, 0.55, 0.56, 1.0):
        bar(f, f"at {f}")
    bar.close()
    lines = out.getvalue().splitlines()
    assert [LINE.match(s).group(2) for s in lines] == ["0", "10", "55", "100"]
    assert [LINE.match(s).group(1).count("#") for s in lines] == [0, 3, 16, 30]
    assert lines[2].endswith("at 0.55") and "\r" not in out.getvalue()


def test_a_terminal_gets_one_bar_redrawn_in_place():
    out = Terminal()
    bar = TextBar(out, every=3600.0)       # redraws at most once an hour, but always at 100 %
    for f in (0.0, 0.5, 0.99, 1.0):
        bar(f, "step")
    bar.close()
    text = out.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n") and text.count("\n") == 1
    assert " 100%" in text and " 50%" not in text


def test_close_without_a_bar_writes_nothing():
    out = Terminal()
    TextBar(out).close()
    assert out.getvalue() == ""


@pytest.fixture(scope="module")
def boxes(tmp_path_factory):
    path = tmp_path_factory.mktemp("bar") / "boxes.json"      # 600 images: three chunks of 256
    path.write_text(json.dumps(make_synthetic_boxes(n_images=600, n_raters=3, objects_per_image=4, seed=1)))
    return path


@pytest.mark.parametrize("command", [
    ["agreement", "--bootstrap", "0"], ["calibrate", "--bootstrap", "10", "--distances", "iou"], ["braylan"],
    ["variations"], ["consensus"], ["convergence", "--bootstrap", "10"]])
def test_every_measure_moves_the_bar_from_0_to_100(boxes, tmp_path, capsys, command):
    rc = main([command[0], str(boxes), *command[1:], "--progress", "--output", str(tmp_path / "o.json")])
    assert rc == 0
    shown = [int(m.group(2)) for m in map(LINE.match, capsys.readouterr().err.splitlines()) if m]
    assert len(shown) >= 3, shown                   # a bar that moves, not one line at the end
    assert shown == sorted(shown) and shown[-1] == 100


def test_no_bar_into_a_pipe_unless_asked(boxes, tmp_path, capsys):
    assert main(["braylan", str(boxes), "--output", str(tmp_path / "o.json")]) == 0
    assert "%" not in capsys.readouterr().err
