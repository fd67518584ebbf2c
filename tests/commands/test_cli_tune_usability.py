"""``synthmi tune`` as a new user meets it (issue 29 trial on statsmodels files): ``--categorical`` as in
``synthesize``; when no setting is feasible, the tables that broke the table rule named with their
S_pMSE; a spec's unusable ``"models"`` refused naming the spec file (tune has no ``--models``)."""
from __future__ import annotations

import json

import numpy as np
import pytest
from _frames import wage_frame
from synthmi.cli import main

SMALL = ["--continuous-grid", "1:5", "--alpha-grid", "2", "--m-search", "2", "--m", "2", "--replicates", "1",
         "--n-confirm", "1", "--jobs", "1", "--seed", "3", "--quiet"]


def _with_region(tmp_path, n=200, seed=6):
    w = wage_frame(n, seed=seed)
    w["region"] = np.random.default_rng(seed).integers(1, 4, len(w))  # codes 1..3 of a nominal region
    w.to_csv(tmp_path / "w.csv", index=False)
    return tmp_path / "w.csv"


def test_tune_categorical_declares_the_kind_in_the_spec_it_writes(tmp_path, capsys):
    csv = _with_region(tmp_path)
    rc = main(["tune", "--data", str(csv), "--qi", "age,region", "--keep", "hours,y", "--categorical", "region",
               "--analysis", "y ~ age + region", "--family", "logit", "--tol", "age=1",
               "--target", "expected_matches<=1000", "--max-table-s-pmse", "1000", *SMALL,
               "--out", str(tmp_path / "t.json"), "--trace", str(tmp_path / "trace.json")])
    assert rc == 0, capsys.readouterr().err
    spec = json.loads((tmp_path / "t.json").read_text())
    # the codes are a nominal QI in the spec synthesize --spec reads (a number without --categorical)
    assert spec["columns"]["region"]["kind"] == "nominal" and spec["columns"]["age"]["kind"] != "nominal"
    # and the search masked it as a category (alpha), not with a normal mask
    grid = json.loads((tmp_path / "trace.json").read_text())["search"]["not_tried"]["grid"]
    assert grid["region"] == ["none", "alpha=2"]
    capsys.readouterr()


def test_tune_categorical_refuses_a_column_not_released(tmp_path, capsys):
    csv = _with_region(tmp_path, n=60)
    rc = main(["tune", "--data", str(csv), "--qi", "age,region", "--keep", "hours,y", "--categorical", "sex",
               "--analysis", "y ~ age", "--target", "expected_matches<=10", "--out", str(tmp_path / "t.json")])
    assert rc == 1
    assert "'--categorical' option names columns that are not released (not in --qi or --keep): ['sex']" in \
        capsys.readouterr().err
    assert not (tmp_path / "t.json").exists()


def test_tune_names_the_tables_that_made_every_setting_infeasible(tmp_path, capsys):
    # a bound no synthesized table meets: every setting meets the (loose) risk target and fails the rule
    csv = _with_region(tmp_path)
    rc = main(["tune", "--data", str(csv), "--qi", "age,sex", "--keep", "hours,y", "--analysis", "y ~ age + sex",
               "--family", "logit", "--tol", "age=1", "--target", "expected_matches<=1000",
               "--max-table-s-pmse", "0.001", *SMALL, "--out", str(tmp_path / "t.json"),
               "--trace", str(tmp_path / "trace.json")])
    out = capsys.readouterr().out
    assert rc == 2 and not (tmp_path / "t.json").exists()
    assert "one-way <= 0.001; two-way <= 0.001" in out
    assert "4 of 4 settings the search measured met the risk targets but not its table rule" in out
    info = json.loads((tmp_path / "trace.json").read_text())["search"]["infeasible"]
    assert info["binding"] == "table rule" and info["tables"]
    named = {t["table"] for t in info["tables"]}
    assert {"age", "sex"} <= named  # the synthesized margins, by name
    for t in info["tables"]:
        assert t["s_pmse"] > t["cap"] == 0.001
        assert f"{t['way']}-way table {t['table']}: S_pMSE {t['s_pmse']:.3g} (bound 0.001)" in out
    # kept columns only (released unchanged) are never named
    assert not named & {"hours", "y", "hours:y"}


