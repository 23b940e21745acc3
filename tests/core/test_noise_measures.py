"""The ``simulate`` and ``fit-noise`` declarations: their parameters, the registry, and the runs
they drive (the same as the engine's functions)."""

import json

import pytest

from kalos_core.cli import main
from kalos_core.measure import MeasureData, get_measure
from kalos_core.noise import rater_specs, simulate
from kalos_core.noise.fit import fit_noise_profile
from kalos_core.noise.fit_measure import FitNoiseConfig
from kalos_core.noise.simulate_measure import SimulateConfig
from kalos_core.noise.testbed import lvis_like_reference, reference_to_coco
from kalos_core.params import ParamError


def test_registered_under_their_command_names():
    assert get_measure("simulate").config is SimulateConfig
    assert get_measure("fit-noise").config is FitNoiseConfig
    flags = {p.name: p.cli_flag for p in get_measure("simulate").params}
    assert flags["n_raters"] == "--raters" and flags["schools"] == "--schools"


@pytest.mark.parametrize("values, field", [
    (dict(n_raters=0), "n_raters"), (dict(magnitude=-0.1), "magnitude"), (dict(magnitude=float("nan")), "magnitude"),
    (dict(seed=-1), "seed"), (dict(schools=(2, 0)), "schools"), (dict(profile=""), "profile"),
])
def test_bad_simulate_settings_name_the_parameter(values, field):
    with pytest.raises(ParamError) as e:
        SimulateConfig(**values)
    assert e.value.param == field


def test_schools_are_read_as_text_and_choose_the_raters():
    p = {p.name: p for p in get_measure("simulate").params}["schools"]
    assert p.from_text("3, 2") == (3, 2)
    with pytest.raises(ValueError):
        p.from_text("3,x")
    config = SimulateConfig(n_raters=9, schools=(2, 1), defiant=True)
    assert [r.name for r in config.raters()] == ["rater_1", "rater_2", "rater_3", "defiant"]
    assert [r.name for r in SimulateConfig(n_raters=2, defiant=True).raters()] == ["rater_1", "rater_2", "defiant"]
    assert rater_specs(3) == SimulateConfig(n_raters=3).raters()


def test_measure_runs_equal_the_engine_functions():
    ref = lvis_like_reference(6, seed=3)
    steps = []
    sim = get_measure("simulate").run(MeasureData(ref), SimulateConfig(n_raters=3, magnitude=0.8, seed=2),
                                      lambda f, m: steps.append(f))
    assert sim.coco == simulate(ref, n_raters=3, magnitude=0.8, seed=2).coco and sim.n_reference == ref.n_objects
    assert steps[0] == 0.0 and steps[-1] == 1.0
    fit = get_measure("fit-noise").run(MeasureData(sim.dataset(), options={"source": "s"}), FitNoiseConfig(seed=1))
    assert fit.to_dict() == fit_noise_profile(sim.dataset(), seed=1, source="s").profile.to_dict()


def test_output_is_required_and_written_as_before(tmp_path, capsys):
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps(reference_to_coco(lvis_like_reference(4, seed=1))))
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", str(ref)])
    assert exit_.value.code == 2 and "--output" in capsys.readouterr().err
    out = tmp_path / "sim.json"
    assert main(["simulate", str(ref), "--raters", "2", "--output", str(out)]) == 0
    text = out.read_text()
    assert text.endswith("\n") and text.count("\n") == 1 and ", " not in text[:200]  # compact, one line
    prof = tmp_path / "profile.json"
    assert main(["fit-noise", str(out), "--output", str(prof)]) == 0
    assert prof.read_text().startswith('{\n "localisation"') and prof.read_text().endswith("}\n")
    assert json.loads(prof.read_text())["meta"]["source"] == "fit-noise sim.json"


# -- issue 22: nothing to copy, nothing to fit ---------------------------------------------------
def _write(path, images, annotations=()):
    path.write_text(json.dumps({"images": images, "annotations": list(annotations),
                                "categories": [{"id": 1, "name": "cat"}]}))
    return str(path)


def test_simulate_refuses_a_reference_without_images_or_labels(tmp_path, capsys):
    empty = _write(tmp_path / "empty.json", [])
    assert main(["simulate", empty, "--output", str(tmp_path / "o.json")]) == 2
    assert "the reference has no images: nothing to copy" in capsys.readouterr().err
    unlabelled = _write(tmp_path / "bare.json", [{"id": 1, "width": 10, "height": 10}])
    assert main(["simulate", unlabelled, "--output", str(tmp_path / "o.json")]) == 2
    assert "the reference's 1 image(s) hold no labels: nothing to copy" in capsys.readouterr().err
    assert not (tmp_path / "o.json").exists()


def test_fit_noise_refuses_raters_who_share_no_image(tmp_path, capsys):
    images = [{"id": i, "width": 100, "height": 100, "rater_list": [r]} for i, r in ((1, "a"), (2, "b"))]
    anns = [{"id": i, "image_id": i, "category_id": 1, "rater_id": r, "bbox": [10, 10, 20, 20]}
            for i, r in ((1, "a"), (2, "b"))]
    path = _write(tmp_path / "apart.json", images, anns)
    assert main(["fit-noise", path, "--output", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert "none of the 2 image(s) has two or more raters (raters: a, b): nothing to measure" in err
    assert "rater_list" in err and not (tmp_path / "p.json").exists()
