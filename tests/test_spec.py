"""ReleaseSpec: JSON, drafting, declared vs inferred values, and how the spec,
the combining rule and the original's fingerprint travel with the copies."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from synthmi.cli import main
from synthmi.evaluation import analyse, pmse, reidentification_risk, risk_subgroups, utility_tables
from synthmi.models import CartSynthesizer
from synthmi.privacy import DPSynSynthesizer
from synthmi.provenance import PROVENANCE_KEY_ENV, original_fingerprint
from synthmi.spec import ColumnSpec, ReleaseSpec
from synthmi.synthetic import SyntheticData


def _frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    sex = rng.choice(["F", "M"], n)
    grp = rng.integers(0, 3, n)  # numeric codes of a nominal variable
    x = 0.03 * age + (sex == "M") * 0.5 + rng.normal(0, 1, n)
    y = (x + rng.normal(0, 1, n) > 1.5).astype(int)
    return pd.DataFrame({
        "age": age.astype(float),
        "sex": pd.Categorical(sex),
        "grp": grp,
        "x": x,
        "y": pd.Categorical(np.where(y == 1, "yes", "no"), categories=["no", "yes"]),
    })


# ---------------------------------------------------------------- the spec itself
def test_draft_marks_every_inferred_value_and_json_round_trip(tmp_path):
    df = _frame()
    spec = ReleaseSpec.draft(df, quasi_identifiers=["age", "sex"], keep=["x", "y"])
    assert spec.quasi_identifiers == ["age", "sex"]
    assert spec.keep == ["x", "y"] and spec.excluded == ["grp"]
    assert spec["age"].kind == "integer" and spec["age"].bounds == (df.age.min(), df.age.max())
    assert spec["sex"].levels == ("F", "M") and spec["y"].kind == "binary"
    assert spec["x"].kind == "continuous"
    # every level/bound read from the data is marked as such
    assert sorted(spec.inferred) == sorted(df.columns)
    d = spec.to_dict()
    assert all(v["declared"] is False for v in d["columns"].values())
    path = spec.save(tmp_path / "spec.json")
    back = ReleaseSpec.load(path)
    assert back == spec
    with pytest.raises(FileExistsError, match="overwrite=True"):
        spec.save(path)


def test_public_domain_uses_declared_values_only():
    df = _frame()
    spec = ReleaseSpec.draft(df, quasi_identifiers=["age", "sex"])
    cols = dict(spec.columns)
    cols["age"] = ColumnSpec("age", "quasi_identifier", "integer", bounds=(17, 90), declared=True)
    cols["sex"] = ColumnSpec("sex", "quasi_identifier", "binary", levels=("F", "M"), declared=True)
    spec = ReleaseSpec(cols)
    dom = spec.public_domain()
    assert sorted(dom) == ["age", "sex"]  # x, y, grp: inferred only -> absent
    assert dom["age"].to_dict()["bounds"] == [17, 90]
    assert list(dom["sex"].levels) == ["F", "M"]
    # the public view (what a release records) drops inferred values too
    pv = spec.public_view()
    assert pv["x"].bounds is None and pv["y"].levels is None and pv["age"].bounds == (17.0, 90.0)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["columns"]["age"].update(role="secret"), "'role' must be one of"),
        (lambda d: d["columns"]["age"].update(kind="number"), "'kind' must be one of"),
        (lambda d: d.update(masks={"x": {"K": 1, "sigma_e": 2}}), "not quasi-identifiers: \\['x'\\]"),
        (lambda d: d.update(masks={"low": {}, "age": {}}), "mix risk groups and columns"),
        (lambda d: d.update(analyses=[{"formula": "y", "family": "probit"}]), "Analysis 0 of the spec"),
        (lambda d: d.update(analyses=[{"formula": "y ~ x", "family": "gamma"}]), "'family' of analysis 0"),
        (lambda d: d["columns"]["sex"].update(bounds=[0, 1]), "gives bounds, but its kind 'binary'"),
        (lambda d: d.update(colour="blue"), "unknown keys \\['colour'\\]"),
    ],
)
def test_bad_specs_name_what_is_wrong(mutate, message):
    d = ReleaseSpec.draft(_frame(), quasi_identifiers=["age", "sex"]).to_dict()
    mutate(d)
    with pytest.raises(ValueError, match=message):
        ReleaseSpec.from_dict(d)


# ---------------------------------------------------------------- fit(df, spec)
def test_fit_with_spec_equals_the_shortcut_and_excluded_columns_are_not_released():
    df = _frame()
    spec = ReleaseSpec.draft(df, quasi_identifiers=["age", "sex"], keep=["x", "y"])
    a = CartSynthesizer().fit(df, spec).sample(2, random_state=3)
    b = CartSynthesizer().fit(df, quasi_identifiers=["age", "sex"], keep=["x", "y"]).sample(2, random_state=3)
    for ca, cb in zip(a.copies, b.copies):
        pd.testing.assert_frame_equal(ca, cb)
        assert list(ca.columns) == ["age", "sex", "x", "y"]  # grp excluded: not released
    # roles in the spec, kinds too: grp declared nominal becomes a categorical QI
    spec2 = ReleaseSpec.draft(df, quasi_identifiers=["grp"], kinds={"grp": "nominal"})
    s = CartSynthesizer().fit(df, spec2)
    assert s.schema_["grp"].kind == "nominal" and s.schema_["grp"].n_levels == 3
    with pytest.raises(ValueError, match="not in 'df': \\['zz'\\]"):
        CartSynthesizer().fit(df, quasi_identifiers=["zz"])


# ---------------------------------------------------------------- evaluation takes the spec
def test_evaluation_kinds_come_from_the_spec():
    df = _frame()
    syn = CartSynthesizer().fit(df, quasi_identifiers=["age", "grp"]).sample(2, random_state=1)
    nominal = ReleaseSpec.draft(df, quasi_identifiers=["age", "grp"], kinds={"grp": "nominal"})
    # grp as a number: one main-effect column; as nominal: 2 dummies (3 levels).
    # The logit's null expectation E0 = (k - 1)(1 - c)^2 c / N counts them (k - 1
    # = main effects, no interactions), c = 1/2 with one copy of equal size.
    by_dtype = pmse(df, syn.copies[:1], variables=["grp"], maxorder=0)
    by_spec = pmse(df, syn.copies[:1], variables=["grp"], maxorder=0, spec=nominal)
    n, c = 2 * len(df), 0.5
    assert by_dtype.expected_null[0] == pytest.approx(1 * (1 - c) ** 2 * c / n)
    assert by_spec.expected_null[0] == pytest.approx(2 * (1 - c) ** 2 * c / n)
    # with a spec, variables default to its released columns
    tab = utility_tables(df, syn, ways=[1], spec=ReleaseSpec.draft(df, quasi_identifiers=["age"], keep=["grp"])).to_frame()
    assert sorted(tab["variables"]) == ["age", "grp"]
    # matching (grp kept, so released unchanged) with a tolerance of 100 on every
    # continuous QI: by dtype grp is continuous too, so every released record matches
    # every target, I_i = 1/n and sum_i I_i = 1; by the spec grp is nominal and matched
    # exactly, so target i meets the n_g records of its group, I_i = 1/n_g, and
    # sum_i I_i = number of groups = 3.
    kept = CartSynthesizer().fit(df, quasi_identifiers=["age"], keep=["grp", "x"]).sample(2, random_state=1)
    loose = reidentification_risk(df[["age", "grp", "x"]], kept, ["age", "grp"], tolerance=100)
    exact_grp = reidentification_risk(df[["age", "grp", "x"]], kept, ["age", "grp"], tolerance=100, spec=nominal)
    assert loose.figures["expected_matches"] == pytest.approx(1.0)
    assert exact_grp.figures["expected_matches"] == pytest.approx(3.0)
    qi_from_spec = reidentification_risk(df, syn, spec=nominal)
    assert qi_from_spec.settings["quasi_identifiers"] == ["age", "grp"]
    sub = risk_subgroups(df, None, 5, spec=nominal)
    assert len(sub.labels) == len(df)


# ---------------------------------------------------------------- what travels with the copies
def test_rule_spec_and_fingerprint_travel_in_metadata(tmp_path):
    df = _frame()
    spec = ReleaseSpec.draft(df, quasi_identifiers=["age", "sex"], keep=["x", "y"])
    spec = ReleaseSpec(spec.columns, analyses=[{"formula": "y ~ age + sex + x", "family": "logit"}])
    syn = CartSynthesizer().fit(df, spec).sample(3, random_state=2)
    assert syn.rule == "partial" and syn.fingerprint == {"columns": ["age", "sex", "x", "y"], "n_rows": 300, "hmac": None}
    # inferred bounds of a QI (one person's age) are not recorded with the release
    assert syn.spec["age"].bounds is None and syn.spec.quasi_identifiers == ["age", "sex"]
    syn.to_dir(tmp_path / "r")
    back = SyntheticData.from_dir(tmp_path / "r")
    assert back.rule == "partial" and back.fingerprint == syn.fingerprint
    assert back.spec.analyses == spec.analyses
    res = back.analyse(original=df)  # formula and family from the recorded spec
    assert res.formula == "y ~ age + sex + x" and res.family == "logit" and res.rule == "partial"
    back.rule = "rubin"  # the recorded rule is honoured unless overridden
    assert back.analyse(original=df).rule == "rubin"
    assert back.analyse(original=df, rule="partial").rule == "partial"
    with pytest.raises(ValueError, match="it has 299 rows, the copies were made from 300"):
        back.check_original(df.iloc[1:])
    back.check_original(df.iloc[1:], rows=False)  # complete cases: columns only
    with pytest.raises(ValueError, match="lacks the columns \\['x'\\] of the data the copies were made from"):
        back.check_original(df.drop(columns="x"))


def test_keyed_fingerprint_detects_changed_values(monkeypatch):
    df = _frame()
    monkeypatch.setenv(PROVENANCE_KEY_ENV, "holder-secret")
    syn = CartSynthesizer().fit(df, quasi_identifiers=["age"], keep=["x"]).sample(2, random_state=0)
    assert syn.fingerprint["hmac"].startswith("hmac-sha256:")
    syn.check_original(df)  # same data: passes (extra columns are fine)
    syn.check_original(df.assign(sex=df.sex.astype(str)))  # dtype changes do not matter
    changed = df.copy()
    changed.loc[5, "x"] += 1.0
    with pytest.raises(ValueError, match="values differ"):
        syn.check_original(changed)


def test_dp_release_records_rule_full_and_no_count():
    df = _frame()[["age", "sex", "y"]]
    spec = ReleaseSpec.draft(df, quasi_identifiers=["age", "sex", "y"])
    cols = dict(spec.columns)
    cols["age"] = ColumnSpec("age", "quasi_identifier", "integer", bounds=(17, 90), declared=True)
    cols["sex"] = ColumnSpec("sex", "quasi_identifier", "binary", levels=("F", "M"), declared=True)
    cols["y"] = ColumnSpec("y", "quasi_identifier", "binary", levels=("no", "yes"), declared=True)
    s = DPSynSynthesizer(epsilon=2.0, delta=1e-6, random_state=0).fit(df, ReleaseSpec(cols))
    syn = s.sample(2, random_state=1)
    assert syn.rule == "full"
    assert syn.fingerprint == {"columns": ["age", "sex", "y"], "n_rows": None,
                               "note": "row count and digest withheld: differentially private release"}
    assert syn.quasi_identifiers == ["age", "sex", "y"]
    # same as the explicit bounds (the declared ones were used, nothing else)
    t = DPSynSynthesizer(epsilon=2.0, delta=1e-6, random_state=0).fit(
        df, domain={"columns": {"age": {"kind": "integer", "bounds": [17, 90]},
                                "sex": {"kind": "binary", "levels": ["F", "M"]},
                                "y": {"kind": "binary", "levels": ["no", "yes"]}}}).sample(2, random_state=1)
    for a, b in zip(syn.copies, t.copies):
        pd.testing.assert_frame_equal(a, b)
    # an inferred (undeclared) bound is never used: DPSyn asks for a public one
    with pytest.raises(ValueError, match="have no declared public domain"):
        DPSynSynthesizer(epsilon=2.0, delta=1e-6).fit(df, spec)


def test_fingerprint_without_key_has_no_digest():
    fp = original_fingerprint(_frame())
    assert fp["hmac"] is None and fp["n_rows"] == 300


# ---------------------------------------------------------------- the command line
@pytest.mark.slow
def test_cli_round_trip_spec_edit_synthesize_analyse_report(tmp_path, capsys):
    """spec -> edit -> synthesize --spec -> analyse / report with no further flags.

    Risk-targeted copies need Rubin's rule; before the rule travelled with the copies
    'analyse' used it and 'report' the partial rule on the same copies."""
    df = _frame(300, seed=3)
    data = tmp_path / "survey.csv"
    df.to_csv(data, index=False)
    assert main(["spec", "--data", str(data), "--qi", "age,sex", "--analysis", "y ~ age + sex + x",
                 "--family", "logit", "--out", str(tmp_path / "spec.json"), "--quiet"]) == 0
    d = json.loads((tmp_path / "spec.json").read_text())
    assert d["columns"]["age"]["declared"] is False and d["analyses"][0]["formula"] == "y ~ age + sex + x"
    # the user's edits: grp excluded, y an outcome, a mask on age, public bounds declared
    d["columns"]["grp"]["role"] = "excluded"
    d["columns"]["y"]["role"] = "outcome"
    d["columns"]["age"].update(bounds=[17, 90], declared=True)
    d["masks"] = {"age": {"K": 2, "sigma_e": 5}}
    (tmp_path / "spec.json").write_text(json.dumps(d))
    out = tmp_path / "syn"
    assert main(["synthesize", "--data", str(data), "--spec", str(tmp_path / "spec.json"), "--method", "risk-dami",
                 "--param", "n_iter=200", "--accept-diagnostics", "--m", "3", "--seed", "1", "--out", str(out),
                 "--quiet"]) == 0
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["rule"] == "rubin" and meta["spec"]["columns"]["grp"]["role"] == "excluded"
    assert meta["spec"]["masks"] == {"age": {"K": 2, "sigma_e": 5}}
    assert meta["structure"]["output"] == "one-stage"  # the spec's mask was used: synthesis, not imputation
    assert meta["spec"]["columns"]["age"]["bounds"] == [17, 90]  # declared: recorded
    assert "bounds" not in meta["spec"]["columns"]["x"]  # inferred: not recorded
    assert list(pd.read_csv(out / "copy_01.csv").columns) == ["age", "sex", "x", "y"]
    capsys.readouterr()
    assert main(["analyse", "--original", str(data), "--synthetic", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Analysis: y ~ age + sex + x  [logit]" in text and "rule='rubin'" in text
    assert main(["report", "--original", str(data), "--synthetic", str(out), "--out", str(tmp_path / "r.html"),
                 "--quiet"]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "the <code>rubin</code> combining rule" in html and "y ~ age + sex + x" in html
    # an explicit --rule still overrides the recorded one
    capsys.readouterr()
    assert main(["analyse", "--original", str(data), "--synthetic", str(out), "--rule", "partial"]) == 0
    assert "rule='partial'" in capsys.readouterr().out
    # another file than the one synthesized: an error naming what differs
    df.iloc[:50].to_csv(tmp_path / "other.csv", index=False)
    assert main(["analyse", "--original", str(tmp_path / "other.csv"), "--synthetic", str(out)]) == 1
    err = capsys.readouterr().err
    assert "it has 50 rows, the copies were made from 300" in err


def test_cli_dpsyn_copies_are_analysed_with_the_full_synthesis_rule(tmp_path, capsys):
    """DPSyn copies are fully synthetic: analyse uses rule 'full' (it used 'partial')."""
    df = _frame(300, seed=4)[["age", "sex", "x", "y"]]
    data = tmp_path / "d.csv"
    df.to_csv(data, index=False)
    spec = ReleaseSpec.draft(df, quasi_identifiers=["age", "sex", "x", "y"])
    cols = dict(spec.columns)
    cols["age"] = ColumnSpec("age", "quasi_identifier", "integer", bounds=(17, 90), declared=True)
    cols["x"] = ColumnSpec("x", "quasi_identifier", "continuous", bounds=(-5, 8), declared=True)
    cols["sex"] = ColumnSpec("sex", "quasi_identifier", "binary", levels=("F", "M"), declared=True)
    cols["y"] = ColumnSpec("y", "quasi_identifier", "binary", levels=("no", "yes"), declared=True)
    ReleaseSpec(cols, analyses=[{"formula": "y ~ age + x", "family": "logit"}]).save(tmp_path / "spec.json")
    out = tmp_path / "dp"
    assert main(["synthesize", "--data", str(data), "--spec", str(tmp_path / "spec.json"), "--method", "dpsyn",
                 "--param", "epsilon=8", "--m", "3", "--seed", "2", "--out", str(out), "--quiet"]) == 0
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["rule"] == "full" and meta["fingerprint"]["n_rows"] is None
    capsys.readouterr()
    assert main(["analyse", "--original", str(data), "--synthetic", str(out)]) == 0
    assert "rule='full'" in capsys.readouterr().out


def test_check_data_names_each_column_with_its_role():
    """A spec column missing from the data, or numeric in the spec and text in the data: named with its role
    (the errors 'tune --spec' and 'synthesize --spec' give named the columns only)."""
    import pandas as pd
    import pytest

    from synthmi.spec import ReleaseSpec

    df = pd.DataFrame({"age": [30, 41, 52, 63], "sex": ["F", "M", "F", "M"], "y": [1.5, 2.5, 3.5, 4.5]})
    spec = ReleaseSpec.draft(df, ["age", "sex"], ["y"])
    with pytest.raises(ValueError, match=r"not in '--data': 'y' \(kept\)\. Columns of '--data'"):
        spec.check_data(df.drop(columns="y"), "--data")
    with pytest.raises(ValueError, match=r"Columns 'age' \(quasi-identifier\) are numeric kinds in the spec"):
        spec.check_data(df.assign(age=["a", "b", "c", "d"]), "--data")