@pytest.mark.parametrize("models, message", [
    ({"region": "normal"}, "the method 'normal' of column 'region' cannot model a nominal column"),
    ({"age": "nonsense"}, "The method of column 'age' must be one of"),
    ({"age": {"method": "tree", "min_leaf": 0}}, "The 'min_leaf' of column 'age' in the spec's \"models\" must be an integer"),
])
@pytest.mark.parametrize("command", ["tune", "synthesize"])
def test_tune_and_synthesize_name_the_spec_when_its_models_cannot_be_used(tmp_path, capsys, models, message,
                                                                          command):
    """One check (synthmi.models.conditional.check_spec_models) and one message for both commands:
    the spec file and its "models" key, never the '--models' option the user did not give."""
    csv = _with_region(tmp_path, n=60)
    assert main(["spec", "--data", str(csv), "--qi", "age,region", "--keep", "hours,y", "--categorical", "region",
                 "--analysis", "y ~ age + region", "--family", "logit", "--out", str(tmp_path / "s.json"),
                 "--quiet"]) == 0
    d = json.loads((tmp_path / "s.json").read_text())
    d["models"] = models
    (tmp_path / "s.json").write_text(json.dumps(d))
    tail = (["--target", "expected_matches<=10", "--out", str(tmp_path / "t.json")] if command == "tune" else
            ["--method", "dami", "--m", "2", "--out", str(tmp_path / "out")])
    rc = main([command, "--data", str(csv), "--spec", str(tmp_path / "s.json"), *tail, "--quiet"])
    err = capsys.readouterr().err
    assert rc == 1
    assert f"The '--spec' file '{tmp_path / 's.json'}' has a \"models\" entry that cannot be used: " in err
    assert message in err and "'--models'" not in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "t.json").exists()


@pytest.mark.parametrize("extra, message", [
    (["--secret", "hours"], "The '--secret' option sets the intruder of the inference target; no --target names "
                            "inference."),
    (["--link-aux", "age:sex", "--target", "inference<=0.5"], "The '--link-aux' option sets the intruder of the "
                                                              "linkability target"),
    (["--secret", "nope", "--target", "inference<=0.5"], "name columns not in the release: ['nope']"),
    (["--link-aux", "age", "--target", "linkability<=0.5"], "The '--link-aux' option must be two column lists"),
])
def test_tune_attack_flags_are_checked(tmp_path, capsys, extra, message):
    csv = _with_region(tmp_path, n=60)
    rc = main(["tune", "--data", str(csv), "--qi", "age,sex", "--keep", "hours,y", "--analysis", "y ~ age",
               "--target", "expected_matches<=10", *extra, "--out", str(tmp_path / "t.json"), "--quiet"])
    assert rc == 1
    assert message in capsys.readouterr().err


def test_tune_max_search_points_bounds_the_search_and_is_checked(tmp_path, capsys):
    csv = _with_region(tmp_path)
    rc = main(["tune", "--data", str(csv), "--qi", "age,sex", "--keep", "hours,y", "--analysis", "y ~ age + sex",
               "--family", "logit", "--tol", "age=1", "--target", "expected_matches<=1000",
               "--max-table-s-pmse", "1000", *SMALL, "--max-search-points", "1", "--out", str(tmp_path / "t.json"),
               "--trace", str(tmp_path / "trace.json")])
    out = capsys.readouterr().out
    assert rc == 0
    search = json.loads((tmp_path / "trace.json").read_text())["search"]
    # the origin only: its raises (2 settings) would take the search past 1
    assert search["search_points"] == 1 and search["search_stopped_by"] == "point limit"
    assert search["not_tried"]["budget_cut_offs"] == ["point limit", "max_search_points=1"]
    assert "the search was cut by max_search_points=1" in out
    rc = main(["tune", "--data", str(csv), "--qi", "age,sex", "--keep", "hours,y", "--analysis", "y ~ age",
               "--target", "expected_matches<=10", "--max-search-points", "0", "--out", str(tmp_path / "u.json"),
               "--quiet"])
    assert rc == 1
    assert "The '--max-search-points' option must be >= 1. Got 0 instead." in capsys.readouterr().err


