"""Potential energies of the Bayesian SVM posteriors and their subgradients (Hu, Zhu & Zhang 2016).

Parameters are stored per chain as rows of ``theta`` with shape (n_chains, n_params). A linear score is
``f(x) = w^T x + b`` with the bias LAST in each block: binary models have ``n_params = d + 1``; multi-class
models have ``K`` blocks ``[w_k, b_k]`` (class-major), ``n_params = K (d + 1)``. The bias is never added to
``X`` as a column, so the data are never copied (a minibatch is gathered by row indices only).

Binary (sec. 3.3, eq. 15), with standard normal prior and per-datum pseudo-likelihood
``psi(y | x, theta) = exp(-c max(0, l - y f(x)))``:

    U(theta) = ||theta||^2 / 2 + c * s * sum_{d in batch} max(0, l - y_d f(x_d)),   s = n / |batch|.

Multi-class (eq. 20-21): ``psi(y_d | x_d) = exp(-c max(0, l + max_{y != y_d} f_y(x_d) - f_{y_d}(x_d)))``;
where the hinge is active, the subgradient of U is ``+c x_d`` in block ``y*`` (the best wrong class) and
``-c x_d`` in block ``y_d`` (eq. 21 gives the signs of log psi = -U's data term).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..likelihoods import normalised_hinge


class HingeModel(NamedTuple):
    """The posterior's constants: cost ``c``, margin ``l``, number of classes (2 means the binary model)."""

    c: float
    l: float
    n_classes: int
    n_features: int

    @property
    def n_blocks(self) -> int:
        return 1 if self.n_classes == 2 else self.n_classes

    @property
    def n_params(self) -> int:
        return self.n_blocks * (self.n_features + 1)


class ChainLayout(NamedTuple):
    """Where a group's chains sit among all ``n_total`` chains. BLAS picks its kernels (and so its
    rounding) by the operands' shapes, so products with the data are computed at the full chain count,
    each chain in its own column, whatever group of chains a process runs: a seed then gives bit-identical
    draws whatever ``n_jobs`` (rounding differences would otherwise grow chaotically in burn-in)."""

    positions: np.ndarray  # (C_g,) global indices of this group's chains
    n_total: int


def _pad(A: np.ndarray, layout: ChainLayout | None) -> np.ndarray:
    """Columns (C_g * k) of A placed at their chains' positions among n_total * k zero columns."""
    if layout is None or len(layout.positions) == layout.n_total:
        return A
    rows, cols = A.shape
    k = cols // len(layout.positions)
    out = np.zeros((rows, layout.n_total * k))
    idx = (layout.positions[:, None] * k + np.arange(k)).reshape(-1)
    out[:, idx] = A
    return out


def _unpad_cols(A: np.ndarray, layout: ChainLayout | None, k: int) -> np.ndarray:
    if layout is None or len(layout.positions) == layout.n_total:
        return A
    idx = (layout.positions[:, None] * k + np.arange(k)).reshape(-1)
    return A[:, idx]


def _linear(theta_blocks: np.ndarray, X: np.ndarray, layout: ChainLayout | None = None) -> np.ndarray:
    """Scores (C, m, B) for theta_blocks (C, B, d + 1) and X (m, d) shared or (C, m, d) per chain."""
    W, b = theta_blocks[..., :-1], theta_blocks[..., -1]
    if X.ndim == 2:
        C, B, d = W.shape
        # X (m, d) @ W^T (d, C B): the chains are the product's columns
        F = _unpad_cols(X @ _pad(W.reshape(C * B, d).T, layout), layout, B)
        # chain-major and contiguous: the per-chain sums below then reduce each chain's row the same way
        # whatever the number of chains (numpy's summation order follows the memory layout)
        F = np.ascontiguousarray(F.reshape(X.shape[0], C, B).transpose(1, 0, 2))
    else:
        F = np.matmul(X, np.swapaxes(W, -1, -2))
    return F + b[:, None, :]


def _contract(G: np.ndarray, X: np.ndarray, layout: ChainLayout | None = None) -> np.ndarray:
    """sum_m G[c, m, b] [x_m, 1]  -> (C, B, d + 1): the chain rule through the linear score."""
    if X.ndim == 2:
        C, m, B = G.shape
        # X^T (d, m) @ G (m, C B): the chains are the product's columns again
        Gm = G.transpose(1, 0, 2).reshape(m, C * B)
        gw = _unpad_cols(X.T @ _pad(Gm, layout), layout, B).T.reshape(C, B, X.shape[1])
    else:
        gw = np.matmul(np.swapaxes(G, -1, -2), X)
    return np.concatenate([gw, G.sum(axis=1)[..., None]], axis=-1)


def scores(model: HingeModel, theta: np.ndarray, X: np.ndarray,
           layout: ChainLayout | None = None) -> np.ndarray:
    """Linear scores (C, m, n_blocks)."""
    theta = np.atleast_2d(theta)
    return _linear(theta.reshape(theta.shape[0], model.n_blocks, model.n_features + 1), X, layout)


