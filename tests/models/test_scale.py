"""Dask paths of the models (through synthmi.engine) against the in-memory functions on Adult, on a small threaded LocalCluster.

What must hold (issue 16): the fitted posterior equals the in-memory one to 1e-8
(relative), copies are identical for 1 / 4 / 16 partitions and equal the in-memory
copies, identity risk, risk subgroups, one- and two-way tables and DPSyn's marginal
counts before noise equal the in-memory results exactly.
"""
import os
import warnings

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from synthmi.data import load_adult  # noqa: E402
from synthmi.evaluation import reidentification_risk  # noqa: E402
from synthmi.models.dami import DAMISynthesizer  # noqa: E402
from synthmi.models.rubin import RubinSynthesizer  # noqa: E402
from synthmi.engine import canonical_sum, partition_offsets  # noqa: E402
from synthmi.models.glm import BucketedCategoricalModel  # noqa: E402

QI = ["age", "sex", "race", "education"]
KEEP = ["income", "hours_per_week"]
PARTS = (1, 4, 16)
MASKS = {"age": {"K": 3, "sigma_e": 5.0}, "sex": {"p": 0.9}}


# short chains released with accept_diagnostics=True warn that they are flagged; expected here
pytestmark = pytest.mark.filterwarnings("ignore:.*flagged as unconverged:RuntimeWarning")


@pytest.fixture(scope="module")
def adult():
    return load_adult()[QI + KEEP].iloc[:3000].reset_index(drop=True)


def _dami(**kw):
    # 100 draws per chain keep these equality tests quick; below the release thresholds of
    # synthmi.diagnostics (bulk ESS ~10-30), so the copies are accepted and flagged as unconverged.
    # sampler="imh": a Dask fit with many grouped rows has no HMC switch (synthmi.models.glm), so in-memory
    # copies equal the partitioned ones under independence MH
    kw.setdefault("accept_diagnostics", True)
    return DAMISynthesizer(masks=MASKS, random_state=7, draws=100, chains=2, progressbar=False, sampler="imh", **kw)


