r"""95% confidence-interval overlap between original-data and synthetic-data inference."""
from __future__ import annotations

from typing import Any

import numpy as np
from ..errors import InputError


def ci_overlap(lower_orig: Any, upper_orig: Any, lower_syn: Any, upper_syn: Any) -> np.ndarray:
    r"""Average relative overlap of two confidence intervals (vectorised).

    .. math::

        I = \frac12\left[\frac{\min(U_o, U_s) - \max(L_o, L_s)}{U_o - L_o}
          + \frac{\min(U_o, U_s) - \max(L_o, L_s)}{U_s - L_s}\right]

    Source: Karr, Kohnen, Oganian, Reiter & Sanil (2006), *The American
    Statistician* 60:224-232; the formula as given in the short-course slides
    ("Specific utility measures"). It is 1 for identical intervals, positive
    for overlapping ones and negative when they do not overlap (the numerator
    is then minus the gap between them).
    """
    lo_o, hi_o, lo_s, hi_s = (np.asarray(a, dtype=float) for a in (lower_orig, upper_orig, lower_syn, upper_syn))
    if not all(np.all(np.isfinite(a)) for a in (lo_o, hi_o, lo_s, hi_s)):
        raise InputError("ci_overlap got NaN or infinite interval bounds.")
    if np.any(hi_o <= lo_o) or np.any(hi_s <= lo_s):
        raise InputError("ci_overlap needs intervals with upper > lower for both the original and the synthetic CI.")
    inter = np.minimum(hi_o, hi_s) - np.maximum(lo_o, lo_s)
    return 0.5 * (inter / (hi_o - lo_o) + inter / (hi_s - lo_s))
