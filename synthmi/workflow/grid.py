"""The default grid of a risk-utility frontier for any file (``synthmi frontier``).

``benchmarks/frontier.py`` hand-writes a grid for each bundled data set; a
user's file needs one built from the quasi-identifiers' kinds alone (roles and
kinds of the spec, never the data's values). :func:`default_settings` builds
it, and :func:`synthmi.workflow.tuning.frontier` measures it (every point by
the battery of :mod:`synthmi.evaluation.battery`, with Monte Carlo SE over
replicate seeds).

The grid, per method:

``dami``
    one normal mask :math:`(K, \\sigma_e)` shared by the continuous
    quasi-identifiers, from ``continuous_grid`` (:math:`K = 0`: unmasked),
    crossed with one linear mask :math:`\\alpha` shared by the categorical
    ones, from ``alpha_grid`` (:math:`\\alpha = 0`: unmasked, drawn from the
    model as in Rubin's MI). Both default grids hold the unmasked level and a
    weak mask, so every kind of QI is also swept with the other kind unmasked
    (issue 29: a search that never leaves one kind unmasked cannot find a weak
    mask on the other alone). A file with only one kind of QI gets that kind's
    grid alone.
``cart``
    CART's own frontier, not its default (issue 29: coarser leaves alone gained
    +0.022 overlap at a third of the risk): each minimum leaf size of
    ``leaves``, and with a continuous QI the smallest leaf also with synthpop's
    density smoothing.
``norm+logit``
    Rubin's MI with a multinomial model of categorical QIs (one point).
"""
from __future__ import annotations

from typing import Mapping, Sequence

from ..errors import InputError
from ..kinds import NUMERIC_KINDS
from .tuning import Setting

__all__ = ["default_settings", "GRID_METHODS"]

#: the methods a default frontier may sweep
GRID_METHODS = ("dami", "cart", "norm+logit")


def default_settings(
    kinds: Mapping[str, str],
    methods: Sequence[str] = ("dami", "cart"),
    continuous_grid: Sequence[tuple[int, float]] = ((0, 1.0), (1, 10.0), (1, 3.0)),
    alpha_grid: Sequence[float] = (0.0, 1.0, 3.0),
    leaves: Sequence[int] = (5, 20, 100),
) -> list[Setting]:
    """The frontier's settings for quasi-identifiers of the given kinds (see the module docstring).

    ``kinds`` maps each quasi-identifier to ``"continuous"`` or ``"categorical"``
    (a spec's ``integer`` counts as continuous, ``binary`` / ``nominal`` / ``ordinal``
    as categorical). A ``continuous_grid`` entry with ``K = 0`` leaves the continuous
    QIs unmasked, as ``alpha = 0`` does the categorical ones.
    """
    bad = [m for m in methods if m not in GRID_METHODS]
    if bad or not methods:
        raise InputError(f"The 'methods' of a default frontier must be among {list(GRID_METHODS)}. Got {list(methods)!r} instead.")
    conts = [c for c, k in kinds.items() if k in NUMERIC_KINDS]
    cats = [c for c in kinds if c not in conts]
    out: list[Setting] = []
    if "dami" in methods:
        cgrid = [(int(k), float(s)) for k, s in continuous_grid] if conts else [None]
        agrid = [float(a) for a in alpha_grid] if cats else [None]
        for ks in cgrid:
            for a in agrid:
                masks = {}
                if ks is not None and ks[0] > 0:
                    masks.update({c: {"K": ks[0], "sigma_e": ks[1]} for c in conts})
                if a is not None and a > 0:
                    masks.update({c: {"alpha": a} for c in cats})
                label = "; ".join(([f"continuous K={ks[0]} sigma={ks[1]:g}" if ks[0] > 0 else "continuous unmasked"]
                                   if ks is not None else [])
                                  + ([f"alpha={a:g}"] if a is not None else []))
                out.append(Setting("dami", label, {"masks": masks or None}))
    if "cart" in methods:
        for i, leaf in enumerate(int(v) for v in leaves):
            out.append(Setting("cart", f"min leaf {leaf}", {"min_samples_leaf": leaf}))
            if i == 0 and conts:
                out.append(Setting("cart", f"min leaf {leaf}; smoothed", {"min_samples_leaf": leaf,
                                                                          "smoothing": "density"}))
    if "norm+logit" in methods:
        out.append(Setting("norm+logit", "multinomial categorical QIs", {"ordinal_link": "multinomial"}))
    return out
