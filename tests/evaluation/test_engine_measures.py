"""The measures on pandas and on Dask through one engine (synthmi.engine; issues 16 and 27).

Each evaluation function is written once and accepts a pandas or a Dask frame (a
pandas frame is the one-partition case). What must hold: identity risk, risk
subgroups, attribute disclosure, one- and two-way tables and DPSyn's marginal
counts before noise are the same for pandas and for every partitioning (exactly
for per-record values and counts; sums of floats to summation order, rel 1e-12);
the logit pMSE equals the in-memory fit to 1e-9 (Newton on sums over partitions).
Moved from tests/models/test_scale.py with every assertion kept.
"""
import warnings

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from synthmi.data import load_adult  # noqa: E402
from synthmi.evaluation import reidentification_risk, risk_subgroups, utility_tables  # noqa: E402
from synthmi.evaluation.attribute_disclosure import attribute_disclosure  # noqa: E402
from synthmi.evaluation.pmse import pmse, quantile_from_counts  # noqa: E402

QI = ["age", "sex", "race", "education"]
KEEP = ["income", "hours_per_week"]


@pytest.fixture(scope="module")
def adult():
    return load_adult()[QI + KEEP].iloc[:3000].reset_index(drop=True)


def _perturbed(adult, k):
    rng = np.random.default_rng(k)
    c = adult.copy()
    idx = rng.random(len(c)) < 0.5
    c.loc[idx, "age"] = c["age"].to_numpy()[rng.permutation(len(c))][idx]
    c.loc[rng.random(len(c)) < 0.3, "race"] = "White"
    return c


