"""``models="auto"``: per-column model choice by posterior predictive checks (synthmi.models.model_choice).

Files built so that the right choice is known: a skewed positive column whose normal model cannot
keep its margin (a log-normal: the log scale is the true model), a column with a point mass whose
share depends on a kept column (the two-part model is the true model; a one-scale model cannot put
the zeros where the kept column says), and a normal column (the default is right and must be kept).
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from synthmi.errors import ParameterError
from synthmi.models.dami import DAMISynthesizer
from synthmi.models.model_choice import CANDIDATES, CHECK_COPIES, MC_Z, PROPER_GAP, apply_rule, wants_auto
from synthmi.models.rubin import RubinSynthesizer
from synthmi.spec import ReleaseSpec


def _frame(n: int = 1500, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 2, n)
    inc = np.exp(rng.normal(1 + 0.5 * z, 0.8, n)).round(2)  # log-normal given z: skewed, bounded below by 0
    zero = rng.random(n) < np.where(z == 1, 0.6, 0.1)  # the point mass's share depends on z
    gain = np.where(zero, 0.0, rng.normal(50, 5, n).round(1))
    x = rng.normal(10 + z, 2, n).round(3)  # normal given z: the default model is right
    return pd.DataFrame({"z": pd.Categorical(np.where(z == 1, "a", "b")), "inc": inc, "gain": gain, "x": x})


def _fit(models, qi=("inc", "gain", "x"), cls=RubinSynthesizer, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(models=models, progressbar=False, **kw).fit(_frame(), quasi_identifiers=list(qi), keep=["z"])


@pytest.fixture(scope="module")
def auto():
    return _fit("auto")


def _rows(choice, col):
    return {r["candidate"]: r for r in choice.columns[col]["candidates"]}


def _rule(info):
    """The documented rule, recomputed from the recorded figures: per table the best checked candidate's
    S_pMSE m_t and band PROPER_GAP + MC_Z * sqrt(8 / (M d_t)); the simplest candidate (registry order)
    within m_t + band on every table."""
    ok = [r for r in info["candidates"] if r["status"] == "checked"]
    excess = {r["candidate"]: -np.inf for r in ok}
    for t in {t for r in ok for t in r["tables"]}:
        best = min(ok, key=lambda r: r["tables"][t][0])
        band = PROPER_GAP + MC_Z * np.sqrt(8.0 / (CHECK_COPIES * best["tables"][t][1]))
        for r in ok:
            excess[r["candidate"]] = max(excess[r["candidate"]], r["tables"][t][0] - best["tables"][t][0] - band)
    order = [c.name for c in CANDIDATES]
    return min((n for n, e in excess.items() if e <= 0), key=order.index), excess


def test_rule_by_hand():
    # bands: d = 4 -> 1 + 2 sqrt(8 / 8) = 3; d = 24 -> 1 + 2 sqrt(8 / 48) = 1.8165
    def cand(a, b):
        return {"tables": {"x": [a, 4.0], "x:z": [b, 24.0]}}
    k, best, excess = apply_rule([cand(5.0, 3.0), cand(1.0, 2.9)])
    assert k == 1 and best == {"x": 1.0, "x:z": 2.9}
    assert excess[0] == pytest.approx(5.0 - 1.0 - 3.0) and excess[1] == pytest.approx(-(1 + 2 * np.sqrt(1 / 6)))
    k, _, excess = apply_rule([cand(3.9, 3.0), cand(1.0, 2.9)])  # the simpler one within on both tables
    assert k == 0 and excess[0] == pytest.approx(max(3.9 - 1 - 3, 3.0 - 2.9 - (1 + 2 * np.sqrt(1 / 6))))
    k, _, excess = apply_rule([cand(1.0, 10.0), cand(10.0, 1.0)])  # none within everywhere: smallest excess
    assert k == 1 and excess == pytest.approx([10 - 1 - (1 + 2 * np.sqrt(1 / 6)), 10 - 1 - 3])


def test_skewed_column_normal_fails_its_margin_and_a_scale_that_keeps_it_is_chosen(auto):
    rows = _rows(auto.model_choice_, "inc")
    # the normal model of a log-normal column wrecks its one-way table (measured 207; proper copies of the
    # right model have S_pMSE mean 2, sd sqrt(8/(M d)) = 1 for d = 4 bins - 1, M = 2)
    assert rows["normal"]["one_way_s_pmse"] > 20
    chosen = auto.model_choice_.columns["inc"]["chosen"]
    assert chosen in ("normal, log", "normal, log1p", "normal, rank", "cart")
    assert chosen == _rule(auto.model_choice_.columns["inc"])[0]
    assert rows[chosen]["worst_s_pmse"] < 10 and rows["normal"]["excess"] > 0
    # no point mass in a continuous log-normal: the two-part candidates are skipped, and say why
    assert rows["two-part"]["status"] == "skipped" and "point mass" in rows["two-part"]["reason"]


def test_a_point_mass_whose_share_depends_on_a_kept_column_gets_the_two_part_model(auto):
    info = auto.model_choice_.columns["gain"]
    rows = _rows(auto.model_choice_, "gain")
    assert info["chosen"] == "two-part"
    assert info["model"] == {"method": "normal", "semicont": [0.0]}
    chosen, excess = _rule(info)
    assert chosen == "two-part" and info["within_band"]
    # the one-scale models cannot: outside the rule's Monte Carlo band of the best on some table
    for name in ("normal", "normal, log1p", "normal, rank"):
        assert excess[name] > 0 and rows[name]["excess"] == pytest.approx(excess[name]), name
    assert rows["normal, log"]["status"] == "skipped"  # zeros: no log scale


def test_the_default_is_kept_when_it_fits(auto):
    info = auto.model_choice_.columns["x"]
    assert info["chosen"] == "normal" == _rule(info)[0]


def test_choice_is_recorded_in_metadata_and_spec_and_the_spec_reproduces_the_release(auto, tmp_path):
    rel = auto.sample(2, random_state=5)
    mc = rel.structure["model_choice"]
    assert mc["models"] == auto.model_choice_.models
    assert set(mc["columns"]) == {"inc", "gain", "x"} and mc["copies"] == CHECK_COPIES
    assert mc["candidate_fits"] == sum(r["status"] != "skipped" for c in mc["columns"].values()
                                       for r in c["candidates"])
    json.dumps(rel.structure["model_choice"])  # JSON-ready
    assert rel.params["models"] == "auto"
    # the release's spec carries the concrete models: fitting it again needs no choice and gives the same copies
    assert dict(rel.spec.models) == auto.model_choice_.models
    # (the fitted spec: the release's public view leaves out the levels inferred from the data)
    assert auto.spec_.models == auto.model_choice_.models
    again = RubinSynthesizer(progressbar=False).fit(_frame(), ReleaseSpec.from_dict(auto.spec_.to_dict()))
    assert not hasattr(again, "model_choice_")
    rel2 = again.sample(2, random_state=5)
    for a, b in zip(rel.copies, rel2.copies):
        pd.testing.assert_frame_equal(a, b)


def test_same_data_same_choice_and_copies(auto):
    other = _fit("auto")
    assert other.model_choice_.to_dict() == auto.model_choice_.to_dict()
    pd.testing.assert_frame_equal(auto.sample(1, random_state=3).copies[0], other.sample(1, random_state=3).copies[0])


def test_a_given_model_wins_and_auto_chooses_the_rest():
    s = _fit({"inc": "normal", "gain": "auto"}, qi=("inc", "gain"))
    assert s.model_choice_.given == ["inc"] and set(s.model_choice_.columns) == {"gain"}
    assert s.model_choice_.models["inc"] == "normal"
    assert {c.column: (c.method, c.transform) for c in s.conditionals_}["inc"] == ("normal", None)
    # models="auto" beside a spec: the spec's own entries win
    spec = ReleaseSpec.from_roles(_frame(), ["inc", "gain"], ["z"])
    spec = ReleaseSpec.from_dict({**spec.to_dict(), "models": {"inc": {"method": "cart"}}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s2 = RubinSynthesizer(models="auto", progressbar=False).fit(_frame(), spec)
    assert s2.model_choice_.models["inc"] == {"method": "cart"} and set(s2.model_choice_.columns) == {"gain"}


def test_spec_models_auto_route():
    spec = ReleaseSpec.from_roles(_frame(), ["inc"], ["z"])
    spec = ReleaseSpec.from_dict({**spec.to_dict(), "models": "auto"})
    assert spec.models == "auto" and wants_auto(spec.models)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = RubinSynthesizer(progressbar=False).fit(_frame(), spec)
    assert s.model_choice_.columns["inc"]["chosen"] != "normal"
    assert s.spec_.models == s.model_choice_.models


def test_bad_models_setting_is_refused():
    with pytest.raises(ParameterError, match="'models'"):
        RubinSynthesizer(models="best").fit(_frame(), quasi_identifiers=["inc"], keep=["z"])


def test_dami_roles_masked_column_never_cart_and_no_cart_predictor_under_joint():
    s = _fit("auto", qi=("x", "inc"), cls=DAMISynthesizer, masks={"x": {"K": 1, "sigma_e": 2.0}}, random_state=3)
    rows = _rows(s.model_choice_, "x")
    assert rows["cart"]["status"] == "skipped" and "mask" in rows["cart"]["reason"]
    assert all(rows[n]["status"] == "skipped" and "raw scale" in rows[n]["reason"]
               for n in ("normal, log", "normal, log1p", "normal, rank"))
    assert s.model_choice_.columns["x"]["chosen"] == "normal"
    # inc comes last: no later model uses it, so cart is a valid candidate for it
    assert _rows(s.model_choice_, "inc")["cart"]["status"] == "checked"
    # in the other order inc is a predictor of x's parametric model: the joint predictive refuses a cart inc
    s2 = _fit("auto", qi=("inc", "x"), cls=DAMISynthesizer, masks={"x": {"K": 1, "sigma_e": 2.0}}, random_state=3)
    cart = _rows(s2.model_choice_, "inc")["cart"]
    assert cart["status"] == "skipped" and "joint predictive" in cart["reason"] and "'x'" in cart["reason"]
    assert s2.sample(1, random_state=0).structure["model_choice"]["columns"]["inc"]["chosen"] != "cart"


def test_later_users_and_point_masses_by_hand():
    from synthmi.models.conditional import VariableSpec
    from synthmi.models.model_choice import _later_users, _point_masses

    given = {"b": VariableSpec(predictors=["z"]), "c": VariableSpec(formula="~ a_1 + z"),
             "d": VariableSpec(formula="~ bs(a, 3)")}
    # b leaves 'a' out, c names another column ('a_1'), d uses it, e has the default design (every earlier QI)
    assert _later_users("a", ["b", "c", "d", "e"], given, {}) == ["d", "e"]
    assert _later_users("a", ["e"], {}, {"e": ["z"]}) == []  # predictor_matrix row without 'a'
    x = np.r_[np.zeros(5), np.arange(1.0, 96.0)]  # 5 zeros in 100 rows: 5% is a point mass
    assert _point_masses(None, x) == [0.0]
    assert _point_masses(None, x[1:]) == []  # 4 in 99 rows (4.04%) is not
    assert _point_masses((-1, 2), x) == [-1.0, 2.0]  # declared in the spec: used as declared
    assert _point_masses(None, np.r_[np.zeros(50), np.ones(30), np.full(20, 2.0)]) == []  # no value model left


def test_a_choice_above_the_table_bound_is_said(auto, monkeypatch):
    """When even the best candidate wrecks a table (worst S_pMSE above battery's bound 10, what tune calls
    infeasible), the choice warns and records it (new-user trial: a masked age chosen at 18.7 without a word).
    Only the normal candidate offered for the log-normal column: its one-way S_pMSE is > 20 (test above)."""
    import synthmi.models.model_choice as mc

    monkeypatch.setattr(mc, "CANDIDATES", tuple(c for c in mc.CANDIDATES if c.name in ("normal", "logit")))
    with pytest.warns(RuntimeWarning, match=r"no candidate reproduces the tables of column 'inc'.*> 10"):
        s = RubinSynthesizer(models={"inc": "auto", "gain": {"method": "normal", "semicont": [0.0]}},
                             progressbar=False).fit(_frame(), quasi_identifiers=["inc", "gain", "x"], keep=["z"])
    assert s.model_choice_.columns["inc"]["above_table_bound"]
    assert not auto.model_choice_.columns["gain"]["above_table_bound"]