def test_tune_at_carts_risk_compares_its_release_with_carts(tmp_path, capsys):
    # the validated figures against CART's (the reference measured for the <=cart target), in the trace,
    # in the spec's tuning record (what the report reads) and on the terminal
    csv = _with_region(tmp_path)
    rc = main(["tune", "--data", str(csv), "--qi", "age,sex", "--keep", "hours,y", "--analysis", "y ~ age + sex",
               "--family", "logit", "--tol", "age=1", "--target", "expected_matches<=cart",
               "--reference-replicates", "2", "--max-table-s-pmse", "1000", "--max-table-ratio", "0", *SMALL,
               "--replicates", "2", "--out", str(tmp_path / "t.json"), "--trace", str(tmp_path / "trace.json")])
    out = capsys.readouterr().out
    if rc == 2:
        pytest.fail("no setting at CART's risk on this file: " + out)
    tr = json.loads((tmp_path / "trace.json").read_text())
    v, ref, val = tr["search"]["versus_reference"], tr["search"]["reference"], tr["validated"]
    for k in ("battery_ci_overlap", "mean_ci_overlap"):
        assert v[k]["reference"] == pytest.approx(ref["mean"][k]) and v[k]["tuned"] == pytest.approx(val[k])
        assert v[k]["difference"] == pytest.approx(val[k] - ref["mean"][k])
        assert v[k]["se"] == pytest.approx(np.hypot(val[k + "_se"], ref["se"][k]))
    assert f"battery CI overlap {val['battery_ci_overlap']:.3f} vs CART's" in out
    assert json.loads((tmp_path / "t.json").read_text())["tuning"]["versus_reference"] == v


def test_tune_says_which_named_qis_no_mask_can_move(tmp_path, capsys):
    # a QI with missing values cannot carry a mask (DA-MI): when its tables break the rule, tune says that
    # no setting of the search moves them (NHANES: education and marital_status)
    w = wage_frame(200, seed=6)
    w["region"] = np.random.default_rng(6).integers(1, 4, len(w)).astype(float)
    w.loc[::10, "region"] = np.nan
    w.to_csv(tmp_path / "w.csv", index=False)
    rc = main(["tune", "--data", str(tmp_path / "w.csv"), "--qi", "age,region", "--keep", "hours,y",
               "--categorical", "region", "--analysis", "y ~ age", "--family", "logit", "--tol", "age=1",
               "--target", "expected_matches<=1000", "--max-table-s-pmse", "0.001", *SMALL,
               "--out", str(tmp_path / "t.json"), "--trace", str(tmp_path / "trace.json")])
    out = capsys.readouterr().out
    assert rc == 2
    info = json.loads((tmp_path / "trace.json").read_text())["search"]["infeasible"]
    assert set(info["unmaskable"]) == {"region"} and "age" in {v for t in info["tables"] for v in t["table"].split(":")}
    assert "'region' cannot be masked (it has missing values or point masses): no setting moves its tables" in out
    assert "'age' cannot be masked" not in out


