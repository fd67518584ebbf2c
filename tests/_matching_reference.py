"""Brute-force reference for quasi-identifier matching (all pairs, plain Python),
shared by tests/evaluation/test_risk.py and tests/evaluation/test_subgroups.py."""
from __future__ import annotations

import math

import numpy as np


def _half_width(spec, t):
    if isinstance(spec, str) and spec.endswith("%"):
        return float(spec[:-1]) / 100.0 * abs(t)
    return float(spec)


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def brute_match(t: dict, y: dict, cat: list[str], cont: list[str], tol: dict) -> bool:
    for c in cat:
        a, b = t[c], y[c]
        if _missing(a) or _missing(b):
            if not (_missing(a) and _missing(b)):
                return False
        elif a != b:
            return False
    for c in cont:
        a, b = t[c], y[c]
        if _missing(a) or _missing(b):
            if not (_missing(a) and _missing(b)):
                return False
            continue
        h = _half_width(tol.get(c, 0.0), a)
        if not (a - h <= b <= a + h):
            return False
    return True


def brute_risk(original, copies, cat, cont, tol):
    """I_i, and per target the number of copies with s=1 correct / s=1 wrong / s=0, and sum of s."""
    rows_o = original.astype(object).to_dict("records")
    n, m = len(rows_o), len(copies)
    pr_sum = [0.0] * n
    s_sum = [0] * n
    tu = [0] * n
    fu = [0] * n
    none = [0] * n
    for cp in copies:
        rows_c = cp.astype(object).to_dict("records")
        for i, t in enumerate(rows_o):
            matched = [j for j, y in enumerate(rows_c) if brute_match(t, y, cat, cont, tol)]
            s = len(matched)
            s_sum[i] += s
            if i in matched:
                pr_sum[i] += 1.0 / s
            tu[i] += s == 1 and i in matched
            fu[i] += s == 1 and i not in matched
            none[i] += s == 0
    return np.array(pr_sum) / m, np.array(s_sum), np.array(tu), np.array(fu), np.array(none)


# Few distinct values force ties; 0.1/0.2/0.3 put float rounding on the box edge.
CONT_POOL = [0.0, 0.1, 0.2, 0.3, 0.5, 1.0, -0.3, 2.0, float("nan")]
CAT_POOL = ["a", "b", None]
TOL_POOL = [0.0, 0.1, 0.2, 1.0, "10%", "50%"]
