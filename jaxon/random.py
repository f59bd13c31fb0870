"""jaxon.random: JAX's functional pseudo-random numbers (re-exports only).

Keys are typed key arrays (`key`, dtype key<fry>) or raw uint32 key data (`PRNGKey`)."""
from jaxon._src.random import (
    PRNGKey as PRNGKey,
    bits as bits,
    clone as clone,
    fold_in as fold_in,
    key as key,
    key_data as key_data,
    key_impl as key_impl,
    split as split,
    wrap_key_data as wrap_key_data,
)
from jaxon._src.random_continuous import (
    bernoulli as bernoulli,
    cauchy as cauchy,
    double_sided_maxwell as double_sided_maxwell,
    exponential as exponential,
    gumbel as gumbel,
    laplace as laplace,
    logistic as logistic,
    lognormal as lognormal,
    maxwell as maxwell,
    multivariate_normal as multivariate_normal,
    normal as normal,
    orthogonal as orthogonal,
    pareto as pareto,
    rademacher as rademacher,
    rayleigh as rayleigh,
    triangular as triangular,
    truncated_normal as truncated_normal,
    uniform as uniform,
    wald as wald,
    weibull_min as weibull_min,
)
from jaxon._src.random_discrete import (
    categorical as categorical,
    choice as choice,
    geometric as geometric,
    permutation as permutation,
    randint as randint,
    shuffle as shuffle,
)
from jaxon._src.random_loops import (
    ball as ball,
    beta as beta,
    binomial as binomial,
    chisquare as chisquare,
    dirichlet as dirichlet,
    f as f,
    gamma as gamma,
    generalized_normal as generalized_normal,
    loggamma as loggamma,
    multinomial as multinomial,
    poisson as poisson,
    random_gamma_p as random_gamma_p,
    t as t,
)
