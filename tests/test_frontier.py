"""Risk-utility frontier: non-dominated set by hand, MC summaries, targets,
remasking without refitting, and a small end-to-end frontier."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from synthmi.evaluation.frontier import Target, evaluate_release, pareto_front, summarise


def test_pareto_front_by_hand():
    # utility up, risks down. b dominates a (more utility, same risks); c trades risk for utility;
    # d is dominated by c on both risks at equal utility; e has a NaN and never counts.
    pts = pd.DataFrame({
        "mean_ci_overlap": [0.80, 0.85, 0.95, 0.95, 0.99],
        "expected_matches": [10.0, 10.0, 50.0, 60.0, 1.0],
        "true_match_rate": [0.01, 0.01, 0.02, 0.02, np.nan],
    }, index=list("abcde"))
    front = pareto_front(pts, ["expected_matches", "true_match_rate"])
    assert front.to_dict() == {"a": False, "b": True, "c": True, "d": False, "e": False}
    # with one risk only e counts, and e (overlap 0.99 at 1 match) dominates every other point
    assert list(pareto_front(pts, ["expected_matches"])) == [False, False, False, False, True]
    # a lower-is-better utility (S_pMSE) flips the direction
    assert list(pareto_front(pts.assign(s_pmse=[1, 2, 3, 4, 5]), ["expected_matches"], utility="s_pmse")) == [
        True, False, False, False, True]
    with pytest.raises(ValueError, match="risks"):
        pareto_front(pts, ["nope"])


def test_summarise_mean_and_mc_se():
    reps = pd.DataFrame({"method": ["x"] * 3 + ["y"] * 2, "setting": ["s"] * 3 + ["t"] * 2,
                         "replicate": [0, 1, 2, 0, 1], "u": [1.0, 2.0, 3.0, 5.0, 5.0], "params": ["p"] * 5})
    s = summarise(reps).set_index("method")
    assert s.loc["x", "u"] == 2.0 and s.loc["x", "u_se"] == pytest.approx(1.0 / np.sqrt(3))  # sd 1
    assert s.loc["y", "u_se"] == 0.0 and s.loc["y", "replicates"] == 2 and s.loc["x", "params"] == "p"


def test_target_parse_and_met():
    t = Target.parse("expected_matches <= 50")
    assert (t.measure, t.op, t.value) == ("expected_matches", "<=", 50.0) and str(t) == "expected_matches<=50"
    assert t.met({"expected_matches": 49.0}) and not t.met({"expected_matches": 51.0})
    assert not t.met({"expected_matches": 49.0, "expected_matches_se": 1.0}, se_mult=2)
    assert not t.met({"expected_matches": float("nan")})
    assert Target.parse("mean_ci_overlap>=0.9").met({"mean_ci_overlap": 0.95})
    for bad, msg in (("expected_matches<50", "MEASURE<=VALUE"), ("foo<=1", "unknown measure"),
                     ("disco<=abc", "must end in a number")):
        with pytest.raises(ValueError, match=msg):
            Target.parse(bad)


def _small(n=400, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n).astype(float)
    sex = rng.integers(0, 2, n)
    edu = np.clip((age / 30 + rng.normal(0, 0.8, n)).round(), 0, 2).astype(int)
    z = 0.03 * (age - 45) + 0.5 * sex + 0.4 * edu + rng.normal(0, 1, n)
    y = (z > 0.5).astype(int)
    return pd.DataFrame({
        "age": age, "sex": pd.Categorical(np.array(["F", "M"])[sex]),
        "edu": pd.Categorical(np.array(["lo", "mid", "hi"])[edu], categories=["lo", "mid", "hi"], ordered=True),
        "hours": rng.normal(40, 8, n).round(),
        "y": pd.Categorical(np.array(["no", "yes"])[y], categories=["no", "yes"]),
    })


def test_evaluate_release_original_is_perfect_and_independent_is_not():
    from synthmi.tuning import independent_release

    df = _small()
    qi = ["age", "sex", "edu"]
    same = evaluate_release(df, [df, df], ["y ~ age + sex + edu"], qi, tolerance={"age": 1}, target="y",
                            pmse_copies=0)
    assert same["mean_ci_overlap"] == pytest.approx(1.0) and same["unchanged_age"] == 1.0
    assert same["expected_matches"] > 0 and same["disco"] > 0
    ind = evaluate_release(df, independent_release(df, qi, 2, 1), ["y ~ age + sex + edu"], qi,
                           tolerance={"age": 1}, target="y", pmse_copies=1)
    assert ind["mean_ci_overlap"] < same["mean_ci_overlap"] and ind["expected_matches"] < same["expected_matches"]
    assert ind["s_pmse"] > 3  # every association with y broken: far from a copy of the fitted model


def test_remask_equals_a_fresh_fit():
    # Masks act only in the predictive: a fitted DA-MI remasked must give the copies of a
    # synthesizer fitted from scratch with those masks (same seeds).
    from synthmi.tuning import make_synthesizer, remask

    df = _small()
    qi, keep = ["age", "sex", "edu"], ["hours", "y"]
    m1 = {"age": {"K": 3, "sigma_e": 3.0}, "sex": {"alpha": 4.0}}
    m2 = {"age": {"K": 1, "sigma_e": 8.0}, "edu": {"alpha": 2.0}}
    base = make_synthesizer("dami", {"masks": m1, "random_state": 1}).fit(df, quasi_identifiers=qi, keep=keep)
    fresh = make_synthesizer("dami", {"masks": m2, "random_state": 1}).fit(df, quasi_identifiers=qi, keep=keep)
    a = remask(base, m2).sample(2, random_state=5).copies
    b = fresh.sample(2, random_state=5).copies
    for x, y in zip(a, b):
        pd.testing.assert_frame_equal(x, y)
    # shared posterior draws (memoised across settings) give the same copies
    shared = remask(base, m1, share_posterior_draws=True)
    d1 = shared.sample(2, random_state=5).copies
    d2 = remask(base, m2, share_posterior_draws=True).sample(2, random_state=5).copies
    for x, y in zip(d2, b):
        pd.testing.assert_frame_equal(x, y)
    assert len(base._posterior_memo) == 1 and not d1[0].equals(d2[0])
    c = base.sample(2, random_state=5).copies  # the original object keeps its masks
    assert not c[0].equals(a[0])
    with pytest.raises(TypeError, match="remask"):
        remask(make_synthesizer("cart").fit(df, quasi_identifiers=qi, keep=keep), m2)


def test_frontier_end_to_end_small():
    from synthmi.tuning import Setting, frontier

    df = _small(300)
    qi, keep = ["age", "sex", "edu"], ["hours", "y"]
    settings = [
        Setting("dami", "strong", {"masks": {"age": {"K": 3, "sigma_e": 1.0}, "sex": {"alpha": 5.0}, "edu": {"alpha": 5.0}}}),
        Setting("dami", "weak", {"masks": {"age": {"K": 1, "sigma_e": 10.0}, "sex": {"alpha": 1.0}, "edu": {"alpha": 1.0}}}),
        Setting("cart", "leaf5", {}),
        Setting("cart", "leaf5 smooth", {"smoothing": "density"}),
    ]
    fr = frontier(df, qi, keep, settings, ["y ~ age + sex + edu"], m=2, replicates=2, tolerance={"age": 1},
                  target="y", pmse_copies=0)
    p = fr.points.set_index("setting")
    assert list(fr.replicates.groupby("setting").size()) == [2, 2, 2, 2]
    assert np.isfinite(p["mean_ci_overlap_se"]).all()
    # stronger masks (more of the original kept) -> more matches, more unchanged values
    assert p.loc["strong", "expected_matches"] > p.loc["weak", "expected_matches"]
    assert p.loc["strong", "unchanged_sex"] > p.loc["weak", "unchanged_sex"]
    assert p.loc["strong", "fit_seconds"] > 0 and p.loc["weak", "fit_seconds"] == 0  # one fit, remasked
    refs = fr.references.set_index("setting")
    assert refs.loc["original", "expected_matches"] > p["expected_matches"].max()
    assert refs.loc["independent", "expected_matches"] < refs.loc["original", "expected_matches"]
    assert len(fr.front()) >= 1


def test_cart_density_smoothing():
    # synthpop's smoothing = "density": donor values get kernel noise, stay in [min, max + h],
    # stay whole numbers when the data are, and a > 70% spike is left alone.
    from synthmi.models.cart import CartSynthesizer, density_smooth

    rng = np.random.default_rng(0)
    yobs = rng.integers(20, 60, 1000).astype(float)
    ys = density_smooth(yobs, yobs, np.random.default_rng(1))
    h = 0.9 * min(yobs.std(ddof=1), (np.percentile(yobs, 75) - np.percentile(yobs, 25)) / 1.34) * 1000 ** -0.2
    # clipped to [min, max + h] and then rounded (as synthpop), so at most max + h + 0.5
    assert np.all(np.mod(ys, 1) == 0) and ys.min() >= 20 and ys.max() <= 59 + h + 0.5
    assert 0.5 < np.mean(ys != yobs) and np.std(ys - yobs) == pytest.approx(h, rel=0.15)  # rounding adds ~1/12
    spike = np.where(rng.random(1000) < 0.8, 0.0, yobs)
    out = density_smooth(spike, spike, np.random.default_rng(2))
    assert np.all(out[spike == 0] == 0) and np.any(out[spike != 0] != spike[spike != 0])
    # In the synthesizer: donors are observed values, so without smoothing the copy holds only
    # ages 20/40/60; with smoothing (h ~ 3 years here) most are new values.
    df = _small().assign(age=lambda d: np.array([20.0, 40.0, 60.0])[np.arange(len(d)) % 3])
    fit = dict(quasi_identifiers=["age", "sex"], keep=["y"])
    plain = CartSynthesizer().fit(df, **fit).sample(1, random_state=3).copies[0]
    smooth = CartSynthesizer(smoothing="density").fit(df, **fit).sample(1, random_state=3).copies[0]
    assert set(plain["age"]) <= {20.0, 40.0, 60.0} and (~smooth["age"].isin([20.0, 40.0, 60.0])).mean() > 0.5
    with pytest.raises(ValueError, match="smoothing"):
        CartSynthesizer(smoothing="spline").fit(df, quasi_identifiers=["age"], keep=["y"])


def test_cli_tune_meets_target_and_feeds_synthesize(tmp_path):
    import json

    from synthmi.cli import main

    df = _small(300)
    df.to_csv(tmp_path / "d.csv", index=False)
    common = ["tune", "--data", str(tmp_path / "d.csv"), "--qi", "age,sex,edu", "--keep", "hours,y",
              "--analysis", "y ~ age + sex + edu", "--tol", "age=1", "--alpha-grid", "0,2,5",
              "--continuous-grid", "1:10,3:1", "--m-search", "2", "--m", "2", "--replicates", "2", "--quiet"]
    # Unconstrained-ish target first: the strongest masks, to learn the range of expected matches.
    out = tmp_path / "m.json"
    assert main(common + ["--target", "expected_matches<=1000", "--out", str(out)]) == 0
    loose = json.loads(out.read_text())
    # A tighter target: at most half the loose choice's expected matches.
    cap = loose["confirmed"]["expected_matches"] / 2
    out2 = tmp_path / "m2.json"
    assert main(common + ["--target", f"expected_matches<={cap}", "--out", str(out2)]) == 0
    tight = json.loads(out2.read_text())
    assert tight["confirmed"]["expected_matches"] <= cap
    assert tight["confirmed"]["mean_ci_overlap"] <= loose["confirmed"]["mean_ci_overlap"] + 1e-9
    assert tight["trace"] and {"grid", "confirm"} <= {r["stage"] for r in tight["trace"]}
    # The chosen masks as --mask flags run through synthesize.
    flags = [x for f in tight["mask_flags"] for x in ("--mask", f)]
    assert main(["synthesize", "--data", str(tmp_path / "d.csv"), "--qi", "age,sex,edu", "--keep", "hours,y",
                 "--method", "dami", "--m", "2", "--seed", "1", *flags, "--out", str(tmp_path / "syn"), "--quiet"]) == 0
    # Impossible target -> exit status 2 and the trace is still written; existing --out is not overwritten.
    out3 = tmp_path / "m3.json"
    small = common + ["--alpha-grid", "0", "--continuous-grid", "1:10"]  # later flags win: a 1-point grid
    assert main(small + ["--target", "expected_matches<=0", "--out", str(out3)]) == 2
    assert json.loads(out3.read_text())["masks"] is None
    assert main(small + ["--target", "expected_matches<=0", "--out", str(out3)]) == 1
    assert main(common + ["--target", "disco<=0.1", "--out", str(tmp_path / "x.json")]) == 1  # needs --attribute-target


def test_at_reference_risk_by_hand():
    # CART (min leaf 5) has 10 matches at tmr 0.001: DA-MI's best setting within both caps is "b"
    # (0.85); "c" is more useful but over the match cap; with the match cap alone "d" (tmr too high) wins.
    import sys
    from pathlib import Path

    # the figure-regeneration script's library lives with the benchmarks, outside the package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from exhibits import at_reference_risk

    pts = pd.DataFrame({
        "method": ["cart", "dami", "dami", "dami", "dami", "reference"],
        "setting": ["min leaf 5", "a", "b", "c", "d", "original"],
        "mean_ci_overlap": [0.80, 0.70, 0.85, 0.95, 0.90, 1.0],
        "mean_ci_overlap_se": [0.01, 0.01, 0.02, 0.01, 0.01, np.nan],
        "expected_matches": [10.0, 2.0, 9.0, 30.0, 10.0, 100.0],
        "true_match_rate": [0.001, 0.0, 0.001, 0.002, 0.005, 0.01],
    })
    both = at_reference_risk(pts).set_index("method")
    assert both.loc["dami", "setting"] == "b" and both.loc["dami", "diff_vs_reference"] == pytest.approx(0.05)
    assert both.loc["dami", "diff_se"] == pytest.approx(np.hypot(0.02, 0.01))
    assert at_reference_risk(pts, risks=("expected_matches",)).set_index("method").loc["dami", "setting"] == "d"
    assert "reference" not in set(both.index)
