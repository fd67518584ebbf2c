"""tune judged by the battery: a wrecked margin is infeasible whatever its overlap; the report
says how a tuned release was tuned and reads its masks from the spec; synthmi frontier."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

# the frontier tests' frame: age drives edu and y; hours independent
from test_frontier import _small


def _wreck_age_when_masked(monkeypatch):
    """Every tune candidate that masks age has its copies' age shifted by 15 years before it is
    measured: a wrecked margin whose declared slope (and so its overlap) is untouched, and whose
    risk drops (shifted ages match nobody): the issue's pathology, measured for real."""
    import synthmi.workflow.tuning as tuning

    real_measure, real_eval = tuning._measure_candidate, tuning.evaluate_release
    state = {"wreck": False}

    def measure(masks, *a, **k):
        state["wreck"] = "age" in (masks or {})
        return real_measure(masks, *a, **k)

    def evaluate(df, copies, **kw):
        if state["wreck"]:
            copies = [c.assign(age=c["age"] + 15) for c in copies]
        return real_eval(df, copies, **kw)

    monkeypatch.setattr(tuning, "_measure_candidate", measure)
    monkeypatch.setattr(tuning, "evaluate_release", evaluate)
    return tuning


@pytest.mark.slow
def test_tune_does_not_buy_overlap_with_a_wrecked_margin(monkeypatch):
    tuning = _wreck_age_when_masked(monkeypatch)
    df = _small(300)
    # a normal age, so that DA-MI's normal model of it fits when age is not masked (a uniform age
    # fails the table rule at every candidate: nothing is feasible, the rule doing its job)
    df["age"] = np.clip(np.random.default_rng(5).normal(45, 12, len(df)).round(), 18, 90)
    kw = dict(quasi_identifiers=["age", "sex", "edu"], keep=["hours", "y"], analyses=["y ~ age + sex + edu"],
              targets=["expected_matches<=1000"], continuous_grid=[(1, 1.0)], alpha_grid=[5.0], m_search=2, m=2,
              replicates=2, n_confirm=2, tolerance={"age": 1}, base_params={"random_state": 1})
    # judged by the declared analysis alone (the code before issue 29): the wrecked age mask is chosen
    old = tuning.tune(df, battery=False, **kw)
    assert "age" in old.masks
    new = tuning.tune(df, **kw)
    assert new.feasible and "age" not in new.masks
    tr = new.trace
    aged = tr["masks"].str.contains('"age"')
    assert aged.any() and (tr.loc[aged, "worst_one_way_s_pmse"] > 10).all()
    assert not tr.loc[aged, "feasible"].any() and tr.loc[aged, "meets_targets"].all()
    assert (tr.loc[~aged, "worst_one_way_s_pmse"] < 10).all()
    # every criterion with its MC error over the replicate seeds, in the trace and the validated figures
    for c in ("battery_ci_overlap", "generic_ci_overlap", "worst_one_way_s_pmse", "worst_two_way_s_pmse",
              "overall_s_pmse"):
        assert np.isfinite(new.validated[c]) and np.isfinite(new.validated[f"{c}_se"])
    assert new.settings["objective"] == "battery_ci_overlap" and new.settings["max_table_s_pmse"] == 10.0
    assert [a["declared"] for a in new.settings["battery"]["analyses"]][:1] == [True]
    # the spec records how the masks were chosen
    rec = new.to_spec().tuning
    assert rec["targets"] == ["expected_matches<=1000"] and rec["masks"] == new.masks
    assert rec["figures"]["battery_ci_overlap"] == pytest.approx(new.validated["battery_ci_overlap"])
    assert rec["figures_se"]["worst_one_way_s_pmse"] == pytest.approx(new.validated["worst_one_way_s_pmse_se"])


def test_greedy_ascent_walks_through_a_broken_margin():
    # A raise that breaks the table rule (table_ok False) but meets the targets is not a boundary:
    # the walk prefers raises that pass the rule and goes on through the others.
    from synthmi.workflow.tuning import greedy_ascent

    def ev(x):
        return {"feasible": x[0] == 0, "meets_targets": sum(x) <= 3, "table_ok": x[0] == 0,
                "objective": 0.3 * x[0] + 0.1 * x[1], "mean_ci_overlap": 0.0, "risk_ratio": sum(x) / 3}

    path, why = greedy_ascent([3, 3], ev)
    # (0,1) passes the rule though (1,0) has the higher objective; then (0,2); then x0 is the only move
    assert path == [(0, 0), (0, 1), (0, 2), (1, 2)] and why == "boundary"


