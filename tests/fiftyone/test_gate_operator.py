"""kalos_gate on LVIS r1/r2's stored agreement and scorecard runs (skipped without ../shared/data):
the card says FAIL or PASS, its report equals the command line's on the result files, and a bad
rules file is a form error on the rules input."""

import json

import pytest

from kalos_core.cli import main
from tests.fiftyone.helpers import form_errors as errors, resolved_form as form, run_operator as execute, shown_card

pytestmark = pytest.mark.realdata
FIELDS = ["raters_r1", "raters_r2"]
FAIL = "[overall]\nmin_alpha = 0.75\nmin_f1 = 0.8\n[class.banana]\nmin_alpha = 0.5\n"
PASS = "[overall]\nmin_alpha = 0.6\nmin_f1 = 0.75\ntau = 0.5\nmax_share_below_tau = 0.3\n[class.banana]\nmin_f1 = 0.5\n"


@pytest.fixture(scope="module")
def lvis(fo_isolated, lvis_subset_path):
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.imports import import_multirater_coco
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.agreement import compute_agreement_run
    from fiftyone.plugins.orgs.kalos.agreement.fiftyone_layer.measures.scorecard import scorecard_run

    ds = import_multirater_coco("kalos-lvis-gate", str(lvis_subset_path), layout="rater_fields",
                                label_field="raters", placeholders=False)
    compute_agreement_run(ds, rater_fields=FIELDS, run_key="kalos", bootstrap=0)
    scorecard_run(ds, rater_fields=FIELDS, run_key="scorecard")
    return ds


@pytest.mark.parametrize("rules,title,n_failed", [(FAIL, "KaLOS: gate FAIL", 4), (PASS, "KaLOS: gate PASS", 0)],
                         ids=["fails", "passes"])
def test_the_gate_card_says_pass_or_fail_and_its_report_is_the_command_lines(lvis, lvis_subset_path, tmp_path,
                                                                              rules, title, n_failed):
    (tmp_path / "rules.toml").write_text(rules)
    report = tmp_path / "report.json"
    res = execute("kalos_gate", lvis, rules_path=str(tmp_path / "rules.toml"), report_path=str(report))
    shown, rows, results = shown_card(res)
    assert shown == title and (results["passed"], results["n_failed"]) == (n_failed == 0, n_failed)
    assert sum(label.startswith("Fails") for label, _ in rows) == n_failed
    ours = json.loads(report.read_text())
    for kind, out in (("agreement", "a.json"), ("scorecard", "c.json")):
        extra = ["--bootstrap", "0"] if kind == "agreement" else []
        assert main([kind, str(lvis_subset_path), *extra, "--output", str(tmp_path / out)]) == 0
    assert main(["gate", str(tmp_path / "rules.toml"), str(tmp_path / "a.json"), str(tmp_path / "c.json"),
                 "--report", str(tmp_path / "cli.json")]) == (1 if n_failed else 0)
    cli = json.loads((tmp_path / "cli.json").read_text())
    assert [(c["rule"], c["scope"], c["rater"], c["passed"]) for c in ours["checks"]] == \
        [(c["rule"], c["scope"], c["rater"], c["passed"]) for c in cli["checks"]]
    assert [c["value"] for c in ours["checks"]] == pytest.approx([c["value"] for c in cli["checks"]], rel=1e-9)


def test_a_bad_rules_file_is_a_form_error_on_the_rules_input(lvis, tmp_path):
    (tmp_path / "rules.toml").write_text("[overall]\nmin_f = 0.3\n")
    got = errors(form("kalos_gate", lvis, rules_path=str(tmp_path / "rules.toml")))
    assert list(got) == ["rules_path"] and "unknown rule 'min_f'" in got["rules_path"]
