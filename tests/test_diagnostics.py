"""Convergence figures (ArviZ) and the fail-closed release check (synthmi.diagnostics)."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from synthmi.diagnostics import (
    ESS_MIN,
    LENIENT,
    RHAT_MAX,
    DiagnosticsFailed,
    check_diagnostics,
    convergence_thresholds,
    diagnostics_table,
    enforce,
    ess_bulk,
    ess_tail,
    rhat,
    summarize_draws,
    threshold_record,
)
from synthmi.errors import InputError


def _ar1(n, rho, rng, chains=1):
    e = rng.standard_normal((chains, n))
    x = np.empty((chains, n))
    x[:, 0] = e[:, 0]
    for t in range(1, n):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * e[:, t]
    return x


# ---------------------------------------------------------------- the figures
@pytest.mark.slow
def test_figures_are_arviz_rank_rhat_and_bulk_ess():
    import arviz as az

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 400, 2))
    x[..., 1] = 0.1 * np.cumsum(x[..., 1], axis=1)
    for k in range(2):
        assert rhat(x)[k] == pytest.approx(float(az.rhat(x[:, :, k], method="rank")), abs=1e-12)
        assert ess_bulk(x)[k] == pytest.approx(float(az.ess(x[:, :, k], method="bulk")), rel=1e-12)
    # the NumPy implementation (no ArviZ import in the samplers) on the shapes the samplers give:
    # repeated values (independence-MH rejections: tied ranks), odd lengths, three and four chains
    held = np.repeat(rng.normal(size=(3, 117)), 3, axis=1)[:, :351]
    slow = 0.05 * np.cumsum(rng.normal(size=(4, 251)), axis=1)
    for y in (held, slow, np.round(x[..., 0], 1)):
        assert rhat(y)[0] == pytest.approx(float(az.rhat(y, method="rank")), abs=1e-12)
        assert ess_bulk(y)[0] == pytest.approx(float(az.ess(y, method="bulk")), rel=1e-12)
    # one chain: judged as two halves (ArviZ needs two chains)
    one = x[:1, :, 0]
    assert rhat(one)[0] == pytest.approx(float(az.rhat(one[0].reshape(2, 200), method="rank")), abs=1e-12)


@pytest.mark.slow
def test_tail_ess_is_arviz_and_many_parameters_at_once_are_each_on_its_own(monkeypatch):
    """ess_tail is arviz.ess(method="tail") (the quantiles by R's type 7, as ArviZ's mquantiles) on
    the shapes the samplers give: ties (rounded draws, held draws), a rare indicator, a constant, a
    chain that never moved, odd lengths, 1-4 chains; and all three figures of many parameters at once
    (issue 28: the copula checks ~370 quantities a segment) equal those of each parameter alone and
    those of small batches (the FFT batching), bit for bit."""
    import arviz as az

    from synthmi import diagnostics as dg

    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 401, 7))
    x[..., 1] = 0.1 * np.cumsum(x[..., 1], axis=1)
    x[..., 2] = 3.0
    x[0, :, 3] = 1.0
    x[..., 4] = np.round(x[..., 4])
    x[..., 5] = np.repeat(rng.normal(size=(2, 101)), 4, axis=1)[:, :401]
    x[..., 6] = (rng.random(size=(2, 401)) < 0.03).astype(float)
    shapes = [x, 0.05 * np.cumsum(rng.normal(size=(4, 251, 2)), axis=1), rng.normal(size=(3, 7, 2)),
              rng.normal(size=(1, 300, 2))]
    for y in shapes:
        for k in range(y.shape[2]):
            want = float(az.ess(y[:, :, k], method="tail"))
            assert ess_tail(y)[k] == pytest.approx(want, rel=1e-12), (y.shape, k)
    for y in shapes:
        whole = [f(y) for f in (rhat, ess_bulk, ess_tail)]
        alone = [np.concatenate([f(y[:, :, k : k + 1]) for k in range(y.shape[2])]) for f in (rhat, ess_bulk, ess_tail)]
        monkeypatch.setattr(dg, "_BATCH_VALUES", 1)  # one parameter per FFT
        small = [f(y) for f in (rhat, ess_bulk, ess_tail)]
        monkeypatch.undo()
        for a, b, c in zip(whole, alone, small):
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(a, c)
    # the three at once (the copula's check) are the three, bit for bit; the ranks are SciPy's
    from scipy import stats

    for y in shapes[:3]:
        for a, b in zip(dg.rhat_ess(y), (rhat(y), ess_bulk(y), ess_tail(y))):
            np.testing.assert_array_equal(a, b)
        flat = np.moveaxis(y, 2, 0).reshape(y.shape[2], -1)
        np.testing.assert_array_equal(dg._average_ranks(flat), stats.rankdata(flat, method="average", axis=1))
    # a NaN draw: that parameter has no figure, the others keep theirs
    z = x[:, :, :2].copy()
    z[1, 5, 0] = np.nan
    for f in (rhat, ess_bulk, ess_tail):
        v = f(z)
        assert np.isnan(v[0]) and v[1] == f(x[:, :, 1:2])[0]


@pytest.mark.parametrize(
    "r_hat, ess, kw, factor",
    [
        # glm.independence_mh's extensions (the defaults: margin 1.2, 1.25x-2x)
        (1.013, 500.0, {}, 1.2 * 1.3),  # R-hat excess 0.013 / 0.01, ESS enough: 1.56x, not 2x
        (1.005, 300.0, {}, 1.2 * 400 / 300),  # ESS shortfall only: 1.6x
        (1.005, 390.0, {}, 1.25),  # a small shortfall still grows by at least 1/4
        (1.013, 200.0, {}, 2.0),  # both: the larger, capped at 2 (2.4 asked by the ESS)
        (1.05, 1000.0, {}, 2.0),  # a large R-hat excess: capped at 2
        (float("nan"), 500.0, {}, 2.0),  # no finite figures: the most
        (1.005, float("nan"), {}, 2.0),
        (1.005, 0.0, {}, 2.0),
        # the copula's n_iter="auto" projection: uncapped, 8x when the figures are not finite
        (1.019, 1100.0, {"most": np.inf, "unknown": 8.0}, 1.2 * 1.9),  # agency's R-hat 1.019: 2.28x
        (1.0146, 250.0, {"most": np.inf, "unknown": 8.0}, 1.2 * 400 / 250),  # NHANES' first check: ESS binds
        (1.2, 20.0, {"most": np.inf, "unknown": 8.0}, 24.0),  # far off: 24x (the budget is held to it)
        (float("nan"), 20.0, {"most": np.inf, "unknown": 8.0}, 8.0),
        # other thresholds (the lenient set): the same rule on them
        (1.06, 90.0, {"rhat_max": 1.05, "ess_min": 100.0}, 1.2 * 0.06 / 0.05),
    ],
)
def test_extension_factor_by_hand(r_hat, ess, kw, factor):
    """The toolkit's one growth rule (glm's extensions, the copula's segments): the larger of
    margin x ESS shortfall and margin x R-hat excess ratio, between least and most; a run that passes
    both thresholds is not extended by this rule (the caller stops) but would get the least growth."""
    from synthmi.diagnostics import extension_factor

    assert extension_factor(r_hat, ess, kw.pop("ess_min", 400.0), kw.pop("rhat_max", 1.01), **kw) == pytest.approx(factor)


def test_extension_factor_projects_the_r_hat_excess_of_mixed_chains():
    """Behaviour behind the rule's R-hat term: for chains that have mixed (iid, ESS = draws) the split
    R-hat excess shrinks as 1 / draws, its mean and its 99th percentile over many quantities alike
    (the worst of many noisy ratios), so a run failing at n draws with excess e reaches the threshold
    at about n e / (R* - 1) draws. 1,000 quantities at 2 x 250 and 2 x 2,000 draws: (R-hat - 1) x draws
    is the same within 20 % (over seeds 0-5 the ratio was 0.97-1.10, sd ~0.05: 4 sd of room)."""
    rng = np.random.default_rng(11)
    scaled = []
    for n in (250, 2000):
        e = (rhat(rng.normal(size=(2, n, 1000))) - 1.0) * (2 * n)
        scaled.append((np.mean(e), np.quantile(e, 0.99)))
    (m0, q0), (m1, q1) = scaled
    assert m1 / m0 == pytest.approx(1.0, abs=0.2) and q1 / q0 == pytest.approx(1.0, abs=0.2), scaled


def test_figures_on_chains_of_known_behaviour():
    rng = np.random.default_rng(1)
    n, rho = 20000, 0.8
    iid = rng.standard_normal((1, n))
    ar = _ar1(n, rho, rng)
    # iid: ESS ~ n; AR(1): n (1 - rho) / (1 + rho) = 2222; the estimator's sd is ~5-10 % at these lengths
    assert 0.85 * n < ess_bulk(iid)[0] < 1.15 * n
    assert 0.8 * 2222 < ess_bulk(ar)[0] < 1.2 * 2222
    # R-hat of a stationary chain: 1 up to O(1/sqrt(n)) noise
    assert abs(rhat(iid)[0] - 1.0) < 0.01
    drift = np.linspace(0, 3, n)[None] + iid
    assert rhat(drift)[0] > 1.2
    # two chains stuck in different places
    stuck = rng.normal(size=(2, 500))
    stuck[1] += 3.0
    assert rhat(stuck)[0] > 1.5


def test_summarize_draws_skips_fixed_parameters_and_flags_unmoved_chains():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 300, 3))
    x[..., 2] = 0.0  # fixed by construction (a reference category)
    r, e = summarize_draws(x)
    assert r == pytest.approx(float(rhat(x[..., :2]).max()))
    assert e == pytest.approx(float(ess_bulk(x[..., :2]).min()))
    x[0, :, 1] = 0.3  # chain 1 never moved, chain 2 elsewhere
    x[1, :, 1] = -0.3
    r, _ = summarize_draws(x)
    assert not r <= 1.05  # NaN or huge (ArviZ's rank normalisation of the ties): it fails either way
    assert len(check_diagnostics({"table": {"c": {"r_hat": r, "ess_bulk": 500.0}}}, raise_error=False)) == 1


# ---------------------------------------------------------------- the check
def test_check_names_every_failing_column_with_its_figures():
    table = {
        "columns": {
            "age": {"r_hat": 4.5, "ess_bulk": 3.2, "acceptance_rate": 0.001},
            "sex": {"family": "normal", "method": "closed-form conjugate draws"},  # exact: nothing to check
            "race": {"r_hat": 1.002, "ess_bulk": 900.0},
            "education": {"r_hat": 1.01, "ess_bulk": 40.0},
        }
    }
    with pytest.raises(DiagnosticsFailed) as info:
        check_diagnostics(table, owner="RubinSynthesizer")
    msg = str(info.value)
    assert "'age' (R-hat 4.5 > 1.01, bulk ESS 3.2 < 400, acceptance rate 0.001)" in msg
    assert "'education' (bulk ESS 40 < 400)" in msg
    assert "'race'" not in msg and "'sex'" not in msg
    assert "RubinSynthesizer" in msg and "accept_diagnostics=True" in msg and "No copies" in msg
    assert list(info.value.failures.index) == ["age", "education"]
    assert isinstance(info.value, RuntimeError)
    # command-line phrasing of the same failure
    cli = str(info.value.for_cli())
    assert "--accept-diagnostics" in cli and "--rhat-max 1.01" in cli and "accept_diagnostics=True" not in cli


def test_check_thresholds_are_configurable_and_validated():
    table = pd.DataFrame({"r_hat": [1.08], "ess_bulk": [150.0]}, index=pd.Index(["age"], name="block"))
    with pytest.raises(DiagnosticsFailed, match=r"R-hat 1.08 > 1.01, bulk ESS 150 < 400"):
        check_diagnostics(table)
    with pytest.raises(DiagnosticsFailed, match=r"R-hat 1.08 > 1.05"):
        check_diagnostics(table, *LENIENT)
    assert check_diagnostics(table, rhat_max=1.1, ess_min=100).empty
    with pytest.raises(DiagnosticsFailed, match=r"bulk ESS 150 < 200"):
        check_diagnostics(table, rhat_max=1.1, ess_min=200)
    with pytest.raises(ValueError, match="'rhat_max' parameter .* must be >= 1.0"):
        check_diagnostics(table, rhat_max=0.9)
    with pytest.raises(ValueError, match="'ess_min' parameter"):
        check_diagnostics(table, ess_min=-1)
    # a NaN R-hat (chains that never moved) fails rather than passing silently
    with pytest.raises(DiagnosticsFailed, match="never moved"):
        check_diagnostics({"table": {"age": {"r_hat": float("nan"), "ess_bulk": 2.0}}})


def test_tables_without_figures_pass():
    assert diagnostics_table(None).empty
    assert diagnostics_table({"epsilon_spent": 1.0, "theta": {}}).empty  # DPSyn: no sampler
    assert check_diagnostics(None).empty


def test_idata_table_is_per_column():
    import arviz as az
    import xarray as xr

    rng = np.random.default_rng(3)
    good = rng.normal(size=(2, 300, 2))
    bad = rng.normal(size=(2, 300))
    bad[1] += 4.0
    idata = az.InferenceData(
        posterior=xr.Dataset({"age_beta": (("chain", "draw", "age_coef"), good), "age_sigma": (("chain", "draw"), good[..., 0]),
                              "sex_beta": (("chain", "draw"), bad)}),
        sample_stats=xr.Dataset({"age_diverging": (("chain", "draw"), np.zeros((2, 300), bool)),
                                 "sex_diverging": (("chain", "draw"), np.ones((2, 300), bool))}),
    )
    tab = diagnostics_table(idata)
    assert list(tab.index) == ["age", "sex"]
    assert tab.loc["age", "r_hat"] < 1.02 and tab.loc["sex", "r_hat"] > 1.5
    assert tab.loc["sex", "divergences"] == 600
    with pytest.raises(DiagnosticsFailed, match="'sex'"):
        check_diagnostics(idata)


def test_enforce_records_an_accepted_failure():
    table = {"table": {"age": {"r_hat": 2.38, "ess_bulk": 3.0}}}
    with pytest.raises(DiagnosticsFailed):
        enforce(table, owner="X")
    with pytest.warns(RuntimeWarning, match="flagged as unconverged"):
        rec = enforce(table, owner="X", accept=True)
    assert rec["passed"] is False and rec["accepted"] is True
    assert rec["failures"]["age"]["r_hat"] == 2.38
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert enforce({"table": {"age": {"r_hat": 1.0, "ess_bulk": 500.0}}}, owner="X")["passed"] is True
    with pytest.raises(ValueError, match="'accept_diagnostics' parameter of X"):
        enforce(table, owner="X", accept="yes")


# ---------------------------------------------------------------- synthesizers fail closed
@pytest.fixture(scope="module")
def many_levels():
    """A 40-level quasi-identifier on 200 rows: the multinomial posterior is far from normal
    and independence MH barely moves (acceptance ~0.03), as with the 250-level QI of the review."""
    rng = np.random.default_rng(0)
    n = 200
    return pd.DataFrame({"code": pd.Categorical(rng.integers(0, 40, n).astype(str)),
                         "x": rng.normal(size=n), "y": rng.integers(0, 2, n)})


@pytest.mark.slow
def test_rubin_refuses_copies_when_sampler_fails(many_levels):
    from synthmi.models import RubinSynthesizer

    # sampler="imh": independence MH stalls on this many-level model (the default fast sampler
    # switches to HMC there and converges, tests/data/test_agency.py)
    s = RubinSynthesizer(progressbar=False, draws=100, sampler="imh").fit(many_levels, ["code"])
    with pytest.raises(DiagnosticsFailed, match=r"'code' \(R-hat [0-9.]+ > 1.01, bulk ESS [0-9.]+ < 400") as info:
        s.sample(2, random_state=1)
    # the message names the column, never a category label
    assert not any(f"'{lvl}'" in str(info.value) for lvl in many_levels["code"].cat.categories if lvl != "code")
    s.set_params(accept_diagnostics=True) if hasattr(s, "set_params") else setattr(s, "accept_diagnostics", True)
    with pytest.warns(RuntimeWarning, match="flagged as unconverged"):
        out = s.sample(2, random_state=1)
    assert out.unconverged and out.diagnostics_check["accepted"] is True
    assert out.metadata()["diagnostics_check"]["failures"]["code"]["r_hat"] > 1.05


def test_risk_targeted_short_chain_refused():
    from synthmi.models.risk_targeted import RiskTargetedSynthesizer

    rng = np.random.default_rng(4)
    n = 150
    z = rng.normal(size=(n, 2))
    df = pd.DataFrame({"a": z[:, 0], "b": z[:, 0] + 0.5 * z[:, 1]})
    s = RiskTargetedSynthesizer(n_iter=40, burn=10, thin=1, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        s.fit(df, quasi_identifiers=["a"], keep=["b"])
    # 30 correlation draws of one chain cannot have a bulk ESS of 400
    with pytest.raises(DiagnosticsFailed, match=r"'a' \(.*bulk ESS [0-9.]+ < 400"):
        s.sample(2, random_state=0)


def test_metadata_summary_shows_the_checked_figures():
    # The r_hat / ESS written to metadata.json and the report are those the release check applied:
    # one chain split in two (az.summary gave NaN there, so a drifting single chain showed no R-hat),
    # a constant parameter left out, values not rounded.
    import arviz as az

    from synthmi.diagnostics import diagnostics_table
    from synthmi.synthetic import diagnostics_summary

    rng = np.random.default_rng(0)
    drift = np.cumsum(rng.normal(size=(1, 400)), axis=1) * 0.1 + rng.normal(size=(1, 400))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = az.from_dict(posterior={"a_beta": drift, "b_beta": rng.normal(size=(1, 400))})
        summ = diagnostics_summary(idata)
        tab = diagnostics_table(idata)
    assert summ["max_r_hat"] == pytest.approx(tab["r_hat"].max(), rel=1e-12) and summ["max_r_hat"] > 1.1
    assert summ["min_ess_bulk"] == pytest.approx(tab["ess_bulk"].min(), rel=1e-12)
    # the split-chain figure by hand: the drifting chain's halves have different means
    h = drift[0]
    assert summ["max_r_hat"] == pytest.approx(float(rhat(np.stack([h[:200], h[200:]]))[0]), rel=1e-12)
    from synthmi.diagnostics import ess_tail

    assert summ["min_ess_tail"] == pytest.approx(min(ess_tail(drift)[0], ess_tail(idata.posterior["b_beta"].values)[0]))


# ---------------------------------------------------------------- Vehtari et al. (2021) by default (issue 28)
def test_default_thresholds_are_vehtari_2021_and_tail_ess_is_checked():
    """R-hat <= 1.01 and bulk AND tail ESS >= 400 by default (Vehtari et al. 2021, Section 5):
    a row with a good bulk but a poor tail ESS fails on its tail; the lenient set is 1.05 / 100."""
    assert (RHAT_MAX, ESS_MIN) == (1.01, 400.0) and LENIENT == (1.05, 100.0)
    ok = {"r_hat": 1.005, "ess_bulk": 900.0, "ess_tail": 450.0}
    assert check_diagnostics({"table": {"a": ok}}).empty
    with pytest.raises(DiagnosticsFailed, match=r"'a' \(tail ESS 350 < 400\)"):
        check_diagnostics({"table": {"a": {**ok, "ess_tail": 350.0}}})
    with pytest.raises(DiagnosticsFailed, match=r"R-hat 1.02 > 1.01"):
        check_diagnostics({"table": {"a": {**ok, "r_hat": 1.02}}})
    # both pass the former, looser check
    assert check_diagnostics({"table": {"a": {**ok, "ess_tail": 350.0, "r_hat": 1.02}}}, *LENIENT).empty


def test_idata_table_reports_tail_ess():
    """An InferenceData's table carries the min tail ESS of its variables (ArviZ's, by hand here)."""
    import arviz as az

    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 300, 3))
    tab = diagnostics_table(az.from_dict(posterior={"b": x}))
    assert tab.loc["b", "ess_tail"] == pytest.approx(float(np.min(ess_tail(x))))


def test_release_records_its_thresholds_and_flags_a_looser_choice():
    table = {"table": {"a": {"r_hat": 1.02, "ess_bulk": 150.0, "ess_tail": 150.0}}}
    with pytest.raises(DiagnosticsFailed):
        enforce(table, owner="X")
    rec = enforce(table, owner="X", rhat_max=1.05, ess_min=100.0)
    assert rec == {"passed": True, "rhat_max": 1.05, "ess_min": 100.0, "ess_checked": "bulk and tail",
                   "convergence": "lenient", "looser_than_default": True}
    assert threshold_record(RHAT_MAX, ESS_MIN)["convergence"] == "vehtari2021"
    assert not threshold_record(RHAT_MAX, ESS_MIN)["looser_than_default"]
    stricter = threshold_record(1.005, 1000.0)
    assert stricter["convergence"] == "custom" and not stricter["looser_than_default"]
    assert threshold_record(1.01, 399.0)["looser_than_default"]
    # the command line's resolution: a named set, either figure overridden
    assert convergence_thresholds() == (1.01, 400.0)
    assert convergence_thresholds("lenient") == (1.05, 100.0)
    assert convergence_thresholds("lenient", ess_min=200) == (1.05, 200.0)
    with pytest.raises(InputError, match="'--convergence' option must be one of"):
        convergence_thresholds("loose")
