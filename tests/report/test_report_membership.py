"""Membership inference in the disclosure review (issue 26 item 4): evaluate_release collects it with the
two reference releases, the report shows it as one row per release and one column per measure."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from _frames import wage_frame
from _report_fixtures import fake_report_data
from synthmi.report.html import render_report
from synthmi.workflow.evaluate import evaluate_release


def _release(train: pd.DataFrame, rng: np.random.Generator, m: int = 2) -> list[pd.DataFrame]:
    """A partially synthetic stand-in: age and sex redrawn from their marginals, the rest kept."""
    out = []
    for _ in range(m):
        c = train.copy()
        c["age"] = rng.choice(train["age"].to_numpy(), len(train))
        c["sex"] = rng.choice(train["sex"].to_numpy(), len(train))
        out.append(c)
    return out


@pytest.fixture(scope="module")
def evaluated():
    full = wage_frame(600, seed=11)
    train, holdout = full.iloc[:400].reset_index(drop=True), full.iloc[400:].reset_index(drop=True)
    rel = _release(train, np.random.default_rng(0))
    data = evaluate_release(train, {"swap": rel}, ["age", "sex"], "hours ~ age + sex", family="gaussian",
                            holdout=holdout)
    return data


def test_attack_risks_rows_and_references(evaluated):
    t = evaluated.attack_risks.set_index("method")
    assert list(t.index) == ["swap", "reference: original released as is", "reference: independent release"]
    for col in ("distance_auc", "distance_tpr_at_fpr_0.01", "domias_auc", "domias_tpr_at_fpr_0.01"):
        assert {col, col + "_ci_low", col + "_ci_high"} <= set(t.columns)
        assert (t[col + "_ci_low"] <= t[col]).all() and (t[col] <= t[col + "_ci_high"]).all()
    # the original as is: every training record has a released twin (continuous hours: no holdout twin)
    assert t.loc["reference: original released as is", "distance_auc"] > 0.99
    # the independent release (half the holdout released, the other half the non-members): no signal;
    # its bootstrap 95% interval covers 0.5
    ind = t.loc["reference: independent release"]
    assert ind["distance_auc_ci_low"] < 0.5 < ind["distance_auc_ci_high"]
    assert {"membership (distance)", "membership (domias)"} <= set(evaluated.attack_notes)


def test_report_shows_the_table_with_reference_rows(evaluated):
    page = render_report(evaluated)
    section = page.split("<section id='attacks'>", 1)[1].split("</section>", 1)[0]
    assert "distance: AUC" in section and "domias: TPR at FPR 0.01" in section
    assert "<tr class='ref'><td>reference: independent release</td>" in section
    assert "what each attack assumes the intruder knows".lower() in section.lower()
    # anonymeter's risks: further columns, with what each assumes
    for label in ("singling out (univariate): risk", "singling out (multivariate): risk", "linkability: risk",
                  "inference of edu: risk"):
        assert label in section
    assert "the intruder knows [&#x27;age&#x27;, &#x27;sex&#x27;] of a person" in section
    # a partially synthetic release: the kept columns' verbatim values expose members, and the note says so
    # (a high AUC for a strongly masked release reads as a synthesis failure otherwise)
    assert ("the attacks use every released column, the kept ones included" in section
            and "not a flaw of the synthesizer" in section)


def test_anonymeter_columns_original_high_independent_low(evaluated):
    t = evaluated.attack_risks.set_index("method")
    # no spec and no target: the secrets are the non-QI columns, inferred from the QIs; the links on age | sex
    assert {"singling_out[univariate]", "singling_out[multivariate]", "linkability[k=1]", "inference[edu]",
            "inference[hours]", "inference[y]"} <= set(t.columns)
    for col in ("singling_out[multivariate]", "linkability[k=1]", "inference[hours]"):
        assert (t[col + "_ci_low"] <= t[col]).all() and (t[col] <= t[col + "_ci_high"]).all()
    # the original as is: every training record is released (intervals from anonymeter's propagated error)
    orig, ind = t.loc["reference: original released as is"], t.loc["reference: independent release"]
    assert orig["singling_out[multivariate]_ci_low"] > 0.1 and orig["inference[hours]_ci_low"] > 0.1  # (hours from age and sex only: many ties)
    # the independent release: each interval reaches 0 (no excess over the control)
    for col in ("singling_out[univariate]", "singling_out[multivariate]", "linkability[k=1]", "inference[hours]",
                "inference[edu]", "inference[y]"):
        assert ind[col + "_ci_low"] == 0.0, col
    # 400 training rows against 200 holdout rows: the size correction is an extrapolation and the notes say so
    assert "fitted extrapolation" in evaluated.attack_notes["control size"]


def test_without_holdout_the_report_says_how_to_get_one():
    data = fake_report_data()
    data.settings["membership_inference"] = "not computed: membership inference needs a holdout (--holdout-share)"
    section = render_report(data).split("<section id='attacks'>", 1)[1].split("</section>", 1)[0]
    assert "needs a holdout" in section
    full = wage_frame(200, seed=2)
    d = evaluate_release(full, {"same": [full.copy(), full.copy()]}, ["age", "sex"], "hours ~ age + sex", family="gaussian",
                         references=False)
    assert d.attack_risks.empty and "--holdout-share" in d.settings["membership_inference"]


def test_a_holdout_lacking_a_compared_column_is_refused():
    """Not skipped silently: the attacks used to drop a column the holdout lacks (here 'hours', the
    continuous column that makes the original-as-is reference recognisable) and attack on the rest."""
    full = wage_frame(600, seed=11)
    train, holdout = full.iloc[:400].reset_index(drop=True), full.iloc[400:].reset_index(drop=True)
    rel = _release(train, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"'holdout' parameter of evaluate_release.*\['hours'\]"):
        evaluate_release(train, {"swap": rel}, ["age", "sex"], "hours ~ age + sex", family="gaussian",
                         holdout=holdout.drop(columns="hours"), pmse_method="cart")


def test_secrets_and_link_aux_reach_the_attacks():
    """evaluate_release(secrets=, link_aux=) run anonymeter's attacks with them: the release's row equals
    review_attacks run by hand with the same control (the holdout) and seed; bad names are refused."""
    from synthmi.errors import ColumnError, ParameterError
    from synthmi.evaluation.attack_risks import review_attacks

    full = wage_frame(300, seed=12)
    train, holdout = full.iloc[:200].reset_index(drop=True), full.iloc[200:].reset_index(drop=True)
    rel = _release(train, np.random.default_rng(1))
    aux = (["age"], ["sex", "edu"])
    data = evaluate_release(train, {"swap": rel}, ["age", "sex"], "hours ~ age + sex", family="gaussian",
                            holdout=holdout, secrets=["hours"], link_aux=aux, references=False)
    row = data.attack_risks.set_index("method").loc["swap"]
    by_hand = review_attacks(train, rel, holdout, quasi_identifiers=["age", "sex"], secrets=["hours"],
                             link_aux=aux, random_state=0)
    assert {k for k in row.index if k.startswith("inference[")} == {"inference[hours]", "inference[hours]_ci_low",
                                                                    "inference[hours]_ci_high"}
    for label, r in by_hand.items():
        assert row[label] == pytest.approx(r.figures[r.key], abs=1e-12)
    with pytest.raises((ColumnError, ParameterError), match="secrets"):
        evaluate_release(train, {"swap": rel}, ["age", "sex"], "hours ~ age + sex", family="gaussian",
                         holdout=holdout, secrets=["nope"])
    with pytest.raises(ParameterError, match="'link_aux'"):
        evaluate_release(train, {"swap": rel}, ["age", "sex"], "hours ~ age + sex", family="gaussian",
                         holdout=holdout, link_aux=(["age"], []))