def hinge_losses(model: HingeModel, F: np.ndarray, y: np.ndarray):
    """Per-datum hinge ``max(0, .)`` (C, m), and for multi-class the best wrong class y* (C, m).

    ``y`` is -1/+1 for the binary model, class indices 0..K-1 otherwise (shape (m,) or (C, m))."""
    if model.n_classes == 2:
        return np.maximum(0.0, model.l - y * F[..., 0]), None
    y_idx = np.broadcast_to(y, F.shape[:-1])
    f_true = np.take_along_axis(F, y_idx[..., None], axis=-1)[..., 0]
    wrong = F.copy()
    np.put_along_axis(wrong, y_idx[..., None], -np.inf, axis=-1)
    y_star = np.argmax(wrong, axis=-1)
    f_star = np.take_along_axis(F, y_star[..., None], axis=-1)[..., 0]
    return np.maximum(0.0, model.l + f_star - f_true), y_star


def data_terms(model: HingeModel, theta: np.ndarray, X: np.ndarray, y: np.ndarray,
               layout: ChainLayout | None = None):
    """Per-datum c * hinge (C, m) and the per-datum subgradient coefficients G (C, m, n_blocks): the
    data-term subgradient of point d is sum_b G[:, d, b] e_b (x) [x_d, 1] (eq. 15 / 21, sign of U)."""
    theta = np.atleast_2d(theta)
    C = theta.shape[0]
    B, p = model.n_blocks, model.n_features + 1
    F = _linear(theta.reshape(C, B, p), X, layout)
    loss, y_star = hinge_losses(model, F, y)
    active = loss > 0.0
    if model.n_classes == 2:
        G = (-model.c * active * y)[..., None]
    else:
        y_idx = np.broadcast_to(y, F.shape[:-1])
        k = np.arange(B)
        G = (model.c * active)[..., None] * ((y_star[..., None] == k).astype(float) - (y_idx[..., None] == k))
    return model.c * loss, G


def potential_and_grad(model: HingeModel, theta: np.ndarray, X: np.ndarray, y: np.ndarray,
                       scale: float = 1.0, layout: ChainLayout | None = None):
    """U(theta) and a subgradient, for every chain: returns (U (C,), grad (C, n_params)).

    ``X``/``y`` are the full data (scale 1) or a minibatch with ``scale = n / |batch|`` (eq. 7), given
    either shared by all chains ((m, d), (m,)) or one per chain ((C, m, d), (C, m)). At a kink the
    subgradient chosen is the one-sided value with the hinge inactive (eq. 15's convention)."""
    theta = np.atleast_2d(theta)
    loss, G = data_terms(model, theta, X, y, layout)
    U = 0.5 * np.einsum("cp,cp->c", theta, theta) + scale * loss.sum(axis=1)
    grad = theta + scale * _contract(G, X, layout).reshape(theta.shape)
    return U, grad


class ControlVariate(NamedTuple):
    """Data-term values at a fixed point theta_hat (the mode): full sums and per-datum pieces."""

    theta_hat: np.ndarray  # (p,)
    loss_sum: float  # sum_d c * hinge_d(theta_hat)
    grad_sum: np.ndarray  # (p,) data-term subgradient at theta_hat, full data
    loss: np.ndarray  # (n,) per-datum c * hinge at theta_hat
    G: np.ndarray  # (n, n_blocks) per-datum coefficients at theta_hat
    active: np.ndarray | None = None  # (n,) float 1.0 where the hinge is active at theta_hat (binary)


def control_variate(model: HingeModel, theta_hat: np.ndarray, X: np.ndarray, y: np.ndarray) -> ControlVariate:
    loss, G = data_terms(model, theta_hat[None], X, y)
    grad = _contract(G, X).reshape(-1)
    active = (loss[0] > 0.0).astype(float) if model.n_classes == 2 else None
    return ControlVariate(np.asarray(theta_hat, float), float(loss.sum()), grad, loss[0], G[0], active)


