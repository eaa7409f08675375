"""NumPyro NUTS on the Bayesian SVM posterior, set up as ../shared/PEERS.md says.

Weights w (raw features, then the bias) with prior N(0, I) and potential
0.5 |w|^2 + c sum_i max(0, l - y_i w.x_i) written as a ``potential_fn``; NUTS defaults (target
acceptance 0.8, diagonal mass matrix adapted, maximum tree depth 10), ``num_warmup`` + ``num_samples``
per chain, chains run one after another from w = 0, float64, JAX on CPU.

Compile time is reported apart, and measured exactly: NumPyro's own kernel (``numpyro.infer.hmc.hmc``
with ``algo="NUTS"``, the functions the ``NUTS`` class wraps, with the same defaults) is compiled ahead of
time (``jax.jit(...).lower(...).compile()``) once, as one program for a chain's initialisation and one
for its whole warm-up + sampling loop (``lax.scan``), and the compiled programs then run each chain.
(The ``MCMC`` driver re-traces and recompiles its loop on every ``run`` call, ~15 s per call here, so a
"first short run" does not take the compile out of the timed run: an earlier version of this file timed
a recompile plus 5 + 5 iterations that way.)

:class:`NutsCache` keeps results in a JSON file (``--nuts-cache`` of ``python -m benchmarks subgradient``),
keyed by the data's hash and the settings, so development runs do not repeat the slow 100k x 50 runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import time

import numpy as np


def available() -> bool:
    try:
        import jax  # noqa: F401
        import numpyro  # noqa: F401
    except ImportError:
        return False
    return True


def run_nuts(X, y01, c=1.0, l=1.0, num_warmup=1000, num_samples=1000, num_chains=4, seed=0):
    """Returns dict(draws (chains, samples, d + 1), cpu_s (every chain's warm-up + sampling, compile
    excluded), compile_s, n_grad (leapfrog steps = gradient evaluations, warm-up + sampling, all
    chains), accept (mean acceptance statistic of the kept draws))."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax import lax
    from numpyro.infer.hmc import hmc

    Z = jnp.asarray(np.where(y01 == 1, 1.0, -1.0)[:, None] * np.column_stack([X, np.ones(len(X))]))

    def potential_fn(w):
        return 0.5 * jnp.dot(w, w) + c * jnp.sum(jnp.maximum(0.0, l - Z @ w))

    init_kernel, sample_kernel = hmc(potential_fn=potential_fn, algo="NUTS")

    def init_chain(w0, key):  # the NUTS class's defaults (step_size=1, diagonal mass, target 0.8, ...)
        return init_kernel(w0, num_warmup, rng_key=key)

    def run_chain(state):
        def body(s, _):
            s = sample_kernel(s)
            return s, (s.z, s.num_steps, s.accept_prob)

        _, out = lax.scan(body, state, None, length=num_warmup + num_samples)
        return out

    w0 = jnp.zeros(Z.shape[1])
    keys = jax.random.split(jax.random.PRNGKey(seed), num_chains)
    t0 = time.process_time()
    init_c = jax.jit(init_chain).lower(w0, keys[0]).compile()
    state0 = init_c(w0, keys[0])
    run_c = jax.jit(run_chain).lower(state0).compile()
    compile_s = time.process_time() - t0
    draws, n_grad, acc = [], 0, []
    t0 = time.process_time()
    for k in range(num_chains):
        z, steps, a = run_c(init_c(w0, keys[k]))
        z = np.asarray(z)  # blocks until the chain is done
        draws.append(z[num_warmup:])
        n_grad += int(np.asarray(steps).sum())
        acc.append(float(np.asarray(a)[num_warmup:].mean()))
    cpu = time.process_time() - t0
    return {"draws": np.stack(draws), "cpu_s": cpu, "compile_s": compile_s, "n_grad": n_grad,
            "accept": float(np.mean(acc))}


class NutsCache:
    """NUTS results in a JSON file (None: no file, every call runs NUTS), keyed by a hash of the data and
    the settings. Stores the per-parameter bulk ESS and max R-hat, not the draws."""

    def __init__(self, path: str | None):
        self.path = path
        self.data = {}
        if path and os.path.exists(path):
            with open(path) as f:
                self.data = json.load(f)

    @staticmethod
    def key(X, y, **settings) -> str:
        h = hashlib.sha1(np.ascontiguousarray(X, dtype=float).tobytes())
        h.update(np.ascontiguousarray(y).tobytes())
        return h.hexdigest()[:16] + "|" + ",".join(f"{k}={settings[k]}" for k in sorted(settings))

    def get(self, X, y, summarise, **settings) -> dict:
        """``summarise(result) -> dict`` of JSON numbers; runs NUTS only when the key is missing."""
        k = self.key(X, y, **settings)
        if k in self.data:
            return dict(self.data[k], cached=True)
        out = summarise(run_nuts(X, y, **settings))
        self.data[k] = out
        if self.path:
            with open(self.path, "w") as f:
                json.dump(self.data, f, indent=1)
        return dict(out, cached=False)
