r"""Predictive draws of the quasi-identifiers given a posterior draw: sequential and joint (DA-MI eq. 3).

Given one posterior draw :math:`\theta` of the sequential conditional models
(:mod:`synthmi.models.conditional`) and, for DA-MI, the masking evidence
:math:`\tilde W` of each record, the target of a synthetic record is the joint
predictive (Jiang, Mitra, Gao & Wang 2022, JASA 117:52-66, eq. 3, for fixed
:math:`\theta`)

.. math:: p(\tilde X_i \mid \tilde Z_i, \tilde W_i, \theta) \propto
    \prod_{j=1}^{q} p(\tilde X_{ij} \mid \text{pred}_{ij}, \theta_j)
    \prod_{j \in \text{masked}} p(\tilde W_{ij} \mid \tilde X_{ij}).

``sequential_draw``
    draws :math:`\tilde X_j` from :math:`p(\tilde X_j \mid \text{pred}_j,
    \theta_j)\, p(\tilde W_j \mid \tilde X_j)` in the visit sequence. Without
    masks this *is* the joint predictive (Rubin's MI). With masks it omits,
    for each earlier :math:`\tilde X_k`, the evidence of the later masked
    columns, :math:`\int p(x_j \mid \cdot)\, p(\tilde W_j \mid x_j)\, dx_j`,
    and is an approximation (exact only when the masked columns do not
    depend on earlier columns).
``enumerate_draw``
    exact: when every quasi-identifier is categorical and the product of their
    numbers of levels is small, the joint predictive of each record is a
    finite table over all level combinations, drawn from directly.
``gibbs_draw``
    exact in the limit: a within-record Gibbs sampler over the
    quasi-identifiers, vectorised over records, started from the sequential
    draw. The full conditional of :math:`X_j` is

    .. math:: p(x_j \mid x_{-j}, \cdot) \propto p(x_j \mid \text{pred}_j, \theta_j)\,
        p(\tilde W_j \mid x_j) \prod_{k > j:\, X_j \in \text{pred}_k}
        p(x_k \mid \text{pred}_k(x_j), \theta_k),

    the later models' likelihoods included. A categorical :math:`X_j` is
    drawn exactly from this finite distribution. A continuous :math:`X_j`
    gets an independence Metropolis-Hastings step (Tierney 1994, Ann. Statist.
    22:1701-1762) whose proposal is the first two factors (for the normal
    mask, the closed-form truncated normal :math:`N(\frac{\mu/\sigma^2 + \bar W/v}
    {1/\sigma^2 + 1/v}, \frac{1}{1/\sigma^2 + 1/v})` on the bounds, with
    :math:`v = \sigma_e^2/K`), so the acceptance ratio is the ratio of the
    later models' likelihoods (and, on a grid, of :math:`p(\tilde W \mid
    \mathrm{snap}(x))` to :math:`p(\tilde W \mid x)`). A continuous
    variable's state is its latent normal value; the value on the grid is
    what the later models and the mask see (:mod:`synthmi.models.truncation`).
    A later continuous model's likelihood is its truncated-normal density,
    normalising constant included (it depends on :math:`x_j` through the mean).

A ``tree`` variable (:mod:`synthmi.models.tree`) has a likelihood given its
posterior draw: its "linear predictor" is the leaf its predictors reach
(re-evaluated when one of them changes, like a non-additive design), a
categorical one is updated exactly as the other categorical models, and a
continuous one gets the independence MH step above with its own exact
proposal, the kernel mixture of the leaf times the normal mask (a mixture of
normals with reweighted components), so it enters enumeration and the Gibbs
sweeps on the same footing as the parametric families, as a masked column
and as a predictor (a few-valued continuous tree's leaves are point masses on the donors' values: the
proposal is the leaf's masses reweighted by the mask, and as a later model it is treated as a
categorical tree over its support values, for the pair and record moves below). As a later model a
categorical tree needs one more move: its leaves (Bayesian bootstrap, prior mass 0) give probability 0 to the
levels absent from a leaf, so single-site updates cannot move an earlier
:math:`X_j` into a leaf where the later column's current level is absent, and
the sweeps are reducible (they stayed at the sequential start). Two exact
moves restore the joint predictive. A categorical :math:`X_j` is updated
together with each later categorical tree :math:`X_k` of it, by enumerating the
pairs :math:`(x_j, x_k)` (``_pair_update``, the other later models' likelihoods
included; a discrete-leaf tree's pairs are :math:`x_j` and its support values, its
normal mask's :math:`\phi_v(\bar W - x_k)` in place of the categorical mask's table).
And whenever a categorical (or discrete-leaf) tree has an earlier quasi-identifier
among its predictors, each sweep begins with a whole-record independence
Metropolis-Hastings step (Tierney 1994) whose proposal :math:`x'` is the
sequential draw,

.. math:: q(x) = \prod_j \frac{p(x_j \mid \text{pred}_j, \theta_j)\, p(\tilde W_j \mid x_j)}
    {Z_j(\text{pred}_j)}, \qquad Z_j(\text{pred}_j) = \int p(x_j \mid \text{pred}_j, \theta_j)\,
    p(\tilde W_j \mid x_j)\, dx_j,

so that the target over the proposal is :math:`\pi(x)/q(x) \propto \prod_j Z_j(\text{pred}_j)`
and :math:`x'` is accepted with probability
:math:`\min\{1, \prod_j Z_j(\text{pred}'_j) / \prod_j Z_j(\text{pred}_j)\}`; only the masked
columns have :math:`Z_j \ne 1`. :math:`Z_j` is :math:`\sum_c p(c \mid \cdot)\, p(\tilde W_j
\mid c)` for a categorical column, :math:`\phi_{\sigma^2+v}(\bar W - \mu)\, M(\mu', s') / M(\mu,
\sigma)` for a truncated normal one (:math:`\mu', s'` the proposal's mean and sd above, :math:`M`
the mass on the bounds), the tree's
:meth:`~synthmi.models.tree.TreePosterior.log_evidence` for a continuous tree, and a column on a
grid adds the correction :math:`p(\tilde W \mid \mathrm{snap}(y)) / p(\tilde W \mid y)` of its
single-site step. The proposal has the target's support, so the chain is irreducible, and both
moves leave the joint predictive invariant. The record move is the only one that moves a
continuous :math:`X_j` across the leaves of a later categorical tree, and it mixes slowly for a
record whose sequential draw rarely proposes where the joint puts its mass (a weak own mask, a
strong later one): there give more sweeps (``tests/models/test_tree.py`` checks 10-20 sweeps
against quadrature and enumeration). With a two-part column in the model the record move is not
made (the part indicator's update has its own augmented target), and a continuous column before
a categorical tree whose leaves exclude levels is then not exact.

A ``cart`` variable has no likelihood: it is drawn after the others from its
tree, and may not be a predictor of a parametric model under the joint
predictive.

Structural rules (:mod:`synthmi.models.base`): a column governed by a rule
whose condition reads only released columns has, on the rows where the rule
holds, the rule's value with probability one, whatever the other
quasi-identifiers; its model is the conditional model of the free rows. Every
draw here sets the rule's value on those rows (``Conditional.fix``) after
drawing all rows (so the record-keyed random streams are consumed alike on
every row), and the column's likelihood as a later model is 1 there
(:meth:`Prepared.loglik`), so it does not enter the full conditionals of the
columns it depends on. A column with a single level on the free rows has no
model at all (family ``"fixed"``): it is set, never updated.
"""
from __future__ import annotations

