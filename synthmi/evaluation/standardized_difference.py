r"""Standardized difference between original-data and synthetic-data estimates."""
from __future__ import annotations

from typing import Any

import numpy as np
from ..errors import InputError, ParameterError


def standardized_difference(est_orig: Any, est_syn: Any, se_orig: Any) -> np.ndarray:
    r"""Absolute difference of estimates in units of the original standard error.

    .. math::

        d = \frac{|\hat\beta_{orig} - \hat\beta_{syn}|}{\mathrm{SE}(\hat\beta_{orig})}

    Source: short-course slides ("Specific utility measures"); Jiang et al.
    (2022), *JASA* 117:52-66. Vectorised over coefficients.
    """
    b_o, b_s, se = (np.asarray(a, dtype=float) for a in (est_orig, est_syn, se_orig))
    if not all(np.all(np.isfinite(a)) for a in (b_o, b_s, se)):
        raise InputError("standardized_difference got NaN or infinite estimates or standard errors.")
    if np.any(se <= 0):
        raise ParameterError("The 'se_orig' parameter of standardized_difference must be > 0 everywhere.", parameter='se_orig', owner='standardized_difference')
    return np.abs(b_o - b_s) / se
