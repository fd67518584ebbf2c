"""What a DP release publishes (issue 11): the neighbour test for every DP release path,
declared public domains, and no seed anywhere."""
from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pytest

from synthmi.cli import main
from synthmi.domain import PublicDomain
from synthmi.privacy import DPKMeans, DPSynSynthesizer, PrivateBetaPosterior

from _neighbour import CONTINUOUS_SPANS, Case, assert_alike, check_neighbours, remove_record, run_python, substitute_record

DOMAIN = {
    "columns": {
        "region": {"kind": "categorical", "levels": ["North", "South", "East", "West", "Atlantis", "Other"],
                   "other": "Other"},
        "sex": {"kind": "binary", "levels": ["F", "M"], "missing": False},
        "age": {"kind": "integer", "bounds": [18, 90], "missing": False},
        "income": {"kind": "continuous", "bounds": [0, 200000], "point_masses": [0], "missing": False},
        "smoker": {"kind": "binary", "levels": [0, 1], "missing": False},
    },
    "source": "test survey documentation",
}


def survey(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """A small survey whose record 0 is special: the only 'Atlantis' resident, the oldest
    person and the highest income -- exactly what a leaky release would show."""
    rng = np.random.default_rng(seed)
    region = rng.choice(["North", "South", "East", "West"], n, p=[0.4, 0.3, 0.2, 0.1]).astype(object)
    region[rng.random(n) < 0.07] = None  # item non-response
    age = rng.integers(18, 80, n)
    income = np.where(rng.random(n) < 0.4, 0.0, np.round(rng.gamma(2.0, 15000.0, n), 2))
    df = pd.DataFrame({
        "region": region, "sex": rng.choice(["F", "M"], n), "age": age,
        "income": np.minimum(income, 150000.0), "smoker": (rng.random(n) < 0.3).astype(int),
    })
    df.loc[0, ["region", "age", "income"]] = ["Atlantis", 90, 199000.0]
    return df


@pytest.fixture
def domain_file(tmp_path):
    path = tmp_path / "survey.domain.json"
    path.write_text(json.dumps(DOMAIN))
    return path


# ------------------------------------------------------------------ the release paths
def _dpsyn_python(domain_path):
    def run(df, out):
        s = DPSynSynthesizer(epsilon=1.0, delta=1e-9).fit(df, domain=domain_path)
        s.sample(2).to_dir(out)
        return repr(s) + "\n" + s.summary()

    return run


def _kmeans_python(domain_path):
    def run(df, out):
        km = DPKMeans(n_clusters=2, epsilon=1.0, n_iter=3, clip_norm=2.0).fit(
            df[["age", "income"]], domain=PublicDomain.from_json(domain_path).select(["age", "income"])
        )
        payload = {"centres_shape": list(np.shape(km.cluster_centers_)), "privacy": km.privacy_statement(),
                   "centres": km.cluster_centers_.tolist()}
        (out / "centres.json").write_text(json.dumps(payload))
        return repr(km)

    return run


def _beta_python(df, out):
    res = PrivateBetaPosterior(epsilon=1.0, mechanism="laplace").fit(df["smoker"].to_numpy()).sample()
    (out / "posterior.json").write_text(res.to_frame().iloc[0].to_json())
    return str(res.summary())


def cases(domain_path) -> dict[str, Case]:
    """Every DP release path; a new method is one more entry."""
    return {
        "dpsyn": Case(
            "dpsyn",
            cli=lambda data, out: ["synthesize", "--data", str(data), "--qi", "region,sex,age", "--keep", "income,smoker",
                                   "--method", "dpsyn", "--param", "epsilon=1", "--domain", str(domain_path),
                                   "--m", "2", "--out", str(out)],
            python=_dpsyn_python(domain_path),
            neighbour=remove_record(0),
            noised_json={"metadata.json": ["diagnostics.n_two_way", "diagnostics.suppressed_levels",
                                           "diagnostics.suppressed_missing", "diagnostics.pooled_levels",
                                           "diagnostics.continuous.*.*"]},
            noised_text=[r"noisy record count [\d.]+", *CONTINUOUS_SPANS, r"levels in the joint marginals: .*",
                         r"\d+ accounted releases", r"two-way marginals measured: \d+; three-way: \d+",
                         r"rare levels: .*", r"(?<=missing values: )(?:kept in every column whose domain allows them\.|the noisy count .*)"],
        ),
        "kmeans": Case(
            "kmeans",
            cli=lambda data, out: ["dp", "kmeans", "--data", str(data), "--columns", "age,income", "--k", "2",
                                   "--eps", "1", "--iters", "3", "--domain", str(domain_path),
                                   "--out", str(out / "centres.json")],
            python=_kmeans_python(domain_path),
            neighbour=remove_record(0),
            noised_json={"centres.json": ["centres", "noisy_counts"]},
            noised_text=[r"centre \d+: .*"],
        ),
        "beta": Case(
            "beta",
            cli=lambda data, out: ["dp", "bayes", "--data", str(data), "--column", "smoker", "--domain",
                                   str(domain_path), "--eps", "1", "--mechanism", "global",
                                   "--out", str(out / "posterior.json")],
            python=_beta_python,
            # its guarantee is for substitution neighbours (n is public)
            neighbour=substitute_record(0, "smoker", 1),
            noised_json={"posterior.json": ["alpha", "beta", "mean"]},
            noised_text=[r"released: Beta\(.*"],
        ),
    }


@pytest.mark.parametrize("via", ["cli", "python"])
@pytest.mark.parametrize("method", ["dpsyn", "kmeans", "beta"])
def test_neighbour_releases_differ_only_in_noised_content(method, via, tmp_path, domain_file):
    df = survey()
    if method == "beta":
        df.loc[0, "smoker"] = 0  # so that the substitution changes the count
    a, b = check_neighbours(cases(domain_file)[method], df, tmp_path, via)
    assert a.returncode == 0, a.stderr
    assert a.files  # something was released
    if method == "dpsyn":
        # the released level set is the declared one, with or without the Atlantis record
        files = sorted(a.files)
        assert files == ["copy_01.csv", "copy_02.csv", "metadata.json"]
        meta = json.loads(a.files["metadata.json"])
        if via == "cli":  # the CLI conforms the CSV to the declared domain (Python keeps the caller's object dtype)
            assert meta["dtypes"]["region"]["categories"] == DOMAIN["columns"]["region"]["levels"]
        assert meta["structure"]["domain"]["columns"]["region"]["levels"] == DOMAIN["columns"]["region"]["levels"]


def test_neighbour_test_catches_leaks(tmp_path):
    """Positive controls: levels read from the data, a record count in the log, a seed."""

    def levels_seen(df, out):
        (out / "meta.json").write_text(json.dumps({"levels": sorted(df["region"].dropna().unique())}))
        return ""

    def count_logged(df, out):
        return f"read {len(df)} rows"

    def max_in_metadata(df, out):
        (out / "meta.json").write_text(json.dumps({"bounds": [0, float(df["income"].max())]}))
        return ""

    for i, fn in enumerate((levels_seen, count_logged, max_in_metadata)):
        case = Case(f"leak{i}", cli=None, python=fn, neighbour=remove_record(0))
        with pytest.raises(AssertionError):
            check_neighbours(case, survey(), tmp_path / f"c{i}", "python")
    # an error that shows a count differs between neighbours too
    def counted_error(df, out):
        raise ValueError(f"Column 'region' has {int(df['region'].isna().sum()) + len(df)} problems")

    case = Case("err", cli=None, python=counted_error, neighbour=remove_record(0))
    a = run_python(case, survey(), tmp_path / "e1")
    b = run_python(case, remove_record(0)(survey()), tmp_path / "e2")
    with pytest.raises(AssertionError, match="stderr"):
        assert_alike(a, b, case)


def test_refusals_are_identical_on_neighbours(tmp_path, domain_file):
    """Both runs refuse with the same text: an undeclared column, on the CLI and in Python."""
    base = cases(domain_file)["dpsyn"]
    no_domain = Case("dpsyn-no-domain", cli=lambda d, o: [x for x in base.cli(d, o) if x not in ("--domain", str(domain_file))],
                     python=lambda df, out: DPSynSynthesizer().fit(df) and "", neighbour=remove_record(0))
    for via in ("cli", "python"):
        a, _ = check_neighbours(no_domain, survey(), tmp_path / via, via)
        assert a.returncode == 1
        assert "Column 'region' has no declared public domain" in a.stderr or "Columns ['region'" in a.stderr
        assert "--domain" in a.stderr


# ------------------------------------------------------------------ a level held by one record
def test_level_held_by_one_record(tmp_path, capsys):
    df = survey()
    data = tmp_path / "survey.csv"
    df.to_csv(data, index=False)
    argv = ["synthesize", "--data", str(data), "--qi", "region,sex,age", "--keep", "income,smoker",
            "--method", "dpsyn", "--m", "2", "--quiet"]
    # 1. no domain declared: refused, naming the column and the flag
    assert main(argv + ["--out", str(tmp_path / "a")]) == 1
    err = capsys.readouterr().err
    assert "Column" in err and "'region'" in err and "--domain" in err
    assert not (tmp_path / "a").exists()
    # 2. a declared domain that does not list Atlantis: an error naming only the column
    without = json.loads(json.dumps(DOMAIN))
    without["columns"]["region"]["levels"].remove("Atlantis")
    p = tmp_path / "without.json"
    p.write_text(json.dumps(without))
    assert main(argv + ["--domain", str(p), "--out", str(tmp_path / "b")]) == 1
    err = capsys.readouterr().err
    assert "Column 'region' has values outside its declared public domain" in err
    assert "Atlantis" not in err and not any(ch.isdigit() for ch in err)
    assert not (tmp_path / "b").exists()
    #    ... or, asked for, its record goes to the declared 'other' level
    assert main(argv + ["--domain", str(p), "--map-other", "--out", str(tmp_path / "b2")]) == 0
    capsys.readouterr()
    meta = json.loads((tmp_path / "b2" / "metadata.json").read_text())
    assert "Atlantis" not in meta["dtypes"]["region"]["categories"]
    assert meta["structure"]["out_of_domain"] == "other"
    #    the evaluation verbs map the original's Atlantis to 'Other' the same public way,
    #    instead of refusing copies that hold a level the original lacks
    assert main(["utility", "--original", str(data), "--synthetic", str(tmp_path / "b2"), "--quiet"]) == 0
    # a binary response: at n = 300 the DP hierarchy can keep only income's point mass at 0 in a copy (about 1 run
    # in 7 with fresh noise), and a gaussian model of a constant response is refused (tested in evaluation)
    assert main(["analyse", "--original", str(data), "--synthetic", str(tmp_path / "b2"), "--formula",
                 "smoker ~ age + region", "--family", "logit", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "region[T.Other]" in out and "Atlantis" not in out
    # 3. a declared domain that lists it: the release is made, with the declared level set
    full = tmp_path / "full.json"
    full.write_text(json.dumps(DOMAIN))
    assert main(argv + ["--domain", str(full), "--out", str(tmp_path / "c")]) == 0
    meta = json.loads((tmp_path / "c" / "metadata.json").read_text())
    assert meta["dtypes"]["region"]["categories"] == DOMAIN["columns"]["region"]["levels"]
    copy = pd.read_csv(tmp_path / "c" / "copy_1.csv" if (tmp_path / "c" / "copy_1.csv").exists()
                       else tmp_path / "c" / "copy_01.csv")
    assert set(copy["region"].dropna()) <= set(DOMAIN["columns"]["region"]["levels"])
    # integer and binary columns stay so; income stays within its public bounds
    assert (copy["age"] == np.round(copy["age"])).all() and copy["age"].between(18, 90).all()
    assert set(copy["smoker"]) <= {0, 1} and copy["income"].between(0, 200000).all()


def test_missing_values_error_carries_no_count(tmp_path, domain_file):
    df = survey()
    df.loc[:19, "sex"] = None  # 20 missing values where the domain allows none
    with pytest.raises(ValueError) as e:
        DPSynSynthesizer().fit(df, domain=domain_file)
    msg = str(e.value)
    assert "Column 'sex' has missing values" in msg and "20" not in msg


# ------------------------------------------------------------------ no seed anywhere
def _keys(obj, prefix=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield f"{prefix}{k}"
            yield from _keys(v, f"{prefix}{k}.")
    elif isinstance(obj, list):
        for v in obj:
            yield from _keys(v, prefix)


FORBIDDEN = ("seed", "random_state", "entropy")


def _assert_no_seed(text: str, seed: int | None) -> None:
    meta = json.loads(text)
    bad = [k for k in _keys(meta) if any(f in k.rsplit(".", 1)[-1].lower() for f in FORBIDDEN)]
    assert not bad, bad
    if seed is not None:
        assert str(seed) not in text


@pytest.mark.slow
@pytest.mark.parametrize("seed", [None, 98765])
def test_no_dp_release_records_a_seed(tmp_path, domain_file, seed, capsys):
    df = survey()
    data = tmp_path / "survey.csv"
    df.to_csv(data, index=False)
    extra = [] if seed is None else ["--seed", str(seed)]
    out = tmp_path / "syn"
    assert main(["synthesize", "--data", str(data), "--qi", "region,sex,age", "--keep", "income,smoker",
                 "--method", "dpsyn", "--domain", str(domain_file), "--m", "2", "--out", str(out), *extra]) == 0
    err = capsys.readouterr().err
    meta_text = (out / "metadata.json").read_text()
    _assert_no_seed(meta_text, seed)
    noise = json.loads(meta_text)["structure"]["privacy"]["noise"]
    if seed is None:
        assert "operating-system" in noise and "warning" not in err
    else:
        assert "a user seed was given (value not recorded)" in noise
        assert str(seed) not in err
        # the CLI says once that the seed undoes the privacy
        assert err.count("anyone who learns the seed can undo the privacy") == 1
    # the other DP verbs' outputs, and the bundled data
    for argv, name in (
        (["dp", "kmeans", "--data", str(data), "--columns", "age,income", "--domain", str(domain_file), "--eps", "1"], "km.json"),
        (["dp", "bayes", "--data", str(data), "--column", "smoker", "--domain", str(domain_file), "--eps", "1"], "b.json"),
        (["synthesize", "--data", "adult", "--qi", "age,sex", "--keep", "income", "--method", "dpsyn", "--m", "2"], "adult"),
    ):
        target = tmp_path / name
        assert main(argv + extra + ["--out", str(target), "--quiet"]) == 0
        _assert_no_seed((target / "metadata.json" if target.is_dir() else target).read_text(), seed)
    capsys.readouterr()


def test_python_api_keeps_the_seed_out_of_repr_pickle_and_metadata(tmp_path, domain_file):
    df = survey()
    with pytest.warns(UserWarning, match="anyone who learns the seed can undo the privacy"):
        s = DPSynSynthesizer(epsilon=1.0, random_state=98765).fit(df, domain=domain_file)
    assert "98765" not in repr(s) and "<user seed, not shown>" in repr(s)
    back = pickle.loads(pickle.dumps(s))
    assert back.random_state is None and back.user_seed_given_
    # no generator (whose state would reveal the noise) survives fit
    assert not any(isinstance(v, (np.random.Generator, np.random.SeedSequence)) for v in vars(s).values())
    syn = s.sample(1, random_state=98765)
    _assert_no_seed(json.dumps(syn.metadata()), 98765)
    assert "random_state" not in syn.params and syn.structure["rule"] == "full"
    # without a seed: no warning, and two fits differ (fresh OS randomness)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = DPSynSynthesizer(epsilon=1.0).fit(df, domain=domain_file)
        b = DPSynSynthesizer(epsilon=1.0).fit(df, domain=domain_file)
    assert any(not np.array_equal(x.table, y.table) for x, y in zip(a.marginals_, b.marginals_))
    km = DPKMeans(random_state=5)
    assert "<user seed, not shown>" in repr(km)


def test_noise_and_sampling_streams_are_separate(domain_file):
    """One user seed: fit noise from default_rng(s), record sampling from a spawned stream."""
    from synthmi.privacy.noise_source import noise_generator, sampling_generator

    with pytest.warns(UserWarning):
        a = noise_generator(7, "t").random(5)
    b = sampling_generator(7, "t").random(5)
    np.testing.assert_array_equal(a, np.random.default_rng(7).random(5))
    assert not np.allclose(a, b)
    # same seeds -> same release (reproducible research), and a different sampling seed
    # changes only the records, not the noisy marginals
    df = survey()
    with pytest.warns(UserWarning):
        s1 = DPSynSynthesizer(random_state=3).fit(df, domain=domain_file)
        s2 = DPSynSynthesizer(random_state=3).fit(df, domain=domain_file)
    assert all(np.array_equal(x.table, y.table) for x, y in zip(s1.marginals_, s2.marginals_))
    pd.testing.assert_frame_equal(s1.sample(1, random_state=1).copies[0], s2.sample(1, random_state=1).copies[0])
    assert not s1.sample(1, random_state=1).copies[0].equals(s1.sample(1, random_state=2).copies[0])


# ------------------------------------------------------------------ rare levels (issue 18)
def _rare_survey(n=1500, seed=1):
    """Three declared levels held by a handful of records each (3, 4, 5) and an 'Other' of 60."""
    rng = np.random.default_rng(seed)
    region = rng.choice(["North", "South", "East", "West"], n).astype(object)
    region[:3], region[3:7], region[7:12], region[12:72] = "Atlantis", "Lemuria", "Mu", "Other"
    return pd.DataFrame({"region": region, "sex": rng.choice(["F", "M"], n)})


RARE_DOMAIN = {"columns": {
    "region": {"kind": "categorical", "levels": ["North", "South", "East", "West", "Atlantis", "Lemuria", "Mu", "Other"],
               "other": "Other", "missing": False},
    "sex": {"kind": "binary", "levels": ["F", "M"], "missing": False}}, "source": "test"}


def test_suppressed_levels_are_recorded_and_printed_and_pooling_keeps_them(tmp_path, capsys):
    df = _rare_survey()
    data, dom = tmp_path / "rare.csv", tmp_path / "rare.json"
    df.to_csv(data, index=False)
    dom.write_text(json.dumps(RARE_DOMAIN))
    argv = ["synthesize", "--data", str(data), "--qi", "region,sex", "--keep", "", "--method", "dpsyn",
            "--param", "epsilon=4", "--domain", str(dom), "--m", "2", "--seed", "11", "--quiet"]
    # eps = 4: the one-way noise sd is ~5 records and the threshold max(4.5 sd, 20) >= 20, so levels
    # of 3-5 records fall below it except with probability < 1e-3 each (4.5 sd - 5 records away).
    assert main(argv + ["--out", str(tmp_path / "s")]) == 0
    err = capsys.readouterr().err
    meta = json.loads((tmp_path / "s" / "metadata.json").read_text())
    assert meta["diagnostics"]["suppressed_levels"] == {"region": ["Atlantis", "Lemuria", "Mu"]}
    assert meta["diagnostics"]["pooled_levels"] == {}
    assert "rare levels: declared levels below the noise threshold -- region: Atlantis, Lemuria, Mu." in err
    for f in ("copy_01.csv", "copy_02.csv"):
        c = pd.read_csv(tmp_path / "s" / f)
        assert not set(c["region"]) & {"Atlantis", "Lemuria", "Mu"}
        # 'Other' (60 records) is kept as itself; its share moves by noise only
        assert (c["region"] == "Other").mean() == pytest.approx(60 / 1500, abs=0.015)
    # pooling: the 12 records go to the declared 'other' level instead of vanishing
    assert main(argv + ["--param", "rare=pool", "--out", str(tmp_path / "p")]) == 0
    err = capsys.readouterr().err
    meta = json.loads((tmp_path / "p" / "metadata.json").read_text())
    assert meta["diagnostics"]["pooled_levels"] == {"region": {"into": "Other", "levels": ["Atlantis", "Lemuria", "Mu"]}}
    assert meta["diagnostics"]["suppressed_levels"] == {}
    assert "(pooled into 'Other')" in err
    shares = [(pd.read_csv(tmp_path / "p" / f)["region"] == "Other").mean() for f in ("copy_01.csv", "copy_02.csv")]
    # 72 of 1500 = 0.048; noise sd of the pooled count ~ 2 x 5 records, sampling sd 0.0055
    assert np.mean(shares) == pytest.approx(72 / 1500, abs=0.015)
    # a lower threshold keeps more levels: at theta_scale 0 and theta_min 0 nothing is cut by the threshold,
    # only levels whose noisy count is <= 0
    with pytest.warns(UserWarning, match="user seed"):
        s = DPSynSynthesizer(epsilon=4.0, theta_scale=0.0, theta_min=0.0, random_state=0).fit(df, domain=RARE_DOMAIN)
    assert len(s.suppressed_levels_.get("region", [])) < 3
    with pytest.raises(ValueError, match="'rare' parameter"):
        DPSynSynthesizer(rare="drop").fit(df, domain=RARE_DOMAIN)


def test_missing_values_kept_or_their_suppression_said(tmp_path, capsys):
    # A column with many missing values keeps them at their rate; a column whose missing
    # cell falls below the noise threshold comes back complete, and the release says so
    # (metadata and console) instead of dropping them silently.
    rng = np.random.default_rng(5)
    n = 1500
    df = pd.DataFrame({"region": rng.choice(["North", "South", "East", "West"], n).astype(object),
                       "sex": rng.choice(["F", "M"], n).astype(object)})
    df.loc[rng.random(n) < 0.2, "region"] = np.nan  # ~300 missing
    df.loc[:7, "sex"] = np.nan  # 8 missing: below the threshold max(4.5 sd, 20)
    dom = {"columns": {"region": {"kind": "categorical", "levels": ["North", "South", "East", "West"]},
                       "sex": {"kind": "binary", "levels": ["F", "M"]}}, "source": "test"}
    data, domf = tmp_path / "m.csv", tmp_path / "m.json"
    df.to_csv(data, index=False)
    domf.write_text(json.dumps(dom))
    argv = ["synthesize", "--data", str(data), "--qi", "region,sex", "--keep", "", "--method", "dpsyn",
            "--param", "epsilon=4", "--domain", str(domf), "--m", "2", "--seed", "3", "--quiet",
            "--out", str(tmp_path / "s")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    meta = json.loads((tmp_path / "s" / "metadata.json").read_text())
    # eps = 4: noise sd ~5 records; 8 records fall below a threshold >= 20 except with
    # probability < 1e-3, and ~300 records clear it by > 50 sd
    assert meta["diagnostics"]["suppressed_missing"] == ["sex"]
    assert "missing values: the noisy count of missing values fell below the noise threshold in sex" in err
    for f in ("copy_01.csv", "copy_02.csv"):
        c = pd.read_csv(tmp_path / "s" / f)
        assert c["sex"].notna().all()
        # sampling sd of a share of 0.2 over 1500 records is 0.010; noise adds ~0.005
        assert c["region"].isna().mean() == pytest.approx(df["region"].isna().mean(), abs=0.045)


def test_pooled_rare_count_is_unbiased_with_recorded_variance():
    # Pooling sums the raw noisy counts: E = true total, Var = (1 + |P|) sigma^2. Ten empty
    # declared levels with sigma = 5: clipping each at 0 first would add 10 * 5 / sqrt(2 pi)
    # = 19.9 records; over 4,000 draws the mean's MC sd is sqrt(11) * 5 / sqrt(4000) = 0.26.
    from synthmi.privacy.discrete import sample_discrete_gaussian
    from synthmi.privacy.dpsyn import _pool_rare

    true = np.array([400, 300, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 60])  # 10 empty levels, 'other' last
    rng = np.random.default_rng(7)
    sigma, reps = 5.0, 4000
    pooled_counts = np.empty(reps)
    for r in range(reps):
        noisy = true + sample_discrete_gaussian(sigma**2, size=true.size, rng=rng)
        counts, pooled = _pool_rare(noisy, other=12, theta=22.5, n_levels=13)
        assert pooled == list(range(2, 12))  # 400 and 300 clear the threshold by > 35 sd
        pooled_counts[r] = counts[12]
    assert abs(pooled_counts.mean() - 60) < 4 * np.sqrt(11) * sigma / np.sqrt(reps)
    # the variance recorded for the pooled cell, 11 sigma^2 = 275 (sd of the sample variance ~ 6.1)
    assert pooled_counts.var() == pytest.approx(11 * sigma**2, abs=4 * 11 * sigma**2 * np.sqrt(2 / reps))
