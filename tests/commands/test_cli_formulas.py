"""Analysis formulas are checked, in command-line terms, before anything is fitted.

Found by trying the CLI on a file nobody designed it for (an Adult extract with a column
named ``class`` and columns with spaces and hyphens): a bare ``class ~ age`` died as
``SyntaxError: invalid syntax (<unknown>, line 1)``, a misspelt column as a multi-line
``PatsyError ... NameError``, and ``synthmi tune`` reported either only after minutes of
fitting. Each test below failed before :func:`synthmi.commands._common.check_formula`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from synthmi.cli import main
from synthmi.commands._common import check_formula


def _people(n=200, seed=3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    return pd.DataFrame({
        "ID": np.arange(1, n + 1),
        "age": age,
        "sex": rng.choice(["F", "M"], n),
        "marital-status": rng.choice(["Married", "Never-married", "Divorced"], n),
        "Age in years": age,
        "class": np.where(rng.random(n) < 1 / (1 + np.exp(-(-2 + 0.04 * age))), ">50K", "<=50K"),
    })


@pytest.fixture(scope="module")
def people_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("people") / "people.csv"
    _people().to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def release(people_csv):
    # one small CART release shared by the read-only tests below (they write nothing into it)
    out = people_csv.parent / "syn"
    assert main(["synthesize", "--data", str(people_csv), "--qi", "age,sex", "--keep", "marital-status,class",
                 "--method", "cart", "--m", "2", "--seed", "1", "--out", str(out), "--quiet"]) == 0
    return out


COLUMNS = list(_people().columns)


@pytest.mark.parametrize("formula", [
    'Q("class") ~ age + sex',
    "Q('class') ~ age * sex + Q(\"marital-status\")",
    'Q("class") ~ np.log(age) + I(age ** 2) + bs(age, 3) + C(sex, Treatment("M"))',
    'Q("Age in years") ~ 0 + sex',
    "age ~ sex - 1",
])
def test_readable_formulas_pass(formula):
    check_formula(formula, COLUMNS, "--formula")  # no error


@pytest.mark.parametrize("formula, says", [
    ("class ~ age", ["cannot be read at 'class'", 'Q("class")']),
    ("`class` ~ age", ["cannot be read", 'Q("class")']),
    ('Q("class") ~ marital-status', ["names 'marital'", 'Q("marital-status")']),
    ('Q("class") ~ Age in years', ["names 'Age', 'years', which are not columns", 'Q("Age in years")']),
    ('Q("class") ~ agee + sex', ["names 'agee', which is not a column of the data", "Columns: ['ID', 'age'"]),
    ('Q("clas") ~ age', ["names 'clas'"]),
    ("age + sex", ["must be a formula such as 'y ~ x1 + x2'"]),
    ("class ~ age +", ["cannot be read (expected a noun"]),
])
def test_unreadable_formula_is_one_sentence_naming_the_option(formula, says):
    with pytest.raises(ValueError) as exc:
        check_formula(formula, COLUMNS, "--formula")
    msg = str(exc.value)
    assert "(--formula)" in msg or "'--formula'" in msg
    for s in says:
        assert s in msg, (s, msg)
    assert "\n" not in msg and "SyntaxError" not in msg and "PatsyError" not in msg


@pytest.mark.slow
def test_analyse_keyword_column_error_speaks_command_line(people_csv, release, capsys):
    rc = main(["analyse", "--original", str(people_csv), "--synthetic", str(release), "--formula", "class ~ age + sex"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "(--formula)" in err and 'Q("class")' in err and "SyntaxError" not in err
    # quoted as the message says, the same analysis runs
    assert main(["analyse", "--original", str(people_csv), "--synthetic", str(release), "--quiet",
                 "--formula", 'Q("class") ~ age + sex']) == 0
    assert "mean CI overlap" in capsys.readouterr().out


def test_analyse_formula_naming_a_dropped_column_says_so(people_csv, release, capsys):
    # 'Age in years' exists in the file but was not released (not in --qi/--keep)
    rc = main(["analyse", "--original", str(people_csv), "--synthetic", str(release),
               "--formula", 'Q("class") ~ Q("Age in years")'])
    err = capsys.readouterr().err
    assert rc == 1 and "names 'Age in years', which is not a column of the copies" in err


def test_tune_checks_the_formula_before_fitting(tmp_path, people_csv, capsys, monkeypatch):
    import synthmi.workflow.tuning

    def _never(*a, **k):
        raise AssertionError("tune ran with an unreadable formula")

    monkeypatch.setattr(synthmi.workflow.tuning, "tune", _never)
    out = tmp_path / "tuned.json"
    rc = main(["tune", "--data", str(people_csv), "--qi", "age,sex", "--keep", "class",
               "--analysis", "class ~ age + sex", "--target", "expected_matches<=5", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 1 and "(--analysis)" in err and 'Q("class")' in err and "tune ran" not in err
    assert not out.exists()
    # a formula naming a column outside the release (--qi + --keep) is refused too
    rc = main(["tune", "--data", str(people_csv), "--qi", "age,sex", "--keep", "class",
               "--analysis", 'Q("class") ~ age + Q("marital-status")', "--target", "expected_matches<=5",
               "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 1 and "names 'marital-status', which is not a column of the release" in err


def test_report_checks_the_formula_before_evaluating(tmp_path, people_csv, release, capsys, monkeypatch):
    import synthmi.workflow.evaluate

    def _never(*a, **k):
        raise AssertionError("evaluated with an unreadable formula")

    monkeypatch.setattr(synthmi.workflow.evaluate, "evaluate_release", _never)
    out = tmp_path / "r.html"
    rc = main(["report", "--original", str(people_csv), "--synthetic", str(release), "--qi", "age,sex",
               "--analysis", "class ~ age", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 1 and "(--analysis)" in err and 'Q("class")' in err and not out.exists()


def test_spec_refuses_an_analysis_it_could_not_run(tmp_path, people_csv, capsys):
    out = tmp_path / "spec.json"
    rc = main(["spec", "--data", str(people_csv), "--qi", "age,sex", "--analysis", 'Q("class") ~ Age in years',
               "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 1 and 'Q("Age in years")' in err and not out.exists()
