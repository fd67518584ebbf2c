"""Demographic coherence: W1 on hand-built distributions, the experiment's extremes, errors."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from synthmi.evaluation.coherence import clopper_pearson, demographic_coherence, wasserstein_1


def test_wasserstein_hand_built():
    assert wasserstein_1([0.0], [1.0]) == pytest.approx(1.0)
    # half the mass moves from -1 to +1: 0.5 * 2 = 1
    assert wasserstein_1([-1.0, 1.0], [-1.0, -1.0]) == pytest.approx(1.0)
    # {0,0,1} vs {0,1,1}: a third of the mass moves by 1
    assert wasserstein_1([0, 0, 1], [0, 1, 1]) == pytest.approx(1 / 3)
    # unequal sizes: {0} vs {0, 1}: half the mass moves by 1
    assert wasserstein_1([0.0], [0.0, 1.0]) == pytest.approx(0.5)
    # the maximum on [-1, 1]: all mass from -1 to 1
    assert wasserstein_1([-1, -1, -1], [1, 1]) == pytest.approx(2.0)
    assert wasserstein_1([0.3, -0.2], [-0.2, 0.3]) == 0.0
    # shift equivariance and symmetry on random samples, and agreement with scipy
    rng = np.random.default_rng(0)
    u, v = rng.uniform(-1, 1, 37), rng.beta(2, 5, 53) * 2 - 1
    assert wasserstein_1(u, u + 0.25) == pytest.approx(0.25)
    assert wasserstein_1(u, v) == pytest.approx(wasserstein_1(v, u))
    assert wasserstein_1(u, v) == pytest.approx(stats.wasserstein_distance(u, v), rel=1e-12)
    with pytest.raises(ValueError, match="non-empty"):
        wasserstein_1([], [1.0])


def test_clopper_pearson_hand_values():
    # k = 0: upper = 1 - (a/2)^(1/n)
    lo, hi = clopper_pearson(0, 20)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 20))
    lo, hi = clopper_pearson(20, 20)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 20))
    # k = 5 of 20: published value [0.0866, 0.4910] (exact binomial interval)
    lo, hi = clopper_pearson(5, 20)
    assert lo == pytest.approx(0.0866, abs=5e-4) and hi == pytest.approx(0.4910, abs=5e-4)


def _toy(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, n)
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-(0.5 * x1 + 0.5 * g)))).astype(int)
    return pd.DataFrame({"x1": x1, "x2": x2, "g": pd.Categorical(np.where(g == 1, "a", "b")), "y": y})


def _noise_release(Xa, rng):
    m = len(Xa)
    return pd.DataFrame(
        {"x1": rng.normal(size=m), "x2": rng.normal(size=m), "g": pd.Categorical(rng.choice(["a", "b"], m)),
         "y": rng.integers(0, 2, m)}
    )


@pytest.mark.slow
def test_copy_release_is_incoherent_and_noise_release_is_coherent():
    df = _toy()
    before = df.copy()
    kw = dict(lens=["x1", "x2", "g"], target="y", subgroups=["g"], gamma=200, alpha=0.1, n_trials=8, model="forest")
    copy = demographic_coherence(df, release="raw", random_state=1, **kw)
    noise = demographic_coherence(df, release=_noise_release, random_state=1, **kw)
    pd.testing.assert_frame_equal(df, before)
    # A forest trained on the copied half is near-certain on its own training rows and
    # hedged on the other half: measured W1 ~0.24 per subgroup (sd over trials ~0.02).
    assert copy.distances.min().min() > 0.15
    assert copy.beta == 1.0
    # A forest trained on pure noise treats both halves alike: W1 is split noise only
    # (measured mean ~0.03, sd ~0.015), far below alpha.
    assert noise.distances.max().max() < 0.1
    assert noise.beta == 0.0
    lo, hi = noise.beta_ci
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 8))
    assert set(copy.sizes.index) == {"g=a", "g=b"}
    assert copy.worst_subgroup in ("g=a", "g=b")
    assert "Clopper-Pearson" in str(copy.summary())
    frame = copy.to_frame()
    assert list(frame.columns) == [
        "size", "mean_w1", "sd_w1", "max_w1", "share_above_alpha", "mean_null_w1", "excess_w1"
    ]
    # Random re-splits of X ∩ C give the copy's forest only split noise (measured ~0.03):
    # nearly all of its W1 is excess. For the noise release h ignores the split, so the
    # observed and null distances agree (difference of two means over 8 trials with
    # sd ~0.015 each: se ~0.008).
    assert (frame["excess_w1"] > 0.15).all()
    nf = noise.to_frame()
    assert (nf["excess_w1"].abs() < 0.03).all()


def test_same_seed_same_result_and_masks():
    df = _toy(600, seed=3)
    masks = {"all": np.ones(len(df), dtype=bool), "x1>0": (df["x1"] > 0).to_numpy(), "tiny": np.arange(len(df)) < 10}
    kw = dict(lens=["x1", "g"], target="y", subgroups=masks, gamma=50, n_trials=3, model="logistic")
    r1 = demographic_coherence(df, random_state=7, **kw)
    r2 = demographic_coherence(df, random_state=7, **kw)
    pd.testing.assert_frame_equal(r1.distances, r2.distances)

    def raw_but_consumes_rng(Xa, rng):
        rng.random(7)
        return Xa

    # The splits do not depend on what the release draws: a release returning X_a
    # after using the generator gives exactly the raw release's distances.
    r3 = demographic_coherence(df, release=raw_but_consumes_rng, random_state=7, **kw)
    pd.testing.assert_frame_equal(r1.distances, r3.distances)
    assert list(r1.sizes.index) == ["all", "x1>0"]
    assert list(r1.excluded.index) == ["tiny"]
    # Subgroup sizes count |C ∩ X| over the whole data set.
    assert r1.sizes["all"] == len(df)


def test_custom_distance_is_used():
    df = _toy(800, seed=6)
    kw = dict(lens=["x1", "g"], target="y", subgroups=["g"], gamma=50, n_trials=3, model="logistic", random_state=2)
    w1 = demographic_coherence(df, **kw)
    mean_gap = demographic_coherence(df, dist=lambda u, v: abs(np.mean(u) - np.mean(v)), **kw)
    # Same splits and predictors; |E u - E v| <= W1(u, v) for every pair of samples.
    assert (mean_gap.distances.to_numpy() <= w1.distances.to_numpy() + 1e-12).all()
    assert (mean_gap.distances.to_numpy() > 0).any()
    with pytest.raises(ValueError, match="'dist' parameter"):
        demographic_coherence(df, dist="ks", **kw)


def test_constant_release_gives_zero_distance():
    df = _toy(400, seed=4)

    def const(Xa, rng):
        out = Xa.copy()
        out["y"] = 0
        return out

    r = demographic_coherence(df, ["x1", "g"], "y", ["g"], release=const, gamma=50, n_trials=2, random_state=0)
    assert (r.distances.to_numpy() == 0).all()


def test_bad_input():
    df = _toy(300, seed=5)
    with pytest.raises(ValueError, match="'gamma' parameter of demographic_coherence"):
        demographic_coherence(df, ["x1"], "y", ["g"], gamma=10_000)
    with pytest.raises(ValueError, match="'lens' parameter"):
        demographic_coherence(df, ["nope"], "y", ["g"])
    with pytest.raises(ValueError, match="'target' parameter"):
        demographic_coherence(df, ["x1", "y"], "y", ["g"])
    with pytest.raises(ValueError, match="'subgroups' parameter"):
        demographic_coherence(df, ["x1"], "y", [np.ones(5, dtype=bool)])
    with pytest.raises(ValueError, match="'release' parameter"):
        demographic_coherence(df, ["x1"], "y", ["g"], release="synthetic")
    with pytest.raises(ValueError, match="'n_trials' parameter"):
        demographic_coherence(df, ["x1"], "y", ["g"], n_trials=0)