def test_tune_warning_names_the_table_rule_when_fresh_copies_break_it(tmp_path, capsys, monkeypatch):
    # fair in tune_files: the validated worst one-way S_pMSE (2.77) was above its bound (2.69) and the warning
    # named nothing ("miss  (the search ...)"). Search and validation stubbed: every candidate's tables 1.0,
    # the fresh copies' one-way table 5.0 against --max-table-s-pmse 3
    import synthmi.workflow.tuning as tuning

    row = {"mean_ci_overlap": 0.8, "battery_ci_overlap": 0.8, "worst_one_way_s_pmse": 1.0,
           "worst_two_way_s_pmse": 1.0, "expected_matches": 1.0}
    monkeypatch.setattr(tuning, "_measure_candidate", lambda masks, mm, reps, *a, **k: [dict(row)] * reps)
    monkeypatch.setattr(tuning, "validate_spec", lambda data, spec, analyses, m, seeds, *a, **k: [
        {**row, "worst_one_way_s_pmse": 5.0, "seed": s} for s in seeds])
    csv = _with_region(tmp_path)
    rc = main(["tune", "--data", str(csv), "--qi", "age,sex", "--keep", "hours,y", "--analysis", "y ~ age + sex",
               "--family", "logit", "--tol", "age=1", "--target", "expected_matches<=10", "--max-table-s-pmse", "3",
               *SMALL, "--max-search-points", "1", "--out", str(tmp_path / "t.json")])
    err = capsys.readouterr().err
    assert rc == 0
    assert ("warning: on fresh copies the chosen masks miss the table rule (one-way S_pMSE 5 > 3) (the search and "
            "confirmation met them)") in err


def test_tune_searches_the_trees_leaf_size_and_names_it(tmp_path, capsys):
    # a spec whose "models" give the QIs trees: --leaf-grid is one more coordinate; the chosen size is
    # printed and written into each tree's model, so synthesize --spec fits the same trees
    from synthmi.spec import ReleaseSpec

    w = wage_frame(200, seed=6)
    w.to_csv(tmp_path / "w.csv", index=False)
    d = ReleaseSpec.draft(w, ["age", "sex"], ["hours", "y"]).to_dict()
    d["models"] = {"age": "tree", "sex": "tree"}
    (tmp_path / "s.json").write_text(json.dumps(d))
    rc = main(["tune", "--data", str(tmp_path / "w.csv"), "--spec", str(tmp_path / "s.json"), "--analysis",
               "y ~ age + sex", "--family", "logit", "--tol", "age=1", "--target", "expected_matches<=1000",
               "--max-table-s-pmse", "1000", "--param", "proper=false", "--leaf-grid", "10,40", "--max-cycles", "1",
               *SMALL, "--out", str(tmp_path / "t.json"), "--trace", str(tmp_path / "trace.json")])
    out = capsys.readouterr().out
    assert rc == 0
    spec = json.loads((tmp_path / "t.json").read_text())
    leaf = spec["models"]["age"]["min_leaf"]
    assert leaf in (10, 40) and spec["models"]["sex"] == {"method": "tree", "min_leaf": leaf}
    assert spec["tuning"]["min_leaf"] == leaf
    assert f"chosen min_leaf: {leaf} for the trees of age, sex (grid 40, 10;" in out
    assert "grid of the trees' min_leaf (age, sex): 40 > 10" in out
    trace = json.loads((tmp_path / "trace.json").read_text())
    assert trace["min_leaf"] == leaf and {r["min_leaf"] for r in trace["trace"]} == {10, 40}
    rc = main(["tune", "--data", str(tmp_path / "w.csv"), "--spec", str(tmp_path / "s.json"), "--target",
               "expected_matches<=10", "--leaf-grid", "5,0", "--out", str(tmp_path / "u.json")])
    assert rc == 1
    assert "The '--leaf-grid' option must list minimum leaf sizes, integers >= 1 (or 'none')" in capsys.readouterr().err


