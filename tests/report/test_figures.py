"""`make figures` on the reduced configuration: same seed -> identical CSVs; index and manifest complete."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from synthmi.report import figures

# the figure-regeneration script's library lives with the benchmarks, outside the package
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import exhibits  # noqa: E402
from exhibits import REDUCED, make_figures  # noqa: E402


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    a = tmp_path_factory.mktemp("fig_a")
    b = tmp_path_factory.mktemp("fig_b")
    ma = make_figures(a, REDUCED, only=["coefficients", "tuning"], progress=False)
    mb = make_figures(b, REDUCED, only=["coefficients", "tuning"], progress=False)
    return a, b, ma, mb


@pytest.mark.slow
def test_same_seed_gives_identical_csvs(two_runs):
    a, b, ma, mb = two_runs
    csvs = sorted(p.name for p in a.glob("*.csv"))
    assert {"coefficients.csv", "coefficients_table.csv", "tuning_summary.csv", "tuning_replications.csv"} <= set(csvs)
    for name in csvs:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert {k: v["sha256"] for k, v in ma["files"].items() if k.endswith(".csv")} == \
           {k: v["sha256"] for k, v in mb["files"].items() if k.endswith(".csv")}


@pytest.mark.slow
def test_another_seed_changes_the_numbers(two_runs, tmp_path):
    from dataclasses import replace

    a, _, _, _ = two_runs
    make_figures(tmp_path, replace(REDUCED, seed=REDUCED.seed + 1), only=["coefficients"], progress=False)
    assert (tmp_path / "coefficients.csv").read_bytes() != (a / "coefficients.csv").read_bytes()


@pytest.mark.slow
def test_index_manifest_and_contents(two_runs):
    a, _, ma, _ = two_runs
    index = (a / "README.md").read_text()
    for png in ("coefficients_M3.png", "tuning_rmse.png", "tuning_risk.png"):
        assert f"]({png})" in index and (a / png).read_bytes()[:4] == b"\x89PNG"
    man = json.loads((a / "manifest.json").read_text())
    assert man["config"]["seed"] == REDUCED.seed and man["versions"]["numpy"]
    assert all(len(h) == 64 for h in man["data_sha256"].values())
    assert man["exhibits"]["tuning"]["replications"] == REDUCED.replications
    assert man["total_bytes"] < 5e6
    coef = pd.read_csv(a / "coefficients.csv")
    assert set(coef["method"]) == {"unperturbed", "CART", "norm+logit", "DA-MI"}
    assert set(coef.loc[coef["M"] > 0, "M"]) == set(REDUCED.coef_M)
    # each synthetic estimate lies inside its own CI; the unperturbed row is the original fit
    assert np.all((coef["ci_lower"] <= coef["estimate"]) & (coef["estimate"] <= coef["ci_upper"]))
    tun = pd.read_csv(a / "tuning_summary.csv")
    dami = tun[tun["method"] == "DA-MI"]
    assert len(dami) == len(REDUCED.K) * len(REDUCED.sigma_e) * len(REDUCED.tuning_M)
    assert (tun["rmse"] > 0).all() and (tun["expected_matches"] >= 0).all()


@pytest.mark.slow
def test_tuning_moves_risk_the_right_way(two_runs):
    """Less masking noise (small sigma_e) transfers more of age: the risk must be higher."""
    a, _, _, _ = two_runs
    tun = pd.read_csv(a / "tuning_summary.csv")
    d = tun[tun["method"] == "DA-MI"].set_index(["M", "K", "sigma_e"])["expected_matches"]
    lo, hi = min(REDUCED.sigma_e), max(REDUCED.sigma_e)
    for M in REDUCED.tuning_M:
        for K in REDUCED.K:
            assert d[(M, K, lo)] > d[(M, K, hi)]


def test_missing_benchmark_output_is_reported_not_invented(tmp_path, monkeypatch):
    monkeypatch.setattr(exhibits, "RESULTS", tmp_path / "nothing")
    monkeypatch.setitem(exhibits.RESULT_READERS, "probe", {"files": ["probe.csv"], "read": lambda src, out: {}})
    m = make_figures(tmp_path / "o", REDUCED, only=["probe"], progress=False)
    assert m["exhibits"]["probe"]["status"] == "waiting"
    assert "Not available yet" in (tmp_path / "o" / "README.md").read_text()


def test_tuning_curves_plot_checks_columns():
    t = pd.DataFrame({"M": [3, 3], "K": [1, 1], "sigma_e": [1.0, 2.0], "rmse": [0.1, 0.2]})
    fig = figures.tuning_curves(t, "rmse")
    assert len(fig.axes) == 1
    with pytest.raises(ValueError, match="missing columns"):
        figures.coefficient_plot(pd.DataFrame({"method": ["a"]}))


@pytest.mark.slow
def test_benchmark_readers_draw_from_result_files(tmp_path, monkeypatch):
    """DP Bayes and DPSyn exhibits are read from benchmark outputs, never recomputed or typed in."""
    res = tmp_path / "results"
    res.mkdir()
    rows = [dict(mechanism=m, private=m != "em_local", n=n, k=k, epsilon=e, expected_hellinger=h)
            for m, h0 in [("em_global", 0.8), ("laplace_count", 0.1), ("em_local", 0.05)]
            for n in (10, 100) for k in (n // 2, n // 10) for e, h in [(0.5, h0), (1.0, h0 / 2)]]
    pd.DataFrame(rows).to_csv(res / "dp_bayes.csv", index=False)
    pd.DataFrame([dict(epsilon=e, seed=s, method=m, tvd_2way=0.1 / e + s * 1e-3, tvd_3way=0.2 / e)
                  for e in (0.5, 1.0) for s in (0, 1) for m in ("DPSyn", "independent")]).to_csv(res / "dpsyn.csv", index=False)
    (res / "dpsyn.json").write_text(json.dumps({"references_eps1": {"MST": {"two_way": 0.055, "three_way": 0.118}}}))
    monkeypatch.setattr(exhibits, "RESULTS", res)
    out = tmp_path / "o"
    m = make_figures(out, REDUCED, only=["dp_bayes", "dpsyn"], progress=False)
    assert m["exhibits"]["dp_bayes"]["status"] == "done" and m["exhibits"]["dpsyn"]["status"] == "done"
    dp = pd.read_csv(out / "dp_bayes.csv")
    assert len(dp) == 3 * 2 * 2  # only k = n/2 kept
    assert "em_local (NOT private)" in set(dp["mechanism"])
    tvd = pd.read_csv(out / "dpsyn_tvd.csv")
    got = tvd[(tvd["method"] == "DPSyn") & (tvd["epsilon"] == 1.0)]["tvd_2way_mean"].item()
    assert got == pytest.approx(0.1 + 0.5e-3)
    assert (out / "dp_bayes.png").exists() and (out / "dpsyn_tvd.png").exists()
    peers = pd.read_csv(out / "dpsyn_published_peers.csv")
    assert peers.set_index("marginals")["tvd"].to_dict() == {"two_way": 0.055, "three_way": 0.118}
