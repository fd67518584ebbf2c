"""Tuning-target measures that need a holdout: name -> function, one table to extend.

``synthmi tune --target NAME<=VALUE`` (and :class:`synthmi.evaluation.frontier.Target`)
accepts the measures of :mod:`synthmi.evaluation.frontier` (computed by its
``evaluate_release`` from the original and the copies) and the names of
:data:`HOLDOUT_MEASURES`: measures that also need real records of the population
that were not used for synthesis. Each entry is a function

``f(train, holdout, copies, spec, random_state) -> float``

(``train``: the rows the copies were made from; ``copies``: a list of DataFrames;
``spec``: the release spec or None), lower = safer. Tuning holds out a share of
the rows when a target names one of them (:func:`synthmi.workflow.tuning.tune`,
``holdout_share``).

To add a measure, add an entry. Anonymeter's three risks (Giomi et al. 2023; run with
the review's defaults of :func:`synthmi.evaluation.attack_risks.review_attacks`, the
holdout as their control set, anonymeter's 500 attacks per copy) are registered as

* ``"singling_out"``: the larger of the univariate and multivariate singling-out risks;
* ``"linkability"``: the linkability risk, the auxiliary sets the spec's quasi-identifiers
  split in two halves (every column without a spec);
* ``"inference"``: the largest inference risk over the secrets (the spec's kept and outcome
  columns; every column without a spec), each inferred from the quasi-identifiers (every
  other column without a spec).

Each is anonymeter's risk on the counts pooled over the copies (the headline of
:class:`~synthmi.evaluation._attack.AttackResult`); over replicate syntheses tune and the frontier give
its MC error. A target naming an unregistered measure is refused by :meth:`Target.parse`
with the list of the known ones.
"""
from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from .attack_risks import review_attacks, worst_inference
from .membership import membership_inference

__all__ = ["HOLDOUT_MEASURES", "membership_auc", "membership_tpr_at_fpr_001", "singling_out", "linkability",
           "inference"]

#: the bootstrap of membership_inference is not used by a target (only the whole-release figure)
_TARGET_BOOT = 20


def _stronger(train, holdout, copies, random_state, figure: str) -> float:
    """The larger ``figure`` of the distance attack and DOMIAS: the intruder uses the stronger one."""
    return max(float(membership_inference(train, holdout, copies, attack=a, n_boot=_TARGET_BOOT,
                                          random_state=random_state).figures[figure])
               for a in ("distance", "domias"))


def membership_auc(train: pd.DataFrame, holdout: pd.DataFrame, copies: list[pd.DataFrame], spec: Any = None,
                   random_state: Any = 0) -> float:
    """Membership inference AUC of the stronger of the distance attack and DOMIAS (all copies at once)."""
    return _stronger(train, holdout, copies, random_state, "membership_auc")


def membership_tpr_at_fpr_001(train: pd.DataFrame, holdout: pd.DataFrame, copies: list[pd.DataFrame],
                              spec: Any = None, random_state: Any = 0) -> float:
    """Membership inference TPR at FPR 0.01 of the stronger of the two attacks (all copies at once)."""
    return _stronger(train, holdout, copies, random_state, "membership_tpr_at_fpr_0.01")


def _attacks(train, holdout, copies, spec, random_state, attack: str):
    qi = spec.quasi_identifiers if spec is not None else None
    return review_attacks(train, copies, holdout, quasi_identifiers=qi, spec=spec, attacks=[attack],
                          random_state=random_state)


def singling_out(train: pd.DataFrame, holdout: pd.DataFrame, copies: list[pd.DataFrame], spec: Any = None,
                 random_state: Any = 0) -> float:
    """The larger of the univariate and multivariate singling-out risks (pooled over the copies)."""
    return max(r.risk for r in _attacks(train, holdout, copies, spec, random_state, "singling_out").values())


def linkability(train: pd.DataFrame, holdout: pd.DataFrame, copies: list[pd.DataFrame], spec: Any = None,
                random_state: Any = 0) -> float:
    """The linkability risk on the QIs (every column without a spec) split in halves (pooled over the copies)."""
    (r,) = _attacks(train, holdout, copies, spec, random_state, "linkability").values()
    return r.risk


def inference(train: pd.DataFrame, holdout: pd.DataFrame, copies: list[pd.DataFrame], spec: Any = None,
              random_state: Any = 0) -> float:
    """The largest inference risk over the default secrets (pooled over the copies)."""
    return worst_inference(_attacks(train, holdout, copies, spec, random_state, "inference")).risk


#: target name -> f(train, holdout, copies, spec, random_state) -> float (lower = safer)
HOLDOUT_MEASURES: dict[str, Callable[..., float]] = {
    "membership_auc": membership_auc,
    "membership_tpr_at_fpr_0.01": membership_tpr_at_fpr_001,
    "singling_out": singling_out,
    "linkability": linkability,
    "inference": inference,
}
