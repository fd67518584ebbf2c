"""Rubin MI and DA-MI on a Dask frame run the models' own fit and sample (synthmi.engine):
same seed -> the same copies for every partitioning, equal to the pandas path's.

Every model that claims partition support (``supports_partitions``) is covered, with a
0/1 integer quasi-identifier (issue 27: ``KeyError: 'female'`` on Dask, handled in memory).
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from synthmi.data import load_adult  # noqa: E402
from synthmi.models.dami import DAMISynthesizer  # noqa: E402
from synthmi.models.rubin import RubinSynthesizer  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*flagged as unconverged:RuntimeWarning")

# a 0/1 integer quasi-identifier ("female"), as a new user's survey file codes it
QI = ["age", "female", "race"]
KEEP = ["income", "education"]


@pytest.fixture(scope="module")
def data():
    a = load_adult()[["age", "sex", "race", "income", "education"]].iloc[:2000].reset_index(drop=True)
    a["female"] = (a["sex"] == "Female").astype("int64")
    return a[QI + KEEP]


def _models():
    # sampler="imh" and short chains as in tests/models/test_scale.py (copies accepted, flagged unconverged)
    kw = dict(random_state=7, draws=100, chains=2, progressbar=False, sampler="imh", accept_diagnostics=True)
    return {
        "rubin": lambda: RubinSynthesizer(**{k: v for k, v in kw.items() if k != "random_state"}),
        "dami": lambda: DAMISynthesizer(masks={"age": {"K": 3, "sigma_e": 5.0}, "female": {"p": 0.9}}, **kw),
    }


@pytest.mark.parametrize("name", ["rubin", "dami"])
def test_integer_binary_qi_copies_equal_pandas_for_every_partitioning(client, data, name):
    make = _models()[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mem = make().fit(data, QI, KEEP).sample(2, random_state=11).copies
        for P in (1, 3):
            got = make().fit(dd.from_pandas(data, npartitions=P), QI, KEEP).sample(2, random_state=11).compute()
            for a, b in zip(got, mem):
                pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert mem[0]["female"].dtype == np.int64 and set(mem[0]["female"].unique()) <= {0, 1}


def test_every_model_that_claims_partition_support_is_covered():
    """A model that sets ``supports_partitions`` must be added to the equality test above."""
    import synthmi.models as models
    from synthmi.models.base import Synthesizer
    from synthmi.privacy.dpsyn import DPSynSynthesizer

    classes = [getattr(models, n) for n in models.__all__] + [DPSynSynthesizer]
    claim = {c.__name__ for c in classes if isinstance(c, type) and issubclass(c, Synthesizer) and c.supports_partitions}
    assert claim == {"RubinSynthesizer", "DAMISynthesizer"}


def _fit_counted(monkeypatch, data, P, make):
    """Fit on P partitions, counting the passes that group design rows and the remote calls."""
    import synthmi.engine as engine
    import synthmi.models.rubin as rubin

    count = {"groups": 0, "remote": 0}
    groups, call = rubin._partition_groups, engine.Remote.call

    def counted_groups(*a, **k):
        count["groups"] += 1
        return groups(*a, **k)

    def counted_call(self, *a, **k):
        count["remote"] += 1
        return call(self, *a, **k)

    monkeypatch.setattr(rubin, "_partition_groups", counted_groups)
    monkeypatch.setattr(engine.Remote, "call", counted_call)
    import dask

    # the synchronous scheduler runs the partition tasks in this process, where the counter is
    # (the distributed client would send them pickled, counter and all)
    with warnings.catch_warnings(), dask.config.set(scheduler="synchronous"):
        warnings.simplefilter("ignore", RuntimeWarning)
        s = make().fit(dd.from_pandas(data, npartitions=P), QI, KEEP)
    fitted = dict(count)
    return s, fitted, count


def test_posterior_loop_runs_on_the_client_after_one_pass(client, data, monkeypatch):
    """Issue 27: the Dask fit made a round trip to the cluster per posterior evaluation and grouped every
    partition's design rows once per categorical conditional. Now all conditionals' grouped rows are
    built in one pass (one grouping call per partition) and, being few, gathered into the in-memory
    model: sampling the posterior makes no remote call."""
    from synthmi.models.glm import CategoricalModel

    s, fitted, count = _fit_counted(monkeypatch, data, 3, _models()["rubin"])
    assert fitted["groups"] == 3  # one pass over the 3 partitions for the 2 categorical conditionals
    cats = [c for c in s.conditionals_ if c.family != "normal"]
    assert len(cats) == 2 and all(type(c.fast) is CategoricalModel for c in cats)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        s.sample(2, random_state=1)
    assert count["remote"] == fitted["remote"]  # the posterior draws called nothing remote


def test_bucketed_models_match_in_memory_and_batch_their_proposals(client, data, monkeypatch):
    """Grouped rows too many to gather (the cap set to 0 here) stay in buckets on the workers: the
    posterior mode and curvature equal the in-memory ones to 1e-8 (summation order only), bitwise
    across partitionings, and each independence-MH run scores its proposals in one remote call."""
    import synthmi.models.glm as glm

    monkeypatch.setattr(glm, "GROUPED_ON_CLIENT_MAX", 0)
    make = _models()["rubin"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mem = make().fit(data, QI, KEEP)
    modes = {}
    for P in (1, 3):
        s, fitted, count = _fit_counted(monkeypatch, data, P, make)
        cats = [(a, b) for a, b in zip(mem.conditionals_, s.conditionals_) if a.family != "normal"]
        assert all(isinstance(b.fast, glm.BucketedCategoricalModel) for _, b in cats)
        modes[P] = []
        for a, b in cats:
            (ma, ca), (mb, cb) = a.fast.mode(), b.fast.mode()
            assert np.max(np.abs(mb - ma)) / np.max(np.abs(ma)) < 1e-8
            assert np.max(np.abs(cb - ca)) / np.max(np.abs(ca)) < 1e-8
            modes[P].append((mb, cb))
        before = count["remote"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            s.sample(1, random_state=1)
        # per conditional: the Newton search (a few dozen evaluations), a pilot and at most 4 IMH runs,
        # never one per proposal (2 chains x (100 burn-in + 100 kept) = 400 proposals at least)
        assert count["remote"] - before < 2 * 100
    for (a, b), (c, d) in zip(modes[1], modes[3]):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)


def test_mask_given_by_reliability_is_calibrated_alike_in_memory_and_on_partitions(client, data):
    """One calibration (synthmi.models.masking.bind_mask): sigma_e^2 = K var(X) (1/rho - 1) with var(X)
    from the data in memory and from sums over partitions on Dask; equal up to summation order
    (hand value from numpy's ddof-1 variance)."""
    masks = {"age": {"K": 3, "reliability": 0.8}, "female": {"p": 0.9}}
    kw = dict(masks=masks, random_state=7, progressbar=False)
    mem = DAMISynthesizer(**kw).fit(data, QI, KEEP)
    want = np.sqrt(3 * np.var(data["age"].to_numpy(dtype=float), ddof=1) * (1 / 0.8 - 1))
    assert mem.masks_["age"].sigma_e == pytest.approx(want, rel=1e-15)
    for P in (1, 3):
        dsk = DAMISynthesizer(**kw).fit(dd.from_pandas(data, npartitions=P), QI, KEEP)
        assert dsk.masks_["age"].sigma_e == pytest.approx(want, rel=1e-12)  # canonical vs pairwise sums
        assert dsk.masks_["female"].matrix().shape == (2, 2)


def test_log1p_transform_is_fitted_on_its_scale_on_partitions(client, data):
    """The Dask fit regressed a 'log1p' column on its raw values while the predictive maps draws back by
    expm1 (only 'log' was transformed); now both paths fit log(1 + x) and draw the same copies."""
    kw = dict(transforms={"age": "log1p"}, draws=100, chains=2, progressbar=False, sampler="imh",
              accept_diagnostics=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mem = RubinSynthesizer(**kw).fit(data, QI, KEEP)
        dsk = RubinSynthesizer(**kw).fit(dd.from_pandas(data, npartitions=2), QI, KEEP)
        a, b = mem.conditionals_[0].fast, dsk.conditionals_[0].fast
        assert mem.conditionals_[0].column == "age"
        # intercept of the log1p-scale regression (about log(1 + 38.6) = 3.7), to summation-order rounding
        np.testing.assert_allclose(b.beta_hat, a.beta_hat, rtol=1e-8)
        assert 3 < a.beta_hat[0] < 4.5
        got = dsk.sample(1, random_state=5).compute()[0]
        pd.testing.assert_frame_equal(got, mem.sample(1, random_state=5).copies[0], check_exact=True)


# ---- the frame interface itself (synthmi.engine.Frame / Remote), pandas and Dask alike
def _frames(df):
    from synthmi.engine import Frame

    return {"pandas": Frame.from_any(df), **{P: Frame.from_any(dd.from_pandas(df, npartitions=P)) for P in (1, 4)}}


def test_frame_reduce_map_and_rebuild_alike_on_pandas_and_dask(client):
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"x": rng.normal(size=3001), "k": rng.integers(0, 2, 3001)})
    frames = _frames(df)
    sums = {k: f.reduce(lambda p: (p["x"].to_numpy().sum(), np.array(float(len(p))))) for k, f in frames.items()}
    assert sums[1][0] == sums[4][0]  # canonical order: bitwise the same for every partitioning
    assert sums["pandas"][1] == sums[4][1] == 3001
    np.testing.assert_allclose(sums[4][0], df["x"].sum(), rtol=1e-12)  # summation order only
    for k, f in frames.items():
        assert f.n_rows == 3001 and f.columns == ["x", "k"]
        starts = f.map_partitions(lambda p, o: (o, len(p)))
        assert starts[0][0] == 0 and sum(n for _, n in starts) == 3001
        assert all(o == starts[i - 1][0] + starts[i - 1][1] for i, (o, _) in enumerate(starts) if i)
        # a partition's records carry their global positions
        back = f.from_partitions(lambda p, o: p.assign(pos=np.arange(o, o + len(p))), df.iloc[:0].assign(pos=0))
        back = back if isinstance(back, pd.DataFrame) else back.compute()
        np.testing.assert_array_equal(back["pos"].to_numpy(), np.arange(3001))


