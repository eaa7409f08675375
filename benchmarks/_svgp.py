"""GPyTorch's SVGP classifier, set up as ../shared/PEERS.md says (the peer of ``SBSVM``).

``ApproximateGP`` with ``CholeskyVariationalDistribution(m)`` and ``VariationalStrategy`` with learned
inducing locations (m = 200, started at a random subset of the training rows), ``ConstantMean``,
``ScaleKernel(RBFKernel())``, ``BernoulliLikelihood`` (probit), ``VariationalELBO(num_data=n)``, Adam with
lr 0.01 over model and likelihood, minibatches of 256 rows, 1000 steps; predictions are the likelihood's
mean under ``fast_pred_var()``. Nothing is tuned per data set.

Import is lazy: ``svgp_available()`` says whether gpytorch is installed, so a benchmark can print
"peer not installed" and go on.
"""

from __future__ import annotations

import importlib.util
import time

import numpy as np


def svgp_available() -> bool:
    return importlib.util.find_spec("gpytorch") is not None and importlib.util.find_spec("torch") is not None


def fit_predict_svgp(Xtr, ytr, Xte, n_inducing=200, steps=1000, batch_size=256, lr=0.01, seed=0):
    """Fit the SVGP on (Xtr, ytr in {0, 1}) and return (fit CPU seconds, p(y=1) on Xte).

    CPU seconds are ``time.process_time`` with one torch thread (the caller limits BLAS threads)."""
    import gpytorch
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    Xt = torch.as_tensor(np.asarray(Xtr, dtype=np.float32))
    yt = torch.as_tensor(np.asarray(ytr, dtype=np.float32))
    n = Xt.shape[0]
    init = Xt[torch.as_tensor(rng.choice(n, min(n_inducing, n), replace=False))].clone()

    class SVGP(gpytorch.models.ApproximateGP):
        def __init__(self, inducing):
            dist = gpytorch.variational.CholeskyVariationalDistribution(inducing.shape[0])
            strat = gpytorch.variational.VariationalStrategy(self, inducing, dist,
                                                             learn_inducing_locations=True)
            super().__init__(strat)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    t0 = time.process_time()
    model = SVGP(init)
    lik = gpytorch.likelihoods.BernoulliLikelihood()
    model.train()
    lik.train()
    opt = torch.optim.Adam([*model.parameters(), *lik.parameters()], lr=lr)
    mll = gpytorch.mlls.VariationalELBO(lik, model, num_data=n)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        idx = torch.randint(0, n, (min(batch_size, n),), generator=gen)
        opt.zero_grad()
        loss = -mll(model(Xt[idx]), yt[idx])
        loss.backward()
        opt.step()
    fit_cpu = time.process_time() - t0
    model.eval()
    lik.eval()
    Xe = torch.as_tensor(np.asarray(Xte, dtype=np.float32))
    out = []
    with torch.no_grad(), gpytorch.settings.fast_pred_var():
        for start in range(0, Xe.shape[0], 2048):
            out.append(lik(model(Xe[start:start + 2048])).mean.numpy())
    return fit_cpu, np.concatenate(out).astype(float)
