"""Membership targets in tune (issue 26 item 2): the target table, the holdout tune makes, the trace."""
from __future__ import annotations

import numpy as np
import pytest

from synthmi.evaluation.frontier import Target
from synthmi.evaluation.targets import HOLDOUT_MEASURES, membership_auc
from synthmi.workflow.tuning import tune
from test_frontier import _small


def test_the_target_table_parses_membership_targets():
    assert {"membership_auc", "membership_tpr_at_fpr_0.01"} <= set(HOLDOUT_MEASURES)
    t = Target.parse("membership_auc <= 0.55")
    assert (t.measure, t.op, t.value) == ("membership_auc", "<=", 0.55)
    assert Target.parse("membership_tpr_at_fpr_0.01<=0.02").measure == "membership_tpr_at_fpr_0.01"


def test_membership_auc_is_the_stronger_attack():
    df = _small(400)
    train, holdout = df.iloc[:300].reset_index(drop=True), df.iloc[300:].reset_index(drop=True)
    # the training rows released as is: the distance attack recognises every one (continuous age and hours)
    assert membership_auc(train, holdout, [train], None, 0) > 0.95


def test_tune_holds_out_rows_for_a_membership_target():
    said = []
    res = tune(_small(300), ["age", "sex", "edu"], ["hours", "y"], ["y ~ age + sex + edu"], ["membership_auc<=0.7"],
               continuous_grid=[(1, 10.0)], alpha_grid=[5.0], m_search=2, m=2, replicates=2, n_confirm=1, seed=3,
               tolerance={"age": 1}, base_params={"random_state": 1}, progress=said.append)
    assert res.settings["holdout_share"] == 0.2
    assert "held out 60 of 300 rows (share 0.2, seed 3) as the non-members of membership_auc" in said[0]
    assert "membership_auc" in res.trace.columns and np.isfinite(res.trace["membership_auc"]).all()
    # every candidate measured: between guessing's lower edge and certainty
    assert res.trace["membership_auc"].between(0.3, 1.0).all()
    assert res.feasible and res.validated["membership_auc"] <= 0.7 + 3 * res.validated["membership_auc_se"]


def test_frontier_with_a_holdout_reports_membership_with_mc_error():
    from synthmi.workflow.tuning import Setting, frontier

    df = _small(400)
    train, holdout = df.iloc[:300].reset_index(drop=True), df.iloc[300:].reset_index(drop=True)
    fr = frontier(train, ["age", "sex", "edu"], ["hours", "y"], [Setting("cart", "leaf5", {})],
                  ["y ~ age + sex + edu"], m=2, replicates=2, tolerance={"age": 1}, pmse_copies=0,
                  references=False, holdout=holdout)
    p = fr.points.iloc[0]
    for name in HOLDOUT_MEASURES:
        assert 0.0 <= p[name] <= 1.0 and np.isfinite(p[f"{name}_se"])


def test_a_holdout_share_without_a_target_that_uses_it_is_refused():
    # it would silently tune on fewer rows than the user's file
    with pytest.raises(ValueError, match="'holdout_share' parameter of tune.*none was given"):
        tune(_small(100), ["age", "sex", "edu"], ["hours", "y"], ["y ~ age + sex + edu"], ["expected_matches<=50"],
             holdout_share=0.3)