@pytest.mark.parametrize("how", ["--models", "spec word"])
def test_tune_takes_models_tree_and_writes_them_into_the_tuned_spec(tmp_path, capsys, how):
    """``tune --models tree`` (the new-user review: 'unrecognized arguments') or the spec's
    ``"models": "tree"``: the tuned spec carries a tree for every QI, so ``synthesize --spec TUNED``
    fits the models tune measured, and the leaf search sees them."""
    from synthmi.spec import ReleaseSpec

    w = wage_frame(200, seed=6)
    w.to_csv(tmp_path / "w.csv", index=False)
    d = ReleaseSpec.draft(w, ["age", "sex"], ["hours", "y"]).to_dict()
    extra = ["--models", "tree"]
    if how == "spec word":
        d["models"], extra = "tree", []
    (tmp_path / "s.json").write_text(json.dumps(d))
    rc = main(["tune", "--data", str(tmp_path / "w.csv"), "--spec", str(tmp_path / "s.json"), "--analysis",
               "y ~ age + sex", "--family", "logit", "--tol", "age=1", "--target", "expected_matches<=1000",
               "--max-table-s-pmse", "1000", "--param", "proper=false", "--leaf-grid", "10,40", "--max-cycles", "1",
               *extra, *SMALL, "--out", str(tmp_path / "t.json")])
    assert rc == 0, capsys.readouterr().err
    spec = json.loads((tmp_path / "t.json").read_text())
    leaf = spec["models"]["age"]["min_leaf"]
    assert spec["models"] == {c: {"method": "tree", "min_leaf": leaf} for c in ("age", "sex")}
    rc = main(["tune", "--data", str(tmp_path / "w.csv"), "--spec", str(tmp_path / "s.json"), "--target",
               "expected_matches<=10", "--models", "tree", "--param", "models=cart", "--out", str(tmp_path / "u.json")])
    assert rc == 1 and "either with --models or with --param models=" in capsys.readouterr().err


def test_tune_says_coarser_leaves_when_the_unmasked_release_misses_the_risk_targets(tmp_path, capsys):
    # the unmasked trees are CART's own draws, at CART's risk, so on a real file "expected_matches<=cart"
    # left tune nothing (tune_files: Adult and NHANES, "origin infeasible"); without --leaf-grid tune now
    # names it. The search is cut to the origin (one point), so the closest setting is "no masks".
    from synthmi.spec import ReleaseSpec

    w = wage_frame(200, seed=6)
    w.to_csv(tmp_path / "w.csv", index=False)
    (tmp_path / "s.json").write_text(json.dumps(ReleaseSpec.draft(w, ["age", "sex"], ["hours", "y"]).to_dict()))
    args = ["tune", "--data", str(tmp_path / "w.csv"), "--spec", str(tmp_path / "s.json"), "--models", "tree",
            "--analysis", "y ~ age + sex", "--family", "logit", "--tol", "age=1", "--target", "expected_matches<=0",
            "--max-table-s-pmse", "1000", "--param", "proper=false", *SMALL, "--max-search-points", "1",
            "--out", str(tmp_path / "t.json")]
    rc = main(args)
    out = capsys.readouterr().out
    assert rc == 2 and not (tmp_path / "t.json").exists()
    assert "the release without masks already misses the risk targets" in out and "--leaf-grid 5,10,20,40" in out
    # with the leaf grid given the grid is not advised again (the leaf sizes were searched): no setting reaches them
    rc = main(args + ["--leaf-grid", "10,40"])
    out = capsys.readouterr().out
    assert rc == 2 and "--leaf-grid 5,10,20,40" not in out
    assert "already are trees whose leaf sizes 40, 10 were searched" in out and "no setting reaches them" in out


def test_tune_refuses_a_leaf_grid_with_no_tree_to_apply_it_to(tmp_path, capsys):
    # without a spec, --models tree reaches the fit as a parameter, and the grid was silently ignored
    w = wage_frame(200, seed=6)
    w.to_csv(tmp_path / "w.csv", index=False)
    rc = main(["tune", "--data", str(tmp_path / "w.csv"), "--qi", "age,sex", "--keep", "hours,y", "--models", "tree",
               "--analysis", "y ~ age + sex", "--family", "logit", "--target", "expected_matches<=1000",
               "--leaf-grid", "10,40", *SMALL, "--out", str(tmp_path / "t.json")])
    err = capsys.readouterr().err
    assert rc == 1 and not (tmp_path / "t.json").exists()
    assert "The 'leaf_grid' parameter of tune searches the minimum leaf size" in err and "give a --spec" in err


def _wage_spec(tmp_path):
    from synthmi.spec import ReleaseSpec

    w = wage_frame(200, seed=6)
    w.to_csv(tmp_path / "w.csv", index=False)
    (tmp_path / "s.json").write_text(json.dumps(ReleaseSpec.draft(w, ["age", "sex"], ["hours", "y"]).to_dict()))
    return ["--data", str(tmp_path / "w.csv"), "--analysis", "y ~ age + sex", "--family", "logit", "--tol", "age=1",
            *SMALL, "--out", str(tmp_path / "t.json")]


