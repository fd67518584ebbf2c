"""``synthmi tune``'s validated figures are those a user measures (issue 29 item 4).

On a survey file tune's validation reported overlap 0.854 +- 0.013 where ``synthesize --spec`` +
``analyse`` gave 0.888 +- 0.018: the validation drew its copies from tune's posterior pool with seeds
no command reproduces, and the printed synthesize line omitted ``--m`` (synthesize's default is 20
copies, tune's 5). Now the validation is the route itself (``validate_spec``): replicate r is what
``synthesize --spec OUT --method dami --m M --seed SEED + r`` writes, measured as ``analyse``
measures it. The test runs both routes through the command line and asks for the same numbers.
"""
from __future__ import annotations

import json

import pytest
from _frames import wage_frame
from synthmi.cli import main


def test_tune_validation_is_synthesize_then_analyse(tmp_path, capsys):
    wage_frame(200, seed=6).to_csv(tmp_path / "w.csv", index=False)
    rc = main(["tune", "--data", str(tmp_path / "w.csv"), "--qi", "age,sex,edu", "--keep", "hours,y",
               "--analysis", "y ~ age + sex", "--family", "logit", "--tol", "age=1",
               "--target", "expected_matches<=1000", "--continuous-grid", "1:5", "--alpha-grid", "2",
               "--m-search", "2", "--m", "3", "--replicates", "2", "--n-confirm", "1", "--jobs", "1",
               "--max-table-s-pmse", "1000", "--seed", "4", "--out", str(tmp_path / "t.json"),
               "--trace", str(tmp_path / "trace.json"), "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0
    # the printed command names the copies count and the seed of validation replicate 0
    assert f"--spec {tmp_path / 't.json'} --method dami --m 3 --seed 4" in out
    # what the search did not try is printed and recorded (grids, QIs never masked, cut-offs)
    assert "grid of age: none < K=1,sigma=5" in out and "grid of sex: none < alpha=2" in out
    assert "not tried: masks weaker than each QI's weakest level" in out
    rec = json.loads((tmp_path / "trace.json").read_text())["search"]
    assert rec["not_tried"]["lattice_points"] == 8 and rec["coordinate_search"]["stopped_by"] == "converged"
    val = json.loads((tmp_path / "trace.json").read_text())["search"]["validation"]
    assert val["seeds"] == [4, 5] and val["m"] == 3
    for rep in val["replicates"]:
        seed = rep["seed"]
        assert main(["synthesize", "--data", str(tmp_path / "w.csv"), "--spec", str(tmp_path / "t.json"),
                     "--method", "dami", "--m", "3", "--seed", str(seed), "--out", str(tmp_path / f"syn{seed}"),
                     "--quiet"]) == 0
        assert main(["analyse", "--original", str(tmp_path / "w.csv"), "--synthetic", str(tmp_path / f"syn{seed}"),
                     "--formula", "y ~ age + sex", "--family", "logit", "--out", str(tmp_path / f"a{seed}.json"),
                     "--quiet"]) == 0
        user = json.loads((tmp_path / f"a{seed}.json").read_text())
        # the same copies, combined by the same rule: equal up to the CSV round trip (17 digits)
        assert rep["mean_ci_overlap"] == pytest.approx(user["mean_ci_overlap"], rel=1e-9, abs=1e-12)
    capsys.readouterr()


@pytest.mark.parametrize("extra, message", [
    (["--target", "expected_matches<=7", "--cart-param", "min_samples_leaf=20"],
     "'--cart-param' option sets the CART reference of a MEASURE<=cart target"),
    (["--target", "expected_matches<=cart", "--cart-param", "leaf=20"], "'--cart-param' option names 'leaf'"),
    (["--target", "expected_matches<=cart", "--reference-replicates", "1"], "'--reference-replicates' option must be >= 2"),
    (["--target", "battery_ci_overlap<=cart"], "compares a utility with CART's"),
    (["--target", "expected_matches<=7", "--max-cycles", "-1"], "'--max-cycles' option must be >= 0"),
])
def test_tune_reference_and_search_options_are_checked(tmp_path, capsys, extra, message):
    # refused before the data are read: one clear message naming the option
    rc = main(["tune", "--data", str(tmp_path / "absent.csv"), "--qi", "age,sex", "--analysis", "y ~ age",
               "--out", str(tmp_path / "t.json"), *extra])
    assert rc == 1
    assert message in capsys.readouterr().err


def test_tune_validation_fits_declared_categories_as_analyse_does(tmp_path, capsys):
    """A numeric code the spec declares categorical is a factor in 'analyse' (spec kinds); tune's validated
    figure must fit it the same way (the new-user trial on statsmodels fair: tune 0.908 vs analyse
    0.813 / 0.840 on the same copies, tune having fitted the codes as numbers)."""
    import numpy as np

    w = wage_frame(240, seed=8)
    rng = np.random.default_rng(8)
    w["region"] = rng.integers(1, 4, len(w))  # codes 1..3 of a nominal region
    w.to_csv(tmp_path / "w.csv", index=False)
    assert main(["spec", "--data", str(tmp_path / "w.csv"), "--qi", "age,region", "--keep", "hours,y",
                 "--categorical", "region", "--analysis", "y ~ age + region", "--family", "logit",
                 "--out", str(tmp_path / "s.json")]) == 0
    rc = main(["tune", "--data", str(tmp_path / "w.csv"), "--spec", str(tmp_path / "s.json"), "--tol", "age=1",
               "--target", "expected_matches<=1000", "--continuous-grid", "1:5", "--alpha-grid", "2",
               "--m-search", "2", "--m", "3", "--replicates", "1", "--n-confirm", "1", "--jobs", "1",
               "--max-table-s-pmse", "1000", "--seed", "2", "--out", str(tmp_path / "t.json"),
               "--trace", str(tmp_path / "trace.json"), "--quiet"])
    assert rc == 0
    (rep,) = json.loads((tmp_path / "trace.json").read_text())["search"]["validation"]["replicates"]
    assert main(["synthesize", "--data", str(tmp_path / "w.csv"), "--spec", str(tmp_path / "t.json"),
                 "--method", "dami", "--m", "3", "--seed", str(rep["seed"]), "--out", str(tmp_path / "syn"),
                 "--quiet"]) == 0
    assert main(["analyse", "--original", str(tmp_path / "w.csv"), "--synthetic", str(tmp_path / "syn"),
                 "--out", str(tmp_path / "a.json"), "--quiet"]) == 0
    user = json.loads((tmp_path / "a.json").read_text())
    # the factor's two contrasts are terms of the analysis on both routes
    assert {"region[T.2]", "region[T.3]"} <= {t["term"] for t in user["terms"]}
    assert rep["mean_ci_overlap"] == pytest.approx(user["mean_ci_overlap"], rel=1e-9, abs=1e-12)
    capsys.readouterr()


def test_tune_passes_proper_false_through_and_synthesize_reproduces_it(tmp_path, capsys):
    """Issue 29's improper route (tune_files.py --variant improper): a spec whose "models" give every QI a
    tree, tuned with ``--param proper=false``; tune records the parameter, prints it on the synthesize
    line, validates with plug-in copies, and ``synthesize --spec`` with the same --param gives those copies
    (without it, proper copies: a different release)."""
    wage_frame(200, seed=6).to_csv(tmp_path / "w.csv", index=False)
    data = str(tmp_path / "w.csv")
    assert main(["spec", "--data", data, "--qi", "age,sex,edu", "--keep", "hours,y", "--analysis", "y ~ age + sex",
                 "--family", "logit", "--out", str(tmp_path / "s.json"), "--quiet"]) == 0
    spec = json.loads((tmp_path / "s.json").read_text())
    spec["models"] = {"age": "tree", "sex": "tree", "edu": "tree"}
    (tmp_path / "s.json").write_text(json.dumps(spec))
    rc = main(["tune", "--data", data, "--spec", str(tmp_path / "s.json"), "--param", "proper=false",
               "--tol", "age=1", "--target", "expected_matches<=1000", "--continuous-grid", "1:5",
               "--alpha-grid", "2", "--m-search", "2", "--m", "3", "--replicates", "2", "--n-confirm", "1",
               "--jobs", "1", "--max-table-s-pmse", "1000", "--seed", "4", "--out", str(tmp_path / "t.json"),
               "--trace", str(tmp_path / "trace.json"), "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0
    assert f"--spec {tmp_path / 't.json'} --method dami --m 3 --seed 4 --param proper=False" in out
    rec = json.loads((tmp_path / "trace.json").read_text())["search"]
    assert rec["base_params"]["proper"] is False
    overlaps = {}
    for extra in ([], ["--param", "proper=false"]):
        rep = rec["validation"]["replicates"][0]
        syn = tmp_path / f"syn{len(extra)}"
        assert main(["synthesize", "--data", data, "--spec", str(tmp_path / "t.json"), "--method", "dami", "--m", "3",
                     "--seed", str(rep["seed"]), "--out", str(syn), "--quiet", *extra]) == 0
        assert main(["analyse", "--original", data, "--synthetic", str(syn), "--formula", "y ~ age + sex",
                     "--family", "logit", "--out", str(tmp_path / f"a{len(extra)}.json"), "--quiet"]) == 0
        overlaps[len(extra)] = json.loads((tmp_path / f"a{len(extra)}.json").read_text())["mean_ci_overlap"]
    meta = json.loads((tmp_path / "syn2" / "metadata.json").read_text())
    assert meta["params"]["proper"] is False and meta["diagnostics"]["sampler"] == "plug-in"
    # the same copies as tune validated (up to the CSV round trip), and not the proper release's
    assert rec["validation"]["replicates"][0]["mean_ci_overlap"] == pytest.approx(overlaps[2], rel=1e-9, abs=1e-12)
    assert overlaps[0] != pytest.approx(overlaps[2], rel=1e-9, abs=1e-12)
    capsys.readouterr()
