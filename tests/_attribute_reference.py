"""Brute-force reference for attribute disclosure (plain Python loops over all
pairs), shared by tests/evaluation/test_attribute_disclosure.py. Keys compare exactly with
a missing value as its own level (synthpop); matching uses
``_matching_reference.brute_match``."""
from __future__ import annotations

import math

import numpy as np

from _matching_reference import _missing, brute_match


def _norm(v):
    """Missing values compare equal to each other (a level of their own)."""
    if _missing(v):
        return ("<NA>",)
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        return float(v)
    return v


def brute_key_measures(original, copy, keys, target):
    """Per original record: DiSCO, DiS, iS, Dorig, DCAP term, repU, UiO; and UiS of the copy."""
    o = original.astype(object).to_dict("records")
    s = copy.astype(object).to_dict("records")
    kk = lambda r: tuple(_norm(r[c]) for c in keys)  # noqa: E731
    out = {k: [] for k in ("disco", "dis", "in_s", "dorig", "dcap", "repu", "uio")}
    for r in o:
        k, t = kk(r), _norm(r[target])
        same_s = [_norm(x[target]) for x in s if kk(x) == k]
        same_d = [_norm(x[target]) for x in o if kk(x) == k]
        ns = len(same_s)
        nst = sum(v == t for v in same_s)
        out["in_s"].append(ns > 0)
        out["disco"].append(ns > 0 and nst == ns)
        out["dis"].append(ns > 0 and len(set(same_s)) == 1)
        out["dorig"].append(all(v == t for v in same_d))
        out["dcap"].append(nst / ns if ns else 0.0)
        out["repu"].append(len(same_d) == 1 and ns == 1)
        out["uio"].append(len(same_d) == 1)
    uis = float(np.mean([sum(kk(x) == kk(y) for y in s) == 1 for x in s]))
    return {k: np.array(v, dtype=float) for k, v in out.items()}, uis


def brute_matching_attribute(original, copy, cat, cont, tol, target, target_continuous, target_tol):
    """Per original record: A_im, s_im and whether every match has the correct target."""
    o = original.astype(object).to_dict("records")
    s = copy.astype(object).to_dict("records")
    a, n_match, allc = [], [], []
    for r in o:
        matched = [x for x in s if brute_match(r, x, cat, cont, tol)]
        if target_continuous:
            ok = [brute_match(r, x, [], [target], {target: target_tol or 0.0}) for x in matched]
        else:
            ok = [brute_match(r, x, [target], [], {}) for x in matched]
        n_match.append(len(matched))
        a.append(sum(ok) / len(matched) if matched else 0.0)
        allc.append(bool(matched) and all(ok))
    return np.array(a), np.array(n_match), np.array(allc, dtype=float)


def isnan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)
