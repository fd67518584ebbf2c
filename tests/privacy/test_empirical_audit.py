"""Empirical lower bound on epsilon (issue 26 item 3): formulas, a mechanism with a known
privacy loss, the broken DPSyn caught, the correct releases not refuted, the CLI."""
import contextlib
import json
import math

import numpy as np
import pandas as pd
import pytest

import synthmi.privacy.dpsyn as dpsyn_module
from synthmi.cli import main
from synthmi.errors import ParameterError
from synthmi.privacy.audit import audit_privacy_loss
from synthmi.privacy.dp_bayes import PrivateBetaPosterior
from synthmi.privacy.mechanisms import RandomizedResponse
from synthmi.privacy.empirical_audit import (
    EmpiricalAuditResult,
    clopper_pearson,
    empirical_privacy_audit,
    epsilon_from_rates,
    epsilon_lower_bound,
)
from synthmi.results import Result, SummaryTable


# --------------------------------------------------------------------------- formulas by hand
def test_clopper_pearson_against_hand_values():
    # x = 0 of m: the upper bound solves (1 - p)^m = alpha, so p = 1 - alpha^(1/m); x = m mirrors it.
    lo, hi = clopper_pearson([0, 10], [10, 10], 0.025)
    assert hi[0] == pytest.approx(1 - 0.025 ** (1 / 10), rel=1e-10) and lo[0] == 0.0
    assert lo[1] == pytest.approx(0.025 ** (1 / 10), rel=1e-10) and hi[1] == 1.0
    # x = 5 of 10: the two-sided 95% Clopper-Pearson interval (0.187086, 0.812914) (binomial tables;
    # equivalently P(Bin(10, 0.187086) >= 5) = 0.025).
    lo, hi = clopper_pearson(5, 10, 0.025)
    assert float(lo) == pytest.approx(0.187086, abs=1e-6) and float(hi) == pytest.approx(0.812914, abs=1e-6)
    # x = 1 of 2: the lower bound solves 1 - (1 - p)^2 = alpha
    lo, _ = clopper_pearson(1, 2, 0.05)
    assert float(lo) == pytest.approx(1 - math.sqrt(0.95), rel=1e-10)


@pytest.mark.parametrize(
    "tpr_lo, fpr_hi, delta, expected",
    [
        (0.8, 0.1, 0.0, math.log(8.0)),  # log(0.8 / 0.1) = 2.079 beats log(0.9 / 0.2) = 1.504
        (0.8, 0.1, 0.05, math.log(7.5)),  # log((0.8 - 0.05) / 0.1) beats log((0.9 - 0.05) / 0.2)
        (0.99, 0.5, 0.0, math.log(50.0)),  # the complementary side: log((1 - 0.5) / (1 - 0.99))
        (0.99, 0.5, 0.1, math.log(40.0)),  # log((1 - 0.5 - 0.1) / 0.01)
        (0.3, 0.4, 0.0, 0.0),  # a test worse than chance rules nothing out
        (0.05, 0.01, 0.06, math.log(0.93 / 0.95)),  # delta above TPR: only the other side, negative -> 0
    ],
)
def test_epsilon_from_rates_against_hand_values(tpr_lo, fpr_hi, delta, expected):
    assert float(epsilon_from_rates(tpr_lo, fpr_hi, delta)) == pytest.approx(max(expected, 0.0), abs=1e-12)


def test_perfectly_separated_scores_give_the_hand_computed_bound():
    # 200 runs each: the first 100 choose 'score >= 1', the other 100 give TP = 100, FP = 0.
    # TPR_lo = 0.025^(1/100), FPR_hi = 1 - 0.025^(1/100); both sides of the formula agree.
    res = epsilon_lower_bound(np.ones(200), np.zeros(200), epsilon=1.0, delta=0.0, confidence=0.95)
    q = 0.025 ** (1 / 100)
    assert (res.true_positives, res.false_positives, res.side, res.threshold) == (100, 0, ">=", 1.0)
    assert res.epsilon_lower_bound == pytest.approx(math.log(q / (1 - q)), rel=1e-10)  # 3.2817
    assert res.exceeds_claim


