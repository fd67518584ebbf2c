"""tune's table rule relative to CART (issue 29 must-show: "the tuned release's worst one-way S_pMSE
within 2x CART's"): with a ``MEASURE<=cart`` target a candidate whose worst one-way (two-way) S_pMSE
is above twice CART's is infeasible, whatever its overlap and risk."""
from __future__ import annotations

import numpy as np
import pytest
from test_frontier import _small

from synthmi.workflow.tuning import table_caps, table_violations


def test_table_caps_by_hand():
    ref = {"worst_one_way_s_pmse": 1.2, "worst_two_way_s_pmse": 1.7}
    # min(10, 2 x 1.2) = 2.4 and min(10, 2 x 1.7) = 3.4
    assert table_caps(10.0, 2.0, ref) == pytest.approx({"worst_one_way_s_pmse": 2.4, "worst_two_way_s_pmse": 3.4})
    # the absolute bound wins when CART's own tables are poor: min(10, 2 x 6) = 10
    assert table_caps(10.0, 2.0, {"worst_one_way_s_pmse": 6.0}) == {"worst_one_way_s_pmse": 10.0,
                                                                    "worst_two_way_s_pmse": 10.0}
    # no ratio, or no reference figure: the absolute bound alone
    assert table_caps(10.0, None, ref) == {"worst_one_way_s_pmse": 10.0, "worst_two_way_s_pmse": 10.0}
    assert table_caps(5.0, 2.0, {"worst_one_way_s_pmse": np.nan}) == {"worst_one_way_s_pmse": 5.0,
                                                                      "worst_two_way_s_pmse": 5.0}
    caps = {"worst_one_way_s_pmse": 2.4, "worst_two_way_s_pmse": 3.4}
    assert table_violations({"worst_one_way_s_pmse": 2.5, "worst_two_way_s_pmse": 3.4}, caps) == {
        "worst_one_way_s_pmse": 2.5}
    assert table_violations({"worst_one_way_s_pmse": 2.4, "worst_two_way_s_pmse": np.nan}, caps) == {}


def test_tune_applies_twice_cart_worst_table_as_its_rule():
    from synthmi.workflow.tuning import tune

    df = _small(300)
    res = tune(df, ["age", "sex", "edu"], ["hours", "y"], ["y ~ age + sex + edu"], ["expected_matches<=cart"],
               continuous_grid=[(1, 4.0), (1, 1.0)], alpha_grid=[2.0], m_search=2, m=2, replicates=2,
               n_confirm=1, tolerance={"age": 1}, base_params={"random_state": 1}, reference_replicates=2,
               max_cycles=1)
    ref = res.settings["reference"]["mean"]
    caps = res.settings["table_caps"]
    assert res.settings["max_table_ratio"] == 2.0
    for k in ("worst_one_way_s_pmse", "worst_two_way_s_pmse"):
        assert caps[k] == pytest.approx(min(10.0, 2.0 * ref[k]))
    # m_search = m here: the search is on CART's footing, one bound for every stage
    assert res.settings["table_caps_search"] is None
    tr = res.trace
    for _, r in tr.iterrows():
        within = r["worst_one_way_s_pmse"] <= caps["worst_one_way_s_pmse"] and \
            r["worst_two_way_s_pmse"] <= caps["worst_two_way_s_pmse"]
        assert bool(r["table_ok"]) == within
        assert bool(r["feasible"]) == (within and bool(r["meets_targets"]))
    if res.feasible:
        # the chosen setting met the relative rule where it was chosen (confirmation copies)
        assert res.confirmed["worst_one_way_s_pmse"] <= caps["worst_one_way_s_pmse"]
    else:
        assert res.settings["infeasible"]["binding"] in ("table rule", "risk targets")


