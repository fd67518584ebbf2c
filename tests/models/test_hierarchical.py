"""Random-intercept conditional: blocked Gibbs agrees with PyMC NUTS; partial pooling in synthesis."""
import numpy as np
import pandas as pd
import pytest

from synthmi.models import DAMISynthesizer, RubinSynthesizer
from synthmi.models.hierarchical import HierarchicalNormal, pymc_model


def _areas(G=30, lo=3, hi=12, tau=0.6, seed=0):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(lo, hi + 1, G)
    g = np.repeat(np.arange(G), sizes)
    x = rng.normal(size=g.size)
    u = tau * rng.normal(size=G)
    y = 2.0 + 0.7 * x + u[g] + rng.normal(size=g.size)
    return g, x, y, u


@pytest.mark.slow
def test_gibbs_agrees_with_nuts():
    """Posterior means of beta, sigma, tau and three area effects: Gibbs vs NUTS on the PyMC specification.

    Tolerance: 4.5 Monte Carlo standard errors of the difference, sd * sqrt(1/ESS_gibbs + 1/ESS_nuts)
    (ESS estimated by ArviZ for both); 8 comparisons, so a false alarm has probability ~5e-5.
    """
    import arviz as az
    import pymc as pm

    g, x, y, _ = _areas()
    X = np.column_stack([np.ones_like(x), x])
    h = HierarchicalNormal(X, y, g, 30)
    s = h.sample(3000, np.random.default_rng(1), chains=2, burn=300)
    gib = {"beta0": s["beta"][..., 0], "beta1": s["beta"][..., 1], "sigma": s["sigma"], "tau": s["tau"],
           "u0": s["u"][..., 0], "u1": s["u"][..., 1], "u2": s["u"][..., 2]}
    with pymc_model(X, y, g, 30):
        idata = pm.sample(draws=800, tune=600, chains=2, cores=1, target_accept=0.95, random_seed=2,
                          progressbar=False, compute_convergence_checks=False)
    post = idata.posterior
    nuts = {"beta0": post["beta"].values[..., 0], "beta1": post["beta"].values[..., 1],
            "sigma": np.exp(post["log_sigma"].values), "tau": post["tau"].values,
            "u0": post["u"].values[..., 0], "u1": post["u"].values[..., 1], "u2": post["u"].values[..., 2]}
    assert int(idata.sample_stats["diverging"].sum()) < 30
    for k in gib:
        a, b = gib[k], nuts[k]
        ess_a = float(az.ess(a))
        ess_b = float(az.ess(b))
        se = np.sqrt(a.var() / ess_a + b.var() / ess_b)
        assert abs(a.mean() - b.mean()) < 4.5 * se, (k, a.mean(), b.mean(), se)
        # and the spread agrees (posterior sds within 15%)
        assert a.std() == pytest.approx(b.std(), rel=0.15), k


def test_hand_computed_shrinkage_with_known_sigma_and_tau():
    """u_g | beta, sigma, tau is N(sum_g r / s2 / (n_g/s2 + 1/t2), 1/(n_g/s2 + 1/t2)): check the draw's
    conditional mean on a one-coefficient design via the sampler's own update, with sigma, tau held
    near fixed values by a huge data set per group (n_g = 2000) - the posterior mean of u_g then equals
    the group mean residual times n_g/s2 / (n_g/s2 + 1/t2) ~ the group mean residual."""
    rng = np.random.default_rng(3)
    G, n_g = 5, 2000
    g = np.repeat(np.arange(G), n_g)
    u = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    y = 3.0 + u[g] + rng.normal(size=g.size)
    h = HierarchicalNormal(np.ones((g.size, 1)), y, g, G)
    s = h.sample(600, np.random.default_rng(4), chains=2, burn=100)
    resid = np.array([y[g == k].mean() for k in range(G)]) - s["beta"][..., 0].mean()
    np.testing.assert_allclose(s["u"].mean(axis=(0, 1)), resid, atol=0.01)
    assert s["sigma"].mean() == pytest.approx(1.0, abs=0.02)


@pytest.mark.slow
def test_hierarchical_method_in_synthesis():
    g, x, y, _ = _areas(G=40, seed=5)
    df = pd.DataFrame({"area": pd.Categorical([f"a{k}" for k in g]), "x": x, "y": y})
    syn = RubinSynthesizer(models={"y": {"method": "hierarchical", "group": "area"}}, progressbar=False).fit(
        df, quasi_identifiers=["y"], keep=["area", "x"])
    out = syn.sample(3, random_state=6)
    meta = out.metadata()
    assert meta["structure"]["models"]["y"] == {"method": "hierarchical", "family": "normal", "predictors": [],
                                                "design": ["(Intercept)", "x"], "group": "area"}
    assert meta["diagnostics"]["columns"]["y"]["r_hat"] < 1.01
    # the area term is carried: synthetic area means track the original ones far better than a model
    # without the area (which only carries x: corr ~0.25 here, against ~0.6 with 3-12 records per area)
    orig = df.groupby("area", observed=True)["y"].mean()
    flat = RubinSynthesizer(models={"y": {"predictors": ["x"]}}, progressbar=False).fit(
        df, quasi_identifiers=["y"], keep=["area", "x"]).sample(3, random_state=6)

    def corr(copies):
        return np.mean([np.corrcoef(orig, c.groupby("area", observed=True)["y"].mean())[0, 1] for c in copies])

    assert corr(out.copies) > 0.45 and corr(out.copies) > corr(flat.copies) + 0.2
    # DA-MI with a normal mask on the hierarchical column
    d = DAMISynthesizer(masks={"y": {"K": 1, "sigma_e": 1.0}}, models={"y": {"method": "hierarchical", "group": "area"}},
                        progressbar=False).fit(df, quasi_identifiers=["y"], keep=["area", "x"]).sample(2, random_state=7)
    assert all(c["y"].between(df["y"].min(), df["y"].max()).all() for c in d.copies)
    with pytest.raises(ValueError, match="use sampler='fast'"):
        RubinSynthesizer(models={"y": {"method": "hierarchical", "group": "area"}}, sampler="nuts").fit(
            df, quasi_identifiers=["y"], keep=["area", "x"])
    with pytest.raises(ValueError, match="must be a kept categorical column"):
        RubinSynthesizer(models={"y": {"method": "hierarchical", "group": "x"}}).fit(
            df, quasi_identifiers=["y"], keep=["area", "x"])