def test_the_test_is_chosen_on_one_half_and_judged_on_the_other():
    # Scores separate perfectly on the first halves and not at all on the second: a bound
    # computed on the runs that chose the test would be 3.28; on the held-out half it is 0.
    s_in = np.r_[np.ones(100), np.zeros(100)]
    s_out = np.zeros(200)
    res = epsilon_lower_bound(s_in, s_out, epsilon=1.0)
    assert res.epsilon_lower_bound == 0.0 and res.true_positives == 0
    # the low side is found as well (scores lower with the canary)
    res = epsilon_lower_bound(-np.ones(200), np.zeros(200), epsilon=1.0)
    assert res.side == "<=" and res.threshold == -1.0 and res.epsilon_lower_bound > 3.0


# --------------------------------------------------------------------------- known privacy loss
def test_randomized_response_bound_is_just_below_its_epsilon():
    """Randomized response at eps = 1 (a neighbouring pair: the one record's bit 1 vs 0; report the
    bit with probability e/(1+e)) has privacy loss
    exactly 1, attained by the test 'output = 1': TPR = e/(1+e) = 0.7311, FPR = 0.2689.
    With m = 100,000 evaluation runs per side, sd(TPR_hat) = sqrt(0.7311 * 0.2689 / m) = 0.0014;
    the Clopper-Pearson bounds sit 1.96 sd inside, which costs 1.96 * 0.0014 * (1/0.7311 + 1/0.2689)
    = 0.014 in epsilon, and the estimate's own sd is 0.0014 * sqrt(1/0.7311^2 + 1/0.2689^2) = 0.0056.
    So the bound is 0.986 +- 0.006: the margin 0.05 below eps is > 6 sd; above eps it may be only
    with probability <= 5% (the bound's confidence), and the fixed seed makes the outcome fixed."""
    eps = 1.0
    rr = RandomizedResponse(epsilon=eps)  # the toolkit's mechanism; one record, the canary's bit
    rng = np.random.default_rng(26)
    R = 200_000
    s_in = rr.randomise(np.ones(R, dtype=np.int64), rng).astype(float)  # D: the bit is 1
    s_out = rr.randomise(np.zeros(R, dtype=np.int64), rng).astype(float)  # D': the bit is 0
    res = epsilon_lower_bound(s_in, s_out, epsilon=eps, confidence=0.95, mechanism="randomized response")
    assert eps - 0.05 < res.epsilon_lower_bound <= eps
    assert res.side == ">=" and res.threshold == 1.0


def test_beta_posterior_bound_below_the_exact_privacy_loss():
    """The exact audit gives the Beta-posterior EM's true worst-case loss L (< eps); the empirical
    bound on the same pair must stay below L (it holds with probability >= 95%) and find a real part
    of it (0.39 at 20,000 runs; a test that cannot see the mechanism would give 0)."""
    mech = PrivateBetaPosterior(epsilon=1.0, mechanism="global")
    exact = audit_privacy_loss(mech, 50).max_loss
    res = empirical_privacy_audit("beta", 1.0, runs=20000, seed=0, n=50, beta_mechanism="global")
    assert 0.2 < res.epsilon_lower_bound <= exact < 1.0
    assert res.settings["k_with"] - res.settings["k_without"] == 1


# --------------------------------------------------------------------------- DPSyn: broken and correct
@contextlib.contextmanager
def weak_dpsyn_noise(factor: float = 10.0):
    """A BROKEN DPSyn for the test only: its discrete Gaussian noise sd divided by ``factor``
    while the accountant still books the full sigma (so it still claims its epsilon)."""
    orig = dpsyn_module.sample_discrete_gaussian

    def weak(sigma2, size, rng, exact=False):
        return orig(sigma2 / factor**2, size=size, rng=rng, exact=exact)

    dpsyn_module.sample_discrete_gaussian = weak
    try:
        yield
    finally:
        dpsyn_module.sample_discrete_gaussian = orig


