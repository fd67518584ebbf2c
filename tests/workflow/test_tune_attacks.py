"""anonymeter's three risks as tune / frontier targets (issue 26 item 2)."""
from __future__ import annotations

import numpy as np
import pytest

from synthmi.evaluation.attack_risks import review_attacks
from synthmi.evaluation.frontier import Target
from synthmi.evaluation.targets import HOLDOUT_MEASURES, inference, linkability, singling_out
from synthmi.workflow.tuning import tune
from test_frontier import _small


@pytest.mark.parametrize("name", ["singling_out", "linkability", "inference"])
def test_the_targets_parse(name):
    t = Target.parse(f"{name}<=0.01")
    assert (t.measure, t.op, t.value) == (name, "<=", 0.01) and name in HOLDOUT_MEASURES


def test_each_target_is_the_review_figure():
    df = _small(400)
    train, holdout = df.iloc[:300].reset_index(drop=True), df.iloc[300:].reset_index(drop=True)
    full = review_attacks(train, [train], holdout, random_state=7)
    # the stronger singling-out mode, the linkability risk, the weakest secret: the same streams, the same figures
    assert singling_out(train, holdout, [train], None, 7) == max(
        full["singling_out[univariate]"].risk, full["singling_out[multivariate]"].risk)
    assert linkability(train, holdout, [train], None, 7) == full["linkability[k=1]"].risk
    assert inference(train, holdout, [train], None, 7) == max(r.risk for k, r in full.items()
                                                              if k.startswith("inference["))


def test_original_scores_high_and_an_independent_release_low():
    df = _small(800, seed=2)
    train, holdout = df.iloc[:400].reset_index(drop=True), df.iloc[400:].reset_index(drop=True)
    other = _small(400, seed=9)  # a release that never saw train
    # released as is, every continuous (age, hours) neighbour is the target itself: the secrets are read off
    assert inference(train, holdout, [train], None, 0) > 0.5
    assert singling_out(train, holdout, [train], None, 0) > 0.1  # multivariate 0.25, its 95% error 0.05
    # linkability is weaker here (the half hours, y has many ties, broken at random) but its interval excludes 0
    link = review_attacks(train, [train], holdout, attacks=["linkability"], random_state=0)["linkability[k=1]"]
    assert link.figures["linkability_ci_low"] > 0 and link.risk == linkability(train, holdout, [train], None, 0)
    # an independent release: each within its own 95% error of 0 (the largest half-width here, inference of
    # the binary y from 400 control records, is about 0.17; the others 0.01-0.14)
    for f in (inference, linkability, singling_out):
        assert f(train, holdout, [other], None, 0) < 0.15


@pytest.mark.slow  # a tune search: 110 s under load in the full run
def test_tune_with_a_singling_out_target_reports_it_with_mc_error():
    said = []
    res = tune(_small(300), ["age", "sex", "edu"], ["hours", "y"], ["y ~ age + sex + edu"],
               ["singling_out<=0.9", "inference<=0.9"], continuous_grid=[(1, 10.0)], alpha_grid=[5.0], m_search=2,
               m=2, replicates=2, n_confirm=1, seed=3, tolerance={"age": 1}, base_params={"random_state": 1},
               progress=said.append)
    assert "as the non-members of singling_out, inference" in said[0]
    for name in ("singling_out", "inference"):
        assert name in res.trace.columns and res.trace[name].between(0.0, 1.0).all()
        assert np.isfinite(res.validated[f"{name}_se"])


def test_a_control_without_a_released_column_is_refused():
    # the reviewer's case: review_attacks dropped 'hours' silently and attacked fewer columns than released
    df = _small(200)
    train, holdout = df.iloc[:150].reset_index(drop=True), df.iloc[150:].reset_index(drop=True)
    with pytest.raises(ValueError, match=r"'control'.*lacks \['hours'\]"):
        review_attacks(train, [train], holdout.drop(columns="hours"), random_state=0)
    # a column the copies do not release is not attacked, and not required of the control
    res = review_attacks(train, [train.drop(columns="hours")], holdout.drop(columns="hours"),
                         attacks=["linkability"], random_state=0)
    assert "hours" not in str(res["linkability[k=1]"].settings)
