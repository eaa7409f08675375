"""NumPyro NUTS on the Bayesian SVM posterior, set up as ../shared/PEERS.md says.

Weights w (raw features, then the bias) with prior N(0, I) and potential
0.5 |w|^2 + c sum_i max(0, l - y_i w.x_i) written as a ``potential_fn``; NUTS defaults (target
acceptance 0.8, diagonal mass matrix adapted), ``num_warmup`` + ``num_samples`` per chain, chains run one
after another, float64, JAX on CPU. Compile time (a first short run) is reported apart.
"""

from __future__ import annotations

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
    """Returns dict(draws (chains, samples, d + 1), cpu_s (warm-up + sampling, compile excluded),
    compile_s)."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from numpyro.infer import MCMC, NUTS

    Z = jnp.asarray(np.where(y01 == 1, 1.0, -1.0)[:, None] * np.column_stack([X, np.ones(len(X))]))

    def potential_fn(w):
        return 0.5 * jnp.dot(w, w) + c * jnp.sum(jnp.maximum(0.0, l - Z @ w))

    init = jnp.zeros(Z.shape[1])

    mcmc = MCMC(NUTS(potential_fn=potential_fn), num_warmup=5, num_samples=5, num_chains=num_chains,
                chain_method="sequential", progress_bar=False)
    inits = jnp.tile(init, (num_chains, 1))
    t0 = time.process_time()
    mcmc.run(jax.random.PRNGKey(seed), init_params=inits)  # compiles the kernel (timed apart)
    compile_s = time.process_time() - t0
    # the same MCMC object keeps its compiled kernel; only the loop lengths change
    mcmc.num_warmup, mcmc.num_samples = num_warmup, num_samples
    t0 = time.process_time()
    mcmc.run(jax.random.PRNGKey(seed + 1), init_params=inits)
    draws = np.asarray(mcmc.get_samples(group_by_chain=True))
    cpu = time.process_time() - t0
    return {"draws": draws, "cpu_s": cpu, "compile_s": compile_s}