def test_broken_dpsyn_is_caught():
    """eps = 1, delta = 1e-6: the one-column release's sigma is 4.531, broken 0.453. The canary's
    released cell is then (count + discrete Gaussian noise, clipped at 0): without the canary >= 1 with
    probability 0.0745, with it 0.9255 (the discrete law at sigma^2 = 0.205). With 100 evaluation
    runs per side the expected bound is 1.92 and P(bound <= 1) = 1.9e-7 (exact sum over the two
    binomials of TP and FP at the threshold 1), so the broken release is caught with near certainty."""
    with weak_dpsyn_noise():
        res = empirical_privacy_audit("dpsyn", 1.0, 1e-6, runs=200, seed=0)
    assert res.exceeds_claim and res.epsilon_lower_bound > 1.0
    assert "ABOVE the claimed epsilon" in str(res.summary())


@contextlib.contextmanager
def empty_cells_left_exact():
    """A BROKEN DPSyn for the test only: marginal cells whose true count is 0 are released as an
    exact 0 (noise only on observed cells, a classic bug: the data decide which cells are noised)."""
    orig = dpsyn_module._Curator.noisy_marginal

    def leaky(self, attrs, maps, shape, sigma, label):
        noisy = orig(self, attrs, maps, shape, sigma, label)
        return np.where(self._true_counts(attrs, maps, shape) == 0, 0, noisy)

    dpsyn_module._Curator.noisy_marginal = leaky
    try:
        yield
    finally:
        dpsyn_module._Curator.noisy_marginal = orig


def test_dpsyn_that_leaves_empty_cells_exact_is_caught():
    """Without the canary its level's cell is always exactly 0; with it, 1 + Y (sigma 4.53) is >= 1 with
    probability P(Y >= 0) = 0.54. With 100 evaluation runs per side: FP = 0, so FPR_hi = 1 - 0.025^(1/100)
    = 0.036, TPR_lo ~ 0.54 - 0.10 = 0.44: expected bound log(0.44 / 0.036) = 2.5 > 1 (at the test
    'score >= 1' it stays <= 1 only if TP <= 16 of 100: binomial probability 2e-15)."""
    with empty_cells_left_exact():
        res = empirical_privacy_audit("dpsyn", 1.0, 1e-6, runs=200, seed=0)
    assert res.false_positives == 0 and res.exceeds_claim


def test_correct_dpsyn_is_not_refuted():
    """The same audit on the real DPSyn: its bound stays at or below the claimed eps (a bound above
    it would be a bug at 95% confidence). At sigma = 4.53 the canary moves its cell by 0.22 sd, so
    the bound is small (benchmarks/results/dp_audit_empirical.json: DPSyn at eps 0.5 / 1 / 4)."""
    res = empirical_privacy_audit("dpsyn", 1.0, 1e-6, runs=200, seed=0)
    assert not res.exceeds_claim and res.epsilon_lower_bound <= 1.0
    assert "does not prove it" in str(res.summary())


def test_kmeans_audit_runs_and_stays_below_its_claim():
    """At eps = 1: with 200 evaluation runs per side the bound can reach log(0.9817 / 0.0183) = 3.98
    (TP = 200, FP = 0), so '<= 1' can fail. (The former check, eps = 4 at these runs, could not: 3.98 < 4.)"""
    res = empirical_privacy_audit("kmeans", 1.0, runs=400, seed=0)
    assert 0.0 <= res.epsilon_lower_bound <= 1.0 and res.delta == 0.0
    assert "substitution" in res.neighbours


def test_broken_kmeans_is_caught():
    """A BROKEN DP k-means for the test only: both Laplace noises (counts and sums) scaled down 10x
    while the accountant books the full budget. The canary at the far corner then moves the one
    centre by more than the noise: at eps = 1 with 400 runs the bound was 1.88-3.32 over seeds 0-5
    (TP about 100, FP 0-1 of 200), so the claim is refuted; this shows the k-means canary and
    statistic can see a leak, which the correct release's bound (0.0 above) cannot show."""
    import synthmi.privacy.kmeans as kmeans_module

    class _WeakLaplace:
        def __init__(self, g):
            self._g = g

        def __getattr__(self, name):
            return getattr(self._g, name)

        def laplace(self, loc, scale, size=None):
            return self._g.laplace(loc, scale / 10.0, size)

    gen, disc = kmeans_module.noise_generator, kmeans_module.sample_discrete_laplace
    kmeans_module.noise_generator = lambda rs, owner: _WeakLaplace(gen(rs, owner))
    kmeans_module.sample_discrete_laplace = lambda scale, k, rng, exact=False: disc(scale / 10.0, k, rng._g, exact=exact)
    try:
        res = empirical_privacy_audit("kmeans", 1.0, runs=400, seed=0)
    finally:
        kmeans_module.noise_generator, kmeans_module.sample_discrete_laplace = gen, disc
    assert res.exceeds_claim and res.epsilon_lower_bound > 1.5


