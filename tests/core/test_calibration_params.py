"""The calibrate and braylan measures' parameters, declared once: what is specific to them
(the common checks over every registered measure live elsewhere)."""

import pytest

from kalos_core import measure_cli
from kalos_core.calibration import CalibrationConfig
from kalos_core.calibration.braylan import BRAYLAN_DISTANCES, BraylanConfig
from kalos_core.cli import build_parser, main
from kalos_core.measure import get_measure
from kalos_core.params import ParamError, stored_form_values


def config_of(argv):
    args = build_parser().parse_args(argv)
    return measure_cli.config_from_args(get_measure(args.command), args)


def test_every_calibration_parameter_is_an_option():
    got = config_of(["calibrate", "f.json", "--distances", "iou,giou", "--seed", "3", "--bootstrap", "0",
                     "--confidence", "0.9", "--stratify", "--grid-points", "256", "--histogram-bins", "20",
                     "--sigma-p", "0.1", "--no-alpha-preview"])
    assert got == CalibrationConfig(distances=("iou", "giou"), seed=3, bootstrap=0, confidence=0.9, stratify=True,
                                    grid_points=256, histogram_bins=20, sigma_p=0.1, alpha_preview=False)
    assert config_of(["calibrate", "f.json"]) == CalibrationConfig()


def test_braylan_distances_are_its_own_set_not_the_registry():
    assert config_of(["braylan", "f.json"]) == BraylanConfig(distances=BRAYLAN_DISTANCES)
    assert config_of(["braylan", "f.json", "--distances", "l2,count", "--sigma-p", "0.1"]) == \
        BraylanConfig(distances=("l2", "count"), p=0.1)
    with pytest.raises(ParamError) as e:
        BraylanConfig(distances=("iou", "centroid"))
    assert e.value.param == "distances" and "'centroid'" in str(e.value)


def test_an_unknown_braylan_distance_is_a_usage_error_naming_the_option(capsys):
    with pytest.raises(SystemExit) as e:
        main(["braylan", "f.json", "--distances", "iou,centroid"])
    assert e.value.code == 2
    assert "argument --distances: unknown distances 'centroid'" in capsys.readouterr().err


def test_stored_values_reopen_the_form_whole():
    """A stored run's values as form values: names as a list (the form's multiple choice)."""
    stored = CalibrationConfig(distances=("giou", "iou"), confidence=0.9).to_dict()
    values = stored_form_values(CalibrationConfig, stored)
    assert values["distances"] == ["giou", "iou"] and values["confidence"] == 0.9
    assert set(values) == set(stored) and CalibrationConfig.from_dict(stored).distances == ("giou", "iou")
    assert stored_form_values(CalibrationConfig, {})["distances"] is None     # the kind's defaults


@pytest.mark.parametrize("name, cap", [("bootstrap", 10_000), ("grid_points", 16_384)])
def test_the_costly_counts_are_capped_naming_the_parameter(name, cap, capsys):
    """Resamples and grid points multiply the work and memory: one above the cap is refused by the
    Python API and the command line alike, naming the parameter; the cap itself is taken."""
    assert getattr(CalibrationConfig(**{name: cap}), name) == cap
    with pytest.raises(ParamError) as e:
        CalibrationConfig(**{name: cap + 1})
    assert e.value.param == name and str(cap) in str(e.value)
    with pytest.raises(SystemExit) as stop:
        main(["calibrate", "f.json", "--" + name.replace("_", "-"), str(cap + 1)])
    assert stop.value.code == 2 and f"--{name.replace('_', '-')}" in capsys.readouterr().err