def test_the_report_reads_masks_and_tuning_from_the_spec():
    from dataclasses import replace

    from synthmi.report.html import render_report
    from synthmi.spec import ReleaseSpec
    from synthmi.synthetic import SyntheticData
    from synthmi.workflow.evaluate import describe_release, evaluate_release

    df = _small(200)
    masks = {"age": {"K": 1, "sigma_e": 3.0}, "sex": {"alpha": 2.0}}
    tuning = {"by": "synthmi tune", "targets": ["expected_matches<=7"], "objective": "battery_ci_overlap",
              "max_table_s_pmse": 10.0, "masks": masks, "figures_from": "validated (fresh copies)",
              "figures": {"battery_ci_overlap": 0.812, "worst_one_way_s_pmse": 1.3},
              "figures_se": {"battery_ci_overlap": 0.011}, "feasible_on_fresh_copies": True, "m": 5,
              "replicates": 3, "search_points": 14, "search_stopped_by": "boundary"}
    spec = replace(ReleaseSpec.from_roles(df, ["age", "sex", "edu"], ["hours", "y"]), masks=masks, tuning=tuning)
    assert ReleaseSpec.from_dict(json.loads(spec.to_json())).tuning == tuning  # the spec file keeps it
    rng = np.random.default_rng(0)
    copies = [df.assign(age=df["age"] + rng.integers(-2, 3, len(df))) for _ in range(2)]
    # a release synthesized from a tuned spec: its parameters carry no masks, its spec does
    syn = SyntheticData(copies, "dami", params={"ordinal_link": "multinomial"}, seed=1,
                        quasi_identifiers=["age", "sex", "edu"], spec=spec.public_view())
    d = describe_release("dami", syn, df, copies, ["age", "sex", "edu"], "partial")
    assert d["masks"] == masks and d["tuning"] == tuning
    # a frontier file with the battery's columns (synthmi frontier's CSV): drawn beside risk, with SEs
    fr = pd.DataFrame({"method": ["cart", "dami"], "setting": ["min leaf 5", "alpha=1"],
                       "mean_ci_overlap": [0.9, 0.85], "expected_matches": [9.9, 16.6],
                       "true_match_rate": [1e-4, 2e-4], "battery_ci_overlap": [0.813, 0.793],
                       "battery_ci_overlap_se": [0.019, 0.034], "worst_one_way_s_pmse": [2.25, 2.23],
                       "worst_two_way_s_pmse": [1.62, 4.04]})
    data = evaluate_release(df, {"dami": syn}, ["age", "sex", "edu"], "y ~ age + sex + edu", references=False,
                            frontier=fr)
    page = render_report(data)
    assert "The frontier's points by the battery" in page and "0.813 \u00b1 0.019" in page
    assert "<b>Masks</b>: none" not in page and "age (K=1, sigma_e=3.0)" in page
    assert "<b>Tuned</b>" in page and "expected_matches&lt;=7" in page and "0.812 &plusmn; 0.011" in page
    # the battery section: each release's criteria
    assert "id='battery'" in page and "worst_one_way_s_pmse" in page
    assert {"battery_ci_overlap", "worst_two_way_s_pmse"} <= set(data.summary.columns)
    assert set(data.battery["criterion"]) == {"declared analysis", "generic analysis", "one-way table",
                                              "two-way table"}