@pytest.mark.parametrize("P,B", [(1, 1), (4, 3), (16, 7)])
def test_identity_risk_equals_in_memory_exactly(client, adult, P, B):
    copies = [_perturbed(adult, k) for k in range(3)]
    mem = reidentification_risk(adult, copies, QI, tolerance={"age": 2}, by="income")
    r = reidentification_risk(dd.from_pandas(adult, npartitions=P),
                              [dd.from_pandas(c, npartitions=max(1, P // 2)) for c in copies],
                              QI, tolerance={"age": 2}, by="income", n_buckets=B)
    rec = r.records.compute().sort_values("position")
    np.testing.assert_array_equal(rec["position"].to_numpy(), np.arange(len(adult)))
    for col in mem.records.columns:
        np.testing.assert_array_equal(rec[col].to_numpy(), mem.records[col].to_numpy())
    for k, v in mem.figures.items():  # counts exact; sums of I_i to summation order
        assert r.figures[k] == pytest.approx(v, rel=1e-12), k
    pd.testing.assert_frame_equal(r.per_copy, mem.per_copy, rtol=1e-12)
    pd.testing.assert_frame_equal(r.by_group, mem.by_group, rtol=1e-12, check_index_type=False)
    assert mem.figures["expected_matches"] > 1  # the test compares something


def test_risk_subgroups_equal_in_memory(client, adult):
    ref = risk_subgroups(adult, QI, k0=3, tolerance=1)
    for P, B in ((1, 1), (5, 3)):
        s = risk_subgroups(dd.from_pandas(adult, npartitions=P), QI, k0=3, tolerance=1, n_buckets=B)
        t = s.labels.compute().sort_values("position")
        np.testing.assert_array_equal(t["risk_subgroup"].to_numpy(), ref.labels.cat.codes.to_numpy())
        np.testing.assert_array_equal(t["n_close"].to_numpy(), ref.n_close.to_numpy())
        np.testing.assert_array_equal(t["n_same_categorical"].to_numpy(), ref.n_same_categorical.to_numpy())
        pd.testing.assert_series_equal(s.counts, ref.counts)


def test_utility_tables_equal_in_memory_exactly(client, adult):
    # hours_per_week has a point mass at 40 (its own cell); "zeros" is 85% zeros
    # (randhie's physlm: one cell before numeric_table_edges), copies move some of them
    rng = np.random.default_rng(5)
    a = adult.assign(zeros=np.where(rng.random(len(adult)) < 0.85, 0.0, rng.integers(1, 30, len(adult))))
    copies = []
    for k in range(2):
        c = _perturbed(a, k)
        c.loc[rng.random(len(c)) < 0.05, "zeros"] = rng.integers(1, 30)
        copies.append(c)
    ref = utility_tables(a, copies).to_frame()
    assert set(ref["way"]) == {1, 2} and len(ref) == 28
    one = ref[ref["way"] == 1].set_index("variables")
    assert one.loc["zeros", "df"] >= 2 and np.isfinite(one.loc["zeros", "s_pmse"])
    for P in (1, 16):
        got = utility_tables(dd.from_pandas(a, npartitions=P), [dd.from_pandas(c, npartitions=3) for c in copies]).to_frame()
        pd.testing.assert_frame_equal(got, ref, check_exact=True)


def test_quantile_from_counts_is_numpy_nanquantile():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 40, size=997).astype(float)
    qs = np.linspace(0, 1, 6)[1:-1]
    v, c = np.unique(x, return_counts=True)
    np.testing.assert_array_equal(quantile_from_counts(v, c, qs), np.nanquantile(x, qs))


def test_logit_pmse_equals_in_memory_and_cart_states_subsample(client, adult):
    copies = [_perturbed(adult, 0)]
    v = ["age", "race", "income"]
    ref = pmse(adult, copies, variables=v)
    got = pmse(dd.from_pandas(adult, npartitions=3), [dd.from_pandas(c, npartitions=2) for c in copies], variables=v)
    np.testing.assert_array_equal(got.k, ref.k)
    np.testing.assert_allclose(got.pmse, ref.pmse, rtol=1e-9)
    np.testing.assert_allclose(got.s_pmse, ref.s_pmse, rtol=1e-9)
    cart = pmse(dd.from_pandas(adult, npartitions=3), [dd.from_pandas(c, npartitions=2) for c in copies],
                method="cart", variables=v, n_perm=1, cart_rows=1000)
    assert "subsample" in str(cart.summary()) and "of 3000 original records" in cart.notes[0]
    assert np.all(np.isfinite(cart.pmse))


def test_dpsyn_marginals_before_noise_equal_in_memory(client, adult):
    import dask

    from synthmi.data import load_domain
    from synthmi.privacy.accountant import PrivacyAccountant
    from synthmi.privacy.dpsyn import DPSynSynthesizer, _Curator, _describe_columns, resolve_domain

    domain = load_domain("adult")
    public = resolve_domain(adult, domain)
    cols = _describe_columns(adult, public, None, 16)
    codes = np.column_stack([c.encode(adult[c.name]) for c in cols])
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-6)
    mem = _Curator(codes, acc, np.random.default_rng(0))
    ddf = dd.from_pandas(adult, npartitions=7)
    dsk = _Curator.of_frame(ddf, cols, "error", acc, np.random.default_rng(0), False)
    sizes = [c.size for c in cols]
    maps = [np.arange(s) for s in sizes]
    for attrs in [(0,), (3,), (0, 1), (2, 5), (1, 3)]:
        shape = tuple(sizes[a] for a in attrs)
        a = mem._true_counts(attrs, [maps[a] for a in attrs], shape)
        b = dsk._true_counts(attrs, [maps[a] for a in attrs], shape)
        np.testing.assert_array_equal(a, b)
        assert a.sum() == len(adult)
    # the whole release (noise, selection, GUM) is then the same for the same seed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the user-seed warning of DP releases
        a = DPSynSynthesizer(epsilon=1.0, random_state=3).fit(adult, domain=domain)
        b = DPSynSynthesizer(epsilon=1.0, random_state=3).fit(ddf, domain=domain)
    for x, y in zip(a.marginals_, b.marginals_):
        np.testing.assert_array_equal(x.table, y.table)
    assert dask.is_dask_collection(ddf)


@pytest.mark.parametrize("target,tol,ttol", [("income", {"age": 2}, None), ("hours_per_week", None, 5.0)])
def test_attribute_disclosure_equals_in_memory(client, adult, target, tol, ttol):
    rng = np.random.default_rng(4)
    copies = []
    for k in range(2):
        c = _perturbed(adult, k)
        c.loc[rng.random(len(c)) < 0.3, "income"] = ">50K"
        copies.append(c.iloc[: 2500 + 200 * k])  # copies need not be row-aligned
    qi = ["age", "sex", "race"]
    ref = attribute_disclosure(adult, copies, qi, target, tolerance=tol, target_tolerance=ttol)
    got = attribute_disclosure(dd.from_pandas(adult, npartitions=4), [dd.from_pandas(c, npartitions=2) for c in copies],
                               qi, target, tolerance=tol, target_tolerance=ttol, n_buckets=3)
    for col in ref.records.columns:
        np.testing.assert_array_equal(got.records[col].to_numpy(), ref.records[col].to_numpy())
    pd.testing.assert_frame_equal(got.per_copy[ref.per_copy.columns], ref.per_copy, rtol=1e-12)
    for k, v in ref.figures.items():
        assert got.figures[k] == pytest.approx(v, rel=1e-12, nan_ok=True), k
    assert ref.figures["DiSCO"] > 0 and ref.figures["expected_correct_attributions"] > 1


@pytest.mark.parametrize("P,B", [(1, 1), (4, 3)])
def test_attribute_disclosure_grouped_keys_and_target_equal_in_memory(client, adult, P, B):
    """synthpop's ngroups_keys / ngroups_target on Dask (refused before: "grouping needs the pooled
    quantiles"): the pooled type-7 quantiles come from exact value counts, so the groups, and every
    figure, are those of the in-memory frames for every partitioning. The copies' ages are smoothed
    (+ N(0, 0.3)), so the exact key tables share no key (iS 0) and the grouping changes the figures."""
    rng = np.random.default_rng(8)
    copies = []
    for k in range(2):
        c = _perturbed(adult, k).iloc[: 2600 + 150 * k].copy()
        c["age"] = c["age"] + rng.normal(0, 0.3, len(c))
        c["hours_per_week"] = c["hours_per_week"] + rng.integers(-2, 3, len(c))
        copies.append(c)
    qi = ["age", "sex", "race"]
    kw = dict(ngroups_keys=5, ngroups_target=4, tolerance={"age": 1})
    ref = attribute_disclosure(adult, copies, qi, "hours_per_week", **kw)
    got = attribute_disclosure(dd.from_pandas(adult, npartitions=P),
                               [dd.from_pandas(c, npartitions=max(1, P // 2)) for c in copies],
                               qi, "hours_per_week", n_buckets=B, **kw)
    assert got.settings["key_groups"] == ref.settings["key_groups"]
    assert ref.settings["key_groups"]["age"]["groups"] == 5 and ref.settings["key_groups"]["hours_per_week"]["groups"] == 4
    for col in ref.records.columns:
        np.testing.assert_array_equal(got.records[col].to_numpy(), ref.records[col].to_numpy())
    pd.testing.assert_frame_equal(got.per_copy[ref.per_copy.columns], ref.per_copy, rtol=1e-12)
    for k, v in ref.figures.items():  # counts exact; sums to summation order
        assert got.figures[k] == pytest.approx(v, rel=1e-12, nan_ok=True), k
    exact = attribute_disclosure(adult, copies, qi, "hours_per_week", tolerance={"age": 1})
    assert exact.figures["iS"] == 0.0 and ref.figures["iS"] > 0.9 and ref.figures["DCAP"] > 0.2


def test_identity_risk_of_parquet_frames_whose_column_projection_merges_files(client, adult, tmp_path):
    """Regression: dask's read_parquet merges files when only some columns are read, so the risk
    function's projection original[qis] had fewer partitions than the frame its offsets came from,
    and records of the later partitions got wrong positions (3M benchmark: 8.611 vs 8.662 in memory)."""
    cols = QI + KEEP
    data = adult[cols].reset_index(drop=True)
    rng = np.random.default_rng(7)
    copies = []
    for _ in range(2):  # partially synthetic stand-ins: ages moved by up to 3 years, some sexes swapped
        c = data.copy()
        c["age"] = np.clip(c["age"] + rng.integers(-3, 4, len(c)), 17, 90).astype(c["age"].dtype)
        flip = rng.random(len(c)) < 0.2
        c.loc[flip, "sex"] = c["sex"].sample(frac=1, random_state=1).to_numpy()[flip]
        copies.append(c)
    paths = []
    for k, f in enumerate([data] + copies):
        p = str(tmp_path / f"f{k}")
        dd.from_pandas(f, npartitions=6).to_parquet(p, write_index=False)
        paths.append(p)
    frames = [dd.read_parquet(p).astype({c: data[c].dtype for c in cols if isinstance(data[c].dtype, pd.CategoricalDtype)})
              for p in paths]
    assert len(frames[0][QI].to_delayed()) < len(frames[0].to_delayed())  # the situation of the bug
    got = reidentification_risk(frames[0], frames[1:], QI, tolerance={"age": 2})
    want = reidentification_risk(data, copies, QI, tolerance={"age": 2})
    rec = got.records.compute().sort_values("position")
    np.testing.assert_array_equal(rec["risk"].to_numpy(), want.records["risk"].to_numpy())
    assert got.figures["n_records"] == len(data)
    assert got.figures["true_match_rate"] == want.figures["true_match_rate"]


# ----------------------------------------------------------------------------- one engine (issue 27)
def _survey(n=1200, seed=3):
    """A new user's file: a 0/1 integer quasi-identifier ('female'), an integer age and a
    categorical region with missing values, a float income with missing values."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "female": rng.integers(0, 2, n),
        "age": rng.integers(18, 40, n).astype(float),
        "region": pd.Categorical(rng.choice(["n", "s", "e", "w"], n)),
        "income": np.round(rng.gamma(2.0, 1000.0, n), -2),
        "employed": rng.choice(["yes", "no"], n).astype(object),
    })
    df.loc[rng.random(n) < 0.05, "age"] = np.nan
    df.loc[rng.random(n) < 0.05, "region"] = np.nan
    df.loc[rng.random(n) < 0.05, "income"] = np.nan
    copies = []
    for k in range(2):
        c = df.copy()
        r = np.random.default_rng(100 + k)
        move = r.random(n) < 0.4
        c.loc[move, "age"] = np.clip(c.loc[move, "age"] + r.integers(-2, 3, move.sum()), 18, 39)
        flip = r.random(n) < 0.2
        c.loc[flip, "female"] = 1 - c.loc[flip, "female"]
        swap = r.random(n) < 0.3
        c.loc[swap, "income"] = c["income"].sample(frac=1, random_state=k).to_numpy()[swap]
        copies.append(c)
    return df, copies


@pytest.mark.parametrize("P", [2, 5])
def test_every_measure_is_the_same_on_pandas_and_dask_with_a_01_integer_qi(client, P):
    df, copies = _survey()
    qi = ["female", "age", "region"]
    ddf = dd.from_pandas(df, npartitions=P)
    dcopies = [dd.from_pandas(c, npartitions=P) for c in copies]

    # identity risk: per-record values and counts exact, sums to summation order (rel 1e-12)
    mem = reidentification_risk(df, copies, qi, tolerance={"age": 1}, by="region")
    got = reidentification_risk(ddf, dcopies, qi, tolerance={"age": 1}, by="region")
    assert mem.settings["categorical"] == got.settings["categorical"] == ["female", "region"]
    rec = got.records.compute().sort_values("position")
    for col in mem.records.columns:
        np.testing.assert_array_equal(rec[col].to_numpy(), mem.records[col].to_numpy())
    for k, v in mem.figures.items():
        assert got.figures[k] == pytest.approx(v, rel=1e-12, nan_ok=True), k
    pd.testing.assert_frame_equal(got.per_copy, mem.per_copy, rtol=1e-12)
    pd.testing.assert_frame_equal(got.by_group, mem.by_group, rtol=1e-12, check_index_type=False)
    assert "<missing>" in mem.by_group.index and 0 < mem.figures["expected_matches"] < len(df)
    # in memory the key shuffle is optional: 4 buckets give the same records and tables
    mem4 = reidentification_risk(df, copies, qi, tolerance={"age": 1}, by="region", n_buckets=4)
    pd.testing.assert_frame_equal(mem4.records, mem.records, check_exact=True)
    pd.testing.assert_frame_equal(mem4.by_group, mem.by_group, rtol=1e-12)

    # risk subgroups
    ref = risk_subgroups(df, qi, k0=2, tolerance={"age": 1})
    s = risk_subgroups(ddf, qi, k0=2, tolerance={"age": 1})
    t = s.labels.compute().sort_values("position")
    np.testing.assert_array_equal(t["risk_subgroup"].to_numpy(), ref.labels.cat.codes.to_numpy())
    np.testing.assert_array_equal(t["n_close"].to_numpy(), ref.n_close.to_numpy())
    pd.testing.assert_series_equal(s.counts, ref.counts)
    assert (ref.counts > 0).sum() >= 2

    # attribute disclosure of a categorical and of a continuous target
    for target, ttol in (("employed", None), ("income", 500.0)):
        a_mem = attribute_disclosure(df, copies, qi, target, tolerance={"age": 1}, target_tolerance=ttol)
        a_dsk = attribute_disclosure(ddf, dcopies, qi, target, tolerance={"age": 1}, target_tolerance=ttol)
        for col in a_mem.records.columns:
            np.testing.assert_array_equal(a_dsk.records[col].to_numpy(), a_mem.records[col].to_numpy())
        pd.testing.assert_frame_equal(a_dsk.per_copy[a_mem.per_copy.columns], a_mem.per_copy, rtol=1e-12)
        for k, v in a_mem.figures.items():
            assert a_dsk.figures[k] == pytest.approx(v, rel=1e-12, nan_ok=True), k
        a_mem4 = attribute_disclosure(df, copies, qi, target, tolerance={"age": 1}, target_tolerance=ttol, n_buckets=4)
        pd.testing.assert_frame_equal(a_mem4.records, a_mem.records, check_exact=True)

    # tables exactly; logit pMSE to 1e-9 (Newton on sums over partitions vs in memory)
    cols = ["female", "age", "region", "income"]
    pd.testing.assert_frame_equal(utility_tables(ddf, dcopies, variables=cols).to_frame(),
                                  utility_tables(df, copies, variables=cols).to_frame(), check_exact=True)
    p_mem = pmse(df, copies, variables=["female", "age", "region"])
    p_dsk = pmse(ddf, dcopies, variables=["female", "age", "region"])
    np.testing.assert_array_equal(p_dsk.k, p_mem.k)
    np.testing.assert_allclose(p_dsk.pmse, p_mem.pmse, rtol=1e-9)


def test_measures_and_the_dp_curator_reach_dask_only_through_the_engine():
    """Structural (issue 27): the measures and DPSyn's curator are written once against
    synthmi.engine; none imports dask itself, and the Dask twins of scale/ are gone."""
    import ast
    import importlib.util
    from pathlib import Path

    import synthmi

    root = Path(synthmi.__file__).parent
    files = sorted((root / "evaluation").glob("*.py")) + [root / "privacy" / "dpsyn.py"]
    assert len(files) > 10
    for path in files:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                assert not name.split(".")[0] in ("dask", "distributed"), f"{path.name} imports {name}"
                assert "scale" not in name.split("."), f"{path.name} imports {name}"
    for gone in ("risk", "utility", "attribute", "dpsyn"):
        assert importlib.util.find_spec("synthmi") and not (root / "scale" / f"{gone}.py").exists()
