r"""Linkability risk: can the release join two data sets about the same people?

Giomi et al. (2023), "A Unified Framework for Quantifying Privacy Risk in Synthetic
Data", PoPETs 2023(2), section 4.2; ``anonymeter.evaluators.linkability_evaluator``
(1.1.0), the reference implementation this module follows.

The intruder holds two data sets, each with some columns of the original records
(``aux_columns[0]`` and ``aux_columns[1]``, disjoint), and wants to know which
record of one is the same person as a record of the other. For each of
:math:`n` target records (sampled from the original) the attack finds, separately
for each column set, the ``n_neighbors`` closest synthetic records (anonymeter's
Gower-like distance, :func:`synthmi.evaluation._attack.kneighbors`, ties broken at
random); the target is
*linked* when the two neighbour sets share a synthetic record. The same attack on
:math:`n` control records (same population, not used for the release) measures
how often such links arise from population patterns alone; the naive baseline
draws both neighbour sets at random. The risk is anonymeter's

.. math::

    \mathrm{risk} = \frac{\hat r_{\mathrm{main}} - \hat r_{\mathrm{control}}}{1 - \hat r_{\mathrm{control}}}

with Wilson rates and the propagated interval (see :mod:`synthmi.evaluation._attack`).
Missing values enter the distance as in anonymeter: a missing category is a level
of its own; two missing numbers count as different (distance 1); a synthetic record
with a number missing where the target has one is never a closer neighbour than a
complete one.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._validate import check_scalar, param_error
from ._attack import (
    AttackResult,
    MixedEncoder,
    attack_figures,
    check_attack_inputs,
    check_n_attacks,
    combine_copies,
    kneighbors,
    sample_rows,
    spawn,
)

__all__ = ["linkability_risk"]

_OWNER = "linkability_risk"
#: anonymeter's default number of attacked records (``n_attacks=500``)
DEFAULT_N_ATTACKS = 500

_DESCRIBE = (
    "Linkability: the intruder holds two data sets about the same people, one with the columns {a}, the other "
    "with {b}, and uses the release to join them: a target is linked when its closest synthetic record(s) on "
    "each column set coincide. The risk is how much more often this works for the people the release was made "
    "from than for people of the same population who were not in it (the control), as a share of the room left "
    "above the control's rate: 0 = the release links its own people no better than strangers, 1 = every one of "
    "them. The naive baseline (random neighbours) shows what chance alone gives."
)


def _links(idx0: np.ndarray, idx1: np.ndarray) -> int:
    """Targets whose two neighbour sets share a synthetic record (anonymeter's ``count_links``)."""
    if idx0.shape[1] == 1:
        return int(np.sum(idx0[:, 0] == idx1[:, 0]))
    return int(sum(bool(set(r0) & set(r1)) for r0, r1 in zip(idx0, idx1)))


def _attack(targets: pd.DataFrame, syn: pd.DataFrame, aux: tuple[list[str], list[str]], k: int,
            rng: np.random.Generator) -> int:
    idx = [kneighbors(MixedEncoder(syn[cols], targets[cols], cols), k, rng) for cols in aux]
    return _links(*idx)


def _random_links(n_syn: int, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    return np.array([rng.choice(n_syn, size=min(k, n_syn), replace=False) for _ in range(n)])


def linkability_risk(
    original: pd.DataFrame,
    synthetic: Any,
    control: pd.DataFrame,
    *,
    aux_columns: tuple[Sequence[str], Sequence[str]],
    n_neighbors: int = 1,
    n_attacks: int | None = None,
    confidence_level: float = 0.95,
    random_state: Any = None,
) -> AttackResult:
    r"""Linkability risk of a release (anonymeter's linkability attack, control-corrected).

    .. math::

        \mathrm{risk} = \frac{\hat r_{\mathrm{main}} - \hat r_{\mathrm{control}}}{1 - \hat r_{\mathrm{control}}}

    :math:`\hat r` the Wilson estimates of the share of linked targets among the
    original (main) and the control records. Source: Giomi et al. (2023), PoPETs
    2023(2), section 4.2; ``anonymeter.evaluators.LinkabilityEvaluator`` (1.1.0).

    Parameters
    ----------
    original : DataFrame
        The records the release was made from (the targets are sampled from them).
    synthetic : DataFrame or sequence of DataFrames
        The release; with M copies the attack runs on each and the result gives the per-copy rows,
        the mean risk and its MC error :math:`s/\sqrt{M}`.
    control : DataFrame
        Records of the same population not used for the release (the holdout).
    aux_columns : pair of lists of column names
        The columns of the intruder's two data sets; disjoint and each non-empty.
    n_neighbors : int
        A target is linked when its ``n_neighbors`` closest synthetic records on the two sets share one.
    n_attacks : int, optional
        Targets attacked in the original and in the control (without replacement). Default:
        anonymeter's 500, capped by the two frames' sizes.
    confidence_level : float
        Of the Wilson intervals, in (0, 1).
    random_state : int, Generator or None
        Seeds the target samples and the baseline.

    Returns
    -------
    AttackResult
        ``figures["linkability"]`` and its interval, MC error and rates.
    """
    if not (isinstance(aux_columns, (tuple, list)) and len(aux_columns) == 2
            and all(not isinstance(s, str) and isinstance(s, Sequence) for s in aux_columns)):
        raise param_error("aux_columns", _OWNER, "a pair of lists of column names", aux_columns)
    aux = (list(aux_columns[0]), list(aux_columns[1]))
    if not aux[0] or not aux[1]:
        raise param_error("aux_columns", _OWNER, "two non-empty lists of column names", aux_columns)
    overlap = sorted(set(aux[0]) & set(aux[1]), key=str)
    if overlap:
        raise param_error("aux_columns", _OWNER, f"two disjoint lists (both name {overlap})", aux_columns)
    original, copies, control, cols, level = check_attack_inputs(
        original, synthetic, control, aux[0] + aux[1], _OWNER, confidence_level, "aux_columns")
    k = int(check_scalar(n_neighbors, "n_neighbors", _OWNER, kind="int", lower=1))
    n = check_n_attacks(n_attacks, _OWNER, DEFAULT_N_ATTACKS, {"original": len(original), "control": len(control)})

    rows = []
    for syn, rng in zip(copies, spawn(random_state, len(copies))):
        syn = syn[cols]
        n_base = _links(_random_links(len(syn), n, k, rng), _random_links(len(syn), n, k, rng))
        n_main = _attack(sample_rows(original[cols], n, rng), syn, aux, k, rng)
        n_ctrl = _attack(sample_rows(control[cols], n, rng), syn, aux, k, rng)
        rows.append(attack_figures((n, n, n), n_main, n_ctrl, n_base, level))
    settings = {"aux_columns": [aux[0], aux[1]], "n_neighbors": k, "n_attacks": n, "confidence_level": level}
    describe = _DESCRIBE.format(a=aux[0], b=aux[1])
    return combine_copies("linkability", f"linkability[k={k}]", rows, level, settings, describe)
