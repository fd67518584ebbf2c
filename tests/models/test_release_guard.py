"""The release guard (issue 30, item 0): no method releases the original by accident.

``Synthesizer.sample`` is the one place every synthesizer's copies pass through; it refuses
copies whose quasi-identifier keys agree with the original's beyond chance (Cohen's kappa)
by more than ``UNMODIFIED_MAX`` (0.9: copies released by accident score 1, legitimate releases
measured at most 0.77, see its docstring) unless ``allow_unmodified=True`` (``--allow-unmodified``),
which metadata.json records. Small data and short chains: the guard is the point here.
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from _frames import wage_frame
from synthmi.cli import main
from synthmi.models.base import UNMODIFIED_MAX, Synthesizer, UnmodifiedRelease, unmodified_share

QI = ["age", "sex", "edu"]


_complete = wage_frame


@pytest.fixture()
def complete_csv(tmp_path):
    path = tmp_path / "complete.csv"
    _complete().to_csv(path, index=False)
    return path


# ---- the statistic, by hand ------------------------------------------------------------------
def test_unmodified_share_by_hand():
    o = pd.DataFrame({"k": ["a", "a", "b", "b"]})
    # identical keys: share 1, chance e = (2*2 + 2*2)/16 = 0.5, kappa (1 - 0.5)/(1 - 0.5) = 1
    assert unmodified_share(o, o, ["k"]) == (1.0, 1.0)
    # half agree, as two independent draws from these margins do: kappa (0.5 - 0.5)/(1 - 0.5) = 0
    assert unmodified_share(o, pd.DataFrame({"k": ["a", "b", "b", "a"]}), ["k"]) == (0.5, 0.0)
    # joint keys, a missing value equal to a missing value, 40 == 40.0:
    # rows agree on (1, 2, 3) -> s = 3/4; original keys all distinct, copy keys
    # {(40,x), (41,NaN), (42,y), (40,x)}: e = (1*2 + 1*1 + 1*1 + 0)/16 = 0.25; kappa = (0.75-0.25)/0.75 = 2/3
    o2 = pd.DataFrame({"a": [40, 41, 42, 43], "b": ["x", None, "y", "z"]})
    c2 = pd.DataFrame({"a": [40.0, 41.0, 42.0, 40.0], "b": ["x", None, "y", "x"]})
    s, k = unmodified_share(o2, c2, ["a", "b"])
    assert s == 0.75 and k == pytest.approx(2 / 3, abs=1e-12)
    # another number of rows is not the original
    assert unmodified_share(o, o.iloc[:3], ["k"]) == (0.0, 0.0)


# ---- every method on complete data, through the command line ---------------------------------------
METHOD_ARGS = {
    "cart": [],
    "rubin": [],
    "dami": ["--mask", "age:K=2,sigma=3", "--mask", "sex:alpha=2", "--mask", "edu:alpha=2"],
    # a deliberately short copula chain (the guard is the point, not convergence): accepted
    "risk-dami": ["--mask", "age:K=2,sigma=3", "--param", "n_iter=30,burn=10,thin=2", "--accept-diagnostics"],
}


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("method", sorted(METHOD_ARGS))
def test_every_method_releases_keys_that_differ_from_the_original(method, complete_csv, tmp_path, capsys):
    out = tmp_path / method
    rc = main(["synthesize", "--data", str(complete_csv), "--qi", ",".join(QI), "--keep", "hours,y",
               "--method", method, *METHOD_ARGS[method], "--m", "2", "--seed", "1", "--out", str(out), "--quiet"])
    assert rc == 0, capsys.readouterr().err
    orig = _complete()
    meta = json.loads((out / "metadata.json").read_text())
    guard = meta["structure"]["unmodified"]
    assert guard["threshold"] == UNMODIFIED_MAX and guard["allowed"] is False
    assert guard["max_kappa"] <= UNMODIFIED_MAX
    for f in sorted(out.glob("copy_*.csv")):
        copy = pd.read_csv(f)
        same = (copy[QI].astype(str).to_numpy() == orig[QI].astype(str).to_numpy()).all(axis=1)
        assert same.mean() < 0.5, (method, same.mean())  # never silently the original


def test_risk_dami_without_masks_is_refused_before_the_fit(complete_csv, tmp_path, capsys, monkeypatch):
    from synthmi.models.risk_targeted import RiskTargetedSynthesizer

    def _no_fit(self, *a, **k):  # the refusal comes first: no 500 s fit for nothing
        raise AssertionError("fitted")

    monkeypatch.setattr(RiskTargetedSynthesizer, "fit", _no_fit)
    out = tmp_path / "rd"
    rc = main(["synthesize", "--data", str(complete_csv), "--qi", ",".join(QI), "--method", "risk-dami",
               "--m", "2", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert "'--mask' option is required for method 'risk-dami'" in err and "--allow-unmodified" in err
    assert not out.exists() or not list(out.iterdir())


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_risk_dami_without_masks_on_complete_data_python_refused_then_recorded():
    """The Python path: masks=None imputes only; on complete data the copies are the input."""
    from synthmi.models.risk_targeted import RiskTargetedSynthesizer

    df = _complete(60)
    s = RiskTargetedSynthesizer(n_iter=10, accept_diagnostics=True).fit(df, QI)
    with pytest.raises(UnmodifiedRelease, match=r"synthesizes no quasi-identifier.*100\.0% of the records"):
        s.sample(2, random_state=1)
    syn = s.sample(2, random_state=1, allow_unmodified=True)
    assert syn.structure["unmodified"] == {"max_share": 1.0, "max_kappa": 1.0, "threshold": UNMODIFIED_MAX,
                                           "allowed": True, "cause": "unsynthesized", "reproduced": [],
                                           "per_qi": {q: {"share": 1.0, "kappa": 1.0} for q in QI}}


@pytest.mark.parametrize("method", ["cart", "rubin", "dami", "risk-dami"])
def test_copies_identical_to_the_input_are_refused_for_every_method(method, complete_csv, tmp_path, capsys,
                                                                     monkeypatch):
    """Whatever a method draws, copies equal to the input stop at the one guard in sample():
    every method's draws are replaced by the original itself."""
    def _identity(self, m, rng):
        return [self.released_.copy() for _ in range(m)]

    monkeypatch.setattr(Synthesizer, "_draw_copies", _identity)
    from synthmi.commands.synthesize import resolve_method

    cls = resolve_method(method)
    if "_draw_copies" in cls.__dict__:
        monkeypatch.setattr(cls, "_draw_copies", _identity)
    base = ["synthesize", "--data", str(complete_csv), "--qi", ",".join(QI), "--keep", "hours,y", "--method", method,
            *METHOD_ARGS[method], "--m", "2", "--seed", "1", "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rc = main([*base, "--out", str(tmp_path / "refused")])
    err = capsys.readouterr().err
    assert rc == 1 and "100.0% of the records" in err and "above the limit of 0.9" in err
    assert "nothing was synthesized" in err and "age: 100.0% unchanged, kappa 1.00" in err
    assert "--allow-unmodified" in err and "allow_unmodified=True" not in err
    assert not list((tmp_path / "refused").glob("copy_*.csv")) if (tmp_path / "refused").exists() else True
    # the explicit choice writes them, recorded in metadata.json
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert main([*base, "--allow-unmodified", "--out", str(tmp_path / "allowed")]) == 0
    meta = json.loads((tmp_path / "allowed" / "metadata.json").read_text())
    assert meta["structure"]["unmodified"]["allowed"] is True and meta["source"]["allow_unmodified"] is True


@pytest.mark.filterwarnings("ignore:DPSynSynthesizer. a user seed:UserWarning")  # a test seed, on purpose
def test_dpsyn_copies_are_not_the_original():
    """DPSyn (fully synthetic, DP): no original is held to compare, and its copies are new records."""
    from synthmi.privacy.dpsyn import DPSynSynthesizer

    df = _complete(200)[["age", "sex", "edu"]]
    s = DPSynSynthesizer(epsilon=4.0, delta=1e-6, random_state=3, n_iter=5)
    s.fit(df, bounds={"age": (18, 80)}, domain={"sex": ["F", "M"], "edu": ["high", "low", "mid"]})
    syn = s.sample(2, random_state=1)
    assert "unmodified" not in syn.structure  # nothing data-dependent recorded for a DP release
    for c in syn.copies:
        if len(c) == len(df):
            share, _ = unmodified_share(df, c, ["age", "sex", "edu"])
            assert share < 0.5


def test_report_flags_a_release_written_with_allow_unmodified():
    from synthmi.report.html import _release_flags

    meta = {"unmodified": {"max_share": 1.0, "max_kappa": 1.0, "threshold": UNMODIFIED_MAX, "allowed": True,
                           "cause": "unsynthesized", "reproduced": [], "per_qi": {"age": {"share": 1.0, "kappa": 1.0}}}}
    flag = _release_flags({"risk-dami": meta})
    assert "UNMODIFIED" in flag and "100.0% of the records" in flag and "--allow-unmodified" in flag
    assert "nothing was synthesized" in flag and "age 100.0% (kappa 1.00)" in flag
    det = {"unmodified": {"max_share": 0.977, "max_kappa": 0.94, "threshold": UNMODIFIED_MAX, "allowed": True,
                          "cause": "determined", "reproduced": ["idp"],
                          "per_qi": {"idp": {"share": 0.977, "kappa": 0.94}}}}
    flag = _release_flags({"cart": det})
    assert "reproduces idp, which the kept columns nearly determine" in flag and "nothing was synthesized" not in flag
    ok = {"unmodified": {"max_share": 0.03, "max_kappa": 0.03, "threshold": UNMODIFIED_MAX, "allowed": False}}
    assert "UNMODIFIED" not in _release_flags({"cart": ok})


# ---- legitimate releases a kept column explains are released; a determined QI is named ------------------
def _fair_agegrp(n=1500):
    """statsmodels' fair (Fair 1978) with a 3-level age group as the only QI; the kept yrs_married
    predicts it (issue 30 trial: CART on all 6,366 rows had kappa 0.70-0.72, refused under the old 0.5)."""
    import statsmodels.api as sm

    f = sm.datasets.fair.load_pandas().data.iloc[:n].copy()
    f["agegrp"] = pd.cut(f["age"], [0, 27, 32, 100], labels=["young", "mid", "old"]).astype(str)
    return f.drop(columns="age")


def test_coarse_qi_predicted_by_a_kept_column_is_released(tmp_path, capsys):
    path = tmp_path / "fair.csv"
    _fair_agegrp().to_csv(path, index=False)
    out = tmp_path / "fair"
    rc = main(["synthesize", "--data", str(path), "--qi", "agegrp", "--method", "cart", "--m", "2", "--seed", "1",
               "--out", str(out), "--quiet"])
    assert rc == 0, capsys.readouterr().err
    guard = json.loads((out / "metadata.json").read_text())["structure"]["unmodified"]
    # well beyond chance (the old limit 0.5 refused it), well short of "the original" (1)
    assert 0.5 < guard["max_kappa"] < UNMODIFIED_MAX and guard["allowed"] is False, guard


def test_a_qi_the_kept_columns_determine_is_named(tmp_path):
    """randhie's idp is nearly determined by the kept columns (CART reproduces it for ~98% of the
    records, kappa 0.93-0.94 on 2,000 rows): refused, and the error names idp, not 'nothing synthesized'."""
    import statsmodels.api as sm

    from synthmi.models.cart import CartSynthesizer

    r = sm.datasets.randhie.load_pandas().data.sample(2000, random_state=0).reset_index(drop=True)
    r["idp"] = r["idp"].astype(int).astype(str)
    s = CartSynthesizer().fit(r, ["idp"])
    with pytest.raises(UnmodifiedRelease, match=r"idp: 9\d\.\d% unchanged.*The synthesis reproduces idp: the kept "
                                                r"columns nearly determine it") as e:
        s.sample(1, random_state=1)
    assert "nothing was synthesized" not in str(e.value)
    g = s.sample(1, random_state=1, allow_unmodified=True).structure["unmodified"]
    assert g["cause"] == "determined" and g["reproduced"] == ["idp"] and g["allowed"] is True


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_imputation_only_is_refused_however_many_cells_it_imputes():
    """masks=None on a file where 40% of a quasi-identifier is missing: the imputed cells lower
    the agreement statistic below its limit (about 0.6 of the keys are unchanged), but every
    observed value is still the original's, so the configuration itself is refused."""
    from synthmi.models.risk_targeted import RiskTargetedSynthesizer

    df = _complete(80, seed=3)
    df.loc[df.index[::5].union(df.index[1::5]), "age"] = np.nan
    s = RiskTargetedSynthesizer(n_iter=10, accept_diagnostics=True).fit(df, QI)
    copies = [s.released_.copy() for _ in range(2)]
    for c in copies:
        c["age"] = c["age"].fillna(50.0)
    share, kappa = unmodified_share(s.released_, copies[0], QI)
    assert kappa < UNMODIFIED_MAX  # the statistic alone would let these copies pass
    with pytest.raises(UnmodifiedRelease, match=r"synthesizes no quasi-identifier"):
        s.sample(2, random_state=1)
    syn = s.sample(2, random_state=1, allow_unmodified=True)
    assert syn.structure["unmodified"]["allowed"] and syn.structure["unmodified"]["cause"] == "unsynthesized"
