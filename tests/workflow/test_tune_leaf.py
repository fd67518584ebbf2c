"""tune searches the trees' minimum leaf size together with the masks (issue 29: with no masks a plug-in
tree on CART's partition is CART, so at CART's risk masks alone have no room; coarser leaves lower the
risk and the masks can spend it). The chosen size goes into the spec, so ``synthesize --spec`` fits it."""
from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest
from test_frontier import _small

from synthmi.errors import InputError
from synthmi.spec import ReleaseSpec

QI, KEEP = ["age", "sex", "edu"], ["hours", "y"]


def _tree_spec(df, models=None):
    return replace(ReleaseSpec.draft(df, QI, KEEP), models=models or {c: "tree" for c in QI})


def test_leaf_columns_and_spec_with_leaf():
    from synthmi.models import DAMISynthesizer
    from synthmi.workflow.tuning import leaf_columns, spec_with_leaf

    df = _small(200)
    spec = _tree_spec(df, {"age": "tree", "sex": {"method": "cart"}, "edu": {"method": "tree", "min_leaf": 7}})
    fitted = DAMISynthesizer(proper=False, progressbar=False).fit(df, spec=spec)
    # edu's leaf size is the user's (kept); age's tree and sex's cart are searched
    assert leaf_columns(fitted, {}, spec) == ["age", "sex"]
    # models from the parameter (which would override the spec tune writes), or none: no leaf search
    assert leaf_columns(fitted, {"models": {"age": "tree"}}, spec) == []
    assert leaf_columns(fitted, {}, None) == []
    out = spec_with_leaf(spec, ["age", "sex"], 20)
    assert out.models == {"age": {"method": "tree", "min_leaf": 20}, "sex": {"method": "cart", "min_leaf": 20},
                          "edu": {"method": "tree", "min_leaf": 7}}
    assert spec.models["age"] == "tree" and spec.models["sex"] == {"method": "cart"}  # not changed


def _leaf_lattice_measure(calls):
    """tune's candidates measured on a lattice (no synthesis): age's mask level a (0..2) and the leaf level
    l (0..3: leaves 40, 20, 10, 5, coarsest first). Risk a + l <= 2; objective 0.5 + 0.1 l + 0.05 a, so
    the best feasible point is (a, l) = (0, 2): no mask, min_leaf 10 (0.70 > (1, 1) 0.65 > (2, 0) 0.60)."""
    lev_age = {None: 0, 10.0: 1, 2.0: 2}

    def measure(masks, mm, reps, pmse_copies, start, seed, leaf=0):
        calls.append(leaf)
        a = lev_age[((masks or {}).get("age") or {}).get("sigma_e")]
        obj = 0.5 + 0.1 * leaf + 0.05 * a
        row = {"mean_ci_overlap": obj, "battery_ci_overlap": obj, "worst_one_way_s_pmse": 1.0,
               "worst_two_way_s_pmse": 1.0, "expected_matches": float(a + leaf)}
        return [dict(row) for _ in range(reps)]
    return measure


