r"""Anonymeter's three risks with a disclosure review's defaults: what ``disclosure``, the report and tune run.

The three attacks (Giomi et al. 2023, PoPETs 2023(2); anonymeter 1.1.0) are in
:mod:`synthmi.evaluation.singling_out`, :mod:`~synthmi.evaluation.linkability` and
:mod:`~synthmi.evaluation.inference_risk`; each is control-corrected,

.. math::

    \mathrm{risk} = \frac{\hat r_{\mathrm{main}} - \hat r_{\mathrm{control}}}{1 - \hat r_{\mathrm{control}}},

with the control set = the holdout (real records of the population not used for
synthesis). This module only chooses what each attack is run on, in one place:

* **singling out**, univariate and multivariate (3 columns a predicate), on every
  column the copies and the holdout share;
* **linkability**: the intruder holds two data sets that share no column and tries to
  join them through the release: by default the quasi-identifiers split in two halves
  in their order (the first :math:`\lceil q/2 \rceil` and the rest; all columns when
  fewer than two QIs are known), or ``link_aux=(A, B)``;
* **inference**, one per secret column: by default the columns that are not
  quasi-identifiers (with a spec: its kept and outcome columns), the intruder knowing
  the quasi-identifiers (anonymeter's default, every other column, when no QIs are
  known). With several secrets the headline ``inference`` is the largest risk (the
  intruder attacks the weakest column).

Singling out rescales the control's count to the training set's size: exact when the
two (deduplicated) are the same size, a fitted extrapolation otherwise
(:mod:`synthmi.evaluation.singling_out`); :func:`control_size_note` says so.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import pandas as pd

from .._validate import check_random_state, param_error
from ._attack import AttackResult
from .inference_risk import inference_risk
from .linkability import linkability_risk
from .singling_out import singling_out_risk

__all__ = ["review_attacks", "default_link_aux", "default_secrets", "control_size_note", "worst_inference"]

_OWNER = "review_attacks"

#: anonymeter's default number of attacks per copy (``n_attacks=500``)
DEFAULT_N_ATTACKS = 500


def default_link_aux(columns: Sequence[str], quasi_identifiers: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """The quasi-identifiers (or, with fewer than two, all ``columns``) split in two halves in order."""
    pool = [c for c in (quasi_identifiers or []) if c in columns]
    if len(pool) < 2:
        pool = list(columns)
    if len(pool) < 2:
        raise param_error("link_aux", _OWNER, "two disjoint non-empty column lists (linkability needs at least "
                          "two columns)", list(pool))
    half = math.ceil(len(pool) / 2)
    return pool[:half], pool[half:]


def default_secrets(columns: Sequence[str], quasi_identifiers: Sequence[str] | None, spec: Any = None) -> list[str]:
    """The spec's kept and outcome columns, else the non-quasi-identifier columns, else every column."""
    if spec is not None:
        kept = [c for c in spec._role("keep", "outcome") if c in columns]
        if kept:
            return kept
    qi = set(quasi_identifiers or [])
    rest = [c for c in columns if c not in qi]
    return rest or list(columns)


def control_size_note(n_original: int, n_control: int) -> str | None:
    """What the output says when the control and the training set differ in size (None when equal)."""
    if n_original == n_control:
        return None
    return (f"singling out: the control (holdout, {n_control} records) is "
            f"{'smaller' if n_control < n_original else 'larger'} than the training set ({n_original}); the "
            "control's count is rescaled to the training set's size by a fitted extrapolation, reliable only "
            "when the two are the same size (anonymeter's authors), so read the singling-out risks as "
            "approximate")


def worst_inference(results: dict[str, AttackResult]) -> AttackResult | None:
    """The inference result with the largest risk (the intruder attacks the weakest secret)."""
    inf = [r for r in results.values() if r.key.startswith("inference[")]
    return max(inf, key=lambda r: r.risk) if inf else None


