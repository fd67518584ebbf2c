r"""A tree-based Bayesian conditional model with a likelihood (method ``"tree"``).

synthpop's ``cart`` (:mod:`synthmi.models.cart`) draws a donor of the leaf a
record falls into and has no likelihood, so DA-MI cannot combine it with the
masking evidence :math:`p(\tilde W \mid x)` in the joint predictive
(:mod:`synthmi.models.predictive`). This model keeps CART's partition and puts
a conjugate posterior on what happens inside each leaf, so that every
posterior draw :math:`\theta` fixes a proper density
:math:`p(x_j \mid \text{pred}_j, \theta)`.

Partition
    A CART tree on the kept columns and earlier quasi-identifiers, encoded
    as :class:`~synthmi.models.cart.CartSynthesizer` encodes them (codes for
    binary and ordinal columns, one-hot for nominal ones, numbers as they are,
    no intercept: :class:`synthmi.models.rubin.TreeDesign`), grown on the
    confidential rows with synthpop's defaults (leaves of at least 5 rows,
    rpart's ``minsplit = 3 minbucket``, no pruning, CART's random state:
    :func:`synthmi.models.rubin._fit_cart`), so that it is CartSynthesizer's
    tree on the same data. It is held fixed (as ``cart`` without ``proper``);
    leaf :math:`\ell(\text{pred})` is the leaf a record's predictors reach.
Categorical response (C levels)
    per leaf, :math:`\pi_\ell \sim \mathrm{Dirichlet}(n_{\ell 1} + a\,m_1, \dots,
    n_{\ell C} + a\,m_C)`: the posterior of a multinomial leaf under a
    Dirichlet prior of total mass :math:`a` spread as the column's margin
    :math:`m` on the fit rows (Gelman et al. 2013, *Bayesian Data Analysis*, 3rd
    ed., Sec. 3.4), and :math:`p(x = c \mid \text{pred}, \theta) =
    \pi_{\ell(\text{pred}), c}`. ``PRIOR_MASS`` :math:`a = 0` (Haldane's
    limit) makes it the Bayesian bootstrap of the leaf's donors (Rubin 1981),
    like the continuous case: levels absent from a leaf keep probability 0, as
    in CART. Measured on a 1,000-row frame with leaves of 5+ rows (uninformative
    masks, 6 seeds, ``tests/models/test_tree.py``), :math:`a = 1` (one
    pseudo-record from the margin) pulled every leaf toward the margin and
    lowered the mean CI overlap of a regression from 0.860 to 0.781 (CART 0.868).
Continuous response
    the Bayesian bootstrap (Rubin 1981, *Ann. Statist.* 9:130-134) over the
    leaf's donors :math:`y_{d}` (on the modelling scale). By default a column of
    at most :data:`DISCRETE_MAX` = 500 distinct values keeps its donors' values
    (discrete leaves, below), as synthpop's ``cart``; a column with more values,
    or any column given a ``smoothing`` :math:`c > 0`, is smoothed by a
    Gaussian kernel (synthpop's ``smoothing = "density"``) and truncated to the
    variable's latent bounds :math:`[l, u]` component by component,

    .. math:: w_\ell \sim \mathrm{Dirichlet}(1, \dots, 1), \qquad
        p(y \mid \text{pred}, \theta) = \sum_{d \in \ell} w_{\ell d}\,
        \frac{\phi((y - y_d)/h_{\ell d})/h_{\ell d}}{\Phi((u - y_d)/h_{\ell d}) - \Phi((l - y_d)/h_{\ell d})}
        \, 1[l \le y \le u],

    with :math:`h_{\ell d} = h_\ell` (but for heaps, below),
    :math:`h_\ell = \min(h(\text{leaf}), h(\text{column}))`, :math:`h(\cdot)`
    R's ``bw.nrd0`` rule :math:`0.9 \min(s, \mathrm{IQR}/1.34) n^{-1/5}`
    (Silverman 1986, eq. 3.31; the rule of :func:`synthmi.models.cart.density_smooth`) of the
    leaf's donors and of all the column's values. The cap at the column's bandwidth is this
    project's choice, not synthpop's (whose ``syn.smooth`` smooths the drawn values with one
    Sheather-Jones bandwidth): a leaf of 5 donors spread over 20-80 years gets
    :math:`h \approx 0.65 s`, 10 years, from its own rule, and the copies' margins spread with
    it; on 3,000 Adult records (QIs age, sex, race, education, hours per week, all ``tree``;
    Rubin MI, M = 5, 3 seeds) the uncapped rule gave hours' one-way S_pMSE 222-245 and a probit
    CI overlap of 0.80-0.87, the capped one 97-105 and 0.83-0.89 (age's 1.6-1.8 either way;
    on 10,000 records, before the unmasked component pick was corrected, age's was 3.7
    uncapped, 0.67 capped). Heaps (40 hours a week, 46%
    of Adult) need more: a leaf whose donors are identical gets the narrowest positive leaf
    bandwidth, at most a sixth of the grid step (the value snaps back with probability 0.9973),
    and so does, within a leaf, a value held by more than ``HEAP_SHARE`` = 1/2 of the leaf's
    donors (the component's own :math:`h_{\ell d}` below). On the same records hours' one-way
    S_pMSE was 101.9 / 99.9 / 108.9 (3 seeds) with the column's bandwidth for identical donors,
    98.7 / 96.7 / 105.5 with the narrow one, 70.0 / 68.3 / 78.8 with heaps above 70% of the leaf
    narrow too (synthpop's spike threshold), 23.0 / 22.1 / 24.8 above 50% (the share of 40 hours
    in the copies 0.36 against 0.46 in the data; CART 1.65 / 1.13 / 0.87); the kernel still
    spreads heaps that hold less of a leaf, and ``smoothing`` (below) is the knob that keeps them.
    The per-variable ``smoothing`` factor
    :math:`c` (1 where the kernel is the default) scales every :math:`h_\ell`: the kernel's noise attenuates
    the relations of the column with the others, and on the same 3,000 Adult records
    (Rubin MI, 4 seeds, :math:`c` on age and hours) the probit's CI overlap was 0.853
    (sd 0.031) with :math:`c = 1`, 0.868 (0.029) with :math:`c = 10^{-3}` (the donors'
    values), CART 0.919 (0.023, 3 seeds). Donors with the
    same value are one component whose weight, a sum of :math:`k` Dirichlet(1)
    coordinates, is drawn as a :math:`\mathrm{Gamma}(k)` before normalising
    (the aggregation property of the Dirichlet). As for the normal model,
    :math:`y` is the latent value; the released value is :math:`y` mapped
    back to the variable's scale and snapped to its grid
    (:mod:`synthmi.models.truncation`), the rounded-latent model.

Discrete leaves (the default up to DISCRETE_MAX values; always for a few-valued column)
    A numeric column with at most :data:`FEW_VALUES` = 20 distinct values on
    the fit rows (heaped or bracketed: statsmodels' ``fair`` codes age as
    17.5, 22, 27, 32, 37, 42 and schooling as 9, 12, 14, 16, 17, 20) gets no
    kernel whatever its ``smoothing``, and neither does, by default (no
    ``smoothing`` given) or with ``smoothing=0``, a column of at most
    :data:`DISCRETE_MAX` values: each leaf is the Bayesian bootstrap of its
    donors' values,

    .. math:: p(y \mid \text{pred}, \theta) = \sum_{d \in \ell} w_{\ell d}\, 1[y = y_d],
        \qquad w_\ell \sim \mathrm{Dirichlet}(1, \dots, 1),

    a probability mass on the donors' values (the limit :math:`h_{\ell d} \to 0`
    of the kernel mixture), so a copy holds only values the column holds, as
    CART's. The kernel, snapped to the grid the values lie on (fair's age: a
    0.5-year grid between brackets 4.5-5 years apart), moved mass onto grid
    points between the support points: on 3,000 of fair's records (age and
    schooling ``tree``, Rubin MI, M = 5, seeds 0 / 1) age's one-way S_pMSE
    was 47.3 / 50.2 and schooling's 24.6 / 21.7 with the kernel, 0.76 / 1.03
    and 3.22 / 0.76 with discrete leaves (``tests/models/test_tree_discrete.py``). With a normal
    mask the leaf is a reweighted discrete distribution, :math:`p(y = y_d \mid
    \cdot) \propto w_d\, \phi_v(\bar W - y_d)`, exact by enumeration of the
    leaf's values, and the log evidence is :math:`\log \sum_d w_d\,
    \phi_v(\bar W - y_d)`. As a later model its likelihood is a mass that is 0 in
    a leaf without the current value, as a categorical tree's, so the sweeps
    make the pair move (a categorical predictor and the tree's support values
    enumerated together) and the whole-record move for it too
    (:mod:`synthmi.models.predictive`). A column of more than ``FEW_VALUES``
    values gets them by default (issue 29) and with ``smoothing=0`` (refused
    above :data:`DISCRETE_MAX` values); ``smoothing`` :math:`c > 0` gives it the
    kernel instead. Its copies hold the donors' values, as synthpop's ``cart``
    without smoothing, so a point mass (a share of zeros) or a heap is kept
    exactly, which no kernel does (on 4,000 of statsmodels' ``randhie`` records,
    ``disea``, 30 values and 6% zeros, had no exact zero in its kernel copies),
    and the unmasked plug-in tree is CART on the same partition. The kernel was
    the default above ``FEW_VALUES`` values before issue 29, and then the
    unmasked plug-in tree was not CART on real data: on 5,000 Adult records
    (``benchmarks/tune_files.py``'s sample; QIs age, sex, race, education, all
    ``tree``, kept marital_status, hours_per_week, income; 3 seeds of M = 5) the
    CI overlap of ``hours_per_week ~ age * C(education)`` was 0.485 with the
    kernel on age, 0.824 with its donors' values, CART's 0.872 on the same
    partition; of ``hours_per_week ~ age + I(age**2)`` 0.808, 0.890 and 0.938
    (the age x education overlap over 6 seeds in ``tests/models/test_tree_plug_in.py``: 0.573 / 0.827 / 0.856).

With a normal mask :math:`\bar W \mid x \sim N(x, v)` the product of one
component and the mask is again normal:

.. math:: \phi_{h}(y - y_d)\, \phi_{v}(\bar W - y) = \phi_{h^2 + v}(\bar W - y_d)\;
    \phi_{s}(y - \mu_d), \qquad \mu_d = \frac{y_d/h^2 + \bar W/v}{1/h^2 + 1/v},
    \quad s^2 = \frac{1}{1/h^2 + 1/v},

so :math:`p(y \mid \cdot) \propto p(y \mid \text{pred}, \theta)\, p(\bar W \mid y)`
is the mixture of the truncated :math:`N(\mu_d, s^2)` with weights
:math:`w_d\, \phi_{h^2+v}(\bar W - y_d)\, M_d(\mu_d, s) / M_d(y_d, h)` (:math:`M`
the mass of a normal on :math:`[l, u]`): an exact draw (component, then
truncated normal). A categorical mask multiplies the finite table
:math:`\pi_\ell` by :math:`p(\tilde W \mid c)`. The Gibbs sweeps and the
enumeration of :mod:`synthmi.models.predictive` use these pieces as they use
the parametric families' (the leaf plays the role of the linear predictor).

Plug-in (``proper=False`` of :class:`~synthmi.models.rubin.RubinSynthesizer` and
:class:`~synthmi.models.dami.DAMISynthesizer`, synthpop's ``proper = FALSE``): instead of one
posterior draw per copy, every copy uses the posterior mean :meth:`TreePosterior.plug_in`, the
leaf's empirical donor distribution (:math:`n_{\ell c}/n_\ell`; :math:`1/n_\ell` per donor). The
mask enters the joint predictive through the same pieces with these fixed weights. With masks
that carry no information the predictive of a categorical or discrete-leaf column is then
exactly synthpop's ``cart`` on CartSynthesizer's own partition (a uniform donor of the leaf;
``tests/models/test_tree_plug_in.py``), and a kernel column's is CART's donor plus the kernel
(:math:`c \to 0` recovers the donor's value).

Sweeps: the Gibbs sweeps start from the sequential draw, which weights each
leaf by its own column's mask only and is biased (the caution of issue 29),
and a categorical tree that is a later model needs the pair and whole-record
moves of :mod:`synthmi.models.predictive` (its zero leaf probabilities make
single-site updates reducible). On all of Adult (QIs age, sex, race, education,
all ``tree``; age K = 1, sigma_e = 10, alpha = 1; M = 5), measured before those
moves, the one-way S_pMSE of education / race was 29.0 / 15.5 after 0 sweeps,
2.2 / 1.5 after 5 (the default ``n_sweeps``) and 1.4 / 1.0 after 25. With them,
on 5,000 of its records (2 seeds), education / race were 1.2-4.5 / 1.5-6.0 after
0 sweeps, 1.6-2.6 / 0.6-0.8 after 5 and 1.2-1.7 / 2.3-4.1 after 25 (within the
seeds' spread of each other), the record move accepting 87% and the sweeps
costing about 1.5 CPU-s per sweep for the 5 copies.

Evaluation cost: records are grouped by the number :math:`k` of distinct
donor values in their leaf, and each group is an :math:`(n_k, k)` array, so
a density or a draw costs :math:`\sum_i k_{\ell(i)}` operations and every
record's value depends on its own row only (the same for any partitioning
of the records, :mod:`synthmi._random`).
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping

import numpy as np

from .truncation import log_truncation_mass, truncated_normal

__all__ = ["PRIOR_MASS", "FEW_VALUES", "DISCRETE_MAX", "TreePosterior", "TreeLeaves", "few_valued", "nrd0"]

#: total mass a of the Dirichlet prior of a categorical leaf, spread as the column's margin
#: (0: the Bayesian bootstrap of the leaf's donors; see the module docstring)
PRIOR_MASS = 0.0
#: a value held by more than this share of a leaf's donors (a heap) keeps a narrow kernel
#: (the project's choice, measured in the module docstring)
HEAP_SHARE = 0.5
#: a continuous response with at most this many distinct values gets discrete leaves (module docstring)
FEW_VALUES = 20
#: a continuous column with at most this many distinct values gets discrete leaves by default (and
#: with ``smoothing=0``, refused above it); one with more gets the kernel: the joint predictive's
#: moves tabulate each leaf over the column's support (a leaves x values table and records x values
#: rows; 5,000 records x 500 values is 20 MB a table)
DISCRETE_MAX = 500
_LOG_SQRT_2PI = 0.5 * float(np.log(2.0 * np.pi))


def nrd0(y: np.ndarray) -> float:
    r"""R's ``bw.nrd0``: :math:`0.9 \min(s, \mathrm{IQR}/1.34)\, n^{-1/5}`, 0 for fewer than 2 values.

    As in R, when :math:`\mathrm{IQR} = 0` the scale is :math:`s` alone; unlike R, a
    constant sample gets 0 (R falls back to :math:`|y_1|`, a scale that a value's size
    sets); :class:`TreePosterior` then uses the column's bandwidth.
    """
    y = np.asarray(y, dtype=float)
    if y.size < 2:
        return 0.0
    s = float(np.std(y, ddof=1))
    q75, q25 = np.percentile(y, [75, 25])
    iqr = float(q75 - q25) / 1.34
    lo = min(s, iqr) if iqr > 0 else s
    return 0.9 * lo * y.size ** -0.2


def few_valued(y: np.ndarray) -> bool:
    """Whether a continuous response has at most :data:`FEW_VALUES` distinct non-missing values
    (discrete leaves, module docstring)."""
    y = np.asarray(y, dtype=float)
    return int(np.unique(y[~np.isnan(y)]).size) <= FEW_VALUES


class TreeLeaves:
    """The leaf each record reaches: the "linear predictor" of a tree model.

    ``eta(values)`` returns each record's leaf position (0..L-1); ``replace``
    re-evaluates it with one column changed, as the linear predictors of the
    parametric models do in the Gibbs sweeps.
    """

    def __init__(self, design: Any, tree: Any, ids: np.ndarray):
        self.design, self.tree, self.ids = design, tree, ids

    def eta(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        return np.searchsorted(self.ids, self.tree.apply(self.design.matrix(values))).astype(np.int64)

    def replace(self, eta: np.ndarray, values: Mapping[str, np.ndarray], col: str, new: np.ndarray) -> np.ndarray:
        return self.eta({**values, col: new})


class TreePosterior:
    r"""A fitted tree, its leaves' data and the conjugate posterior of each leaf (module docstring).

    Parameters
    ----------
    tree : fitted scikit-learn tree (``apply`` gives leaf node ids)
    leaf : (n,) leaf node id of each fit row
    y : (n,) response: codes (categorical) or values on the modelling scale (continuous)
    n_categories : number of levels (0: continuous)
    lo, hi : latent bounds of a continuous response
    prior_mass : total mass a of a categorical leaf's Dirichlet prior (default ``PRIOR_MASS``)
    smoothing : factor c > 0 on every kernel bandwidth of a continuous response (:math:`c\,h_\ell`)
    grid_step : step of the grid the response's values lie on (on the modelling scale), if any
    discrete : a continuous response drawn from its donors' values without a kernel (a few-valued
        column, :func:`few_valued`, or by default one of at most :data:`DISCRETE_MAX` values; module
        docstring); ``smoothing`` and ``grid_step`` are then unused
    """

    #: a TreePosterior pickled before discrete leaves existed has no instance attribute: it has kernels
    discrete = False

    def __init__(self, tree: Any, leaf: np.ndarray, y: np.ndarray, n_categories: int,
                 lo: float = -np.inf, hi: float = np.inf, prior_mass: float | None = None,
                 smoothing: float = 1.0, grid_step: float | None = None, discrete: bool = False):
        self.tree = tree
        self.discrete = bool(discrete) and not n_categories
        self.grid_step = grid_step  # what snaps a heap's narrow kernel back (rubin._warn_tree_point_mass reads it)
        self.ids, pos = np.unique(leaf, return_inverse=True)
        L = self.ids.size
        self.n_categories = int(n_categories)
        self.lo, self.hi = float(lo), float(hi)
        if self.n_categories:
            y = np.asarray(y, dtype=np.int64)
            self.counts = np.zeros((L, self.n_categories))
            np.add.at(self.counts, (pos, y), 1.0)
            margin = self.counts.sum(axis=0) / self.counts.sum()
            a = PRIOR_MASS if prior_mass is None else float(prior_mass)
            self.alpha = self.counts + a * margin[None, :]
            return
        y = np.asarray(y, dtype=float)
        # components: distinct (leaf, value) pairs in leaf order, with their donor counts
        order = np.lexsort((y, pos))
        pl, yl = pos[order], y[order]
        new = np.ones(yl.size, dtype=bool)
        new[1:] = (pl[1:] != pl[:-1]) | (yl[1:] != yl[:-1])
        starts = np.flatnonzero(new)
        self.value = yl[starts]
        self.comp_leaf = pl[starts]
        self.weight_count = np.diff(np.append(starts, yl.size)).astype(float)
        self.leaf_start = np.searchsorted(self.comp_leaf, np.arange(L))
        self.leaf_k = np.bincount(self.comp_leaf, minlength=L)
        if self.discrete:
            # point masses at the donors' values (inside the bounds: their kernels' mass there is 1)
            self.bw = np.zeros(self.leaf_k.size)
            self.comp_bw = np.zeros(starts.size)
            self.log_mass = np.zeros(starts.size)
            return
        h_col = nrd0(y)
        if not h_col > 0:
            h_col = 1.0
        ends = np.append(np.flatnonzero(pl[1:] != pl[:-1]) + 1, yl.size)
        begins = np.concatenate([[0], ends[:-1]])
        bw = np.minimum([nrd0(yl[b:e]) for b, e in zip(begins, ends)], h_col)
        # a leaf of identical donors (a heap, e.g. 40 hours a week): the narrowest positive leaf
        # bandwidth, and at most a sixth of the grid step (the value snaps back with probability
        # 1 - 2 Phi(-3) = 0.9973), so that the heap survives
        pos = bw[bw > 0]
        h0 = min(float(pos.min()) if pos.size else h_col, np.inf if grid_step is None else grid_step / 6.0)
        bw = np.where(bw > 0, bw, h0)
        self.bw = float(smoothing) * bw
        # a value held by more than HEAP_SHARE of its leaf's donors keeps the narrow kernel too
        share = self.weight_count / np.bincount(self.comp_leaf, weights=self.weight_count)[self.comp_leaf]
        self.comp_bw = np.where(share > HEAP_SHARE, np.minimum(self.bw[self.comp_leaf], float(smoothing) * h0),
                                self.bw[self.comp_leaf])
        # log mass of each component's kernel on the latent bounds (fixed: the bandwidths are)
        self.log_mass = log_truncation_mass(self.value, self.comp_bw, self.lo, self.hi)

    @property
    def continuous(self) -> bool:
        return self.n_categories == 0

    # ---- posterior --------------------------------------------------------------
    def draw(self, m: int, rng: np.random.Generator) -> list[dict[str, np.ndarray]]:
        r"""``m`` independent posterior draws: leaf probabilities (categorical) or donor weights.

        A Dirichlet vector is drawn as independent Gamma variates divided by their sum
        (Devroye 1986, Sec. XI.4); a component's weight aggregates its donors'.
        """
        out = []
        for _ in range(int(m)):
            if not self.continuous:
                g = rng.standard_gamma(self.alpha)
                with np.errstate(divide="ignore"):
                    out.append({"logp": np.log(g) - np.log(g.sum(axis=1, keepdims=True))})
            else:
                g = rng.standard_gamma(self.weight_count)
                tot = np.bincount(self.comp_leaf, weights=g)
                with np.errstate(divide="ignore"):
                    out.append({"logw": np.log(g) - np.log(tot[self.comp_leaf])})
        return out

    def plug_in(self, m: int) -> list[dict[str, np.ndarray]]:
        r"""``m`` copies of the posterior mean of the leaves' parameters (the plug-in, ``proper=False``).

        .. math:: \hat\pi_{\ell c} = E[\pi_{\ell c} \mid D] = \frac{\alpha_{\ell c}}{\sum_{c'} \alpha_{\ell c'}}
            = \frac{n_{\ell c}}{n_\ell} \ (a = 0), \qquad
            \hat w_{\ell d} = E[w_{\ell d} \mid D] = \frac{k_{\ell d}}{n_\ell},

        the Dirichlet means (Gelman et al. 2013, BDA3, Sec. 3.4; :math:`k_{\ell d}` the donors of
        component :math:`d`, i.e. :math:`1/n_\ell` per donor): the leaf's empirical donor
        distribution, which is what synthpop's ``cart`` samples from without ``proper``
        (Nowok, Raab & Dibben 2016, ``syn.cart``). The copies then share one :math:`\theta`
        and differ by the predictive draw only (improper synthesis: expected table S_pMSE 1,
        :mod:`synthmi.evaluation.battery`). Nothing is random: no generator is used. The arrays
        are read-only, shared by the ``m`` entries.
        """
        if not self.continuous:
            with np.errstate(divide="ignore"):
                arr = np.log(self.alpha) - np.log(self.alpha.sum(axis=1, keepdims=True))
            key = "logp"
        else:
            tot = np.bincount(self.comp_leaf, weights=self.weight_count)
            arr = np.log(self.weight_count) - np.log(tot[self.comp_leaf])
            key = "logw"
        arr.setflags(write=False)
        return [{key: arr} for _ in range(int(m))]

    # ---- predictive pieces ------------------------------------------------------
    def _groups(self, leaf: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(rows, component index matrix (rows, k)) per number k of components in the leaf."""
        k = self.leaf_k[leaf]
        for kk in np.unique(k):
            rows = np.flatnonzero(k == kk)
            yield rows, self.leaf_start[leaf[rows]][:, None] + np.arange(kk)[None, :]

    def log_density(self, theta: Mapping[str, np.ndarray], leaf: np.ndarray, y: np.ndarray) -> np.ndarray:
        """log p(y | leaf, theta) of a continuous response at latent values ``y`` (module docstring);
        with discrete leaves a log mass (the weight of the leaf's donors at ``y``; -inf off them)."""
        logw = theta["logw"] - self.log_mass
        out = np.empty(leaf.shape[0])
        y = np.asarray(y, dtype=float)
        if self.discrete:
            # a mass: the weight of the leaf's component at y (0 when the leaf has no donor there);
            # a value equal to a donor's up to rounding counts as that value
            for rows, comp in self._groups(leaf):
                hit = np.abs(y[rows, None] - self.value[comp]) <= 1e-9 * np.maximum(1.0, np.abs(self.value[comp]))
                with np.errstate(divide="ignore"):
                    out[rows] = np.log(np.where(hit, np.exp(logw[comp]), 0.0).sum(axis=1))
            return out
        for rows, comp in self._groups(leaf):
            h = self.comp_bw[comp]
            r = (y[rows, None] - self.value[comp]) / h
            t = logw[comp] - 0.5 * r * r - np.log(h) - _LOG_SQRT_2PI
            mx = t.max(axis=1)
            out[rows] = mx + np.log(np.exp(t - mx[:, None]).sum(axis=1))
        inside = (y >= self.lo) & (y <= self.hi)
        return np.where(inside, out, -np.inf)

    def _components(self, theta: Mapping[str, np.ndarray], leaf: np.ndarray, ev: Any
                    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        r"""Per group of records: (rows, components, log weights, means, sds) of the mixture
        :math:`p(y \mid \text{leaf}, \theta)\, p(\bar W \mid y)` (module docstring).

        Without a mask the log weights are :math:`\log w_d` and the components the truncated
        kernels; with one, :math:`\log[w_d\, \phi_{h^2+v}(\bar W - y_d)\, M(\mu_d, s) / M(y_d, h)]`
        (normalising constants included, so their log-sum-exp is the log evidence).
        """
        for rows, comp in self._groups(leaf):
            h = self.comp_bw[comp]
            lw = theta["logw"][comp]
            mu, s = self.value[comp], h
            if self.discrete:
                # point masses: the mask reweights them, w_d phi_v(w_bar - y_d) (module docstring)
                if ev is not None:
                    v = float(ev[2])
                    lw = lw - 0.5 * (ev[1][rows, None] - mu) ** 2 / v - 0.5 * np.log(v) - _LOG_SQRT_2PI
                yield rows, comp, lw, np.broadcast_to(mu, comp.shape), np.broadcast_to(s, comp.shape)
                continue
            if ev is not None:
                w_bar, v = ev[1][rows, None], float(ev[2])
                tot = h * h + v
                prec = 1.0 / (h * h) + 1.0 / v
                mu = (self.value[comp] / (h * h) + w_bar / v) / prec
                s = np.broadcast_to(np.sqrt(1.0 / prec), comp.shape)
                lw = (lw - self.log_mass[comp] - 0.5 * (w_bar - self.value[comp]) ** 2 / tot
                      - 0.5 * np.log(tot) - _LOG_SQRT_2PI + log_truncation_mass(mu, s, self.lo, self.hi))
            yield rows, comp, lw, mu, s

    def log_evidence(self, theta: Mapping[str, np.ndarray], leaf: np.ndarray, ev: Any) -> np.ndarray:
        r"""Per record :math:`\log \int_l^u p(y \mid \text{leaf}, \theta)\, \phi_v(\bar W - y)\, dy`
        for ``ev = ("normal", w_bar, v)``:
        :math:`\log \sum_d w_d\, \phi_{h^2+v}(\bar W - y_d)\, M(\mu_d, s) / M(y_d, h)`."""
        out = np.empty(leaf.shape[0])
        for rows, _, lw, _, _ in self._components(theta, leaf, ev):
            mx = lw.max(axis=1)
            out[rows] = mx + np.log(np.exp(lw - mx[:, None]).sum(axis=1))
        return out

    def draw_latent(self, theta: Mapping[str, np.ndarray], leaf: np.ndarray, ev: Any,
                    rng: np.random.Generator) -> np.ndarray:
        r"""One latent value per record from :math:`p(y \mid \text{leaf}, \theta)\, p(\bar W \mid y)`.

        ``ev`` is None or ``("normal", w_bar, v)``. Exact: a component by inversion of its
        weights (one uniform per record), then the truncated normal of that component (discrete
        leaves: the component's value, picked with probability :math:`\propto w_d\, \phi_v(\bar W - y_d)`).
        Without a mask each truncated kernel integrates to 1 on the bounds, so component
        :math:`d` is picked with probability :math:`w_d`; with one, with probability
        proportional to :math:`w_d\, \phi_{h^2+v}(\bar W - y_d)\, M(\mu_d, s) / M(y_d, h)`.
        """
        n = leaf.shape[0]
        u = rng.random(n)
        mean, sd = np.empty(n), np.empty(n)
        for rows, comp, lw, mu, s in self._components(theta, leaf, ev):
            p = np.exp(lw - lw.max(axis=1, keepdims=True))
            cdf = np.cumsum(p, axis=1)
            pick = np.minimum((u[rows, None] * cdf[:, -1:] >= cdf).sum(axis=1), comp.shape[1] - 1)
            r = np.arange(rows.size)
            mean[rows], sd[rows] = mu[r, pick], s[r, pick]
        if self.discrete:
            return mean  # the picked donor's value (a point mass)
        return truncated_normal(mean, sd, self.lo, self.hi, rng)