def test_tune_searches_the_leaf_size_and_writes_it_in_the_spec(monkeypatch):
    import synthmi.workflow.tuning as tuning
    from synthmi.models import DAMISynthesizer

    calls = []
    monkeypatch.setattr(tuning, "_measure_candidate", _leaf_lattice_measure(calls))
    df = _small(200)
    spec = _tree_spec(df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sex and edu: no mask levels in this grid (a 0-alpha grid is empty)
        res = tuning.tune(df, None, None, ["y ~ age + sex + edu"], ["expected_matches<=2"], spec=spec,
                          continuous_grid=[(1, 10.0), (1, 2.0)], alpha_grid=[0.0], m_search=2, m=2, replicates=2,
                          n_confirm=1, tolerance={"age": 1}, base_params={"proper": False, "random_state": 0},
                          max_table_s_pmse=1e6, leaf_grid=(5, 10, 20, 40))
    assert res.settings["leaf_grid"] == [40, 20, 10, 5] and res.settings["leaf_columns"] == QI
    assert set(calls) == {0, 1, 2, 3}  # every leaf level was measured
    # one ascent of the masks per leaf size, finest first, each from where the previous stopped (risk
    # a + l <= 2: at leaf 5, l = 3, even no mask misses; at 10 no mask; at 20 age's first level; at 40 its top)
    assert [(a["min_leaf"], a["start"], a["stopped_by"]) for a in res.settings["leaf_ascents"]] == [
        (5, {}, "origin infeasible"), (10, {}, "boundary"), (20, {}, "boundary"),
        (40, {"age": {"K": 1, "sigma_e": 10.0}}, "top")]
    assert res.min_leaf == 10 and res.masks == {}
    assert sorted(res.trace.loc[res.trace["stage"] == "search", "min_leaf"].unique()) == [5, 10, 20, 40]
    # the spec tune writes carries the size in each tree's model, and its tuning record names it
    out = res.to_spec()
    assert out.models == {c: {"method": "tree", "min_leaf": 10} for c in QI}
    assert out.tuning["min_leaf"] == 10 and out.tuning["min_leaf_columns"] == QI
    from synthmi.report.html import _tuning_li

    assert "trees' minimum leaf size 10" in _tuning_li(out.tuning)  # the report's "how it was tuned"
    assert res.to_dict()["min_leaf"] == 10
    assert res.settings["not_tried"]["min_leaf_grid"] == [40, 20, 10, 5]
    assert res.settings["not_tried"]["lattice_points"] == 3 * 4
    # synthesize --spec with it fits the same trees (the route tune validated by)
    s = DAMISynthesizer(proper=False, progressbar=False).fit(df, spec=out)
    assert {c.column: c.min_leaf for c in s.conditionals_} == {c: 10 for c in QI}
    # the user's input spec is unchanged
    assert spec.models == {c: "tree" for c in QI}


def test_tune_searches_no_leaf_size_without_trees_or_when_asked(monkeypatch):
    import synthmi.workflow.tuning as tuning

    calls = []
    monkeypatch.setattr(tuning, "_measure_candidate", _leaf_lattice_measure(calls))
    df = _small(200)
    kw = dict(continuous_grid=[(1, 10.0), (1, 2.0)], alpha_grid=[0.0], m_search=2, m=2, replicates=2, n_confirm=1,
              tolerance={"age": 1}, max_table_s_pmse=1e6, max_cycles=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = tuning.tune(df, None, None, ["y ~ age + sex + edu"], ["expected_matches<=2"], spec=_tree_spec(df),
                          base_params={"proper": False}, leaf_grid=None, **kw)
        assert res.min_leaf is None and res.settings["leaf_grid"] is None and set(calls) == {0}
        # opt-in: without leaf_grid the search is the masks' alone (on Adult the leaf search cost held-out overlap)
        calls.clear()
        res = tuning.tune(df, None, None, ["y ~ age + sex + edu"], ["expected_matches<=2"], spec=_tree_spec(df),
                          base_params={"proper": False}, **kw)
        assert res.min_leaf is None and res.settings["leaf_grid"] is None and set(calls) == {0}
        assert res.to_spec().models == {c: "tree" for c in QI}
        res = tuning.tune(df, QI, KEEP, ["y ~ age + sex + edu"], ["expected_matches<=2"], **kw)  # default models
        assert res.min_leaf is None and "min_leaf_grid" not in res.settings["not_tried"]
    with pytest.raises(InputError, match="The 'leaf_grid' parameter of tune must list integers >= 1"):
        tuning.tune(df, QI, KEEP, ["y ~ age"], ["expected_matches<=2"], leaf_grid=(5, 0))


def test_coarser_leaves_lower_the_risk_and_tune_picks_them_below_carts_risk():
    """Behaviour, no mocks. The plug-in tree with no masks at min_leaf 5 is CART (its partition and
    donors); at min_leaf 40 its copies repeat fewer records. Measured over 8 seeds of 2 copies
    (n = 800, ``_small``): expected matches about 4.45 (SE 0.24) at 5 and 1.75 (SE 0.15) at 40; the
    difference is asserted beyond 3 combined MC SEs. tune with a target of 2.6 expected matches, below
    the leaf-5 risk by about 5 SEs of its 4-copy search replicates (SE ~0.34; measured 4.72), and
    above the leaf-40 risk by about 4 SEs (SE ~0.21; measured 1.68), has no feasible setting at leaf 5
    (every mask adds risk) and picks leaf 40. (Issue 29: age, 62 values, now has discrete leaves by
    default, the donors' ages as CART's, which repeat records more than the kernel did: with the kernel
    the risks were 2.3 (SE 0.17) and 1.27 (SE 0.08), and the target 1.6.)"""
    from synthmi.evaluation import reidentification_risk
    from synthmi.models import DAMISynthesizer
    from synthmi.workflow.tuning import spec_with_leaf, tune

    df = _small(800)
    spec = _tree_spec(df)
    em = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for leaf in (5, 40):
            s = DAMISynthesizer(proper=False, progressbar=False, random_state=0).fit(df, spec=spec_with_leaf(spec, QI, leaf))
            em[leaf] = np.array([reidentification_risk(df[QI + KEEP], s.sample(2, random_state=r, allow_unmodified=True)
                                                       .copies, QI, tolerance={"age": 1}).figures["expected_matches"]
                                 for r in range(8)])
    se = np.hypot(*(v.std(ddof=1) / np.sqrt(len(v)) for v in em.values()))
    assert em[40].mean() < em[5].mean() - 3 * se
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = tune(df, None, None, ["y ~ age + sex + edu"], ["expected_matches<=2.6"], spec=spec,
                   continuous_grid=[(1, 4.0)], alpha_grid=[2.0], m_search=4, m=4, replicates=2, n_confirm=2,
                   tolerance={"age": 1}, base_params={"proper": False, "random_state": 0}, max_cycles=1,
                   leaf_grid=(5, 40))
    assert res.feasible and res.min_leaf == 40
    assert res.to_spec().models == {c: {"method": "tree", "min_leaf": 40} for c in QI}
    # every leaf-5 setting measured by the search missed the target
    tr = res.trace[res.trace["stage"] == "search"]
    assert not tr.loc[tr["min_leaf"] == 5, "meets_targets"].any()