def review_attacks(
    original: pd.DataFrame,
    synthetic: Any,
    control: pd.DataFrame,
    *,
    quasi_identifiers: Sequence[str] | None = None,
    secrets: Sequence[str] | None = None,
    link_aux: tuple[Sequence[str], Sequence[str]] | None = None,
    spec: Any = None,
    n_attacks: int = DEFAULT_N_ATTACKS,
    attacks: Sequence[str] = ("singling_out", "linkability", "inference"),
    random_state: Any = 0,
) -> dict[str, AttackResult]:
    r"""Run anonymeter's three attacks on a release with the review's defaults (module docstring).

    .. math::

        \mathrm{risk} = \frac{\hat r_{\mathrm{main}} - \hat r_{\mathrm{control}}}{1 - \hat r_{\mathrm{control}}}

    Source: Giomi et al. (2023), PoPETs 2023(2), sections 4.1-4.3.

    Parameters
    ----------
    original : DataFrame
        The records the release was made from.
    synthetic : DataFrame or sequence of DataFrames
        The copies (risk on the counts pooled over the copies; per-copy figures and their MC error kept).
    control : DataFrame
        The holdout: records of the population not used for the release.
    quasi_identifiers : list of str, optional
        What the intruder knows (linkability's default split, inference's auxiliary columns).
    secrets : list of str, optional
        Inference targets (default :func:`default_secrets`).
    link_aux : pair of lists, optional
        Linkability's two auxiliary sets (default :func:`default_link_aux`).
    spec : ReleaseSpec, optional
        Its kept and outcome columns are the default secrets.
    n_attacks : int
        Attacks per copy and per attack (anonymeter's default 500); fewer records are attacked when
        a frame holds fewer.
    attacks : sequence of {"singling_out", "linkability", "inference"}
        Which to run.
    random_state : int, Generator or None
        One seed for all: each attack gets its own stream from it (same seed -> same figures).

    Returns
    -------
    dict
        ``label -> AttackResult``: ``singling_out[univariate]``, ``singling_out[multivariate]``,
        ``linkability[k=1]``, ``inference[<secret>]`` for each secret.
    """
    unknown = [a for a in attacks if a not in ("singling_out", "linkability", "inference")]
    if unknown or isinstance(attacks, str):
        raise param_error("attacks", _OWNER, "a list of 'singling_out', 'linkability', 'inference'", attacks)
    copies = [synthetic] if isinstance(synthetic, pd.DataFrame) else list(synthetic)
    # the released columns: the original's that every copy has (columns not released are not attacked)
    cols = [c for c in original.columns if all(c in cp.columns for cp in copies)]
    missing = [c for c in cols if c not in control.columns]
    if missing:
        # attacking fewer columns than are released would understate the risk: refused, as disclosure does
        raise param_error("control", _OWNER, f"real records with every column the copies release (it lacks "
                          f"{missing})", f"a frame with columns {list(control.columns)}")
    qi = [c for c in (quasi_identifiers or []) if c in cols]
    secrets = list(secrets) if secrets is not None else default_secrets(cols, qi, spec)
    # one independent stream per attack run, from the caller's seed (adding an attack moves no other's stream)
    streams = check_random_state(random_state).spawn(3 + len(secrets))
    n_small = min(n_attacks, len(original), len(control))
    out: dict[str, AttackResult] = {}
    if "singling_out" in attacks:
        for j, mode in enumerate(("univariate", "multivariate")):
            r = singling_out_risk(original, copies, control, mode=mode, n_attacks=n_attacks, columns=cols,
                                  n_cols=min(3, len(cols)), random_state=streams[j])
            out[r.label] = r
    if "linkability" in attacks:
        aux = link_aux if link_aux is not None else default_link_aux(cols, qi)
        r = linkability_risk(original, copies, control, aux_columns=aux, n_attacks=n_small,
                             random_state=streams[2])
        out[r.label] = r
    if "inference" in attacks:
        for j, secret in enumerate(secrets):
            # no QIs known: anonymeter's default, every other column
            aux = [c for c in qi if c != secret] or [c for c in cols if c != secret]
            r = inference_risk(original, copies, control, secret=secret, aux_columns=aux, n_attacks=n_attacks,
                               random_state=streams[3 + j])
            out[r.label] = r
    return out
