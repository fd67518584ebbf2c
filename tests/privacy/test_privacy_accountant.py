import math

import numpy as np
import pytest

from synthmi.privacy.accountant import (
    PrivacyAccountant,
    dpsyn_sigma,
    gaussian_rdp,
    pure_dp_rdp,
    rdp_to_dp_improved,
    rdp_to_dp_simple,
)


def test_reference_values_gaussian_sigma_one():
    # Issue 6 reference: sigma = 1, one release, delta = 1e-5.
    acc = PrivacyAccountant().add_gaussian(1.0)
    assert acc.spent(1e-5, conversion="simple")[0] == pytest.approx(5.29853, abs=1e-4)
    assert acc.spent(1e-5, conversion="improved")[0] == pytest.approx(4.72839, abs=1e-4)
    # Hand check of the simple one: rdp = lambda/2, optimum lambda - 1 = sqrt(2 log(1/delta)),
    # eps = 1/2 + sqrt(2 log(1/delta)) exactly.
    assert rdp_to_dp_simple(0.5, 1e-5)[0] == pytest.approx(0.5 + math.sqrt(2 * math.log(1e5)), abs=1e-9)


def test_reference_values_dpsyn_sigma():
    assert dpsyn_sigma(1.0, 1e-5, 1) == pytest.approx(4.90056, abs=1e-4)
    assert dpsyn_sigma(1.0, 1e-5, 91) == pytest.approx(46.748, abs=1e-3)
    # The closed-form minimiser agrees with brute force over lambda.
    lam = 1 + np.exp(np.linspace(-2, 8, 200001))
    L = math.log(1e5)
    room = 0.7 - L / (lam - 1)
    val = np.where(room > 0, np.sqrt(7 * lam / (2 * np.maximum(room, 1e-300))), np.inf)
    assert dpsyn_sigma(0.7, 1e-5, 7) == pytest.approx(val.min(), rel=1e-7)


def test_dpsyn_sigma_round_trips_through_accountant():
    # sigma chosen by dpsyn_sigma for t marginals spends exactly eps under the simple conversion.
    for t, eps in [(1, 1.0), (91, 1.0), (20, 0.3)]:
        s = dpsyn_sigma(eps, 1e-5, t)
        acc = PrivacyAccountant().add_gaussian(s, count=t)
        assert acc.spent(1e-5, conversion="simple")[0] == pytest.approx(eps, abs=1e-8)


@pytest.mark.parametrize("k", [2, 5, 37])
@pytest.mark.parametrize("conversion", ["simple", "improved"])
def test_k_identical_gaussians_equal_one_with_sigma_over_sqrt_k(k, conversion):
    many = PrivacyAccountant().add_gaussian(2.0, count=k)
    one = PrivacyAccountant().add_gaussian(2.0 / math.sqrt(k))
    assert many.spent(1e-6, conversion=conversion)[0] == pytest.approx(
        one.spent(1e-6, conversion=conversion)[0], rel=1e-9
    )
    # separate add_gaussian calls compose the same way as count=k
    sep = PrivacyAccountant()
    for _ in range(k):
        sep.add_gaussian(2.0)
    assert sep.spent(1e-6, conversion=conversion)[0] == pytest.approx(many.spent(1e-6, conversion=conversion)[0], rel=1e-12)


def test_improved_never_worse_than_simple():
    for sigma in [0.5, 1.0, 3.0, 20.0]:
        a = PrivacyAccountant().add_gaussian(sigma)
        assert a.spent(1e-5, conversion="improved")[0] <= a.spent(1e-5, conversion="simple")[0]


def test_pure_dp_rdp_is_randomized_response_divergence():
    # Renyi divergence of order lam between Bern(p) and Bern(1-p), p = e^eps/(1+e^eps), by hand.
    eps, lam = 0.7, 3.5
    p = math.exp(eps) / (1 + math.exp(eps))
    d = math.log(p**lam * (1 - p) ** (1 - lam) + (1 - p) ** lam * p ** (1 - lam)) / (lam - 1)
    assert pure_dp_rdp(np.array([lam]), eps)[0] == pytest.approx(d, rel=1e-12)
    # bounded by eps and by the zCDP bound lam eps^2 / 2 (Bun & Steinke 2016, Prop. 1.4)
    lams = np.linspace(1.01, 500, 1000)
    r = pure_dp_rdp(lams, eps)
    assert np.all(r <= eps + 1e-12) and np.all(r <= lams * eps**2 / 2 + 1e-12)


def test_basic_composition_adds():
    acc = PrivacyAccountant().add_pure(0.3, count=3).add_approx(0.5, 1e-6).add_pure(0.1)
    eps, delta = acc.spent(method="basic")
    assert eps == pytest.approx(0.3 * 3 + 0.5 + 0.1)
    assert delta == pytest.approx(1e-6)
    # many small pure spends: RDP composition beats basic at delta = 1e-6
    many = PrivacyAccountant().add_pure(0.01, count=1000)
    assert many.spent(method="basic")[0] == pytest.approx(10.0)
    assert many.spent(1e-6, method="rdp")[0] < 3.0


def test_basic_gaussian_splits_delta():
    acc = PrivacyAccountant().add_gaussian(1.0, count=2)
    eps, delta = acc.spent(1e-5, method="basic", conversion="simple")
    assert delta == pytest.approx(1e-5)
    assert eps == pytest.approx(2 * rdp_to_dp_simple(0.5, 5e-6)[0], rel=1e-10)


def test_budget_enforced_and_ledger():
    acc = PrivacyAccountant(epsilon=1.0)
    acc.add_pure(0.6, label="counts")
    with pytest.raises(ValueError, match="budget"):
        acc.add_pure(0.5, label="too much")
    assert [e.label for e in acc.ledger] == ["counts"]
    frame = acc.to_frame()
    assert list(frame["kind"]) == ["pure"] and frame["epsilon"].iloc[0] == 0.6
    assert "basic" in acc.summary()
    with pytest.raises(ValueError, match="'delta' parameter"):
        acc.add_gaussian(3.0)


def test_gaussian_rdp_formula():
    assert gaussian_rdp(np.array([2.0]), 2.0, 3.0)[0] == pytest.approx(2 * 9 / 8)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: PrivacyAccountant(epsilon=0), "epsilon"),
        (lambda: PrivacyAccountant(delta=1.0), "delta"),
        (lambda: PrivacyAccountant().add_gaussian(0.0), "sigma"),
        (lambda: PrivacyAccountant().add_gaussian(1.0, sensitivity=-1), "sensitivity"),
        (lambda: PrivacyAccountant().add_pure(-1), "epsilon"),
        (lambda: PrivacyAccountant().add_approx(1, 0), "delta"),
        (lambda: PrivacyAccountant().add_gaussian(1.0).spent(), "delta"),
        (lambda: PrivacyAccountant().spent(1e-5, method="fancy"), "method"),
        (lambda: rdp_to_dp_improved(0.5, 1.5), "delta"),
        (lambda: dpsyn_sigma(0.0, 1e-5, 3), "epsilon"),
        (lambda: dpsyn_sigma(1.0, 1e-5, 0), "n_marginals"),
    ],
)
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=f"'{name}' parameter"):
        call()