@pytest.fixture(scope="module")
def fitted(client, adult):
    """DA-MI fitted in memory and on 1 / 4 / 16 partitions; two copies each (seed 11)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # short chains: r_hat warnings are beside the point
        mem = _dami().fit(adult, QI, KEEP)
        mem_copies = mem.sample(2, random_state=11).copies
        out = {}
        for P in PARTS:
            s = _dami().fit(dd.from_pandas(adult, npartitions=P), QI, KEEP)
            out[P] = (s, s.sample(2, random_state=11))
    # posterior summaries computed once (Newton modes are the costly part)
    params = {"mem": [_params(c) for c in mem.conditionals_]}
    params.update({P: [_params(c) for c in out[P][0].conditionals_] for P in PARTS})
    return mem, mem_copies, out, params


def _params(cond):
    if isinstance(cond.fast, BucketedCategoricalModel) or cond.family != "normal":
        mode, cov = cond.fast.mode()
        return {"mode": mode, "cov": cov}
    f = cond.fast
    return {"beta_hat": f.beta_hat, "chol_inv": f.chol_inv, "s2": np.array(f.s2)}


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


@pytest.mark.slow
def test_posterior_equals_in_memory_to_1e8(fitted):
    mem, _, out, params = fitted
    for P in PARTS:
        assert [c.family for c in out[P][0].conditionals_] == ["normal", "logit", "logit", "ologit"]
        for c, r, got in zip(mem.conditionals_, params["mem"], params[P]):
            for k in r:
                # summation order only: observed differences are ~1e-12
                assert _rel(got[k], r[k]) < 1e-8, (c.column, k, P)


@pytest.mark.slow
def test_posterior_is_bitwise_partition_invariant(fitted):
    params = fitted[3]
    for P in (4, 16):
        for r, got in zip(params[1], params[P]):
            for k, v in got.items():
                np.testing.assert_array_equal(v, r[k])


def test_probit_and_oprobit_posteriors_equal_in_memory(client, adult):
    kw = dict(binary_link="probit", ordinal_link="probit", draws=50, progressbar=False)
    mem = RubinSynthesizer(**kw).fit(adult, ["sex", "education"], ["income", "age"])
    dsk = RubinSynthesizer(**kw).fit(dd.from_pandas(adult[["sex", "education", "income", "age"]], npartitions=5),
                                     ["sex", "education"], ["income", "age"])
    assert [c.family for c in dsk.conditionals_] == ["probit", "oprobit"]
    for a, b in zip(mem.conditionals_, dsk.conditionals_):
        pa, pb = _params(a), _params(b)
        for k in pa:
            assert _rel(pb[k], pa[k]) < 1e-8


@pytest.mark.slow
def test_copies_identical_across_partitions_and_to_pandas(fitted):
    _, mem_copies, out, _ = fitted
    got = {P: out[P][1].compute() for P in PARTS}
    for P in PARTS:
        for a, b in zip(got[P], mem_copies):
            pd.testing.assert_frame_equal(a, b, check_exact=True)
            np.testing.assert_array_equal(pd.util.hash_pandas_object(a).to_numpy(),
                                          pd.util.hash_pandas_object(b).to_numpy())
    # and the copies are synthetic: the masked age differs from the original in most rows
    assert (got[4][0]["age"] != fitted[0].data_["age"]).mean() > 0.5


@pytest.mark.slow
def test_parquet_copies_written_by_partition_are_identical(fitted, tmp_path):
    out = fitted[2]
    frames = {}
    for P in (4, 16):
        d = str(tmp_path / f"p{P}")
        meta = out[P][1].to_parquet(d)
        assert meta["n_partitions"] == P and meta["n_records"] == 3000
        assert len(os.listdir(os.path.join(d, "copy_01"))) == P
        frames[P] = [pd.read_parquet(os.path.join(d, f"copy_{i:02d}")) for i in (1, 2)]
        with pytest.raises(FileExistsError, match="already exists"):
            out[P][1].to_parquet(d)
    for a, b in zip(frames[4], frames[16]):
        pd.testing.assert_frame_equal(a, b, check_exact=True)


@pytest.mark.slow
def test_w_tilde_reuse_matches_in_memory(client, adult):
    small = adult.iloc[:1500]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mem = _dami(w_tilde="reuse").fit(small, QI, KEEP).sample(1, random_state=3).copies[0]
        dsk = _dami(w_tilde="reuse").fit(dd.from_pandas(small, npartitions=3), QI, KEEP).sample(1, random_state=3)
    pd.testing.assert_frame_equal(dsk.compute()[0], mem, check_exact=True)


def test_identity_risk_of_dask_copies(fitted, adult):
    _, mem_copies, out, _ = fitted
    ref = reidentification_risk(adult, mem_copies, QI, tolerance={"age": 1})
    r = reidentification_risk(dd.from_pandas(adult, npartitions=4), out[4][1], QI, tolerance={"age": 1})
    rec = r.records.compute().sort_values("position")
    np.testing.assert_array_equal(rec["risk"].to_numpy(), ref.records["risk"].to_numpy())


def test_canonical_sum_is_partition_invariant_and_correct(client):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(5000) * 10.0 ** rng.integers(-8, 8, size=5000)
    df = pd.DataFrame({"x": x})
    ref = None
    for P in (1, 2, 3, 7, 16, 50):
        ddf = dd.from_pandas(df, npartitions=P)
        (s,) = canonical_sum(ddf, partition_offsets(ddf), lambda p: (p["x"].to_numpy().sum(),), block=64, sup=4)
        ref = s if ref is None else ref
        assert s == ref  # bit for bit, whatever the partitioning (partitions smaller than a block included)
    import math

    assert ref == pytest.approx(math.fsum(x), rel=1e-9)
    ints = pd.DataFrame({"x": np.arange(1, 1001, dtype=float)})
    ddf = dd.from_pandas(ints, npartitions=9)
    assert canonical_sum(ddf, partition_offsets(ddf), lambda p: (p["x"].sum(),), block=16, sup=2)[0] == 500500.0


def test_models_without_a_dask_path_refuse_clearly(client, adult):
    from synthmi.models.cart import CartSynthesizer
    from synthmi.models.copula import GaussianCopula

    ddf = dd.from_pandas(adult, npartitions=2)
    with pytest.raises(TypeError, match="does not accept a dask DataFrame: NUTS"):
        RubinSynthesizer(sampler="nuts").fit(ddf, QI, KEEP)
    with pytest.raises(TypeError, match="CartSynthesizer.fit does not accept a dask DataFrame"):
        CartSynthesizer().fit(ddf, QI, KEEP)
    with pytest.raises(TypeError, match="no Dask path"):
        GaussianCopula().fit(ddf)
    with pytest.raises(TypeError, match="rank transform"):
        RubinSynthesizer(transforms={"age": "rank"}).fit(ddf, QI, KEEP)
    # point masses and weights were dropped silently on Dask: refused instead
    with pytest.raises(TypeError, match="fit with 'semicont' does not accept a dask DataFrame"):
        RubinSynthesizer().fit(ddf, QI, KEEP, semicont={"age": [17]})
    obj = dd.from_pandas(adult.astype({"sex": object}), npartitions=2)
    with pytest.raises(ValueError, match="categorize"):
        RubinSynthesizer().fit(obj, QI, KEEP)


@pytest.mark.slow
def test_make_population_is_seeded_chunk_invariant_and_adult_like(client):
    from synthmi.data.population import make_population

    a = make_population(4000, random_state=2, chunksize=4000).compute()
    b = make_population(4000, random_state=2, chunksize=999).compute()
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    c = make_population(4000, random_state=3, chunksize=4000).compute()
    assert not a.equals(c)
    adult = load_adult()
    assert list(a.dtypes) == [adult[col].dtype for col in a.columns]
    assert a["age"].between(17, 90).all() and (a["age"] % 1 == 0).all()
    # Adult: 66.8% male, 23.9% income > 50K; binomial sd at n = 4000 is 0.0075 -> 4 sd
    assert abs((a["sex"] == "Male").mean() - 0.668) < 0.03
    assert abs((a["income"] == ">50K").mean() - 0.239) < 0.03


@pytest.mark.slow
def test_cli_engine_dask_writes_parquet_copies_equal_to_the_api(client, adult, tmp_path, capsys):
    from synthmi.cli import main

    src = tmp_path / "in.parquet"
    small = adult.iloc[:1200].astype({"sex": str})  # a text column, as an exported file would have
    small.to_parquet(src, index=False)
    out = tmp_path / "out"
    args = ["synthesize", "--data", str(src), "--engine", "dask", "--qi", "age,sex", "--keep", "income",
            "--method", "rubin", "--m", "2", "--seed", "5", "--param", "draws=60", "--out", str(out), "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert main(args) == 0
    got = pd.read_parquet(out / "copy_02")
    assert list(got.columns) == ["age", "sex", "income"] and len(got) == 1200
    ref = dd.read_parquet(str(src))[["age", "sex", "income"]].categorize(columns=["sex", "income"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        api = RubinSynthesizer(draws=60, progressbar=False).fit(ref, ["age", "sex"], ["income"]).sample(2, random_state=5)
    as_obj = {"sex": object, "income": object}  # Parquet round trip stores levels as strings
    pd.testing.assert_frame_equal(got.astype(as_obj), api.compute()[1].astype(as_obj), check_exact=True)
    capsys.readouterr()
    assert main(args) == 1
    assert "already holds output" in capsys.readouterr().err
    assert main(args[:3] + ["--scheduler", "tcp://127.0.0.1:1"] + args[5:-3] + ["--out", str(tmp_path / "o2"), "--quiet"]) == 1
    assert "'--scheduler' option is for --engine dask" in capsys.readouterr().err


def test_dask_release_fails_closed_like_in_memory(fitted, client, adult, tmp_path, capsys):
    """A sampler that fails the convergence check gives no Dask copies (as in memory) unless accepted."""
    import copy

    from synthmi.cli import main
    from synthmi.diagnostics import DiagnosticsFailed

    mem, _, out, _ = fitted
    # 2 chains x 100 draws: a bulk ESS of 2,000 is out of reach, so every column fails for certain
    strict = {"accept_diagnostics": False, "ess_min": 2000.0}
    mem_s, dask_s = copy.copy(mem).set_params(**strict), copy.copy(out[4][0]).set_params(**strict)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(DiagnosticsFailed) as e_mem:
            mem_s.sample(2, random_state=11)
        with pytest.raises(DiagnosticsFailed, match="ess_min=2000") as e_dask:
            dask_s.sample(2, random_state=11)
    # the MCMC-sampled conditionals fail (age's normal posterior is drawn exactly, with no chain to check)
    assert list(e_dask.value.failures.index) == list(e_mem.value.failures.index) == ["sex", "race", "education"]
    # accepted: the copies come with the failed check recorded, in memory and in metadata.json
    dask_s.set_params(accept_diagnostics=True)
    with pytest.warns(RuntimeWarning, match="flagged as unconverged"):
        lazy = dask_s.sample(2, random_state=11)
    assert lazy.diagnostics_check["passed"] is False and lazy.diagnostics_check["accepted"] is True
    assert sorted(lazy.diagnostics_check["failures"]) == ["education", "race", "sex"]
    meta = lazy.to_parquet(str(tmp_path / "accepted"))
    assert meta["diagnostics_check"]["accepted"] is True and meta["diagnostics_check"]["ess_min"] == 2000.0
    # the command line: non-zero exit, the figures named, nothing written
    src = tmp_path / "in.parquet"
    adult.iloc[:1200].to_parquet(src, index=False)
    dest = tmp_path / "refused"
    args = ["synthesize", "--data", str(src), "--engine", "dask", "--qi", "age,sex", "--keep", "income",
            "--method", "rubin", "--m", "2", "--seed", "5", "--param", "draws=60", "--ess-min", "100000",
            "--out", str(dest), "--quiet"]
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert main(args) != 0
    err = capsys.readouterr().err
    assert "--accept-diagnostics" in err and "'sex'" in err and "--ess-min 100000" in err
    assert not dest.exists() or not any(dest.rglob("*.parquet"))


@pytest.mark.slow
def test_structural_rule_fits_and_draws_as_in_memory(client, adult):
    """A rule on a quasi-identifier conditioned on a kept column (race is 'White' where income is
    '>50K'): the race model is fitted on the free rows only, where income's dummy is constant and
    dropped (pivoted QR of the Gram matrix summed over partitions, as in memory); posterior to 1e-8,
    copies identical to the in-memory ones for 1 and 4 partitions, and the rule holds in every copy."""
    df = adult.copy()
    rich = (df["income"] == ">50K").to_numpy()
    df.loc[rich, "race"] = "White"
    rules = {"race": {"rule": "income == '>50K'", "value": "White"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mem = _dami().fit(df, QI, KEEP, rules=rules)
        mem_copies = mem.sample(2, random_state=11).copies
        race = next(c for c in mem.conditionals_ if c.column == "race")
        assert race.rule is not None and not any(n.startswith("income") for n in race.coef_names)
        # the free rows only: the grouped counts add up to the rows with income <= 50K
        assert race.fast.Y.sum() == (~rich).sum()
        for P in (1, 4):
            s = _dami().fit(dd.from_pandas(df, npartitions=P), QI, KEEP, rules=rules)
            got = s.sample(2, random_state=11).compute()
            for a, b in zip(mem.conditionals_, s.conditionals_):
                assert a.coef_names == b.coef_names
                pa, pb = _params(a), _params(b)
                for k in pa:
                    assert _rel(pb[k], pa[k]) < 1e-8, (a.column, k, P)
            for a, b in zip(got, mem_copies):
                pd.testing.assert_frame_equal(a, b, check_exact=True)
                assert (a.loc[rich, "race"] == "White").all()
    with pytest.raises(TypeError, match="setting a missing value"):
        _dami().fit(dd.from_pandas(df, npartitions=2), QI, KEEP, rules={"race": {"rule": "income == '>50K'"}})
    with pytest.raises(TypeError, match="condition reads kept columns alone"):
        _dami().fit(dd.from_pandas(df, npartitions=2), QI, KEEP, rules={"race": {"rule": "sex == 'Male'", "value": "White"}})


def test_integer_column_with_many_values_infers_on_dask():
    """An integer column with more than 64 distinct values (an income in dollars read from Parquet)
    raised "Trying to coerce float values to integers" in the Dask schema inference."""
    import dask.dataframe as dd

    from synthmi.engine import Frame
    from synthmi.models.base import infer_frame_schema

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"inc": rng.integers(0, 100_000, 500), "k": rng.integers(1, 4, 500)})
    s = infer_frame_schema(Frame(dd.from_pandas(df, npartitions=3)))
    assert s["inc"].kind in ("continuous", "integer")


def test_cli_dask_refuses_options_it_cannot_honour(tmp_path, capsys):
    from synthmi.cli import main

    src = tmp_path / "d.parquet"
    pd.DataFrame({"a": np.arange(50.0), "w": np.ones(50)}).to_parquet(src)
    rc = main(["synthesize", "--data", str(src), "--engine", "dask", "--qi", "a", "--weights", "w",
               "--method", "rubin", "--m", "2", "--out", str(tmp_path / "o")])
    assert rc != 0
    assert "'--weights' option is not available with --engine dask" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_dask_aliased_kept_column_is_dropped_as_in_memory():
    """A kept column aliased with another (z2 = 2 z) made the Dask normal model singular (an error naming
    the column); in memory it is dropped, as R's lm gives it NA. The Dask fit now applies the same rule
    (models/rubin.py, _drop_aliased_gram), so both fit y on the intercept and z."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=60)
    df = pd.DataFrame({"z": z, "z2": 2 * z, "y": z + rng.normal(size=60)})
    mem = RubinSynthesizer().fit(df, ["y"], ["z", "z2"])
    dsk = RubinSynthesizer().fit(dd.from_pandas(df, npartitions=2), ["y"], ["z", "z2"])
    assert dsk.coefficient_names() == mem.coefficient_names() == {"y": ["(Intercept)", "z"]}
    np.testing.assert_allclose(dsk.conditionals_[0].fast.beta_hat, mem.conditionals_[0].fast.beta_hat, rtol=1e-10)
