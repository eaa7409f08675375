"""The methods the dashboard can run: one registry entry each, with option widgets, help and live plots.

An entry names the estimator by module and class. When that import fails the entry is not offered,
but the failure is kept (:func:`import_errors`) and the pages say which method is missing and why:
a broken module never hides a method silently. Options the class does not accept (checked against
``get_params``) are neither shown nor passed, so an entry never breaks on a renamed parameter.

Defaults are the library's: every option starts at the estimator's own default (``get_params()`` of a
fresh instance), so the dashboard runs exactly what ``Estimator().fit(X, y)`` runs. The ``default``
written in an :class:`Option` is used only when the estimator cannot be imported. Quick settings
(``Method.fast``, used by the Compare page's "quick" switch and by tests) are listed next to that switch
(:meth:`Method.fast_note`), so a page that deviates for speed says so.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import cache

import numpy as np


@dataclass(frozen=True)
class Option:
    name: str
    label: str
    kind: str  # "int", "float", "select", "bool"
    default: object
    help: str
    choices: tuple = ()
    min: float | None = None
    max: float | None = None
    #: shown only for data of three or more classes (an option of a sampler that two classes do not use)
    multiclass_only: bool = False

    def parse(self, text: str):
        """Read a value back from the URL query string; None when it does not fit."""
        try:
            if self.kind in ("int", "float"):
                v = int(float(text)) if self.kind == "int" else float(text)
                inside = (self.min is None or v >= self.min) and (self.max is None or v <= self.max)
                return v if inside and np.isfinite(v) else None
            if self.kind == "bool":
                return str(text).lower() in ("1", "true", "yes", "on")
            if self.kind == "select":
                for c in self.choices:
                    if str(c) == str(text):
                        return c
        except (TypeError, ValueError):
            return None
        return None


#: the subgradient samplers' own names (Hu, Zhu & Zhang 2016), by the ``sampler`` option's values
SAMPLER_NAMES = {"hmc": "Subgradient HMC", "sgld": "SGLD", "sgnht": "SGNHT"}


@dataclass(frozen=True)
class Method:
    key: str
    label: str
    module: str
    cls: str
    kind: str  # "variational", "sampler", "baseline"
    summary: str
    good: str  # what "good" looks like on the live plots
    options: tuple = ()
    binary_only: bool = True
    iter_option: str | None = "max_iter"  # the option that caps the run (for the progress bar)
    total: object = None  # or a function options -> total iterations (burn-in + draws x thinning)
    fast: dict = field(default_factory=dict)  # quick settings for the Compare page and tests

    def load(self):
        return _load(self.module, self.cls)

    @property
    def available(self) -> bool:
        return self.load() is not None

    def accepted(self) -> set[str]:
        cls = self.load()
        return set(cls().get_params()) if cls is not None else set()

    @property
    def short_name(self) -> str:
        """The label without its parenthesised description ("PlattSVM (SVC + Platt scaling)" -> "PlattSVM"):
        what lists, tables and messages show."""
        return self.label.split(" (")[0]

    def run_label(self, options: dict | None = None) -> str:
        """The label of a run made with ``options``: the sampler's own name where the method has several
        ("SGNHT (subgradient MCMC)"), else :attr:`label`. "Subgradient MCMC (HMC, SGLD, SGNHT)" on
        Diagnostics, in the overlay's legend and in Compare's table did not say which of the three had
        run (a crawl)."""
        sampler = (options or {}).get("sampler")
        if sampler in SAMPLER_NAMES and any(o.name == "sampler" for o in self.options):
            return f"{SAMPLER_NAMES[sampler]} (subgradient MCMC)"
        return self.label

    def visible_options(self) -> list[Option]:
        ok = self.accepted()
        return [o for o in self.options if o.name in ok]

    def library_defaults(self) -> dict:
        """The estimator's own defaults (``get_params()`` of a fresh instance), for every parameter."""
        cls = self.load()
        return dict(cls().get_params()) if cls is not None else {}

    def defaults(self) -> dict:
        """The options' starting values: the library's defaults (so the dashboard runs what ``fit`` runs)."""
        lib = self.library_defaults()
        out = {o.name: lib.get(o.name, o.default) for o in self.visible_options()}
        # a numeric option whose library default is a rule ("auto") starts as None: an empty number box,
        # labelled "automatic"; make() hands the rule back to the estimator
        return {k: None if isinstance(v, str) and self._numeric(k) else v for k, v in out.items()}

    def _numeric(self, name: str) -> bool:
        return any(o.name == name and o.kind in ("int", "float") for o in self.options)

    def _differences(self, opts: dict) -> list[str]:
        """The options ``opts`` that differ from the library's defaults, in the option boxes' words (the
        Train page's labels): "Max steps 60 (library 2000)". Compared as shown: the page keeps an "auto"
        default as None, which read "automatic (library automatic)" (a review)."""
        lib = self.library_defaults()
        labels = {o.name: o.label for o in self.options}

        def shown(v):
            return "automatic" if v is None or (isinstance(v, str) and v == "auto") else v

        return [f"{labels.get(k, k)} {shown(v)} (library {shown(lib[k])})"
                for k, v in opts.items() if k in lib and shown(lib[k]) != shown(v)]

    def options_note(self, opts: dict) -> str:
        """What the Compare page's metrics CSV says a row was fitted with (it did not, a crawl): the
        options that differ from the library's defaults, or "library defaults"."""
        return ", ".join(self._differences(opts)) or "library defaults"

    def fast_note(self) -> str:
        """What the quick settings change, e.g. "Max steps 60 (library 2000)"; empty when nothing (the
        Compare page said "n_samples 20 (library automatic), n_burnin 100" beside boxes named "Draws per
        chain" and "Burn-in", a crawl)."""
        return ", ".join(self._differences(self.fast))

    @property
    def import_error(self) -> str | None:
        """Why the estimator cannot be imported (None when it can)."""
        self.load()
        return _ERRORS.get((self.module, self.cls))

    def make(self, options: dict | None = None, seed: int | None = 0, fast: bool = False,
             n_classes: int | None = None):
        """An estimator with the given options (unknown names dropped) and random_state = seed. With
        ``n_classes`` = 2 the options a multi-class sampler alone reads (``Option.multiclass_only``, not
        shown for two classes) keep the library's defaults: a value set on three-class data would
        otherwise reach the fit with a warning about an option the page does not show."""
        cls = self.load()
        if cls is None:
            raise ValueError(f"{self.label} is not available in this installation ({self.module}).")
        ok = self.accepted()
        params = {**self.defaults(), **(options or {}), **(self.fast if fast else {})}
        hidden = {o.name for o in self.options if o.multiclass_only} if n_classes == 2 else set()
        params = {k: v for k, v in params.items() if k in ok and k not in hidden}
        lib = self.library_defaults()
        for k, v in params.items():  # an empty box means the library's own rule (e.g. "auto")
            if v is None and isinstance(lib.get(k), str):
                params[k] = lib[k]
        if "random_state" in ok:
            params["random_state"] = seed
        return cls(**params)

    def cap(self, options: dict) -> int | None:
        """Iterations the run will take at most (None when unknown): for the progress bar."""
        opts = {**self.defaults(), **options}
        if self.total is not None:
            try:
                return int(self.total(opts))
            except (KeyError, TypeError, ValueError):
                return None
        if self.iter_option is None or opts.get(self.iter_option) is None:
            return None
        return int(opts[self.iter_option])