def test_frame_stand_in_keeps_kinds_and_remote_merges_alike(client):
    from synthmi.engine import Remote
    from synthmi.schema import Schema

    rng = np.random.default_rng(4)
    df = pd.DataFrame({"female": rng.integers(0, 2, 500), "inc": rng.integers(0, 100_000, 500),
                       "c": pd.Categorical(rng.choice(["a", "b", "c"], 500))})
    out = {}
    for k, f in _frames(df).items():
        tiny, many = f.stand_in()
        s = Schema.infer(tiny)
        assert (s["female"].kind, s["c"].n_levels, many) == ("binary", 3, ["inc"]), k
        pieces = f.lazy_partitions(lambda p, o: {j: p["inc"].to_numpy()[p["female"].to_numpy() == j] for j in (0, 1)})
        (remote,) = Remote.merge_many(f, pieces, [[0, 1]], lambda xs, j: np.sort(np.concatenate(xs)), lambda j: (j,))
        out[k] = (remote.call("sum"), remote.call("size"), [x.tolist() for x in remote.fetch()])
    assert out["pandas"] == out[1] == out[4]
    assert sum(out[4][1]) == 500


@pytest.fixture(scope="module")
def fair():
    """A new user's file: statsmodels' ``fair`` survey, age on a half-year grid (17.5, 22, 27, ...), a 0/1
    integer quasi-identifier added."""
    sm = pytest.importorskip("statsmodels.api")
    df = sm.datasets.fair.load_pandas().data.sample(1000, random_state=0).reset_index(drop=True)
    df["affair"] = (df["affairs"] > 0).astype("int64")
    return df[["age", "educ", "affair", "rate_marriage", "yrs_married", "children"]]