def test_same_seed_same_audit_and_input_checks():
    a = empirical_privacy_audit("kmeans", 1.0, runs=40, seed=3)
    b = empirical_privacy_audit("kmeans", 1.0, runs=40, seed=3)
    assert a.figures | {"wall_seconds": 0} == b.figures | {"wall_seconds": 0}
    with pytest.raises(ParameterError, match="'delta' parameter of empirical_privacy_audit"):
        empirical_privacy_audit("dpsyn", 1.0, None, runs=10)
    with pytest.raises(ParameterError, match="'delta' parameter of empirical_privacy_audit"):
        empirical_privacy_audit("kmeans", 1.0, 1e-5, runs=10)
    with pytest.raises(ParameterError, match="'runs' parameter of empirical_privacy_audit"):
        empirical_privacy_audit("beta", 1.0, runs=3)
    with pytest.raises(ParameterError, match="'epsilon' parameter"):
        empirical_privacy_audit("beta", -1.0)
    with pytest.raises(ParameterError, match="'mechanism' parameter"):
        empirical_privacy_audit("aim", 1.0)
    with pytest.raises(ParameterError, match="'confidence' parameter"):
        epsilon_lower_bound(np.ones(8), np.zeros(8), 1.0, confidence=1.0)
    with pytest.raises(ParameterError, match="'scores_with' parameter"):
        epsilon_lower_bound(np.ones(3), np.zeros(8), 1.0)


def test_result_follows_the_protocol():
    res = empirical_privacy_audit("beta", 1.0, runs=400, seed=0)
    assert isinstance(res, (Result, EmpiricalAuditResult)) and isinstance(res.summary(), SummaryTable)
    frame = res.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == 1
    assert frame.loc[0, "epsilon_lower_bound"] == res.epsilon_lower_bound
    d = res.to_dict()
    assert json.loads(json.dumps(d, allow_nan=False)) == d and "settings" in d and "summary" in d
    assert res.figures["claimed_epsilon"] == 1.0 and res.figures["confidence"] == 0.95


# --------------------------------------------------------------------------- CLI
def test_cli_empirical_audit_writes_json(tmp_path, capsys):
    out = tmp_path / "audit.json"
    assert main(["dp", "audit", "--empirical", "beta", "--eps", "1", "--runs", "2000", "--seed", "0",
                 "--out", str(out), "--quiet"]) == 0
    payload = json.loads(out.read_text())
    s = payload["summary"]["figures"] if "figures" in payload["summary"] else payload["summary"]
    assert "epsilon_lower_bound" in json.dumps(s) and payload["settings"]["seed"] == 0
    # the exact audit is unchanged
    assert main(["dp", "audit", "--n", "20", "--eps", "1", "--mechanism", "laplace"]) == 0
    assert "Exact privacy audit" in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra, msg",
    [
        (["--empirical", "kmeans", "--eps", "-1"], "The '--eps' option"),
        (["--empirical", "dpsyn", "--eps", "1"], "The '--delta' option"),
        (["--empirical", "dpsyn", "--eps", "1", "--delta", "1.5"], "The '--delta' option"),
        (["--empirical", "kmeans", "--eps", "1", "--delta", "1e-5"], "The '--delta' option"),
        (["--empirical", "beta", "--eps", "1", "--runs", "2"], "The '--runs' option"),
        (["--empirical", "beta", "--eps", "1", "--confidence", "1"], "The '--confidence' option"),
        (["--empirical", "beta", "--eps", "1", "--mechanism", "local"], "NOT differentially private"),
        (["--eps", "1"], "The '--n' option is required"),
    ],
)
def test_cli_empirical_audit_errors(extra, msg, capsys):
    assert main(["dp", "audit", *extra]) == 1
    assert msg in capsys.readouterr().err
