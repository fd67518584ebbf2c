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

To add a measure, add an entry. Anonymeter's three risks (the functions
``singling_out_risk``, ``linkability_risk`` and ``inference_risk`` of
:mod:`synthmi.evaluation`, signature ``(original, synthetic, control, *, ...,
random_state)`` returning a result with ``.figures``) go in as ``"singling_out"``,
``"linkability"`` and ``"inference"``, e.g.::

    HOLDOUT_MEASURES["singling_out"] = lambda train, holdout, copies, spec, rs: float(
        singling_out_risk(train, copies, holdout, random_state=rs).figures["risk"])

(``holdout`` is their control set.) Those names are not registered here until those
functions exist: a target naming an unregistered measure is refused by
:meth:`Target.parse` with the list of the known ones.
"""
from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from .membership import membership_inference

__all__ = ["HOLDOUT_MEASURES", "membership_auc", "membership_tpr_at_fpr_001"]

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


#: target name -> f(train, holdout, copies, spec, random_state) -> float (lower = safer)
HOLDOUT_MEASURES: dict[str, Callable[..., float]] = {
    "membership_auc": membership_auc,
    "membership_tpr_at_fpr_0.01": membership_tpr_at_fpr_001,
}