@pytest.mark.slow
def test_cli_frontier_on_a_file(tmp_path, capsys):
    from synthmi.cli import main

    df = _small(300)
    df.to_csv(tmp_path / "d.csv", index=False)
    out, js, png = tmp_path / "f.csv", tmp_path / "f.json", tmp_path / "f.png"
    args = ["frontier", "--data", str(tmp_path / "d.csv"), "--qi", "age,sex,edu", "--keep", "hours,y",
            "--analysis", "y ~ age + sex + edu", "--tol", "age=1", "--continuous-grid", "1:3", "--alpha-grid", "0,3",
            "--leaves", "5,50", "--m", "2", "--replicates", "2", "--pmse-copies", "0", "--quiet"]
    assert main(args + ["--out", str(out), "--json", str(js), "--figure", str(png)]) == 0
    pts = pd.read_csv(out)
    got = pts[pts["method"] != "reference"].set_index("setting")
    # DA-MI: 1 continuous mask x 2 alphas; CART: 2 leaves + the smallest smoothed
    assert list(pts["method"]) == ["dami"] * 2 + ["cart"] * 3 + ["reference"] * 2
    for c in ("battery_ci_overlap", "worst_one_way_s_pmse", "worst_two_way_s_pmse", "mean_ci_overlap",
              "expected_matches"):
        assert np.isfinite(got[c]).all() and np.isfinite(got[f"{c}_se"]).all()
    assert set(got["table_feasible"]) <= {0.0, 0.5, 1.0}
    rec = json.loads(js.read_text())
    assert rec["settings"]["battery"]["analyses"][0]["formula"] == "y ~ age + sex + edu"
    assert png.read_bytes()[:4] == b"\x89PNG"
    # report --frontier takes the CSV; existing outputs are not overwritten; bad options fail first
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(args + ["--out", str(out)]) == 1
    assert main(args + ["--out", str(tmp_path / "x.csv"), "--methods", "dami,foo"]) == 1
    assert main(args + ["--out", str(tmp_path / "x.csv"), "--leaves", "0"]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    err = capsys.readouterr().err
    assert "--methods" in err and "--leaves" in err


def test_frontier_fits_every_setting_with_the_spec_kinds():
    # codes read as numbers are modelled as the spec declares them (a nominal 'edu' coded 0/1/2 must
    # not be drawn from a normal model); the spec's own masks and tuning record are left out
    from dataclasses import replace

    from synthmi.spec import ReleaseSpec
    from synthmi.workflow.tuning import _spec_on

    df = _small(100).assign(edu=lambda d: d["edu"].cat.codes.astype(float), extra=1.0)
    spec = ReleaseSpec.draft(df, ["age", "sex", "edu"], kinds={"edu": "nominal"})
    spec = replace(spec, masks={"sex": {"alpha": 2.0}}, tuning={"by": "synthmi tune"})
    got = _spec_on(spec, ["age", "sex", "edu"], ["hours", "y"])
    assert list(got.columns) == ["age", "sex", "edu", "hours", "y"] and got.kind("edu") == "nominal"
    assert got.masks is None and got.tuning is None and got.quasi_identifiers == ["age", "sex", "edu"]
    with pytest.raises(ValueError, match="does not describe the columns \\['nope'\\]"):
        _spec_on(spec, ["age"], ["nope"])


def test_cli_frontier_with_a_holdout_measures_membership(tmp_path, capsys):
    # issue 26 item 2: the attacks that need real non-members appear in the frontier from the CLI
    from synthmi.cli import main

    df = _small(300)
    df.to_csv(tmp_path / "d.csv", index=False)
    args = ["frontier", "--data", str(tmp_path / "d.csv"), "--qi", "age,sex,edu", "--keep", "hours,y",
            "--continuous-grid", "1:3", "--alpha-grid", "0", "--leaves", "5", "--methods", "dami,cart",
            "--m", "2", "--replicates", "2", "--pmse-copies", "0", "--quiet"]
    assert main(args + ["--out", str(tmp_path / "bad.csv"), "--holdout-share", "1.5"]) == 1
    assert "--holdout-share" in capsys.readouterr().err and not (tmp_path / "bad.csv").exists()
    out = tmp_path / "f.csv"
    assert main(args + ["--out", str(out), "--holdout-share", "0.3"]) == 0
    got = pd.read_csv(out)
    got = got[got["method"] != "reference"]
    assert len(got) == 3
    for c in ("membership_auc", "membership_auc_se"):
        assert c in got and np.isfinite(got[c]).all()
    assert ((got["membership_auc"] >= 0) & (got["membership_auc"] <= 1)).all()
