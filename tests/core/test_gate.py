"""The gate: rules over agreement and scorecard results, by hand and on LVIS r1/r2 (a rules file
that fails, exit 1, and one that passes, exit 0, with their reports); a bad rules file: exit 2,
one line naming the file, the key or line and the fix, and no report written."""

import json

import pytest

from kalos_core.cli import main
from kalos_core.gate import evaluate, load_rules

AGREEMENT = {"mean_alpha": 0.7, "global_alpha": 0.6, "per_image_alpha": {"a": 1.0, "b": 0.2, "c": -0.1, "d": None},
             "class_difficulty": {"cat": 0.9, "dog": 0.3}, "class_difficulty_global": {"cat": 0.8, "dog": None}}
CARDS = {"rows": [{"rater": "r1", "class": "(all)", "f1": 0.8}, {"rater": "r1", "class": "cat", "f1": 0.9},
                  {"rater": "r1", "class": "dog", "f1": 0.4}, {"rater": "r2", "class": "(all)", "f1": 0.6}],
         "confusion": {}}


def rules(tmp_path, text, name="rules.toml"):
    path = tmp_path / name
    path.write_text(text)
    return load_rules(path)


def test_each_rule_by_hand(tmp_path):
    r = rules(tmp_path, "[overall]\nmin_alpha = 0.75\ntau = 0.5\nmax_share_below_tau = 0.5\nmin_f1 = 0.7\n"
                        "[class.dog]\nmin_alpha = 0.25\nmin_global_alpha = 0.1\n[class.\"*\"]\nmin_f1 = 0.5\n")
    checks = {(c.rule, c.scope, c.rater): c for c in evaluate(r, {"agreement": AGREEMENT, "scorecard": CARDS})}
    assert checks["min_alpha", "overall", None].margin == pytest.approx(-0.05)
    share = checks["max_share_below_tau", "overall", None]      # 2 of the 3 defined images are below 0.5
    assert (share.value, share.passed) == (pytest.approx(2 / 3), False) and share.margin == pytest.approx(0.5 - 2 / 3)
    assert [checks["min_f1", "overall", r].passed for r in ("r1", "r2")] == [True, False]
    assert checks["min_alpha", "dog", None].passed and not checks["min_global_alpha", "dog", None].passed   # undefined
    assert checks["min_f1", "cat", "r1"].passed and checks["min_f1", "dog", "r1"].margin == pytest.approx(-0.1)
    assert "by 0.1000" in checks["min_f1", "dog", "r1"].message and "[class dog] rater r1" in checks["min_f1", "dog", "r1"].message


def test_a_json_rules_file_reads_as_the_toml(tmp_path):
    toml = rules(tmp_path, '[overall]\nmin_f1 = 0.5\n[class."traffic light"]\nmin_alpha = 0.2\n')
    same = {"overall": {"min_f1": 0.5}, "class": {"traffic light": {"min_alpha": 0.2}}}
    assert rules(tmp_path, json.dumps(same), "rules.json") == toml == {"overall": {"min_f1": 0.5},
                                                                       "classes": {"traffic light": {"min_alpha": 0.2}}}


@pytest.fixture(scope="module")
def lvis_results(lvis_subset_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("gate")
    assert main(["agreement", str(lvis_subset_path), "--bootstrap", "0", "--output", str(out / "agreement.json")]) == 0
    assert main(["scorecard", str(lvis_subset_path), "--output", str(out / "cards.json")]) == 0
    return out, [str(out / "agreement.json"), str(out / "cards.json")]


@pytest.mark.realdata
def test_on_lvis_a_failing_rules_file_exits_1_naming_each_failure_and_a_passing_one_exits_0(lvis_results, capsys):
    out, results = lvis_results
    agreement = json.loads((out / "agreement.json").read_text())   # mean α 0.689, banana α 0.363, F1 0.794 both
    (out / "fail.toml").write_text("[overall]\nmin_alpha = 0.75\nmin_f1 = 0.8\n[class.banana]\nmin_alpha = 0.5\n")
    (out / "pass.toml").write_text("[overall]\nmin_alpha = 0.6\nmin_f1 = 0.75\ntau = 0.5\nmax_share_below_tau = 0.3\n"
                                   "[class.banana]\nmin_f1 = 0.5\n")
    capsys.readouterr()
    assert main(["gate", str(out / "fail.toml"), *results, "--report", str(out / "fail.json")]) == 1
    printed = capsys.readouterr().out
    assert f"FAIL min_alpha [overall]: mean α {agreement['mean_alpha']:.4f} < 0.75 (by " \
           f"{0.75 - agreement['mean_alpha']:.4f})" in printed
    assert "FAIL min_f1 [overall] rater r1: F1 0.7941 < 0.8 (by 0.0059)" in printed
    assert "FAIL min_alpha [class banana]: α 0.3630 < 0.5 (by 0.1370)" in printed
    kept = json.loads((out / "fail.json").read_text())
    assert (kept["passed"], kept["n_checks"], kept["n_failed"]) == (False, 4, 4)
    assert main(["gate", str(out / "pass.toml"), *results, "--report", str(out / "pass.json")]) == 0
    kept = json.loads((out / "pass.json").read_text())
    assert (kept["passed"], kept["n_checks"], kept["n_failed"]) == (True, 6, 0)
    share = next(c for c in kept["checks"] if c["rule"] == "max_share_below_tau")
    values = [v for v in agreement["per_image_alpha"].values() if v is not None]
    assert share["value"] == pytest.approx(sum(v < 0.5 for v in values) / len(values))


@pytest.mark.parametrize("text,said", [
    ("[overall]\nmin_f = 0.3\n", "[overall] unknown rule 'min_f'; the rules are: min_alpha"),
    ("[overall]\nmin_f1 = \n", "line 2, column 10"),
    ("[overall]\nmin_f1 = 1.5\n", "[overall] min_f1 = 1.5: must be a number in [0, 1]"),
    ("[overall]\ntau = 0.5\n", "tau and max_share_below_tau go together"),
    ("[class.cat]\ntau = 0.3\nmax_share_below_tau = 0.1\n", "[class.cat] tau: an [overall] rule only"),
    ("[overal]\nmin_f1 = 0.3\n", "unknown table [overal]"),
    ("# nothing\n", "no rule"),
    ("[overall]\nmin_global_alpha = 0.3\n", "needs an agreement result"),
])
def test_a_bad_rules_file_exits_2_with_one_line_and_writes_no_report(tmp_path, capsys, text, said):
    (tmp_path / "rules.toml").write_text(text)
    (tmp_path / "cards.json").write_text(json.dumps(CARDS))
    report = tmp_path / "report.json"
    assert main(["gate", str(tmp_path / "rules.toml"), str(tmp_path / "cards.json"), "--report", str(report)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(tmp_path / "rules.toml") in err and said in err, err
    assert not report.exists()
