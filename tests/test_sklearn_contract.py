"""scikit-learn's estimator checks on every bsvm estimator (fast settings).

Expected failures are listed per estimator with the reason."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from bsvm import MSBPM, SBSVM, GibbsSVM, PlattSVM, SeegerARD, SubgradientHMC

ESTIMATORS = [
    PlattSVM(random_state=0),
    SBSVM(n_inducing=20, max_iter=60, random_state=0),
    SBSVM(variant="linear", max_iter=60, random_state=0),
    MSBPM(n_chains=8, burn_in=5, n_samples=5, thin=1, random_state=0),
    SubgradientHMC(sampler="sgld", n_samples=20, n_burnin=20, n_chains=2, record_every=1000, random_state=0),
    SubgradientHMC(sampler="hmc", n_samples=20, n_burnin=20, n_chains=2, n_leapfrog=3, record_every=1000,
                   random_state=0),
    GibbsSVM(n_samples=20, n_burnin=5, n_chains=2, record_every=1000, random_state=0),
    SeegerARD(max_iter=5),  # (deterministic: no random_state)
]

EXPECTED_FAILURES = {
    "SBSVM": {
        "check_decision_proba_consistency": (
            "decision_function is the latent predictive mean, while predict_proba also uses the latent "
            "variance (Phi(m / sqrt(1 + v))), so their rankings differ where the uncertainty does: by design"
        ),
    },
}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILURES.get(type(estimator).__name__, {})


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)
