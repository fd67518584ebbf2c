"""``synthmi report --ngroups-target N``: synthpop's ngroups_target reaches the report's DiSCO.

The report offered ``--ngroups-keys`` but not ``--ngroups-target`` (which ``synthmi
disclosure`` has), so a continuous target could only be compared exactly: a kept income
with nearly all values distinct shows a single value only in singleton keys.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import synthmi.workflow.evaluate as evaluate_mod
from synthmi.cli import main
from synthmi.evaluation import attribute_disclosure
from synthmi.synthetic import SyntheticData


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("ngt")
    rng = np.random.default_rng(21)
    n = 240
    age = rng.integers(20, 30, n)
    sex = rng.choice(["F", "M"], n)
    income = np.round(1000 * np.exp(0.05 * age + 0.2 * (sex == "M") + rng.normal(0, 0.1, n)), 2)
    csv = d / "people.csv"
    pd.DataFrame({"age": age, "sex": sex, "income": income}).to_csv(csv, index=False)
    out = d / "syn"
    assert main(["synthesize", "--data", str(csv), "--qi", "age,sex", "--keep", "income", "--method", "cart",
                 "--m", "2", "--seed", "3", "--out", str(out), "--quiet"]) == 0
    return csv, out


def _report(files, tmp_path, monkeypatch, *extra):
    csv, out = files
    seen = {}
    real = evaluate_mod.evaluate_release

    def spy(*a, **kw):  # the command imports evaluate_release when it runs: the figures it reports
        seen["data"] = real(*a, **kw)
        return seen["data"]

    monkeypatch.setattr(evaluate_mod, "evaluate_release", spy)
    page = tmp_path / f"report{len(extra)}.html"
    assert main(["report", "--original", str(csv), "--synthetic", str(out), "--qi", "age,sex",
                 "--analysis", "income ~ age + sex", "--family", "gaussian", "--target", "income",
                 "--no-references", "--out", str(page), "--quiet", *extra]) == 0
    return seen["data"], page.read_text(encoding="utf-8")


def test_ngroups_target_reaches_the_report_figures(files, tmp_path, monkeypatch):
    exact, _ = _report(files, tmp_path, monkeypatch)
    grouped, page = _report(files, tmp_path, monkeypatch, "--ngroups-target", "3")
    assert grouped.settings["ngroups_target"] == 3 and exact.settings["ngroups_target"] is None
    d_exact = exact.attribute.set_index("method")["DiSCO"].iloc[0]
    d_grouped = grouped.attribute.set_index("method")["DiSCO"].iloc[0]
    # the same figure attribute_disclosure gives with synthpop's grouping of the target ...
    csv, out = files
    original = pd.read_csv(csv)
    copies = SyntheticData.from_dir(out).copies
    ref = attribute_disclosure(original, copies, ["age", "sex"], "income", threshold=0.5, ngroups_target=3)
    assert d_grouped == pytest.approx(ref.figures["DiSCO"], abs=1e-12)
    # ... which differs from the exact target's: three income groups make many more keys one-valued
    assert d_grouped > d_exact + 0.1
    assert "the target cut into 3 groups" in page


@pytest.mark.parametrize("extra, needle", [(["--ngroups-target", "1", "--target", "income"], "Got 1."),
                                           (["--ngroups-target", "3"], "Got 3 without --target")])
def test_ngroups_target_bad_input_is_one_line(files, tmp_path, capsys, extra, needle):
    csv, out = files
    assert main(["report", "--original", str(csv), "--synthetic", str(out), "--qi", "age,sex",
                 "--analysis", "income ~ age", "--family", "gaussian", "--out", str(tmp_path / "r.html"),
                 "--quiet", *extra]) == 1
    err = capsys.readouterr().err
    assert "'--ngroups-target' option must be an integer >= 2 and needs --target" in err and needle in err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("target, needle", [
    ("nosuch", "synthmi report: error: The '--target' option names a column not in the release: 'nosuch'."),
    ("age", "synthmi report: error: The '--target' column 'age' is also in --qi"),
])
def test_report_target_is_checked_as_target(files, tmp_path, capsys, target, needle):
    """A --target that is no column (or a QI) is refused as --target, before any evaluation, not blamed on the
    attack options --secret / --link-aux it stands in for."""
    csv, out = files
    capsys.readouterr()
    assert main(["report", "--original", str(csv), "--synthetic", str(out), "--qi", "age,sex",
                 "--analysis", "income ~ age", "--family", "gaussian", "--target", target,
                 "--out", str(tmp_path / "r.html")]) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert len(errors) == 1 and errors[0].startswith(needle), err
    assert "--secret" not in err and "--link-aux" not in err
    assert "evaluating" not in err  # refused before the evaluation started
    assert not (tmp_path / "r.html").exists()


@pytest.fixture(scope="module")
def categorical_target(tmp_path_factory):
    d = tmp_path_factory.mktemp("ngt_cat")
    rng = np.random.default_rng(22)
    n = 240
    frame = pd.DataFrame({"age": rng.integers(20, 30, n), "sex": rng.choice(["F", "M"], n),
                          "job": rng.choice(["clerk", "nurse", "smith"], n)})
    csv = d / "jobs.csv"
    frame.to_csv(csv, index=False)
    out = d / "syn"
    assert main(["synthesize", "--data", str(csv), "--qi", "age,sex", "--keep", "job", "--method", "cart",
                 "--m", "2", "--seed", "3", "--out", str(out), "--quiet"]) == 0
    return csv, out


@pytest.mark.parametrize("verb, extra", [
    ("report", ["--analysis", "age ~ sex", "--family", "gaussian", "--out", "r.html"]),
    ("disclosure", ["--out", "risk.json"]),
])
def test_ngroups_target_of_a_categorical_target_refused_up_front(categorical_target, tmp_path, capsys, monkeypatch,
                                                                  verb, extra):
    """--ngroups-target with a categorical --target: one sentence saying it needs a continuous target and the
    target given is categorical (was "must be None", after the evaluation or the matching had run)."""
    csv, out = categorical_target
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main([verb, "--original", str(csv), "--synthetic", str(out), "--qi", "age,sex", "--target", "job",
                 "--ngroups-target", "3", *extra]) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert len(errors) == 1 and errors[0].startswith(f"synthmi {verb}: error: The '--ngroups-target' option "), err
    assert "continuous (numeric) target" in errors[0] and "'job' is categorical" in errors[0]
    assert "Got 3" in errors[0] and "None" not in errors[0]
    assert "evaluating" not in err and "matching" not in err  # before any work
    assert not (tmp_path / extra[-1]).exists()