# ----------------------------------------------------------------- the binary model on the signed design
def signed_design(X: np.ndarray, y: np.ndarray, order: str = "C",
                  rows: np.ndarray | None = None) -> np.ndarray:
    """Z = [y [X, 1], 1] (n, d + 2): the signed design y [X, 1], so the binary margins are y_d f(x_d) =
    Z[:, :p] theta (p = d + 1), and a last column of ones. Built once per fit: every full-data potential is
    then two BLAS products and a comparison, with no bias or label arithmetic per call (3-4x fewer passes
    over the data than the general path). The ones column makes the second product also count the active
    hinges (``binary_full``), which a separate count over the (chains, n) mask would cost as much as a
    product. ``samplers.design_order`` says which memory order a fit wants: column-major for full-data
    HMC products, row-major where rows are gathered (minibatches, and HMC's screened updates). ``rows``: a
    permutation of the rows, Z's row i then being data row rows[i] (gathered in chunks of about 8 MB, so
    the only copy of X is the design itself)."""
    n, d = X.shape
    Z = np.empty((n, d + 2), order=order)
    if rows is None:
        np.multiply(X, y[:, None], out=Z[:, :d])
        Z[:, d] = y
    else:
        # rows per chunk: about 8 MB of X (a fixed 65,536 rows copied all of a wide X: the review)
        step = max(1, (8 << 20) // (8 * max(d, 1)))
        for s in range(0, n, step):
            r = rows[s:s + step]
            np.multiply(X[r], y[r, None], out=Z[s:s + step, :d])
            Z[s:s + step, d] = y[r]
    Z[:, d + 1] = 1.0
    return Z


def _margin_design(Z: np.ndarray, p: int) -> np.ndarray:
    """The signed design without ``signed_design``'s column of ones (a view), for ``p`` parameters."""
    return Z if Z.shape[-1] == p else Z[..., :p]


#: rows of the design per pass in ``_chain_products``: a block (at most 4096 x p doubles, 1.7 MB at
#: p = 51) stays in cache while every chain of the call reads it
_BLOCK_ROWS = 4096


def _chain_products(Z: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Margins S (C, n), S[c] = Z[:, :p] theta[c]: one matrix-vector product per chain (numpy's stacked
    matmul calls BLAS gemv per chain). Each chain's values therefore do not depend on which other chains
    share the call, so a seed gives bit-identical draws whatever ``n_jobs``, with no padding to the full
    chain count; and a process running half the chains does half the work. (A joint (n, C) product is not
    cheaper at these widths: BLAS gemm copies Z into its packed panels on every call, so at n = 20,000 a
    2-column gemm costs as much as a 4-column one, measured; see ``bsvm/chains.py``.)

    The products run over blocks of ``_BLOCK_ROWS`` rows, every chain on a block before the next block,
    so the chains of a call share one pass over Z from memory instead of one pass each: at 100,000 x 51
    (41 MB, beyond the cache) 4 chains took 5.5 ms instead of 10.7 ms, measured. A row's value is the
    same sum in the same order either way (gemv accumulates each row over the columns; tested equal to the
    unblocked product), so blocking changes no draw."""
    p = theta.shape[1]
    Zm = _margin_design(Z, p)
    t3 = np.ascontiguousarray(theta)[:, :, None]
    n = Zm.shape[0]
    if n <= _BLOCK_ROWS:
        return np.matmul(Zm, t3)[..., 0]
    out = np.empty((theta.shape[0], n, 1))
    for s in range(0, n, _BLOCK_ROWS):
        np.matmul(Zm[s:s + _BLOCK_ROWS], t3, out=out[:, s:s + _BLOCK_ROWS])
    return out[..., 0]


#: designs of at least this many bytes decide the hinge activity from a float32 copy first (_chain_active)
_TWIN_MIN_BYTES = 8 << 20
_U32 = 2.0 ** -24  # float32 unit roundoff
_twins: dict = {}  # the float32 copies: key -> (weakref to the design or None, _Twin)


class _Twin(NamedTuple):
    """The float32 copy of a design's margin columns (column-major) and its rows' 2-norms."""

    Z32: np.ndarray
    norms: np.ndarray


def _twin(Z: np.ndarray, p: int) -> _Twin | None:
    """The float32 copy of ``Z[:, :p]``, made once per design and process. A design shared as a memory
    map (``bsvm.chains.ChainPool``) gets its copy as a memory-mapped file beside it, written by the first
    process that needs it, so the worker processes read one copy (one set of cache lines)."""
    if Z.dtype != np.float64 or Z.ndim != 2 or Z.nbytes < _TWIN_MIN_BYTES:
        return None
    import weakref

    filename = getattr(Z, "filename", None)
    if filename is not None:
        key = (str(filename), int(getattr(Z, "offset", 0)), Z.shape, p)
        hit = _twins.get(key)
        if hit is not None:
            return hit[1]
        path = write_twin(Z, p)
        Z32 = np.load(path, mmap_mode="r")
        twin = _Twin(Z32, _row_norms(Z, p).astype(np.float32))
        _twins.clear()  # one design at a time per worker (the previous fit's files are gone)
        _twins[key] = (None, twin)
        return twin
    key = (id(Z), p)
    hit = _twins.get(key)
    if hit is not None and hit[0] is not None and hit[0]() is Z:
        return hit[1]
    twin = _make_twin(Z, p)
    _twins[key] = (weakref.ref(Z), twin)
    weakref.finalize(Z, _twins.pop, key, None)  # the copy goes with the design (a fit's Z)
    return twin


def write_twin(Z: np.ndarray, p: int) -> str | None:
    """Writes the float32 copy of a memory-mapped design's margin columns beside its file, where
    :func:`_twin` looks for it (unless there already; returns its path; None for a design that has no
    twin). The workers of a parallel fit would otherwise each make it at their first gradient (0.13 s
    each at 100,000 x 51, the same work twice); made once in the main process, e.g. in a thread while
    the pilot runs (``driver.PreparedDesign``), they only map it."""
    import os

    filename = getattr(Z, "filename", None)
    if filename is None or Z.dtype != np.float64 or Z.ndim != 2 or Z.nbytes < _TWIN_MIN_BYTES:
        return None
    path = f"{filename}.f32-{p}.npy"
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp.npy"
        np.save(tmp, _make_twin(Z, p).Z32)
        os.replace(tmp, path)  # atomic: a process reading it sees the whole file
    return path


def _row_norms(Z, p):
    Zm = Z[:, :p]
    out = np.zeros(Z.shape[0])
    for j in range(p):  # column by column: no (n, p) temporary
        out += Zm[:, j] * Zm[:, j]
    return np.sqrt(out)


def _make_twin(Z, p):
    return _Twin(np.asfortranarray(Z[:, :p], dtype=np.float32), _row_norms(Z, p).astype(np.float32))


def _near_kink(S32: np.ndarray, l: float, theta_norm, norms: np.ndarray, p: int) -> np.ndarray:
    """Where float32 margins ``S32`` cannot decide [s < l] as float64 ones would: |s32 - l| within twice
    the bound (p + 3) u ||theta|| ||z_i|| (which covers rounding the bound itself in float32) plus l's
    rounding, or not finite (float32 overflow, e.g. a diverging run). ``theta_norm``: ||theta|| per row
    of ``S32`` ((C, 1) for a (C, n) block, or a scalar); ``norms``: the rows' ||z_i||."""
    tol = ((2.0 * (p + 3) * _U32) * np.asarray(theta_norm)).astype(np.float32)
    D = np.abs(S32 - np.float32(l))
    D -= np.float32(2.0 * _U32 * abs(l))
    return (D <= tol * norms) | ~np.isfinite(S32)


def _chain_active(Z: np.ndarray, theta: np.ndarray, l: float) -> np.ndarray:
    """The hinge activity A = [Z[:, :p] theta[c] < l] (C, n), exactly as float64 margins decide it.

    Designs of >= 8 MB (``_TWIN_MIN_BYTES``; at 100,000 x 51, 41 MB, beyond the cache) are read in float32
    first, half the bytes (the pass over the design is what a gradient costs there): s32, the float32
    margin, is within (p + 3) u sum_j |z_j theta_j| <= (p + 3) u |z| |theta| of the exact margin (u = 2^-24:
    rounding of z, theta, each product and each sum, Higham's gamma_p bound, any summation order). Rows
    with |s32 - l| within twice that bound are recomputed in float64 from the design itself, so every
    decision is the float64 one (up to rows within ~1e-16 of the kink, where float64 roundings differ among
    themselves); the potential and the subgradient are then summed from the float64 design as before. Each
    chain's products are its own (blocked as in ``_chain_products``), so the result does not depend on the
    chains sharing the call."""
    p = theta.shape[1]
    twin = _twin(Z, p)
    if twin is None:
        return _chain_products(Z, theta) < l
    theta = np.ascontiguousarray(theta)
    C, n = theta.shape[0], Z.shape[0]
    t3 = theta.astype(np.float32)[:, :, None]
    S = np.empty((C, n, 1), dtype=np.float32)
    for s in range(0, n, _BLOCK_ROWS):
        np.matmul(twin.Z32[s:s + _BLOCK_ROWS], t3, out=S[:, s:s + _BLOCK_ROWS])
    S = S[..., 0]
    A = S < np.float32(l)
    band = _near_kink(S, l, np.sqrt(np.einsum("cp,cp->c", theta, theta))[:, None], twin.norms, p)
    Zm = _margin_design(Z, p)
    for c in range(C):
        rows = np.flatnonzero(band[c])
        if rows.size:
            A[c, rows] = Zm[rows] @ theta[c] < l
    return A


def _chain_sums(A: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """(Z^T A[c])_c (C, Z.shape[1]) for a (C, n) mask: one vector-matrix product per chain (as above)."""
    return np.matmul(A.astype(float)[:, None, :], Z)[:, 0, :]


def binary_full(model: HingeModel, theta: np.ndarray, Z: np.ndarray):
    """U and a subgradient on the full data (eq. 15): with margins s = Z theta^T and A = [s < l] (the
    hinge active; inactive at the kink), the data term is c sum_A (l - s) = c (l |A| - theta . Z^T A) and
    its subgradient -c Z^T A. ``Z`` is ``signed_design``'s (with its column of ones, Z^T A also gives |A|,
    as a float sum of ones: exact) or the bare (n, p) signed design, row- or column-major. Every product
    is per chain (``_chain_products``), so a chain's values do not depend on the chain count."""
    p = theta.shape[1]
    if Z.shape[1] > p:
        return binary_energy(model, theta, binary_hinge_sums(model, theta, Z))
    A = _chain_active(Z, theta, model.l)  # (C, n)
    return _energy(model, theta, np.ascontiguousarray(_chain_sums(A, Z)), np.count_nonzero(A, axis=1))


def binary_potential(model: HingeModel, theta: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """U alone on the full data (eq. 15), (C,): |theta|^2 / 2 + c sum_i max(0, l - s_i) from one pass of
    per-chain float64 margins (``_chain_products``). The minibatch samplers' monitored log posterior
    needs no subgradient: ``binary_full`` made a second pass over the design for Z^T A, 43 % of an sgld
    fit at 100,000 x 50 (640 calls, about 10 ms each). Equal to ``binary_full``'s U up to rounding, and
    per chain, so a chain's value does not depend on the chains sharing the call."""
    S = _chain_products(Z, theta)
    loss = np.maximum(model.l - S, 0.0).sum(axis=1)
    return 0.5 * np.einsum("cp,cp->c", theta, theta) + model.c * loss


def binary_hinge_sums(model: HingeModel, theta: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """(Z^T A)^T (C, p + 1) with A = [Z theta^T < l], for ``signed_design``'s Z (with its column of ones,
    so the last column is the count |A|): everything the potential and its subgradient need from the data
    (``binary_energy`` / ``binary_subgradient``). A leapfrog path needs only the subgradient at its inner
    points, so the potential is formed once, at the end (``samplers.HMC``). Both products are per chain
    (``_chain_products`` / ``_chain_sums``), so a chain's values do not depend on the chains sharing the
    call."""
    A = _chain_active(Z, theta, model.l)  # (C, n)
    # (C, p + 1), contiguous: einsum's summation order differs for strided rows, which would make a
    # chain's U depend on how many chains share the call
    return np.ascontiguousarray(_chain_sums(A, Z))


def binary_subgradient(model: HingeModel, theta: np.ndarray, gzc: np.ndarray) -> np.ndarray:
    """The subgradient theta - c Z^T A from ``binary_hinge_sums``' gzc (eq. 15)."""
    return theta - model.c * np.ascontiguousarray(gzc[:, :theta.shape[1]])


def binary_energy(model: HingeModel, theta: np.ndarray, gzc: np.ndarray):
    """(U, subgradient) from ``binary_hinge_sums``' gzc: U = |theta|^2 / 2 + c (l |A| - theta . Z^T A)."""
    p = theta.shape[1]
    return _energy(model, theta, np.ascontiguousarray(gzc[:, :p]), gzc[:, p])


def _energy(model: HingeModel, theta: np.ndarray, gz: np.ndarray, count: np.ndarray):
    """(U, subgradient) from Z^T A (C, p) and the counts |A| (C,) (eq. 15)."""
    U = 0.5 * np.einsum("cp,cp->c", theta, theta) + model.c * (model.l * count
                                                                - np.einsum("cp,cp->c", theta, gz))
    return U, theta - model.c * gz


class RowOrder:
    """A permutation of the design's rows (a :class:`Screen`'s order), held by reference: per-chain
    states share it (``bsvm.chains.take_chains`` keeps it whole). ``token`` identifies it."""

    __slots__ = ("perm", "token")

    def __init__(self, perm: np.ndarray, token: int):
        self.perm, self.token = perm, token


def _same_order(a: RowOrder | None, b: RowOrder | None) -> bool:
    return a is b or (a is not None and b is not None and a.token == b.token)


class ActiveSet(NamedTuple):
    """The hinge activity at a state, for :func:`binary_full_update`: A (C, n) bool, True where
    l - s > 0, and gzc = (Z^T A)^T (C, p + 1) (the last column: the count |A|). A's columns are the rows
    in ``order`` (a :class:`Screen`'s row order; None: the design's), and ``reach`` (C,) says how far
    each chain's A may differ from the screen's reference activity (the length of its band; n: anywhere)."""

    A: np.ndarray
    gzc: np.ndarray
    reach: np.ndarray | None = None
    order: RowOrder | None = None

    def take(self, idx) -> ActiveSet:
        """The active sets of the chains ``idx``."""
        return ActiveSet(self.A[idx], self.gzc[idx], None if self.reach is None else self.reach[idx],
                         self.order)

    def in_order(self, order: RowOrder | None) -> ActiveSet:
        """The same activity with A's columns in ``order`` (reach becomes n: unknown)."""
        if _same_order(self.order, order):
            return self
        A = self.A
        if self.order is not None:  # back to the design's row order
            A = np.empty_like(A)
            A[:, self.order.perm] = self.A
        if order is not None:
            A = A[:, order.perm]
        reach = None if order is None else np.full(A.shape[0], A.shape[1])
        return ActiveSet(A, self.gzc, reach, order)

    @staticmethod
    def select(mask: np.ndarray, new: ActiveSet, old: ActiveSet, inplace: bool = False) -> ActiveSet:
        """Per chain, ``new`` where ``mask`` (C,) else ``old`` (HMC's accept step), in ``new``'s order.
        ``inplace``: ``new``'s arrays are the caller's to overwrite (only the rejected chains' rows are
        then copied, instead of a pass over every chain's A)."""
        old = old.in_order(new.order)
        if not inplace:
            new = ActiveSet(new.A.copy(), new.gzc.copy(), None if new.reach is None else new.reach.copy(),
                            new.order)
        rej = np.flatnonzero(~np.asarray(mask, dtype=bool))
        if rej.size:
            new.A[rej], new.gzc[rej] = old.A[rej], old.gzc[rej]
            if new.reach is not None:
                new.reach[rej] = old.reach[rej]
        return new

    def put(self, idx, part: ActiveSet, inplace: bool = False) -> ActiveSet:
        """A copy (``inplace``: this set, its arrays overwritten) with the chains ``idx`` replaced by
        ``part`` (in ``part``'s order)."""
        base = self.in_order(part.order)
        if not inplace:  # (in_order shares gzc, and A and reach when no conversion was needed)
            reach = base.reach
            if reach is not None and reach is self.reach:
                reach = reach.copy()
            base = ActiveSet(base.A if base.A is not self.A else base.A.copy(), base.gzc.copy(), reach,
                             base.order)
        base.A[idx], base.gzc[idx] = part.A, part.gzc
        if part.reach is not None:
            base.reach[idx] = part.reach
        return ActiveSet(base.A, base.gzc, base.reach if part.reach is not None else None, part.order)


def binary_full_update(model: HingeModel, theta: np.ndarray, Z: np.ndarray, prev: ActiveSet | None,
                       screen: Screen | None = None):
    """``binary_full`` from a previous state's :class:`ActiveSet`: returns (U, subgradient, ActiveSet).

    The margins s = Z theta^T are one product per chain as before; Z^T A, the second, is updated instead
    of recomputed: Z^T A_new = Z^T A_old + the rows whose hinge switched on - those switched off. Along a
    leapfrog path only the points whose margin crosses l switch (~0.5 % of them per step at n = 20,000:
    the posterior sd of a margin shrinks like 1 / sqrt(n)), so the update reads a few rows instead of all
    of Z: a third of a gradient's cost at 100,000 x 50, a quarter at 20,000 x 20 (on smaller data the
    bookkeeping costs more than it saves: ``Potential.incremental`` then says no). The count |A| stays
    an exact integer; Z^T A carries rounding from the updates, ~1e-16 relative per switched row (a random
    walk). Each chain is updated on its own, in row order, so its values do not depend on the chains
    sharing the call. A chain whose switches exceed n / 8 (a far jump, e.g. early in burn-in) is recomputed
    in full. ``Z`` must carry ``signed_design``'s column of ones."""
    active = binary_active_update(model, theta, Z, prev, screen)
    return (*binary_energy(model, theta, active.gzc), active)


def binary_active_update(model: HingeModel, theta: np.ndarray, Z: np.ndarray,
                         prev: ActiveSet | None, screen: Screen | None = None) -> ActiveSet:
    """The :class:`ActiveSet` at theta, updated from ``prev`` as ``binary_full_update`` says; with a
    :class:`Screen`, only the rows of each chain's band get their margins computed (``Screen``)."""
    if screen is not None:
        return _screened_update(model, theta, Z, prev, screen)
    A = _chain_active(Z, theta, model.l)  # (C, n)
    if prev is None:
        gzc = np.ascontiguousarray(_chain_sums(A, Z))
    else:
        prev = prev.in_order(None)
        gzc = prev.gzc.copy()
        for c in range(A.shape[0]):
            # chain-major A: a chain's switches are a 1-D flatnonzero, in row order
            rows = np.flatnonzero(A[c] != prev.A[c])
            if rows.size > Z.shape[0] // 8:
                gzc[c] = _chain_sums(A[c:c + 1], Z)[0]
            elif rows.size:
                gzc[c] += np.where(A[c, rows], 1.0, -1.0) @ Z[rows]
    return ActiveSet(A, gzc)


# ----------------------------------------------------------------- screening with a movement bound
_U64 = 2.0 ** -53  # float64 unit roundoff
_screens: dict = {}  # key -> (weakref to the design or None, Screen); one screen at a time per process


class Screen(NamedTuple):
    """Safe screening of the hinge activity along a sampler's path (the idea of El Ghaoui et al. 2012's
    safe feature elimination, here for rows and with a movement bound).

    With a reference point theta_r (the metric's centre) and its exact margins s_r = Z theta_r, for any
    theta and any invertible L (the metric factor: L L^T estimates the posterior covariance),
    Cauchy-Schwarz in the whitened coordinates gives

        |z_i theta - s_r,i| = |(L^T z_i) . L^-1 (theta - theta_r)| <= nz_i R,   nz_i = ||L^T z_i||,
                                                                         R = ||L^-1 (theta - theta_r)||,

    so row i's activity at theta is its reference activity whenever q_i = |s_r,i - l| / nz_i > R
    (+ rounding: ``threshold``). The rows are sorted by q once per screen and the design is copied in
    that order (column-major): the rows a state must compute are then the prefix of length
    k = #{q_i <= R'}, found by a binary search, one contiguous matrix-vector product of k rows. With the
    posterior's metric nz_i is the posterior sd of margin i and R the distance from the centre in
    posterior sds (~sqrt(p) for a typical draw; the bound is tight only along z_i's direction): at
    20,000 x 20 the band holds ~15 % of the rows (12-21 %, 10-90 % quantiles over a fit's draws).

    Everything is a function of (Z, l, centre, L), the same in every process, and each chain's band is
    its own, so a seed gives the same draws whatever ``n_jobs``."""

    order: RowOrder  # the rows by increasing q (and the screen's token)
    centre: np.ndarray  # (p,)
    Linv: np.ndarray  # (p, p) L^-1
    slack: float  # rounding allowance per unit of ||theta|| + ||theta_r|| (see threshold)
    centre_norm: float
    factor_norm: float  # ||L||_F
    q: np.ndarray  # (n,) sorted keys
    base: np.ndarray  # (n,) bool, the reference activity in the screen's order
    Zs: np.ndarray  # (n, p) the design's rows in the screen's order, column-major
    #: float32 ``Zs`` (designs of >= _TWIN_MIN_BYTES): the rows' 2-norms in the screen's order, which size
    #: the band of margins recomputed in float64 (as ``_chain_active`` does); None: ``Zs`` is float64
    norms: np.ndarray | None = None

    def threshold(self, theta: np.ndarray) -> np.ndarray:
        """R' = a R + b (C,): rows with q_i > R' keep their reference activity, as float64 margins decide.

        The float64 margin fl(z_i theta) is within gamma ||z_i|| ||theta|| of the exact one and s_r,i
        within gamma ||z_i|| ||theta_r|| (gamma = (p + 3) u, Higham's bound for any summation order);
        ||z_i|| <= ||L^-1||_F nz_i and ||theta|| <= ||theta_r|| + ||L||_F R. With
        slack = 2 gamma ||L^-1||_F (a factor 2 for the bound's own rounding), a = (1 + slack ||L||_F) and
        b = 2 slack ||theta_r||, each times 1 + 1e-6, which covers the rounding of R (computed with the
        inverse L^-1, whose relative error is ~cond(L) u) and of the keys."""
        w = (theta - self.centre) @ self.Linv.T  # only sizes the band: its rounding moves no decision
        return np.sqrt(np.einsum("cp,cp->c", w, w)) * self.a + self.b

    @property
    def a(self) -> float:
        return (1.0 + self.slack * self.factor_norm) * (1.0 + 1e-6)

    @property
    def b(self) -> float:
        return 2.0 * self.slack * self.centre_norm * (1.0 + 1e-6)


def _screen_key(Z, p, l, centre, L):
    import hashlib

    centre = np.ascontiguousarray(centre, dtype=float).reshape(p)
    Lm = np.eye(p) if L is None else np.asarray(L, dtype=float).reshape(p, p)
    h = hashlib.blake2b(digest_size=8)
    for part in (np.asarray(Z.shape, dtype=float), np.asarray([p, l], dtype=float), centre, Lm):
        h.update(np.ascontiguousarray(part).tobytes())
    token = int.from_bytes(h.digest(), "little") >> 1
    filename = getattr(Z, "filename", None)
    zkey = (str(filename), int(getattr(Z, "offset", 0))) if filename is not None else id(Z)
    return centre, Lm, token, zkey


def cached_screen(Z: np.ndarray, p: int, l: float, centre: np.ndarray, L) -> Screen | None:
    """The screen :func:`make_screen` would return if this process has built it already, else None."""
    _, _, token, zkey = _screen_key(Z, p, l, centre, L)
    hit = _screens.get((zkey, token))
    return hit[1] if hit is not None and (hit[0] is None or hit[0]() is Z) else None


def make_screen(Z: np.ndarray, p: int, l: float, centre: np.ndarray, L) -> Screen:
    """The :class:`Screen` of design ``Z`` (first ``p`` columns) at ``centre`` with the metric factor
    ``L`` ((p, p), any invertible matrix; None: the identity), cached per process: the design's rows are
    sorted and copied once per metric (at 20,000 x 21 ~5 ms, at 100,000 x 51 ~0.13 s)."""
    import weakref

    hit = cached_screen(Z, p, l, centre, L)
    if hit is not None:
        return hit
    centre, Lm, token, zkey = _screen_key(Z, p, l, centre, L)
    filename = getattr(Z, "filename", None)
    Zm = _margin_design(Z, p)
    s_r = _chain_products(Z, centre[None])[0]
    W = np.asarray(Zm @ Lm)  # (n, p): rows L^T z_i
    nz = np.sqrt(np.einsum("ij,ij->i", W, W))
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.abs(s_r - l) / nz
    q = np.where(np.isfinite(q), q, 0.0)  # a zero row (nz = 0) is always in the band
    perm = np.argsort(q, kind="stable")
    # A large design is copied in float32 (half the bytes: the pass over the band is most of a gradient
    # there, and memory bandwidth is what two worker processes share); its margins decide the activity
    # except near the kink, where _screened_update recomputes them in float64 from the design itself.
    single = Zm.nbytes >= _TWIN_MIN_BYTES
    Zs = np.empty((Z.shape[0], p), order="F", dtype=np.float32 if single else np.float64)
    # column by column, straight into the column-major copy (Zm[perm] then a transpose took twice as
    # long: 0.08 vs 0.04 s at 100k x 51); a float32 copy from the design's float32 twin (the same
    # values: its columns are contiguous, and its norms are the ones the screen needs), which every
    # screen of the design shares (at 100,000 x 51 a screen took 55-100 ms, ~40 % of it here)
    twin = _twin(Z, p) if single else None
    src = Zm if twin is None else twin.Z32
    for j in range(p):
        np.take(src[:, j], perm, out=Zs[:, j])
    norms = None if twin is None else twin.norms[perm]
    Linv = np.linalg.inv(Lm)
    screen = Screen(RowOrder(perm, token), centre, Linv,
                    2.0 * (p + 3) * _U64 * float(np.linalg.norm(Linv)), float(np.linalg.norm(centre)),
                    float(np.linalg.norm(Lm)), q[perm], (s_r < l)[perm], Zs, norms)
    _screens.clear()  # the previous metric's screen is not needed again
    _screens[(zkey, token)] = (None if filename is not None else weakref.ref(Z), screen)
    if filename is None:
        weakref.finalize(Z, _screens.pop, (zkey, token), None)  # the copy goes with the design (a fit's Z)
    return screen


def _screened_update(model: HingeModel, theta: np.ndarray, Z: np.ndarray, prev: ActiveSet | None,
                     screen: Screen) -> ActiveSet:
    """``binary_active_update`` with a :class:`Screen` (A in the screen's order): per chain, the margins
    of the band's k rows (a contiguous product over the sorted copy); the rows beyond keep the reference
    activity. The rows whose activity changed from ``prev`` can only lie in the longer of the two
    states' bands, so only that prefix is compared; they are added to Z^T A in the design's row order,
    as ``binary_active_update`` does, so Z^T A does not depend on the screen. Without ``prev`` (or from
    another screen's order) the activity is computed in full once."""
    k = screen.q.searchsorted(screen.threshold(theta), side="right")
    order = screen.order
    if prev is None:
        full = binary_active_update(model, theta, Z, None)
        return ActiveSet(full.A[:, order.perm], full.gzc, k, order)
    prev = prev.in_order(order)
    A, gzc = prev.A.copy(), prev.gzc.copy()
    perm, base, Zs, l = order.perm, screen.base, screen.Zs, model.l
    theta = np.ascontiguousarray(theta)
    n, C, p = Z.shape[0], theta.shape[0], Zs.shape[1]
    # the bands' margins, over blocks of rows that every chain whose band reaches them reads while cached
    # (the bands overlap: each is a prefix of the same sorted copy), as _chain_products does
    single = screen.norms is not None
    th = list(theta.astype(np.float32) if single else theta)
    kl = k.tolist()  # (Python ints: the loop's comparisons and slices without numpy scalars)
    S = [np.empty(kc, dtype=th[0].dtype) for kc in kl]
    block = _BLOCK_ROWS * (8 // Zs.itemsize)  # the same bytes per block for a float32 copy
    for s in range(0, max(kl), block):
        for c in range(C):
            kc = kl[c]
            if kc > s:
                e = s + block if s + block < kc else kc
                np.matmul(Zs[s:e], th[c], out=S[c][s:e])
    if single:  # float32 margins: the activity as float64 margins decide it (_near_kink)
        theta_norm = np.sqrt(np.einsum("cp,cp->c", theta, theta))
        Zm = _margin_design(Z, p)
    # a dozen array operations per chain: at ~1 us each they are half of the cost at 20,000 rows, so the
    # loop avoids numpy's Python-level wrappers (flatnonzero, argsort, where)
    reach = prev.reach.tolist()
    for c in range(C):
        kc = kl[c]
        m = max(kc, int(reach[c]))
        if single:
            new = S[c] < np.float32(l)
            near = _near_kink(S[c], l, theta_norm[c], screen.norms[:kc], p).nonzero()[0]
            if near.size:
                new[near] = Zm[perm[near]] @ theta[c] < l
        else:
            new = S[c] < l
        if m > kc:
            new = np.concatenate((new, base[kc:m]))
        Ac = A[c]
        j = (new != Ac[:m]).nonzero()[0]
        if not j.size:
            continue
        on = new[j]
        Ac[j] = on
        if j.size > n // 8:  # a far jump: the sum in full, as binary_active_update does
            A_row = np.empty(n, dtype=bool)
            A_row[perm] = Ac
            gzc[c] = _chain_sums(A_row[None], Z)[0]
            continue
        rows = perm[j]
        srt = rows.argsort()  # in row order, so the sum does not depend on the screen
        sign = on[srt].astype(float)
        sign += sign - 1.0
        gzc[c] += sign @ Z[rows[srt]]
    return ActiveSet(A, gzc, k, order)


def binary_batch(model: HingeModel, theta: np.ndarray, Zb: np.ndarray, scale: float,
                 cv: ControlVariate | None = None, idx: np.ndarray | None = None):
    """Minibatch estimate (eq. 7) from per-chain rows Zb (C, m, p); with ``cv`` the control-variate
    estimate (Baker et al. 2019): full sums at theta_hat + scale * sum over the batch of differences.
    ``Zb`` may carry ``signed_design``'s column of ones (ignored)."""
    Zb = _margin_design(Zb, theta.shape[1])
    S = np.matmul(Zb, theta[:, :, None])[..., 0]  # (C, m)
    A = S < model.l
    loss = np.where(A, model.l - S, 0.0)
    quad = 0.5 * np.einsum("cp,cp->c", theta, theta)
    if cv is None:
        gz = np.matmul(A.astype(float)[:, None, :], Zb)[:, 0]
        return quad + model.c * scale * loss.sum(axis=1), theta - model.c * scale * gz
    D = A - cv.active[idx]
    gz = np.matmul(D[:, None, :], Zb)[:, 0]
    U = quad + cv.loss_sum + scale * (model.c * loss - cv.loss[idx]).sum(axis=1)
    return U, theta + cv.grad_sum - model.c * scale * gz


def potential_and_grad_cv(model: HingeModel, cv: ControlVariate, theta: np.ndarray, X: np.ndarray,
                          y: np.ndarray, idx: np.ndarray, scale: float):
    """Minibatch estimate with a control variate (Baker et al. 2019, "Control variates for stochastic
    gradient MCMC"): data term = full sum at theta_hat + scale * sum_{d in batch} [term_d(theta) -
    term_d(theta_hat)]. Unbiased like eq. 7; for the hinge the bracket is zero except for points whose
    hinge changed activity between theta_hat and theta, so the noise is far smaller near the posterior."""
    theta = np.atleast_2d(theta)
    loss, G = data_terms(model, theta, X, y)
    U = (0.5 * np.einsum("cp,cp->c", theta, theta) + cv.loss_sum
         + scale * (loss - cv.loss[idx]).sum(axis=1))
    grad = theta + cv.grad_sum + scale * _contract(G - cv.G[idx], X).reshape(theta.shape)
    return U, grad


def potential(model: HingeModel, theta: np.ndarray, X: np.ndarray, y: np.ndarray,
              layout: ChainLayout | None = None) -> np.ndarray:
    """U(theta) on the full data, (C,)."""
    theta = np.atleast_2d(theta)
    loss, _ = data_terms(model, theta, X, y, layout)
    return 0.5 * np.einsum("cp,cp->c", theta, theta) + loss.sum(axis=1)


def normalised_likelihood(model: HingeModel, F: np.ndarray) -> np.ndarray:
    """psi(y | x) / sum_y' psi(y' | x) for every class, (..., m, n_classes).

    Binary: p(+1) = psi(+1) / (psi(+1) + psi(-1)) (the rule of the paper's sec. 5.1.1 data generator).
    Multi-class: a softmax over classes of -c max(0, l + max_{y' != y} f_y' - f_y), which equals the binary
    rule when K = 2 and f = f_1 - f_0."""
    if model.n_classes == 2:
        p1 = normalised_hinge(F[..., 0], c=model.c, l=model.l)  # bsvm.likelihoods (docs/shared.md)
        return np.stack([1.0 - p1, p1], axis=-1)
    K = F.shape[-1]
    logits = np.empty_like(F)
    for k in range(K):  # K is small; each pass is vectorised over chains, samples and points
        others = np.delete(F, k, axis=-1).max(axis=-1)
        logits[..., k] = -model.c * np.maximum(0.0, model.l + others - F[..., k])
    logits -= logits.max(axis=-1, keepdims=True)
    e = np.exp(logits)
    return e / e.sum(axis=-1, keepdims=True)
