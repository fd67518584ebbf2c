"""No impossible values: exact truncated-normal draws, grid detection, bounds and grid for every method."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import ndtr

from synthmi.data import load_adult, load_nhanes
from synthmi.models import CartSynthesizer, DAMISynthesizer, RiskTargetedSynthesizer, RubinSynthesizer
from synthmi.models.truncation import Support, detect_grid, log_truncation_mass, truncated_normal

N_KS = 20_000


def _ks_p(draws, mu, sd, lo, hi):
    a, b = (lo - mu) / sd, (hi - mu) / sd
    return stats.kstest(draws, stats.truncnorm(a, b, loc=mu, scale=sd).cdf).pvalue


@pytest.mark.parametrize(
    "mu, sd, lo, hi",
    [
        (0.0, 1.0, -1.0, 2.0),  # central
        (0.0, 1.0, 3.0, np.inf),  # right tail (mirrored to the lower tail)
        (0.0, 1.0, -np.inf, -8.0),  # far left tail
        (5.0, 2.0, 5.5, 5.6),  # a narrow interval: nearly uniform
        (0.0, 1.0, 40.0, 41.0),  # beyond ndtr's range: the log-space path
        (40.0, 13.0, 16.5, 90.5),  # an age-like predictive on its latent bounds
    ],
)
def test_truncated_normal_matches_exact_density(mu, sd, lo, hi):
    """KS test against scipy's exact truncnorm CDF; every draw inside the bounds.

    Threshold p > 1e-3 (false alarm 0.1% per case). Power: with the same n the KS statistic
    rejects a sampler whose mean is off by 0.05 sd or which clips instead of truncating
    (test_ks_has_power_against_clipping_and_shift).
    """
    rng = np.random.default_rng(11)
    x = truncated_normal(np.full(N_KS, mu), sd, lo, hi, rng)
    assert np.all((x >= lo) & (x <= hi))
    assert _ks_p(x, mu, sd, lo, hi) > 1e-3


def test_ks_has_power_against_clipping_and_shift():
    rng = np.random.default_rng(12)
    mu, sd, lo, hi = 0.0, 1.0, -1.0, 2.0
    clipped = np.clip(rng.normal(mu, sd, N_KS), lo, hi)
    assert _ks_p(clipped, mu, sd, lo, hi) < 1e-6
    shifted = truncated_normal(np.full(N_KS, mu + 0.05), sd, lo, hi, rng)
    assert _ks_p(shifted, mu, sd, lo, hi) < 1e-3


def test_truncation_mass_hand_values():
    # Phi(2) - Phi(-1) = 0.9772499 - 0.1586553 = 0.8185946
    assert np.exp(log_truncation_mass(0.0, 1.0, -1.0, 2.0)) == pytest.approx(0.8185946, abs=1e-7)
    # far right tail: log(Phi(-40) - Phi(-41)) ~ log phi(40)/40 (Mills ratio), finite
    v = float(log_truncation_mass(0.0, 1.0, 40.0, 41.0))
    assert v == pytest.approx(stats.norm.logsf(40.0), rel=1e-6)


def test_grid_draws_follow_the_coarsened_normal():
    """Snapped draws: P(X = k) = [Phi(k + 1/2) - Phi(k - 1/2)] / mass over the grid points in bounds (chi-square)."""
    s = Support(17.0, 90.0, "observed", (0.0, 1.0))
    mu, sd = 20.0, 6.0
    lo, hi = s.latent_bounds()
    assert (lo, hi) == (16.5, 90.5)
    rng = np.random.default_rng(13)
    x = s.snap(truncated_normal(np.full(50_000, mu), sd, lo, hi, rng))
    assert np.all(x == np.rint(x)) and x.min() >= 17 and x.max() <= 90
    k = np.arange(17, 91)
    p = (ndtr((k + 0.5 - mu) / sd) - ndtr((k - 0.5 - mu) / sd)) / (ndtr((90.5 - mu) / sd) - ndtr((16.5 - mu) / sd))
    counts = np.array([(x == v).sum() for v in k])
    keep = p * len(x) >= 5  # pool the sparse upper tail into one cell
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(p[keep], p[~keep].sum()) * len(x)
    assert stats.chisquare(obs, exp).pvalue > 1e-3


@pytest.mark.parametrize(
    "values, expected",
    [
        (np.array([17, 18, 25, 90, 33], dtype=float), (0.0, 1.0)),
        (np.array([1.5, 2.0, 3.5, 10.0]), (1.5, 0.5)),  # half-years
        (np.array([0.1, 0.3, 0.1 + 0.2, 0.7, 1.1]), (0.1, 0.2)),  # float noise (0.1 + 0.2)
        (np.array([20.0, 30.0, 45.0, 60.0]), (0.0, 5.0)),  # whole numbers on a 5-step
        (np.random.default_rng(0).normal(size=200), None),  # continuous
        (np.array([0.0, 1.0]), None),  # two values: not a grid worth imposing
    ],
)
def test_detect_grid(values, expected):
    got = detect_grid(values)
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected)


# ---- every method, Adult and NHANES ------------------------------------------
def _adult():
    df = load_adult(recode=True)
    df = df.sample(700, random_state=3).reset_index(drop=True)
    qi = ["age", "sex", "race", "education", "hours_per_week"]
    keep = ["income", "marital_status", "capital_gain"]
    masks = {"age": {"K": 2, "sigma_e": 4.0}, "hours_per_week": {"K": 1, "sigma_e": 6.0}, "sex": {"alpha": 3.0}}
    return df[qi + keep], qi, keep, masks


def _nhanes():
    df = load_nhanes().dropna().sample(700, random_state=4).reset_index(drop=True)
    qi = ["age", "gender", "bmi", "height_cm", "weight_kg"]
    keep = ["education", "diabetes", "total_cholesterol"]
    masks = {"age": {"K": 2, "sigma_e": 4.0}, "bmi": {"K": 1, "sigma_e": 2.0}, "gender": {"p": 0.9}}
    return df[qi + keep], qi, keep, masks


def _synth(method, masks):
    if method == "rubin":
        return RubinSynthesizer(progressbar=False)
    if method == "dami":
        return DAMISynthesizer(masks=masks, progressbar=False, n_sweeps=3)
    if method == "dami-sequential":
        return DAMISynthesizer(masks=masks, progressbar=False, predictive="sequential")
    if method == "cart":
        return CartSynthesizer()
    # a short copula chain on purpose (the support is the point, not convergence): accept its diagnostics
    return RiskTargetedSynthesizer(masks=masks, n_iter=60, burn=20, thin=5, n_sweeps=3, accept_diagnostics=True)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:GaussianCopula:RuntimeWarning")  # a short copula chain on purpose
@pytest.mark.filterwarnings("ignore:.*flagged as unconverged:RuntimeWarning")  # ... accepted, flagged
@pytest.mark.parametrize("method", ["rubin", "dami", "dami-sequential", "cart", "risk-dami"])
@pytest.mark.parametrize("data", ["adult", "nhanes"])
def test_no_value_outside_bounds_or_off_grid(method, data):
    df, qi, keep, masks = _adult() if data == "adult" else _nhanes()
    syn = _synth(method, masks).fit(df, quasi_identifiers=qi, keep=keep).sample(2, random_state=5)
    for c in qi:
        if isinstance(df[c].dtype, pd.CategoricalDtype):
            continue
        obs = df[c].to_numpy(dtype=float)
        origin, step = detect_grid(obs)
        for copy in syn.copies:
            x = copy[c].to_numpy(dtype=float)
            assert x.min() >= obs.min() and x.max() <= obs.max(), (method, data, c)
            k = (x - origin) / step
            assert np.all(np.abs(k - np.rint(k)) < 1e-6), (method, data, c)
    if method in ("rubin", "dami", "dami-sequential"):
        support = syn.metadata()["structure"]["support"]
        assert support["age"]["source"] == "observed"
        assert support["age"]["grid_step"] == 1.0


@pytest.mark.slow
def test_declared_bounds_are_used_and_recorded():
    df, qi, keep, masks = _adult()
    syn = DAMISynthesizer(masks=masks, bounds={"age": (17, 90), "hours_per_week": (0, None)},
                          progressbar=False, n_sweeps=2).fit(df, quasi_identifiers=qi, keep=keep)
    out = syn.sample(2, random_state=6)
    sup = out.metadata()["structure"]["support"]
    assert sup["age"] == {"lower": 17.0, "upper": 90.0, "source": "declared", "grid_step": 1.0, "grid_origin": 0.0}
    assert sup["hours_per_week"]["source"] == "declared" and sup["hours_per_week"]["upper"] is None
    assert all(c["age"].between(17, 90).all() and (c["hours_per_week"] >= 0).all() for c in out.copies)
    # grid=None: no snapping, still inside the bounds
    raw = RubinSynthesizer(grid=None, progressbar=False).fit(df, quasi_identifiers=qi, keep=keep).sample(1, random_state=7)
    assert raw.metadata()["structure"]["support"]["age"]["grid_step"] is None


def test_numpy_and_compiled_truncated_normal_give_the_same_bits():
    """Below ``_NUMPY_MAX`` draws the NumPy form is used (no kernel compilation); it must be the
    compiled kernel's draws exactly, in the bulk, on half-infinite intervals, in both far tails
    (bounds beyond 8.9 sd, Phi underflowing: the log-space branch) and for intervals right of the mean."""
    from synthmi.models.truncation import _kernel, _truncated_normal_numpy

    rng = np.random.default_rng(7)
    n = 20_000
    mu, sd = rng.normal(40, 30, n), rng.uniform(0.01, 20, n)
    lo, hi = np.full(n, 17.0), np.full(n, 90.0)
    lo[:1000], hi[1000:2000] = -np.inf, np.inf
    mu[2000:3000], mu[3000:4000] = 1e4, -1e4  # both bounds far out: log-space inversion
    lo[4000:5000], hi[4000:5000] = mu[4000:5000] + 0.5 * sd[4000:5000], mu[4000:5000] + 40 * sd[4000:5000]
    u = rng.random(n)
    compiled = np.empty(n)
    _kernel()(mu, sd, lo, hi, u, compiled)
    assert np.array_equal(_truncated_normal_numpy(mu, sd, lo, hi, u), compiled)
    assert np.all((compiled >= lo) & (compiled <= hi))


def test_detect_grid_gives_a_one_decimal_column_of_large_values_the_step_01():
    # the new-user review (sklearn's breast_cancer 'mean area', 143.5-2501.0 in steps of 0.1): the
    # smallest gap 566.3 - 566.2 = 0.09999999999990905 gave the step 0.0999999999999 (12 significant
    # digits), and snapped copies 1298.5999999988, off every value the column holds
    v = np.array([143.5, 566.2, 566.3, 1298.6, 2501.0])
    assert detect_grid(v) == (143.5, 0.1)
    s = Support(143.5, 2501.0, "observed", detect_grid(v))
    # latents near the data's values snap back to them exactly
    assert set(s.snap(v + 0.03).tolist()) == set(v.tolist())
    # a step that is not a short decimal keeps 12 significant digits
    assert detect_grid(np.array([1 / 3, 2 / 3, 1.0, 2.0]))[1] == 0.333333333333