@pytest.mark.parametrize("name", ["rubin", "dami"])
def test_continuous_qi_on_a_fractional_grid_is_drawn_on_it_alike_on_dask(client, fair, name):
    """The Dask fit found only whole-number grids: fair's ages (grid 0.5 from 17.5) were drawn off the
    data's grid (30.146645...) while the pandas path snapped them, so every age (and then educ, affair)
    differed from the pandas copies. Now the grid is detect_grid of the distinct values gathered from the
    partitions: the same grid, and the same copies bit for bit, for 1 and 3 partitions and in memory."""
    qi = ["age", "educ", "affair"]
    make = {"rubin": lambda: RubinSynthesizer(sampler="fast"),
            "dami": lambda: DAMISynthesizer(masks={"age": {"K": 3, "sigma_e": 2.0}}, sampler="fast", random_state=3)}[name]
    mem = make().fit(fair, qi)
    assert mem.supports_["age"].grid == (17.5, 0.5)
    want = mem.sample(3, random_state=7).copies
    for P in (1, 3):
        dsk = make().fit(dd.from_pandas(fair, npartitions=P), qi)
        assert dsk.supports_["age"].grid == (17.5, 0.5)
        for a, b in zip(dsk.sample(3, random_state=7).compute(), want):
            pd.testing.assert_frame_equal(a, b, check_exact=True)
            k = (a["age"].to_numpy() - 17.5) / 0.5  # on the grid 17.5 + 0.5 k
            np.testing.assert_array_equal(k, np.round(k))


