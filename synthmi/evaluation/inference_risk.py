r"""Inference risk: can the release reveal a person's secret from what else is known about them?

Giomi et al. (2023), "A Unified Framework for Quantifying Privacy Risk in Synthetic
Data", PoPETs 2023(2), section 4.3; ``anonymeter.evaluators.inference_evaluator``
(1.1.0), the reference implementation this module follows.

The intruder knows the auxiliary columns of a target (by default every column but
the secret) and guesses the secret as the value of the closest synthetic record on
those columns (anonymeter's Gower-like distance,
:func:`synthmi.evaluation._attack.kneighbors`, one neighbour). A guess is right
when it equals the target's value exactly, or both are missing (anonymeter's
default ``regression=False``; it applies to a numeric secret too). The attack runs
on :math:`n` original records (main), on :math:`n` control records (same
population, not used for the release), and a naive attacker guesses the secret of
a random synthetic record (baseline). The risk is anonymeter's

.. math::

    \mathrm{risk} = \frac{\hat r_{\mathrm{main}} - \hat r_{\mathrm{control}}}{1 - \hat r_{\mathrm{control}}}

with Wilson rates and the propagated interval (:mod:`synthmi.evaluation._attack`):
the share of the secrets the release gives away beyond what the population's
patterns give away anyway. Missing auxiliary values enter the distance as in
anonymeter (see :mod:`synthmi.evaluation.linkability`).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._validate import check_columns_exist, check_dataframe, check_scalar, param_error
from ..errors import ColumnError
from ._attack import (
    AttackResult,
    MixedEncoder,
    attack_figures,
    check_attack_inputs,
    combine_copies,
    kneighbors,
    sample_rows,
    spawn,
)

__all__ = ["inference_risk"]

_OWNER = "inference_risk"
#: anonymeter's default number of attacks (``n_attacks=500``)
DEFAULT_N_ATTACKS = 500

_DESCRIBE = (
    "Inference on '{secret}': the intruder knows {aux} of a person and reads the value of '{secret}' off the "
    "synthetic record closest to them; a guess counts when it equals the true value exactly. The risk is how much "
    "more often this is right for the people the release was made from than for people of the same population "
    "who were not in it (the control), as a share of the room left above the control's rate: 0 = the release "
    "reveals nothing about its own people beyond population patterns, 1 = every secret. The naive baseline "
    "(the value of a random synthetic record) shows what guessing gives."
)


def _correct(guesses: np.ndarray, secrets: np.ndarray) -> int:
    """Exact matches, a missing guess of a missing secret included (anonymeter's
    ``evaluate_inference_guesses`` with ``regression=False``)."""
    match = np.asarray(guesses == secrets, dtype=bool)
    both_missing = pd.isna(guesses) & pd.isna(secrets)
    return int(np.sum(match | both_missing))


def inference_risk(
    original: pd.DataFrame,
    synthetic: Any,
    control: pd.DataFrame,
    *,
    secret: str,
    aux_columns: Sequence[str] | None = None,
    n_attacks: int | None = None,
    confidence_level: float = 0.95,
    random_state: Any = None,
) -> AttackResult:
    r"""Inference risk of one secret column (anonymeter's inference attack, control-corrected).

    .. math::

        \mathrm{risk} = \frac{\hat r_{\mathrm{main}} - \hat r_{\mathrm{control}}}{1 - \hat r_{\mathrm{control}}}

    :math:`\hat r` the Wilson estimates of the share of secrets guessed right among original (main)
    and control records. Source: Giomi et al. (2023), PoPETs 2023(2), section 4.3;
    ``anonymeter.evaluators.InferenceEvaluator`` (1.1.0).

    Parameters
    ----------
    original, synthetic, control : DataFrame
        As :func:`~synthmi.evaluation.linkability_risk`; ``synthetic`` may be a sequence of copies.
    secret : str
        The column the intruder wants to learn.
    aux_columns : list of str, optional
        What the intruder knows; default every other column of the original.
    n_attacks : int, optional
        Records attacked (anonymeter's default 500); as in anonymeter, capped by each frame's size
        (main: the original's; control: the control's; baseline: the copy's).
    confidence_level : float
        Of the Wilson intervals, in (0, 1).
    random_state : int, Generator or None
        Seeds the target samples and the baseline.

    Returns
    -------
    AttackResult
        ``figures["inference[<secret>]"]`` and its interval, MC error and rates.
    """
    if not isinstance(secret, str):
        raise param_error("secret", _OWNER, "a column name (str)", secret)
    check_dataframe(original, "original")
    check_columns_exist(original, [secret], "secret", "original")
    if aux_columns is None:
        aux = [c for c in original.columns if c != secret]
    else:
        if isinstance(aux_columns, str) or not isinstance(aux_columns, Sequence):
            raise param_error("aux_columns", _OWNER, "a list of column names", aux_columns)
        aux = list(aux_columns)
        if secret in aux:
            raise ColumnError(f"The aux_columns of {_OWNER} include the secret '{secret}': the intruder would "
                              "know what they try to learn.", column=secret, problem="secret among aux_columns")
    if not aux:
        raise param_error("aux_columns", _OWNER, "a non-empty list of column names", aux)
    original, copies, control, cols, level = check_attack_inputs(
        original, synthetic, control, aux + [secret], _OWNER, confidence_level, "aux_columns")
    if n_attacks is None:
        n_req = DEFAULT_N_ATTACKS
    else:
        n_req = int(check_scalar(n_attacks, "n_attacks", _OWNER, kind="int", lower=1))

    rows = []
    for syn, rng in zip(copies, spawn(random_state, len(copies))):
        syn = syn[cols]
        n_main = min(n_req, len(original))
        n_base = min(len(syn), n_main)
        n_ctrl = min(n_req, len(control))
        secrets_syn = syn[secret].to_numpy(dtype=object)
        # naive baseline: a random synthetic record's secret for a random original record
        base_targets = sample_rows(original[cols], n_base, rng)[secret].to_numpy(dtype=object)
        base_guesses = secrets_syn[rng.choice(len(syn), size=n_base, replace=False)]
        k_base = _correct(base_guesses, base_targets)
        counts = []
        for frame, n in ((original, n_main), (control, n_ctrl)):
            targets = sample_rows(frame[cols], n, rng)
            idx = kneighbors(MixedEncoder(syn[aux], targets[aux], aux), 1, rng)[:, 0]
            counts.append(_correct(secrets_syn[idx], targets[secret].to_numpy(dtype=object)))
        rows.append(attack_figures((n_main, n_base, n_ctrl), counts[0], counts[1], k_base, level))
    settings = {"secret": secret, "aux_columns": aux, "n_attacks": n_req, "confidence_level": level}
    key = f"inference[{secret}]"
    return combine_copies(key, key, rows, level, settings, _DESCRIBE.format(secret=secret, aux=aux))