@pytest.mark.parametrize("models, advice, not_said", [
    (["--models", "tree", "--param", "proper=false"], "the named QIs' models already are trees",
     "a tree or a transform for"),
    ([], "a tree or a transform for 'age' (normal), 'sex' (logit)", "already are trees"),
])
def test_tune_table_rule_advice_depends_on_the_qis_models(tmp_path, capsys, models, advice, not_said):
    """No setting meets the table rule: a tree is advised only for QIs that are not trees already (the new-user
    review: 'a tree or a transform' was advised to QIs whose models were trees)."""
    rc = main(["tune", "--spec", str(tmp_path / "s.json"), *_wage_spec(tmp_path), "--target",
               "expected_matches<=1000", "--max-table-s-pmse", "0.001", *models])
    out = capsys.readouterr().out
    assert rc == 2 and "met the risk targets but not its table rule" in out
    assert advice in out and not_said not in out


@pytest.mark.parametrize("how, advice", [
    (["--qi", "age,sex", "--keep", "hours,y", "--models", "tree", "--param", "proper=false"],
     "the QIs' models already are trees, and coarser leaves lower it: --leaf-grid 5,10,20,40 searches their minimum "
     "leaf size when the trees are in a --spec's \"models\""),
    (["--spec", "s.json"], "so no mask setting reaches them with these models ('age' normal, 'sex' logit)"),
])
def test_tune_unmasked_risk_advice_depends_on_the_qis_models(tmp_path, capsys, how, advice):
    """The release without masks misses the risk targets: trees without a spec are told that --leaf-grid needs
    them in a spec (it refuses them otherwise); parametric models are not told about leaves they do not have."""
    how = [str(tmp_path / a) if a == "s.json" else a for a in how]
    rc = main(["tune", *_wage_spec(tmp_path), *how, "--target", "expected_matches<=0", "--max-table-s-pmse", "1000",
               "--max-search-points", "1"])
    out = capsys.readouterr().out
    assert rc == 2 and "the release without masks already misses the risk targets" in out
    assert advice in out and "If the QIs' models are trees" not in out


@pytest.mark.parametrize("models", ["tree", "cart"])
def test_tune_models_without_a_spec_round_trip_into_synthesize(tmp_path, capsys, models):
    """``tune --qi ... --models tree|cart`` (no --spec): the spec it writes carries the models it tuned, so
    ``synthesize --spec`` of that spec alone (no --models, no --param models=) fits the same models (it wrote
    none, and synthesize fitted the default parametric models to masks chosen for trees)."""
    w = wage_frame(200, seed=6)
    w.to_csv(tmp_path / "w.csv", index=False)
    rc = main(["tune", "--data", str(tmp_path / "w.csv"), "--qi", "age,sex", "--keep", "hours,y", "--models", models,
               "--analysis", "y ~ age + sex", "--family", "logit", "--tol", "age=1", "--target",
               "expected_matches<=1000", "--max-table-s-pmse", "1000", "--param", "proper=false", *SMALL,
               "--out", str(tmp_path / "t.json"), "--trace", str(tmp_path / "trace.json")])
    assert rc == 0, capsys.readouterr().err
    tuned = json.loads((tmp_path / "trace.json").read_text())["search"]["qi_models"]
    assert tuned == {"age": models, "sex": models}
    assert json.loads((tmp_path / "t.json").read_text())["models"] == {"age": models, "sex": models}
    rc = main(["synthesize", "--data", str(tmp_path / "w.csv"), "--spec", str(tmp_path / "t.json"), "--method",
               "dami", "--m", "2", "--seed", "3", "--param", "proper=false", "--out", str(tmp_path / "syn"), "--quiet"])
    assert rc == 0, capsys.readouterr().err
    fitted = json.loads((tmp_path / "syn" / "metadata.json").read_text())["structure"]["models"]
    assert {c: fitted[c]["family"] for c in ("age", "sex")} == tuned