def test_copies_off_any_grid_are_the_same_for_every_partitioning(client, fair):
    """With no grid the draws show every bit of the linear predictor: the BLAS product Z @ beta rounded a
    record's value by its place in a partition (7e-15 between 1 and 3 partitions); the predictor is now
    summed column by column (conditional.rowwise_product), the same for every partitioning."""
    qi = ["age", "educ", "affair"]
    got = {P: RubinSynthesizer(sampler="fast", grid=None).fit(dd.from_pandas(fair, npartitions=P), qi)
           .sample(3, random_state=7).compute() for P in (1, 3)}
    for a, b in zip(got[1], got[3]):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    # the row-wise product is Z @ B up to rounding, for a vector and a matrix of coefficients
    from synthmi.models.conditional import rowwise_product

    rng = np.random.default_rng(1)
    Z, B = rng.normal(size=(50, 7)), rng.normal(size=(7, 3))
    np.testing.assert_allclose(rowwise_product(Z, B), Z @ B, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rowwise_product(Z, B[:, 0]), Z @ B[:, 0], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(rowwise_product(Z[:13], B), rowwise_product(Z, B)[:13])


def test_aliased_predictors_are_dropped_alike_on_dask(client):
    """Issue 27 review: with female = (sex == 'Female') a quasi-identifier and sex kept, the in-memory fit
    drops female from the race and age models (aliased with sex[1], as R's lm gives it NA); the Dask fit
    dropped aliased columns only for ruled models and kept it, so the age model's intercept was 12.7
    instead of 50.2 (posterior sd 2.7e7). Now every Dask model applies the same rule to the Gram matrix
    summed over partitions: the same coefficients, and the same copies for the seed."""
    a = load_adult()[["age", "sex", "race", "income", "education"]].iloc[:2000].reset_index(drop=True)
    a["female"] = (a["sex"] == "Female").astype("int64")
    qi, keep = ["female", "race", "age"], ["income", "education", "sex"]
    kw = dict(draws=100, chains=2, progressbar=False, sampler="imh", accept_diagnostics=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mem = RubinSynthesizer(**kw).fit(a[qi + keep], qi, keep)
        dsk = RubinSynthesizer(**kw).fit(dd.from_pandas(a[qi + keep], npartitions=2), qi, keep)
        assert [c.coef_names for c in dsk.conditionals_] == [c.coef_names for c in mem.conditionals_]
        assert "female[1]" not in mem.conditionals_[2].coef_names and "sex[1]" in mem.conditionals_[2].coef_names
        fm, fd = mem.conditionals_[2].fast, dsk.conditionals_[2].fast
        # QR fit vs sums over partitions: the same estimates up to rounding
        np.testing.assert_allclose(fd.beta_hat, fm.beta_hat, rtol=1e-8)
        assert 30 < fd.beta_hat[0] < 70 and np.sqrt(fd.s2 * np.sum(fd.chol_inv ** 2, axis=1)).max() < 100
        m = mem.sample(1, random_state=5).copies[0]
        d = dsk.sample(1, random_state=5).compute()[0]
    pd.testing.assert_frame_equal(d, m, check_exact=True)


def test_from_stats_refuses_an_aliased_design_as_the_qr_fit_does():
    """An exactly aliased column (x2 = 1 - x1 next to an intercept) leaves a Cholesky pivot of X'X at
    rounding level (~1e-16 relative, above the former 1e-20 test): from_stats now uses the aliasing
    rule of the fits and refuses it, as the QR fit does."""
    from synthmi.errors import InputError
    from synthmi.models.conjugate import NormalRegressionPosterior

    rng = np.random.default_rng(0)
    x1 = rng.integers(0, 2, 200).astype(float)
    X = np.column_stack([np.ones(200), rng.normal(size=200) / 3, x1, 1 - x1 + 0.0 * x1])
    X[:, 1] = (X[:, 1] - X[:, 1].mean()) / X[:, 1].std()
    y = X[:, :3] @ np.array([1.0, 2.0, 3.0]) + rng.normal(size=200)
    with pytest.raises(InputError, match="collinear"):
        NormalRegressionPosterior.fit(X, y)
    with pytest.raises(InputError, match="collinear"):
        NormalRegressionPosterior.from_stats(X.T @ X, X.T @ y, float(y @ y), 200.0)
    ok = NormalRegressionPosterior.from_stats(X[:, :3].T @ X[:, :3], X[:, :3].T @ y, float(y @ y), 200.0)
    np.testing.assert_allclose(ok.beta_hat, NormalRegressionPosterior.fit(X[:, :3], y).beta_hat, rtol=1e-10)


def test_spec_masks_and_visit_sequence_apply_on_dask_and_a_refit_forgets_them(client, data):
    """Issue 27 review: DAMISynthesizer().fit(a, spec_with_masks) gave masks_ = ['age'] in memory and []
    on Dask (plain Rubin MI released as if masked): the Dask branch never set spec_, and a spec_ left by an
    earlier in-memory fit steered a later Dask fit. Now spec_ is set on Dask as in memory (the spec, or the
    one the roles stand for), so the spec's masks and visit sequence apply and the copies are the same."""
    import dataclasses

    from synthmi.errors import InputTypeError
    from synthmi.spec import ReleaseSpec

    s = ReleaseSpec.draft(data, quasi_identifiers=QI)
    s = dataclasses.replace(s, masks={"age": {"K": 3, "sigma_e": 5.0}}, visit_sequence=["race", "age", "female"])
    kw = dict(random_state=7, sampler="fast", progressbar=False)
    mem = DAMISynthesizer(**kw).fit(data, s)
    want = mem.sample(2, random_state=3).copies
    dsk = DAMISynthesizer(**kw).fit(dd.from_pandas(data, npartitions=2), s)
    assert list(mem.masks_) == list(dsk.masks_) == ["age"] and dsk.spec_ == mem.spec_
    assert dsk.order_ == mem.order_ == ["race", "age", "female"]
    for a, b in zip(dsk.sample(2, random_state=3).compute(), want):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    # a refit by roles forgets the earlier spec: no masks, the default order, the spec the roles stand for
    with pytest.warns(UserWarning, match="has no masks"):
        mem.fit(dd.from_pandas(data, npartitions=2), QI, KEEP)
    fresh = RubinSynthesizer(sampler="fast").fit(data, QI, KEEP)
    assert mem.masks_ == {} and mem.order_ == QI and mem.spec_ == fresh.spec_
    # a spec's per-variable method is not fitted partition by partition: refused, not ignored
    with pytest.raises(InputTypeError, match="spec's model"):
        RubinSynthesizer(sampler="fast").fit(dd.from_pandas(data, npartitions=2),
                                             dataclasses.replace(s, models={"age": {"method": "cart"}}))


@pytest.mark.parametrize("bucketed", [False, True])
def test_categorical_priors_are_the_same_on_pandas_and_dask(client, monkeypatch, bucketed):
    """Issue 29 item 6's default prior (glm.default_prior_sd: 10 on the column named '(Intercept)', 2.5 on
    every other) is resolved from each model's design names on both engines: the same names, the same
    per-column sds, for a binary logit, a multinomial logit and an ordered logit (no intercept column:
    2.5 on every coefficient, 10 on the cutpoints), gathered on the client or left in buckets; and the
    override prior_sd=3 is the scalar 3 on both."""
    import synthmi.models.glm as glm

    if bucketed:
        monkeypatch.setattr(glm, "GROUPED_ON_CLIENT_MAX", 0)
    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({
        "g": pd.Categorical(rng.choice(["a", "b"], n)),
        "z": rng.normal(50.0, 7.0, n),
        "y": pd.Categorical(rng.choice(["u", "v"], n)),
        "r": pd.Categorical(rng.choice(["p", "q", "s"], n)),
        "o": pd.Categorical(rng.choice(["lo", "mid", "hi"], n), categories=["lo", "mid", "hi"], ordered=True),
    })
    kw = dict(draws=100, chains=2, progressbar=False, sampler="imh", accept_diagnostics=True)
    for prior_sd in (None, 3.0):
        mem = RubinSynthesizer(prior_sd=prior_sd, **kw).fit(df, ["y", "r", "o"], ["g", "z"])
        dsk = RubinSynthesizer(prior_sd=prior_sd, **kw).fit(dd.from_pandas(df, npartitions=3), ["y", "r", "o"], ["g", "z"])
        fams = []
        for a, b in zip(mem.conditionals_, dsk.conditionals_):
            assert a.coef_names == b.coef_names
            assert isinstance(b.fast, glm.BucketedCategoricalModel) == bucketed
            fams.append(a.family)
            if prior_sd is None:
                want = [10.0 if nm == "(Intercept)" else 2.5 for nm in a.coef_names]
                np.testing.assert_array_equal(a.fast.prior_sd, want)
                np.testing.assert_array_equal(b.fast.prior_sd, want)
                assert ("(Intercept)" in a.coef_names) == (a.family != "ologit")
            else:
                assert a.fast.prior_sd == b.fast.prior_sd == 3.0
            # the posterior each engine samples is the same function of theta
            th = a.fast.initial() + 0.1
            assert b.fast.log_post(th[None])[0] == pytest.approx(a.fast.log_post(th[None])[0], rel=1e-10)
        assert sorted(fams) == ["logit", "logit", "ologit"]