from itertools import product
from typing import Any, Mapping, Sequence

import numpy as np

from scipy.special import log_ndtr

from .glm import _softplus, log_probs_eta
from .tree import TreeLeaves
from .truncation import log_truncation_mass, truncated_normal
from ..errors import ColumnError

_LOG_2PI = float(np.log(2.0 * np.pi))


class Prepared:
    """One conditional model with one posterior draw: its linear predictor and likelihood."""

    def __init__(self, cond, theta: Mapping[str, np.ndarray] | None):
        self.cond = cond
        self.theta = theta
        #: the state of the column in the sweeps is a latent value (normal, or a continuous tree)
        self.continuous = is_continuous(cond)
        if cond.family in ("cart", "fixed"):
            self.lin = None
            return
        self.cut = None
        if cond.family == "tree":
            post = cond.fast
            self.lin = TreeLeaves(cond.design, post.tree, post.ids)
            if self.continuous:
                self.lo, self.hi = cond.latent_bounds()
            #: a continuous tree with discrete leaves: its leaves are categorical over these values
            self.support = np.unique(post.value) if is_discrete_tree(cond) else None
            self._table = None
            return
        offset = None
        if cond.group_codes is not None:
            offset = np.asarray(theta["u"])[cond.group_codes]
        self.lin = cond.design.prepare(theta["beta"], offset)
        if cond.family == "normal":
            self.sigma = float(theta["sigma"])
            self.lo, self.hi = cond.latent_bounds()
        self.cut = theta.get("cutpoints")

    def eta(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        return self.lin.eta(values)

    def log_probs(self, eta: np.ndarray) -> np.ndarray:
        """(n, C) log-probabilities of the levels; for a discrete-leaf tree, of its ``support`` values."""
        if self.cond.family == "tree":
            if self.support is not None:
                return self.value_table()[eta]
            return self.theta["logp"][eta]
        if self.cond.family == "ologit" and eta.ndim == 1:
            return ordered_logit_table(eta, self.cut)
        return log_probs_eta(self.cond.family, eta, self.cut)

    def log_odds(self, eta: np.ndarray) -> np.ndarray:
        """log P(x = 1) - log P(x = 0) of a binary model (for a logit model, the linear predictor itself)."""
        if self.cond.family == "logit" and eta.ndim == 2 and eta.shape[1] == 1:
            return eta[:, 0]
        lp = self.log_probs(eta)
        return lp[:, 1] - lp[:, 0]

    def loglik(self, eta: np.ndarray, x: np.ndarray, latent: np.ndarray | None) -> np.ndarray:
        """Per-record log density of the current value under this model (latent for a continuous one);
        0 where a structural rule fixes the value (its probability there is one)."""
        if self.cond.family == "tree":
            if self.continuous:
                return self.free(self.cond.fast.log_density(self.theta, eta, latent))
            return self.free(self.theta["logp"][eta, np.asarray(x, dtype=np.int64)])
        if self.cond.family == "normal":
            r = (latent - eta) / self.sigma
            out = -0.5 * r**2 - np.log(self.sigma) - 0.5 * _LOG_2PI
            if np.isfinite(self.lo) or np.isfinite(self.hi):
                out = out - log_truncation_mass(eta, self.sigma, self.lo, self.hi)
            return self.free(out)
        return self.free(log_prob_of(self.cond.family, eta, np.asarray(x, dtype=np.int64), self.cut))

    def value_table(self) -> np.ndarray:
        r"""A discrete-leaf tree's leaves as a table over its support :math:`v_1 < \dots < v_V` (the
        distinct donor values): :math:`\log \pi_{\ell v} = \log w_{\ell d}` for the component
        :math:`d` of leaf :math:`\ell` with :math:`y_d = v`, :math:`-\infty` when the leaf has no
        donor at :math:`v` (:mod:`synthmi.models.tree`), so that the leaf is a categorical
        distribution over the support, as a categorical tree's over its levels."""
        if self._table is None:
            post = self.cond.fast
            table = np.full((post.leaf_k.size, self.support.size), -np.inf)
            table[post.comp_leaf, np.searchsorted(self.support, post.value)] = self.theta["logw"]
            self._table = table
        return self._table

    def draw_latent(self, eta: np.ndarray, ev: Any, rng: np.random.Generator) -> np.ndarray:
        """A continuous column's latent from its own model times its normal mask's evidence (exact)."""
        if self.cond.family == "tree":
            return self.cond.fast.draw_latent(self.theta, eta, ev, rng)
        mean, sd = _normal_proposal(self, eta, ev)
        return truncated_normal(mean, sd, self.lo, self.hi, rng)

    def free(self, ll: np.ndarray) -> np.ndarray:
        """A per-record log-likelihood set to 0 on the rows a structural rule fixes."""
        rows = self.cond.rule_rows
        if self.cond.rule is None or rows is None:
            return ll
        return np.where(rows, 0.0, ll)


def is_continuous(cond) -> bool:
    """Whether a model's value is drawn through a latent continuous value (normal, continuous tree)."""
    return cond.family == "normal" or (cond.family == "tree" and cond.n_categories == 0)


def is_discrete_tree(cond) -> bool:
    """Whether a model is a continuous tree with discrete leaves (a few-valued column, :mod:`synthmi.models.tree`)."""
    return cond.family == "tree" and cond.n_categories == 0 and getattr(cond.fast, "discrete", False)


def is_mass_tree(cond) -> bool:
    """Whether a model is a tree whose likelihood is a probability mass, 0 in a leaf without the current
    value: a categorical tree, or a continuous one with discrete leaves (the pair and record moves)."""
    return cond.family == "tree" and (not is_continuous(cond) or is_discrete_tree(cond))


def log_prob_of(family: str, eta: np.ndarray, x: np.ndarray, cut: np.ndarray | None = None) -> np.ndarray:
    """log P(y = x_i) per record, computing only the observed category (the Gibbs sweeps' hot path).

    Same values as ``log_probs_eta(family, eta, cut)[i, x_i]``; a test checks it.
    """
    if family == "logit":
        if eta.shape[-1] == 1:
            # s = e for x = 1 and -e for x = 0 (a product by +-1 is exact, and branch-free
            # unlike np.where on a random pattern); log sigmoid(s) = -softplus(-s)
            s = eta[:, 0] * (2.0 * x - 1.0)
            return -_softplus(-s)
        full = np.concatenate([np.zeros((eta.shape[0], 1)), eta], axis=1)
        mx = full.max(axis=1)
        lse = mx + np.log(np.exp(full - mx[:, None]).sum(axis=1))
        return np.take_along_axis(full, x[:, None], axis=1)[:, 0] - lse
    if family == "probit":
        return log_ndtr(np.where(x == 1, eta, -eta))
    cut = np.asarray(cut, dtype=float)
    ext = np.concatenate([[-np.inf], cut, [np.inf]])
    up = ext[x + 1] - eta
    lo = ext[x] - eta
    if family == "ologit":
        # log(F(up) - F(lo)) = c_x - softplus(lo) - softplus(-up): see ordered_logit_table
        return _ordered_logit_gap(cut)[x] - _softplus(lo) - _softplus(-up)
    # oprobit: log(Phi(up) - Phi(lo)), kappa_{-1} = -inf, kappa_{C-1} = +inf
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # mirror intervals above 0 so that both CDFs are taken in the accurate lower tail
        flip = lo > 0
        up, lo = np.where(flip, -lo, up), np.where(flip, -up, lo)
        lu, ll = log_ndtr(up), log_ndtr(lo)
        d = np.minimum(ll - lu, 0.0)
        l1m = np.where(d > -0.6931471805599453, np.log(-np.expm1(d)), np.log1p(-np.exp(d)))
    return lu + l1m


def _ordered_logit_gap(cut: np.ndarray) -> np.ndarray:
    """:math:`c_x = \\log(1 - e^{\\kappa_{x-1} - \\kappa_x})` per category (0 for the two end categories)."""
    with np.errstate(divide="ignore"):
        mid = np.log(-np.expm1(cut[:-1] - cut[1:]))
    return np.concatenate([[0.0], mid, [0.0]])


def ordered_logit_table(eta: np.ndarray, cut: np.ndarray) -> np.ndarray:
    r"""log P(y = x) of the ordered logit for every category, shape (n, C), from 2(C-1) softplus terms.

    With :math:`F` the logistic CDF, :math:`a = \kappa_{x-1} - \eta` and :math:`b = \kappa_x - \eta`,

    .. math:: F(b) - F(a) = \frac{e^b - e^a}{(1 + e^a)(1 + e^b)}, \qquad
        \log(F(b) - F(a)) = \log(1 - e^{\kappa_{x-1} - \kappa_x})
        - \operatorname{softplus}(a) - \operatorname{softplus}(-b),

    since :math:`b - \operatorname{softplus}(b) = -\operatorname{softplus}(-b)`. The first
    term depends on the category only, and both softplus terms are evaluated stably, so
    every probability keeps full relative accuracy in both tails (the end categories are
    :math:`-\operatorname{softplus}(-b)` and :math:`-\operatorname{softplus}(a)`). Same values
    as :func:`~synthmi.models.glm.log_probs_eta` (a test checks it), with fewer passes over the records.
    """
    cut = np.asarray(cut, dtype=float)
    C = cut.size + 1
    t = cut[None, :] - eta[:, None]  # (n, C-1): kappa_k - eta
    s_pos, s_neg = _softplus(t), _softplus(-t)
    out = np.empty((eta.shape[0], C))
    out[:, 0] = -s_neg[:, 0]
    out[:, -1] = -s_pos[:, -1]
    if C > 2:
        out[:, 1:-1] = _ordered_logit_gap(cut)[1:-1] - s_pos[:, :-1] - s_neg[:, 1:]
    return out


def _normal_proposal(p: Prepared, eta: np.ndarray, ev: Any) -> tuple[np.ndarray, np.ndarray | float]:
    """Mean and sd of the own-model (times normal-mask) normal on the modelling scale."""
    if ev is None:
        return eta, p.sigma
    w_bar, v = ev[1], ev[2]
    prec = 1.0 / p.sigma**2 + 1.0 / v
    return (eta / p.sigma**2 + w_bar / v) / prec, np.sqrt(1.0 / prec)


def draw_categorical(logp: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One category per row from (n, C) log-probabilities (inverse CDF, one uniform per row).

    With few categories the row maximum, the cumulative sums and the count of
    cumulative sums below the uniform are taken column by column (NumPy's
    reductions along a short trailing axis are slow); the arithmetic and its
    order are those of ``max`` / ``cumsum`` along the rows, so the draws are
    the same.
    """
    n, C = logp.shape
    if C > _FEW_CATEGORIES:
        p = np.exp(logp - logp.max(axis=1, keepdims=True))
        cdf = np.cumsum(p, axis=1)
        u = rng.random(n) * cdf[:, -1]
        return np.minimum((u[:, None] >= cdf).sum(axis=1), C - 1).astype(np.int64)
    return _draw_from_columns([logp[:, c] for c in range(C)], rng)


_FEW_CATEGORIES = 8


def _draw_from_columns(cols: Sequence[np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """:func:`draw_categorical` given the C columns of log-probabilities as 1-D arrays."""
    mx = cols[0]
    for col in cols[1:]:
        mx = np.maximum(mx, col)
    acc = np.exp(cols[0] - mx)
    cdf = [acc]
    for col in cols[1:]:
        acc = acc + np.exp(col - mx)
        cdf.append(acc)
    u = rng.random(mx.shape[0]) * acc
    k = (u >= cdf[0]).astype(np.int64)
    for c in cdf[1:]:
        k += u >= c
    return np.minimum(k, len(cols) - 1)


def _cart_draw(cond, values: Mapping[str, np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """One observed donor per record from its leaf (one uniform per record, so record-keyed streams work)."""
    tree, (ids, start, count, y_sorted) = cond.fast
    pos = np.searchsorted(ids, tree.apply(cond.design.matrix(values)))
    offset = np.minimum((rng.random(pos.shape[0]) * count[pos]).astype(np.int64), count[pos] - 1)
    return y_sorted[start[pos] + offset]


def sequential_draw(conds: Sequence, preps: Sequence[Prepared], evidence: Mapping[str, Any],
                    rng: np.random.Generator) -> tuple[dict, dict, dict]:
    """Each X_j from p(X_j | pred_j, theta_j) p(W~_j | X_j) in the visit sequence.

    ``evidence[col]`` is ``("normal", w_bar, v)`` or ``("table", loglik (n, C))``.
    Returns (values, latents, linear predictors).
    """
    values: dict[str, np.ndarray] = {}
    latent: dict[str, np.ndarray] = {}
    etas: dict[str, np.ndarray] = {}
    for cond, p in zip(conds, preps):
        c = cond.column
        ev = evidence.get(c)
        if cond.family == "fixed":
            values[c] = fixed_values(cond)
            continue
        if cond.family == "cart":
            values[c] = cond.fix(_cart_draw(cond, values, rng))
            continue
        eta = p.eta(values)
        etas[c] = eta
        if p.continuous:
            y = p.draw_latent(eta, ev, rng)
            latent[c] = y
            values[c] = _two_part_value(cond, values, y)
        else:
            lp = p.log_probs(eta)
            if ev is not None:
                lp = lp + ev[1]
            values[c] = cond.fix(draw_categorical(lp, rng))
    return values, latent, etas


def fixed_values(cond) -> np.ndarray:
    """A family-"fixed" column: the rule's value where the rule holds, the free rows' one level elsewhere."""
    return np.where(cond.rule_rows, cond.rule[1], cond.free_level).astype(np.int64)


def dependents(conds: Sequence) -> list[list[int]]:
    """For each model j, the later models that use X_j as a predictor."""
    return [[k for k in range(j + 1, len(conds)) if conds[j].column in conds[k].predictors] for j in range(len(conds))]


def check_joint(conds: Sequence) -> None:
    """A cart variable has no likelihood, so under the joint predictive no parametric model may use it."""
    for j, k_list in enumerate(dependents(conds)):
        if conds[j].family != "cart":
            continue
        bad = [conds[k].column for k in k_list if conds[k].family != "cart"]
        if bad:
            raise ColumnError(
                f"Column '{conds[j].column}' is synthesized by 'cart', which has no likelihood, yet the models of "
                f"{bad} use it as a predictor; under predictive='joint' a cart column can only feed other cart "
                "columns. Drop it from their predictors, move it after them in visit_sequence, or use "
                "predictive='sequential'."
            )


def can_enumerate(conds: Sequence, max_combinations: int) -> bool:
    # a structural rule fixes some rows: the Gibbs sweeps honour it (module docstring)
    if any(c.family in ("cart", "fixed") or is_continuous(c) or c.rule is not None for c in conds):
        return False
    return int(np.prod([c.n_categories for c in conds], dtype=float)) <= max_combinations


def enumerate_probs(conds: Sequence, preps: Sequence[Prepared], evidence: Mapping[str, Any],
                    n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact joint predictive of all-categorical quasi-identifiers.

    Returns the level combinations (K, q) and the log-probabilities (n, K) of
    every combination for every record (normalised per record).
    """
    combos = np.asarray(list(product(*[range(c.n_categories) for c in conds])), dtype=np.int64)
    logw = np.zeros((n_rows, len(combos)))
    for t, combo in enumerate(combos):
        vals = {cond.column: np.full(n_rows, code, dtype=np.int64) for cond, code in zip(conds, combo)}
        for cond, p, code in zip(conds, preps, combo):
            logw[:, t] += p.loglik(p.eta(vals), vals[cond.column], None)
            ev = evidence.get(cond.column)
            if ev is not None:
                logw[:, t] += ev[1][:, code]
    mx = logw.max(axis=1, keepdims=True)
    logw -= mx + np.log(np.exp(logw - mx).sum(axis=1, keepdims=True))
    return combos, logw


def enumerate_draw(conds: Sequence, preps: Sequence[Prepared], evidence: Mapping[str, Any],
                   rng: np.random.Generator, n_rows: int) -> dict:
    """One draw per record from the exact table of :func:`enumerate_probs`."""
    combos, logp = enumerate_probs(conds, preps, evidence, n_rows)
    idx = draw_categorical(logp, rng)
    return {cond.column: combos[idx, j] for j, cond in enumerate(conds)}


def _two_part_value(cond, values: Mapping[str, np.ndarray], y: np.ndarray) -> np.ndarray:
    """A value column's raw values from its latent: the fill where its synthetic part is not "value"."""
    x = cond.to_raw(y)
    if cond.part is not None:
        x = np.where(values[cond.part[0]] != 0, cond.part[1], x)
    return cond.fix(x)


def _two_part_indicator_update(j: int, conds: Sequence, preps: Sequence, values: dict, latent: dict, etas: dict,
                               deps: list[list[int]], kv: int, ev: Any, rng: np.random.Generator) -> None:
    r"""Exact Gibbs update of a two-part column's indicator P (levels: ``value``, point masses, missing).

    The value column V is modelled only where P = ``value`` (its fit used those rows;
    elsewhere later models see the fill f_l of level l). The sweeps run on the joint
    augmented by an auxiliary latent :math:`\tilde y` of V on the other rows drawn from
    V's own model (its pseudo-prior, Carlin & Chib 1995), which integrates to one, so
    the joint of the released values is eq. 3 unchanged:

    .. math:: p(P = l \mid \cdot) \propto p(P = l \mid \text{pred}_P)\, p(\tilde W_P \mid l)
        \prod_{k \text{ later}} p(x_k \mid \ldots, P = l, V = v_l),
        \qquad v_l = \begin{cases} g(\tilde y) & l = \text{value} \\ f_l & \text{else,}\end{cases}

    where V's own density :math:`N(\tilde y; \eta_V, \sigma)` is the same for every l
    and cancels (g maps the latent to the raw scale and grid). V's later models are
    re-evaluated for each level together with P's.
    """
    cond, p = conds[j], preps[j]
    c = cond.column
    vcond = conds[kv]
    v = vcond.column
    n_rows = values[c].shape[0]
    raw_v = vcond.to_raw(latent[v]) if v in latent else values[v]
    fills = np.asarray(vcond.part[1], dtype=float)
    later_p = {k for k in deps[j] if conds[k].family not in ("cart", "fixed")}
    later_v = {k for k in deps[kv] if conds[k].family not in ("cart", "fixed")}
    touched = sorted(later_p | later_v)
    lw = p.log_probs(etas[c])
    if ev is not None:
        lw = lw + ev[1]
    cand: dict[str, list[np.ndarray]] = {conds[k].column: [] for k in touched}
    for level in range(cond.n_categories):
        lev = np.full(n_rows, level, dtype=np.int64)
        v_l = raw_v if level == 0 else np.full(n_rows, float(fills))
        vals_l = {**values, c: lev}
        for k in touched:
            ck = conds[k].column
            e = etas[ck]
            lin = preps[k].lin
            if k in later_p:
                e = lin.replace(e, values, c, lev)
            if k in later_v:
                e = lin.replace(e, vals_l, v, v_l)
            cand[ck].append(e)
            lw[:, level] += preps[k].loglik(e, values[ck], latent.get(ck))
    new = cond.fix(draw_categorical(lw, rng))
    for ck, lst in cand.items():
        etas[ck] = np.stack(lst)[new, np.arange(n_rows)]
    values[c] = new
    values[v] = vcond.fix(np.where(new == 0, raw_v, fills))


def gibbs_draw(conds: Sequence, preps: Sequence[Prepared], evidence: Mapping[str, Any], rng: np.random.Generator,
               n_sweeps: int, trace: list | None = None) -> tuple[dict, dict[str, float]]:
    """Within-record Gibbs sweeps over all quasi-identifiers, started from the sequential draw.

    Returns the values and, per continuous column, the Metropolis-Hastings
    acceptance rate over the sweeps (under ``"(record)"``, that of the
    whole-record move when it is made: module docstring). ``trace`` (a list) receives a copy of the
    values after every sweep (for checking how many sweeps suffice).

    Work is shared across the updates of a sweep: each model's linear
    predictor is updated when one of its predictors changes (additive
    designs), and each model's log-likelihood of the current state is kept
    and carried over from the candidate that was drawn, so an update of
    :math:`X_j` evaluates the later models only at the proposed value (MH) or
    at the other level (a binary :math:`X_j`: one evaluation per later model).
    """
    values, latent, etas = sequential_draw(conds, preps, evidence, rng)
    n_rows = next(iter(values.values())).shape[0]
    accepted: dict[str, float] = {}
    _sweeps(conds, preps, evidence, rng, n_sweeps, values, latent, etas, accepted, trace)
    # cart columns: drawn last, given the final state of the others (no parametric model uses them)
    for cond in conds:
        if cond.family == "cart":
            values[cond.column] = cond.fix(_cart_draw(cond, values, rng))
    rates = {c: (a / (n_sweeps * n_rows) if n_sweeps else float("nan")) for c, a in accepted.items()}
    return values, rates


def needs_record_move(conds: Sequence) -> bool:
    """Whether the sweeps need the whole-record MH step: a categorical tree, or a continuous one with
    discrete leaves (:mod:`synthmi.models.tree`: its likelihood is a mass, 0 in a leaf without the
    current value), with an earlier quasi-identifier among its predictors (module docstring), and no
    two-part column."""
    if any(cd.part is not None for cd in conds):
        return False
    deps = dependents(conds)
    return any(is_mass_tree(conds[k]) for j, ks in enumerate(deps) if conds[j].family not in ("cart", "fixed")
               for k in ks)


def log_record_ratio(conds: Sequence, preps: Sequence[Prepared], evidence: Mapping[str, Any], values: Mapping,
                     latent: Mapping, etas: Mapping) -> np.ndarray:
    r"""Per record :math:`\log \pi(x) / q(x)` up to a constant: :math:`\sum_j \log Z_j(\text{pred}_j)`
    over the masked columns, plus the grid corrections (module docstring, the record move)."""
    n_rows = next(iter(values.values())).shape[0]
    out = np.zeros(n_rows)
    for cond, p in zip(conds, preps):
        c = cond.column
        ev = evidence.get(c)
        if ev is None or cond.family in ("cart", "fixed"):
            continue
        eta = etas[c]
        if not p.continuous:
            lw = p.log_probs(eta) + ev[1]
            mx = lw.max(axis=1)
            out += p.free(mx + np.log(np.exp(lw - mx[:, None]).sum(axis=1)))
            continue
        w_bar, v = ev[1], float(ev[2])
        if cond.family == "tree":
            lz = cond.fast.log_evidence(p.theta, eta, ev)
        else:
            tot = p.sigma**2 + v
            mean, sd = _normal_proposal(p, eta, ev)
            lz = (-0.5 * (w_bar - eta) ** 2 / tot - 0.5 * np.log(tot) - 0.5 * _LOG_2PI
                  + log_truncation_mass(mean, sd, p.lo, p.hi) - log_truncation_mass(eta, p.sigma, p.lo, p.hi))
        if cond.support is not None and cond.support.grid is not None:
            lz = lz - 0.5 * ((w_bar - values[c]) ** 2 - (w_bar - latent[c]) ** 2) / v
        out += p.free(lz)
    return out


def _record_move(conds, preps, evidence, rng, values, latent, etas) -> np.ndarray:
    """The whole-record independence MH step (module docstring); returns the accepted rows."""
    cur = log_record_ratio(conds, preps, evidence, values, latent, etas)
    new_v, new_l, new_e = sequential_draw(conds, preps, evidence, rng)
    log_r = log_record_ratio(conds, preps, evidence, new_v, new_l, new_e) - cur
    acc = np.log(rng.random(cur.shape[0])) < log_r
    for old, new in ((values, new_v), (latent, new_l), (etas, new_e)):
        for k, x in new.items():
            old[k] = np.where(acc if np.ndim(x) == 1 else acc[:, None], x, old[k])
    return acc


def _sweeps(conds, preps, evidence, rng, n_sweeps, values, latent, etas, accepted, trace) -> None:
    """``n_sweeps`` Gibbs sweeps over the records in ``values`` (updated in place, as the dicts are)."""
    deps = dependents(conds)
    n_rows = next(iter(values.values())).shape[0]
    record_move = bool(evidence) and needs_record_move(conds)
    # per-record log-likelihood of each model's current value given its current predictors
    own: dict[str, np.ndarray] = {}
    # the masking evidence is fixed for the copy: a binary column's log-likelihood ratio once
    ev_odds = {cond.column: evidence[cond.column][1][:, 1] - evidence[cond.column][1][:, 0]
               for cond in conds if cond.column in evidence and cond.n_categories == 2
               and evidence[cond.column][0] == "table"}

    # two-part columns (synthmi.models.base): part indicator -> index of its value column
    value_of_part = {cd.part[0]: k for k, cd in enumerate(conds) if cd.part is not None}

    def own_ll(k: int) -> np.ndarray:
        ck = conds[k].column
        if ck not in own:
            own[ck] = preps[k].loglik(etas[ck], values[ck], latent.get(ck))
        return own[ck]

    for _ in range(n_sweeps):
        if record_move:
            acc = _record_move(conds, preps, evidence, rng, values, latent, etas)
            accepted["(record)"] = accepted.get("(record)", 0.0) + float(np.count_nonzero(acc))
            own.clear()
        for j, (cond, p) in enumerate(zip(conds, preps)):
            c = cond.column
            if cond.family in ("cart", "fixed"):
                continue
            ev = evidence.get(c)
            later = [k for k in deps[j] if conds[k].family not in ("cart", "fixed")]
            if c in value_of_part:
                kv = value_of_part[c]
                _two_part_indicator_update(j, conds, preps, values, latent, etas, deps, kv, ev, rng)
                # the update changed the part, the value column and the touched later models' predictors
                for k in [j, kv] + deps[j] + deps[kv]:
                    own.pop(conds[k].column, None)
                continue
            if p.continuous:
                _normal_update(cond, p, c, ev, later, conds, preps, values, latent, etas, own, own_ll,
                               accepted, rng, n_rows)
                continue
            kids = [k for k in later if cond.rule is None and _pairs_with(conds[k])
                    and conds[k].column not in value_of_part]
            if kids:
                for k in kids:
                    _pair_update(j, k, conds, preps, evidence, deps, values, latent, etas, rng)
                    for m in [j, k] + deps[j] + deps[k]:
                        own.pop(conds[m].column, None)
                continue
            if cond.n_categories == 2 and later:
                _binary_update(p, c, ev_odds.get(c), later, conds, preps, values, latent, etas, own, own_ll, rng)
                continue
            lp = p.log_probs(etas[c])
            lw = lp + ev[1] if ev is not None else lp.copy()
            cand: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {}
            for k in later:
                ck = conds[k].column
                cand[ck] = ([], [])
                lin = preps[k].lin
                additive = hasattr(lin, "level_contrib")
                if additive:
                    # remove the current level's contribution once, then add each candidate's
                    rest = etas[ck] - lin.contrib(c, values[c])
                for level in range(cond.n_categories):
                    if additive:
                        e_l = rest + lin.level_contrib(c, level)
                    else:
                        e_l = lin.replace(etas[ck], values, c, np.full(n_rows, level, dtype=np.int64))
                    ll_l = preps[k].loglik(e_l, values[ck], latent.get(ck))
                    cand[ck][0].append(e_l)
                    cand[ck][1].append(ll_l)
                    lw[:, level] += ll_l
            new = cond.fix(draw_categorical(lw, rng))
            rows = np.arange(n_rows)
            for ck, (e_list, ll_list) in cand.items():
                etas[ck] = np.stack(e_list)[new, rows]  # (C, n) or (C, n, d)
                own[ck] = np.stack(ll_list)[new, rows]
            own[c] = p.free(lp[rows, new])
            values[c] = new
        if trace is not None:
            trace.append({k: v.copy() for k, v in values.items()})


def _pairs_with(cond) -> bool:
    """A later model updated in a block with a categorical predictor: a categorical tree, or a continuous
    one with discrete leaves (categorical over its support values), without a rule or a part."""
    return is_mass_tree(cond) and cond.rule is None and cond.part is None


def _pair_update(j: int, k: int, conds: Sequence, preps: Sequence, evidence: Mapping[str, Any],
                 deps: list[list[int]], values: dict, latent: dict, etas: dict, rng: np.random.Generator) -> None:
    r"""Exact block Gibbs update of a categorical :math:`X_j` with a later tree :math:`X_k` (categorical,
    or continuous with discrete leaves):

    .. math:: p(x_j, x_k \mid \cdot) \propto p(x_j \mid \text{pred}_j)\, p(\tilde W_j \mid x_j)\,
        \pi_{\ell(\text{pred}_k(x_j)), x_k}\, p(\tilde W_k \mid x_k)
        \prod_{m \text{ later of } j \text{ or } k,\, m \ne k} p(x_m \mid \text{pred}_m(x_j, x_k)),

    enumerated over the :math:`C_j C_k` pairs (module docstring: the tree's zero leaf
    probabilities would otherwise hold :math:`X_j` where :math:`x_k` is possible).

    A discrete-leaf tree (:mod:`synthmi.models.tree`) enters the same enumeration with its support
    :math:`v_1 < \dots < v_V` (the distinct donor values, :math:`V \le` ``FEW_VALUES``) in place of
    the levels. Its likelihood is the mass :math:`p(x_k = v \mid \text{pred}_k, \theta) =
    \sum_{d \in \ell} w_{\ell d}\, 1[y_d = v] = \pi_{\ell v}` (:meth:`Prepared.value_table`;
    the donors with one value are one component) and its normal mask :math:`p(\bar W_k \mid x_k = v)
    = \phi_{v_e}(\bar W_k - v)` (:math:`v_e = \sigma_e^2/K`), so the joint predictive
    (eq. 3) restricted to the pair, the other quasi-identifiers held, is

    .. math:: p(x_j = c, x_k = v \mid \cdot) \propto p(c \mid \text{pred}_j)\, p(\tilde W_j \mid c)\,
        \pi_{\ell(\text{pred}_k(c)), v}\, \phi_{v_e}(\bar W_k - v)
        \prod_{m \ne k} p(x_m \mid \text{pred}_m(c, v)),

    the weight given to pair :math:`(c, v)` (the factors of eq. 3 that involve neither :math:`x_j`
    nor :math:`x_k` cancel); it is 0 off the support, where :math:`\pi_{\ell v} = 0` for every leaf,
    so the enumeration covers the pair's whole conditional. With :math:`x_k` mapped to its raw value
    (the value the later models and the mask see; a masked column has no transform and its
    donors lie on its grid, so it is :math:`v`), the latent of :math:`X_k` is :math:`v`. Without
    other later models, summing over :math:`v` gives :math:`X_j`'s marginal weight
    :math:`p(c \mid \cdot)\, p(\tilde W_j \mid c)\, Z_k(\ell(\text{pred}_k(c)))`, with :math:`Z_k` the leaf's evidence
    :math:`\sum_d w_d\, \phi_{v_e}(\bar W_k - y_d)` of the tree's
    :meth:`~synthmi.models.tree.TreePosterior.log_evidence`, so a record moves between leaves that
    hold different values in one update, as it does for a categorical tree.
    ``tests/models/test_tree_discrete_record.py`` checks these weights against the enumerated joint.
    """
    cj, ck = conds[j].column, conds[k].column
    n_rows = values[cj].shape[0]
    lw, eta_k, eta_m, xs = _pair_weights(j, k, conds, preps, evidence, deps, values, latent, etas)
    Ck = lw.shape[1] // conds[j].n_categories
    idx = draw_categorical(lw, rng)
    rows = np.arange(n_rows)
    new_j = idx // Ck
    etas[ck] = np.stack(eta_k)[new_j, rows]
    for m, lst in eta_m.items():
        etas[conds[m].column] = np.stack(lst)[idx, rows]
    values[cj] = conds[j].fix(new_j)
    if xs is None:
        values[ck] = idx % Ck
    else:
        values[ck] = xs[idx % Ck]
        latent[ck] = preps[k].support[idx % Ck]


def _pair_weights(j: int, k: int, conds: Sequence, preps: Sequence, evidence: Mapping[str, Any],
                  deps: list[list[int]], values: Mapping, latent: Mapping, etas: Mapping):
    """The log weights (n, C_j C_k) of :func:`_pair_update`'s pairs (index ``l_j * C_k + l_k``), the
    candidate leaves of X_k per level of X_j, the touched later models' candidate predictors per pair, and
    the raw values of a discrete-leaf tree's support (None for a categorical tree)."""
    cj, ck = conds[j].column, conds[k].column
    n_rows = values[cj].shape[0]
    support = getattr(preps[k], "support", None)
    # a discrete-leaf tree: its support values (raw scale: what the later models and the mask see)
    xs = None if support is None else conds[k].to_raw(support)
    Cj = conds[j].n_categories
    Ck = conds[k].n_categories if xs is None else xs.size
    touched = sorted(m for m in set(deps[j]) | set(deps[k]) if m != k and conds[m].family not in ("cart", "fixed"))
    ev_j, ev_k = evidence.get(cj), evidence.get(ck)
    lpj = preps[j].log_probs(etas[cj])
    if ev_j is not None:
        lpj = lpj + ev_j[1]
    mask_k = None
    if ev_k is not None:
        # a categorical mask's table, or a normal mask's log phi_v(w_bar - v) per support value
        # (its normalising constant is the same for every pair)
        mask_k = ev_k[1] if xs is None else -0.5 * (ev_k[1][:, None] - xs[None, :]) ** 2 / float(ev_k[2])
    lw = np.empty((n_rows, Cj * Ck))
    eta_k, eta_m = [], {m: [] for m in touched}
    for lj in range(Cj):
        xj = np.full(n_rows, lj, dtype=np.int64)
        e_k = preps[k].lin.replace(etas[ck], values, cj, xj)
        eta_k.append(e_k)
        lpk = preps[k].log_probs(e_k)
        if mask_k is not None:
            lpk = lpk + mask_k
        vals_j = {**values, cj: xj}
        # a touched model's predictor given x_j, and the likelihood of one that x_k does not reach: once per level
        e_j = {m: preps[m].lin.replace(etas[conds[m].column], values, cj, xj) if m in deps[j]
               else etas[conds[m].column] for m in touched}
        ll_j = {m: preps[m].loglik(e_j[m], values[conds[m].column], latent.get(conds[m].column))
                for m in touched if m not in deps[k]}
        for lk in range(Ck):
            xk = np.full(n_rows, lk, dtype=np.int64) if xs is None else np.full(n_rows, xs[lk])
            w = lpj[:, lj] + lpk[:, lk]
            for m in touched:
                cm = conds[m].column
                if m in deps[k]:
                    e = preps[m].lin.replace(e_j[m], vals_j, ck, xk)
                    ll = preps[m].loglik(e, values[cm], latent.get(cm))
                else:
                    e, ll = e_j[m], ll_j[m]
                eta_m[m].append(e)
                w = w + ll
            lw[:, lj * Ck + lk] = w
    return lw, eta_k, eta_m, xs


def _binary_update(p, c, ev_odds, later, conds, preps, values, latent, etas, own, own_ll, rng) -> None:
    r"""Gibbs update of a binary X_j from its log-odds.

    With :math:`s_i = 1 - 2x_i` (+1 when the other level is 1), the full
    conditional's log-odds are

    .. math:: D_i = \log\frac{p(1 \mid \text{pred}_{ij})}{p(0 \mid \text{pred}_{ij})}
        + \log\frac{p(\tilde W_{ij} \mid 1)}{p(\tilde W_{ij} \mid 0)}
        + \sum_{k > j} s_i \left[\ell_k(1 - x_i) - \ell_k(x_i)\right],

    where :math:`\ell_k` is the later model k's log-likelihood: at the current
    level it is the kept ``own`` value, so each later model is evaluated once,
    at the other level. The new level is 1 when :math:`u \ge 1/(1 + e^{D})`,
    which is the inverse-CDF rule of :func:`draw_categorical` (level 1 when
    :math:`u (p_0 + p_1) \ge p_0`) with the same single uniform per record.
    """
    cur = np.asarray(values[c], dtype=np.int64)
    other = 1 - cur
    d = p.log_odds(etas[c])
    if ev_odds is not None:
        d = d + ev_odds
    sign = 1.0 - 2.0 * cur
    cand = {}
    for k in later:
        ck = conds[k].column
        e_o = preps[k].lin.replace(etas[ck], values, c, other)
        ll_o = preps[k].loglik(e_o, values[ck], latent.get(ck))
        d = d + sign * (ll_o - own_ll(k))
        cand[ck] = (e_o, ll_o)
    u = rng.random(cur.shape[0])
    with np.errstate(over="ignore"):
        new = p.cond.fix((u * (1.0 + np.exp(d)) >= 1.0).astype(np.int64))
    switched = new != cur
    if switched.any():
        for ck, (e_o, ll_o) in cand.items():
            etas[ck] = np.where(switched if e_o.ndim == 1 else switched[:, None], e_o, etas[ck])
            own[ck] = np.where(switched, ll_o, own[ck])
        own.pop(c, None)
    values[c] = new


def _normal_update(cond, p, c, ev, later, conds, preps, values, latent, etas, own, own_ll, accepted, rng,
                   n_rows) -> None:
    """Update of a continuous X_j: a direct draw, or independence MH against the later models' likelihoods."""
    on_grid = ev is not None and cond.support is not None and cond.support.grid is not None
    own.pop(c, None)
    if not later and not on_grid:
        # no later likelihood: the proposal is the full conditional, draw it directly
        y = p.draw_latent(etas[c], ev, rng)
        latent[c], values[c] = y, _two_part_value(cond, values, y)
        return
    y_new = p.draw_latent(etas[c], ev, rng)
    # rows whose part is not "value" keep the fill: later models see no change there, so the
    # move of the auxiliary latent is accepted (its proposal is its pseudo-prior)
    x_new = _two_part_value(cond, values, y_new)
    log_r = np.zeros(n_rows)
    if on_grid:
        # the proposal used p(W | latent); the target uses p(W | value on the grid)
        w_bar, v = ev[1], ev[2]
        log_r += (-0.5 * ((w_bar - x_new) ** 2 - (w_bar - y_new) ** 2)
                  + 0.5 * ((w_bar - values[c]) ** 2 - (w_bar - latent[c]) ** 2)) / v
    new = {}
    for k in later:
        ck = conds[k].column
        e_new = preps[k].lin.replace(etas[ck], values, c, x_new)
        ll_new = preps[k].loglik(e_new, values[ck], latent.get(ck))
        new[ck] = (e_new, ll_new)
        log_r += ll_new - own_ll(k)
    acc = np.log(rng.random(n_rows)) < log_r
    accepted[c] = accepted.get(c, 0.0) + float(np.count_nonzero(acc))
    latent[c] = np.where(acc, y_new, latent[c])
    values[c] = np.where(acc, x_new, values[c])
    for ck, (e_new, ll_new) in new.items():
        etas[ck] = np.where(acc if e_new.ndim == 1 else acc[:, None], e_new, etas[ck])
        own[ck] = np.where(acc, ll_new, own[ck])