def test_tune_passes_on_the_fits_misfit_warning():
    # a skewed continuous QI: its normal model cannot keep the margin (the fit warns); tune used to
    # silence every warning of its fit, so a new user saw only that no setting met the table rule
    from synthmi.workflow.tuning import tune

    df = _small(300)
    df["age"] = np.round(18 + np.random.default_rng(3).exponential(6.0, len(df)))
    with pytest.warns(UserWarning, match="tune: The normal model of column 'age' does not fit its distribution"):
        tune(df, ["age", "sex"], ["hours", "y"], ["y ~ age + sex"], ["expected_matches<=1000"],
             continuous_grid=[(1, 4.0)], alpha_grid=[2.0], m_search=2, m=2, replicates=1, n_confirm=1,
             tolerance={"age": 1}, base_params={"random_state": 1}, max_cycles=0)


def test_tune_passes_secret_and_link_aux_to_its_attack_targets(monkeypatch):
    # tune --secret / --link-aux: the inference and linkability targets attack with the intruder the user
    # declared (as 'synthmi disclosure' does), on every candidate; the attack itself is faked (its own tests
    # are anonymeter's), recording what it was asked
    import types

    import synthmi.evaluation.attack_risks as ar
    from synthmi.workflow.tuning import tune

    calls = []

    def fake(original, synthetic, control, *, quasi_identifiers=None, secrets=None, link_aux=None, spec=None,
             attacks=(), random_state=0):
        calls.append({"qi": quasi_identifiers, "secrets": secrets, "link_aux": link_aux, "attacks": list(attacks),
                      "n_control": len(control)})
        key = "inference[hours]" if attacks == ["inference"] else "linkability"
        return {key: types.SimpleNamespace(key=key, risk=0.01)}

    monkeypatch.setattr(ar, "review_attacks", fake)
    df = _small(200)
    res = tune(df, ["age", "sex"], ["hours", "y"], ["y ~ age + sex"], ["inference<=0.5", "linkability<=0.5"],
               continuous_grid=[(1, 4.0)], alpha_grid=[2.0], m_search=2, m=2, replicates=1, n_confirm=1,
               tolerance={"age": 1}, base_params={"random_state": 1}, max_cycles=0, secrets=["hours"],
               link_aux=(["age"], ["sex"]))
    assert res.feasible and calls
    inf = [c for c in calls if c["attacks"] == ["inference"]]
    link = [c for c in calls if c["attacks"] == ["linkability"]]
    assert inf and link and len(inf) == len(link)
    assert all(c["secrets"] == ["hours"] and c["qi"] == ["age", "sex"] for c in inf)
    assert all(c["link_aux"] == (["age"], ["sex"]) for c in link)
    assert all(c["n_control"] == 40 for c in calls)  # the 20% holdout of 200 rows are the control set
    assert res.settings["secrets"] == ["hours"] and res.settings["link_aux"] == [["age"], ["sex"]]
    with pytest.raises(Exception, match="'secrets' parameter of tune is used by the inference target only"):
        tune(df, ["age", "sex"], ["hours", "y"], ["y ~ age + sex"], ["linkability<=0.5"], secrets=["hours"],
             continuous_grid=[(1, 4.0)], alpha_grid=[2.0], m_search=2, m=2, replicates=1)


def test_tune_search_bound_is_cart_on_the_search_footing():
    # m_search < m: the worst table over fewer copies is larger for any release; the search's bound is CART's
    # worst at m_search copies (same seeds), the confirmation's CART's at m copies
    from synthmi.workflow.tuning import tune

    df = _small(300)
    res = tune(df, ["age", "sex", "edu"], ["hours", "y"], ["y ~ age + sex + edu"], ["expected_matches<=cart"],
               continuous_grid=[(1, 4.0)], alpha_grid=[2.0], m_search=2, m=4, replicates=2, n_confirm=1,
               tolerance={"age": 1}, base_params={"random_state": 1}, reference_replicates=2, max_cycles=0)
    cs, c = res.settings["table_caps_search"], res.settings["table_caps"]
    assert cs is not None and cs != c
    tr = res.trace
    for _, r in tr.iterrows():
        bound = cs if r["stage"] == "search" else c
        within = all(r[k] <= bound[k] for k in bound)
        assert bool(r["table_ok"]) == within
