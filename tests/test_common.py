"""One battery of contract checks over every synthesizer (in the manner of
scikit-learn's ``parametrize_with_checks``).

Each synthesizer runs with small settings on one small mixed data set: a
continuous quasi-identifier ``x`` whose values are distinctive (unique reals),
a categorical QI ``c``, and kept columns ``z`` (continuous) and ``k`` (binary).
"""
from __future__ import annotations

import copy
import pickle

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from synthmi._validate import NotFittedError
from synthmi.models import (
    CartSynthesizer,
    DAMISynthesizer,
    GaussianCopulaImputer,
    RiskTargetedSynthesizer,
    RubinSynthesizer,
    Synthesizer,
    load_posterior,
    load_synthesizer,
)
from synthmi.privacy import DPSynSynthesizer

BOUNDS = {"x": (-50.0, 50.0), "z": (-10.0, 10.0)}


def _data(n: int = 120, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    x = 3.0 * z + rng.normal(size=n) * 5.0 + rng.uniform(0, 1e-6, n)  # unique, non-round reals
    c = np.where(x + rng.normal(size=n) * 3 > 0, "a", np.where(rng.random(n) < 0.5, "b", "d"))
    k = rng.random(n) < 0.4
    return pd.DataFrame({
        "x": x,
        "c": pd.Categorical(c, categories=["a", "b", "d"]),
        "z": z,
        "k": pd.Categorical(np.where(k, "yes", "no"), categories=["no", "yes"]),
    })


# (synthesizer with small settings, fit keyword arguments)
CASES = {
    "cart": (lambda: CartSynthesizer(min_samples_leaf=5), {"quasi_identifiers": ["x", "c"]}),
    "cart-proper": (lambda: CartSynthesizer(proper=True), {"quasi_identifiers": ["x", "c"]}),
    "rubin": (lambda: RubinSynthesizer(draws=100, progressbar=False), {"quasi_identifiers": ["x", "c"]}),
    "rubin-normal-only": (lambda: RubinSynthesizer(draws=100, progressbar=False), {"quasi_identifiers": ["x"]}),
    "dami": (
        lambda: DAMISynthesizer(masks={"x": {"K": 2, "sigma_e": 3.0}}, random_state=1, draws=100, progressbar=False),
        {"quasi_identifiers": ["x", "c"]},
    ),
    "risk-dami": (
        # a deliberately short chain (the battery is about the contract): accepted
        lambda: RiskTargetedSynthesizer(masks={"x": {"K": 1, "sigma_e": 3.0}}, n_iter=40, random_state=2,
                                        accept_diagnostics=True),
        {"quasi_identifiers": ["x", "c"]},
    ),
    "dpsyn": (
        lambda: DPSynSynthesizer(epsilon=4.0, delta=1e-6, random_state=3, n_iter=5),
        {"bounds": BOUNDS, "domain": {"c": ["a", "b", "d"], "k": ["no", "yes"]}},
    ),
}
IDS = list(CASES)


def _fit(name, df=None):
    make, kw = CASES[name]
    return make().fit(_data() if df is None else df, **kw)


def _same_copies(a, b):
    assert a.m == b.m
    for x, y in zip(a.copies, b.copies):
        pd.testing.assert_frame_equal(x, y)


def test_every_synthesizer_is_in_the_battery():
    """A new Synthesizer subclass must be added to CASES."""
    import synthmi.models as models
    import synthmi.privacy as privacy

    classes = {obj for mod in (models, privacy) for obj in vars(mod).values()
               if isinstance(obj, type) and issubclass(obj, Synthesizer) and obj is not Synthesizer}
    covered = {type(make()) for make, _ in CASES.values()}
    assert classes == covered


@pytest.mark.parametrize("name", IDS)
def test_clone_and_params_protocol(name):
    est = CASES[name][0]()
    params = est.get_params(deep=False)
    # every constructor parameter is declared once, as data
    assert sorted(params) == sorted(type(est)._parameter_constraints)
    twin = clone(est)
    assert type(twin) is type(est) and twin is not est
    assert joblib.hash(twin.get_params(deep=False)) == joblib.hash(params)
    # set_params round trip; an unknown name is refused
    first = sorted(params)[0]
    assert twin.set_params(**{first: params[first]}) is twin
    with pytest.raises(ValueError, match="Invalid parameter 'nope'"):
        twin.set_params(nope=1)
    # clone of a fitted synthesizer is unfitted
    fitted = _fit(name)
    with pytest.raises(NotFittedError):
        clone(fitted).sample(1)


def test_clone_imputer():
    imp = GaussianCopulaImputer(n_iter=20, random_state=1)
    twin = clone(imp)
    assert twin.get_params() == imp.get_params() and twin is not imp
    assert sorted(imp.get_params()) == sorted(GaussianCopulaImputer._parameter_constraints)


@pytest.mark.parametrize("name", IDS)
def test_params_unchanged_by_fit_and_input_not_mutated(name):
    make, kw = CASES[name]
    est = make()
    before = joblib.hash(est.get_params(deep=False))
    df = _data()
    snapshot = df.copy(deep=True)
    est.fit(df, **kw).sample(2, random_state=0)
    assert joblib.hash(est.get_params(deep=False)) == before
    pd.testing.assert_frame_equal(df, snapshot)


@pytest.mark.parametrize("name", IDS)
def test_same_seed_identical_copies(name):
    a = _fit(name).sample(2, random_state=7)
    b = _fit(name).sample(2, random_state=7)
    _same_copies(a, b)
    c = _fit(name).sample(2, random_state=8)
    assert not all(x.equals(y) for x, y in zip(a.copies, c.copies))
    # the copies keep the released columns, their order and dtypes
    for cp in a.copies:
        assert list(cp.columns) == ["x", "c", "z", "k"]
        assert (cp.dtypes == _data().dtypes).all()


@pytest.mark.parametrize("name", IDS)
def test_bad_input_errors(name):
    make, kw = CASES[name]
    est = make()
    with pytest.raises(NotFittedError, match="not fitted yet"):
        est.sample(1)
    with pytest.raises(TypeError, match="'df' parameter must be a pandas DataFrame"):
        est.fit(_data().to_numpy(), **kw)
    with pytest.raises(ValueError, match="not in 'df'"):
        est.fit(_data().drop(columns="x"), **kw)
    # every declared parameter is checked in fit: an object no constraint allows
    # gives one error naming the parameter and the class
    for p, allowed in type(est)._parameter_constraints.items():
        if "object" in allowed:
            continue
        bad = clone(est).set_params(**{p: object()})
        with pytest.raises(ValueError, match=f"The '{p}' parameter of {type(est).__name__} must be"):
            bad.fit(_data(), **kw)
    fitted = _fit(name)
    with pytest.raises(ValueError, match="The 'm' parameter"):
        fitted.sample(0)


@pytest.mark.parametrize("name", IDS)
def test_pickle_round_trip(name):
    fitted = _fit(name)
    expected = fitted.sample(2, random_state=5)
    # with the records (asked for): the same copies for the same seed
    back = pickle.loads(pickle.dumps(copy.copy(fitted).retain_records()))
    _same_copies(back.sample(2, random_state=5), expected)
    # without (the default): the same copies, or a clear refusal if the sampler needs them
    plain = pickle.loads(pickle.dumps(fitted))
    if fitted._needs_records_to_sample():
        with pytest.raises(ValueError, match="without the original records"):
            plain.sample(2, random_state=5)
    else:
        _same_copies(plain.sample(2, random_state=5), expected)


def _row_windows(df: pd.DataFrame, width: int = 3) -> list[bytes]:
    """Byte patterns of ``width`` consecutive values of x in record order, as
    float64 (how an array or frame column holds them) and as text."""
    x = df["x"].to_numpy(dtype=np.float64)
    out = []
    for i in range(0, len(x) - width, 7):
        out.append(np.ascontiguousarray(x[i:i + width]).tobytes())
    out += [repr(float(v)).encode() for v in x[:20]]
    return out


@pytest.mark.parametrize("name", IDS)
def test_pickled_synthesizer_holds_no_confidential_rows_unless_asked(name):
    df = _data()
    fitted = _fit(name, df)
    blob = pickle.dumps(fitted)
    hits = [w for w in _row_windows(df) if w in blob]
    assert hits == []
    # the search finds them when the user asks for the records (DPSyn never holds any)
    asked = pickle.dumps(copy.copy(fitted).retain_records())
    found = sum(w in asked for w in _row_windows(df))
    assert found == 0 if name == "dpsyn" else found > 0


@pytest.mark.parametrize("name", IDS)
def test_save_and_load_reproduce_the_copies(name, tmp_path):
    fitted = _fit(name)
    expected = fitted.sample(3, random_state=11)
    needs = fitted._needs_records_to_sample()
    if needs:
        with pytest.raises(ValueError, match="include_records=True"):
            fitted.save(tmp_path / "m")
    path = fitted.save(tmp_path / "m", include_records=needs)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        fitted.save(tmp_path / "m", include_records=needs)
    fitted.save(tmp_path / "m", include_records=needs, overwrite=True)
    loaded = load_synthesizer(path)
    assert type(loaded) is type(fitted)
    _same_copies(loaded.sample(3, random_state=11), expected)
    # the parameters a release may publish (a DP seed is never saved)
    assert type(fitted).load(path)._published_params() == fitted._published_params()
    idata = load_posterior(path)
    if name in ("rubin", "rubin-normal-only", "dami", "risk-dami"):
        assert idata is not None and len(idata.posterior.data_vars) > 0
    else:
        assert idata is None
    # a changed file is refused
    (path / "spec.json").write_text("{}")
    with pytest.raises(ValueError, match="changed since it was saved"):
        load_synthesizer(path)