_ERRORS: dict[tuple[str, str], str] = {}


@cache
def _load(module: str, cls: str):
    try:
        return getattr(importlib.import_module(module), cls)
    except Exception as exc:  # noqa: BLE001 - a broken module must not break the app: it is reported
        _ERRORS[(module, cls)] = f"{type(exc).__name__}: {exc}"
        return None


def import_errors(load: bool = True) -> dict[str, str]:
    """Methods whose estimator failed to import: label -> the error (shown on the pages, never hidden).
    ``load=False`` reports only the imports already tried (so a page that needs no method imports none)."""
    out = {}
    for m in METHODS.values():
        if load:
            m.load()
        err = _ERRORS.get((m.module, m.cls))
        if err is not None:
            out[m.label] = err
    return out


SEED_HELP = "The seed comes from the Data page, so the same link reproduces the same run."

METHODS: dict[str, Method] = {m.key: m for m in [
    Method(
        "sbsvm", "S-BSVM (stochastic variational)", "bsvm.sbsvm", "SBSVM", "variational",
        "A Bayesian SVM fitted by stochastic variational inference (Wenzel et al. 2017). A small set of "
        "inducing points (black triangles on the map) summarises the data; each step uses a minibatch and "
        "moves q(u) along the natural gradient, and every few steps the kernel's length scale and variance "
        "climb the ELBO (the evidence lower bound: how well the approximate posterior explains the data, "
        "less how far it strays from the prior). The bias variance is the prior variance of a constant "
        "offset added to the latent function, so the boundary need not pass near the origin.",
        "The ELBO rises quickly, then flattens; the length scale settles; the heatmap stops changing and its "
        "white band (p = 0.5) follows the gap between the classes, wider where the data are sparse.",
        (
            Option("variant", "Variant", "select", "svi", "svi: inducing points and minibatches (large n); "
                   "batch: every training point is an inducing point (n <= 4000); linear: a linear SVM.",
                   ("svi", "batch", "linear")),
            Option("kernel", "Kernel", "select", "auto",
                   "auto: rbf, ard and linear fits (up to 1,000 rows also the rbf and linear kernels at "
                   "their starting values, and the base rate) mixed with the weights that predict held-out "
                   "rows best (stacking; one nat charged per learned kernel parameter); rbf: one length "
                   "scale; ard: one per feature; linear: a straight boundary.",
                   ("auto", "rbf", "ard", "linear")),
            Option("n_inducing", "Inducing points", "int", 100, "How many points summarise the data (k-means "
                   "centres). More is more accurate and slower; 20-100 is typical.", min=2, max=1000),
            Option("batch_size", "Minibatch size", "int", 256, "Rows per stochastic step; at least n means "
                   "full-batch steps.", min=1, max=100000),
            Option("max_iter", "Max steps", "int", 2000, "Stop after this many steps (or earlier when the "
                   "ELBO stops changing).", min=1, max=1000000),
            Option("learning_rate", "Step-size schedule", "select", "auto", "auto: 1 for full batches, else "
                   "Robbins-Monro (t + tau)^-kappa; adaptive: Ranganath et al. (2013).",
                   ("auto", "robbins_monro", "adaptive")),
            # (the label "Tune kernel hyperparameters" was cut off in the options column at 1280 px)
            Option("optimize_hyperparameters", "Tune the kernel", "bool", True,
                   "Tune the kernel's hyperparameters: climb the ELBO in its length scale(s) and variance "
                   "every few steps."),
            Option("predictive", "Predictive", "select", "calibrated", "calibrated: Phi(A f + B) with A, B "
                   "fitted to left-out rows; probit: Phi(m / sqrt(1 + v)); hinge: the normalised hinge "
                   "likelihood averaged over q(f). The Calibration page shows which is better calibrated.",
                   ("calibrated", "probit", "hinge")),
            Option("progress_every", "Steps per record", "int", 10, "Steps between progress records (points "
                   "on the live curves).", min=1, max=1000),
            Option("tol", "Tolerance", "float", 1e-5, "Stop when the last few ELBO evaluations improve on "
                   "the best before them by at most tol x |ELBO| (stochastic steps make the ELBO jitter).",
                   min=0.0, max=1.0),
            Option("patience", "Patience", "int", 5, "How many ELBO evaluations without improvement end "
                   "the run.", min=1, max=10**9),
        ),
        fast={"max_iter": 60, "n_inducing": 20},
    ),
    Method(
        "platt", "PlattSVM (SVC + Platt scaling)", "bsvm.platt", "PlattSVM", "baseline",
        "The frequentist baseline: a standard RBF support vector machine whose scores are squashed into "
        "probabilities by a sigmoid fitted on cross-validated scores (Platt scaling). It fits in one go, "
        "so there is no learning curve; the black rings mark the support vectors.",
        "Its p(y|x) is a fixed sigmoid of the SVM's score, with no uncertainty about the boundary itself: "
        "where the score is clear (far along a trend) it is confident whatever the data left open, and "
        "where the RBF score fades (far from every training point) it tends to a constant set by the SVM's "
        "intercept, neither 0.5 nor in general the base rate. Compare its maps with a Bayesian method's on "
        "the Calibration page.",
        (
            Option("C", "C (cost)", "float", 1.0, "Penalty on margin violations: larger fits the training "
                   "data more tightly.", min=1e-4, max=1e4),
            Option("gamma", "gamma", "select", "scale", "RBF width: 'scale' = 1 / (d * var(X)).",
                   ("scale", "auto")),
            Option("cv", "Folds for the sigmoid", "int", 5, "Internal cross-validation folds used to fit the "
                   "sigmoid.", min=2, max=20),
        ),
        binary_only=False, iter_option=None,
    ),
    Method(
        "msbpm", "MS-BPM (Bayes point machine sampler)", "bsvm.msbpm", "MSBPM", "sampler",
        "The multi-class soft-margin Bayes point machine (Vogt & Ostermann): a population of chains samples "
        "kernel expansions. With more than two classes it moves them exactly along lines (the paper's "
        "sampler: no step size, no rejection); with two, by default, by a Metropolis-corrected HMC move "
        "(our addition, about 100x fewer sweeps per effective draw), whose acceptance rate and step size "
        "the statistics chart shows. The prediction is the fraction of sampled classifiers voting for "
        "each class, so p = 0.5 means the sampled boundaries disagree.",
        "The log posterior of every chain rises during burn-in, then fluctuates around one level; on "
        "Diagnostics the chains' traces overlap and R-hat is at most 1.01.",
        (
            Option("n_chains", "Chains", "int", 16, "Size of the chain population; automatic: 4 for the "
                   "two-class HMC move, 16 for the line moves (ADS moves one chain along the difference of "
                   "two others; at least 4).", min=4, max=1000),
            Option("n_samples", "Draws per chain", "int", 100, "Draws kept per chain after burn-in.", min=1,
                   max=100000),
            Option("burn_in", "Burn-in sweeps", "int", 300, "Sweeps discarded before keeping draws.", min=0,
                   max=100000),
            Option("thin", "Thinning", "int", 8, "Keep every thin-th sweep after burn-in.", min=1, max=1000),
            Option("direction", "Directions", "select", "ads", "ads: adaptive direction sampling (with some "
                   "hit-and-run); hit_and_run: random directions; gibbs: one coordinate at a time. Line "
                   "moves only: with three or more classes (two classes are sampled by an HMC move, "
                   "where this option changes nothing).",
                   ("ads", "hit_and_run", "gibbs"), multiclass_only=True),
            Option("block_update", "Block step", "bool", True, "After each sweep of line moves, draw all "
                   "feature-space coordinates at once given the latent scores (exact; needs a nugget). "
                   "Switch it off to watch the paper's line moves alone mix slowly: R-hat stays far above "
                   "1 on Diagnostics. Line moves only: with three or more classes (two classes are "
                   "sampled by an HMC move, where this option changes nothing).", multiclass_only=True),
            Option("nugget", "Nugget", "float", 0.3, "Soft-margin kernel K + nugget I (Herbrich et al.), "
                   "relative to the kernel's variance. It makes the votes smooth probabilities instead of "
                   "0/1; 0 gives the noise-free feature-space prior.", min=0.0, max=10.0),
            Option("nu", "nu (soft margin)", "float", 1.0, "alpha_cc = 1 + N / nu: small nu approaches the "
                   "hard-margin Bayes point machine.", min=1e-3, max=1e3),
        ),
        binary_only=False, total=lambda o: o["burn_in"] + o["n_samples"] * o["thin"],
        fast={"n_chains": 8, "n_samples": 20, "burn_in": 60, "thin": 2},
    ),
    Method(
        # (short name "Subgradient MCMC": "Subgradient HMC / SGLD / SGNHT" was cut in the list at 1280 px)
        "subgradient_hmc", "Subgradient MCMC (HMC, SGLD, SGNHT)", "bsvm.subgradient", "SubgradientHMC",
        "sampler",
        "Samples the Bayesian SVM posterior (Hu, Zhu & Zhang 2016): a normal prior on the weights times "
        "exp(-c max(0, l - y f(x))) per point, explored by subgradient Hamiltonian Monte Carlo or its "
        "stochastic-gradient relatives. With features = None the boundary is a straight line; Nystroem or "
        "random Fourier features make it curved.",
        "Acceptance near the target (HMC) or a settled step size and thermostat (SGNHT); per-chain traces "
        "overlapping; on Diagnostics its draws match the exact GibbsSVM's.",
        (
            Option("sampler", "Sampler", "select", "hmc", "hmc: full batch with Metropolis-Hastings; sgld / "
                   "sgnht: minibatch samplers (Langevin dynamics with a fixed step size / with a "
                   "thermostat); their step size is chosen from the minibatch noise before the run.",
                   ("hmc", "sgld", "sgnht")),
            Option("features", "Features", "select", None, "None: the raw inputs (a linear SVM); nystroem / "
                   "rff: RBF kernel features for curved boundaries.", (None, "nystroem", "rff")),
            Option("n_chains", "Chains", "int", 4, "Independent chains from dispersed starts.",
                   min=1, max=64),
            Option("n_samples", "Draws per chain", "int", 500, "Kept draws per chain.", min=10, max=100000),
            Option("n_burnin", "Burn-in", "int", 500, "Discarded iterations (step-size adaptation happens "
                   "here).", min=0, max=100000),
            Option("c", "c (cost)", "float", 1.0, "Scale of the hinge pseudo-likelihood (c -> 0: the prior).",
                   min=1e-4, max=1e3),
        ),
        binary_only=False, total=lambda o: o["n_burnin"] + o["n_samples"] * o.get("thin", 1),
        fast={"n_samples": 100, "n_burnin": 100, "n_chains": 2},
    ),
    Method(
        "gibbs", "GibbsSVM (exact Gibbs sampler)", "bsvm.subgradient", "GibbsSVM", "sampler",
        "The exact data-augmentation Gibbs sampler of Polson & Scott for the Bayesian SVM: slower per draw "
        "but exact, so it is the reference the approximate samplers are checked against.",
        "Traces without trends, R-hat at most 1.01, at least 400 effective draws over all chains.",
        (
            Option("features", "Features", "select", None, "None: the raw inputs (a linear SVM); nystroem / "
                   "rff: RBF kernel features.", (None, "nystroem", "rff")),
            Option("n_chains", "Chains", "int", 4, "Independent chains.", min=1, max=64),
            Option("n_samples", "Draws per chain", "int", 500, "Kept draws per chain.", min=10, max=100000),
            Option("n_burnin", "Burn-in", "int", 100, "Discarded iterations.", min=0, max=100000),
            Option("c", "c (cost)", "float", 1.0, "Scale of the hinge pseudo-likelihood.", min=1e-4, max=1e3),
        ),
        total=lambda o: o["n_burnin"] + o["n_samples"] * o.get("thin", 1),
        fast={"n_samples": 100, "n_burnin": 50, "n_chains": 2},
    ),
    Method(
        "seeger", "Seeger ARD (variational model selection)", "bsvm.seeger", "SeegerARD", "variational",
        "Seeger's (2000) variational Bayesian SVM: a Gaussian posterior over the latent function and, in an "
        "outer loop, the ARD kernel's per-feature weights chosen to lower the free energy F. Irrelevant "
        "features get weights near zero.",
        "F falls and flattens; the ARD weights of useless features shrink towards zero.",
        (
            Option("loss", "Loss", "select", "svc", "svc: the normalised SVC loss ('Var. SVM'); logistic: GP "
                   "classification ('Var. GP').", ("svc", "logistic")),
            Option("n_factors", "Covariance factors", "int", 3, "Rank of the factor-analysed covariance.",
                   min=0, max=50),
            Option("max_iter", "Outer steps", "int", 50, "Quasi-Newton steps over the kernel parameters.",
                   min=1, max=10000),
            Option("predict_with", "Predict with", "select", "mean", "mean: the GP predictive under q; mode: "
                   "an SVM trained with the adapted kernel.", ("mean", "mode")),
        ),
        fast={"max_iter": 5},
    ),
]}


def run_method_name(meta: dict, fallback: str = "another method") -> str:
    """The short name of the method that made a run, from the run's meta (its ``method`` key and options:
    :meth:`Method.run_label`; else its label without the description, else ``fallback``)."""
    m = METHODS.get(meta.get("method"))
    label = m.run_label(meta.get("options")) if m is not None else str(meta.get("label", fallback))
    return label.split(" (")[0]


def available_methods(binary: bool = True) -> list[Method]:
    """Entries whose import works and that handle the current number of classes."""
    return [m for m in METHODS.values() if m.available and (binary or not m.binary_only)]
