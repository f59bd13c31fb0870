"""jaxon.scipy.special: SciPy's special functions (re-exports only)."""
from jaxon._src.scipy.special import (
    beta as beta,
    betainc as betainc,
    betaln as betaln,
    boxcox as boxcox,
    boxcox1p as boxcox1p,
    comb as comb,
    digamma as digamma,
    entr as entr,
    erf as erf,
    erfc as erfc,
    erfinv as erfinv,
    expit as expit,
    factorial as factorial,
    gamma as gamma,
    gammainc as gammainc,
    gammaincc as gammaincc,
    gammaln as gammaln,
    gammasgn as gammasgn,
    i0 as i0,
    i0e as i0e,
    i1 as i1,
    i1e as i1e,
    kl_div as kl_div,
    log_ndtr as log_ndtr,
    log_softmax as log_softmax,
    loggamma as loggamma,
    logit as logit,
    logsumexp as logsumexp,
    multigammaln as multigammaln,
    ndtr as ndtr,
    ndtri as ndtri,
    poch as poch,
    polygamma as polygamma,
    rel_entr as rel_entr,
    softmax as softmax,
    xlog1py as xlog1py,
    xlogy as xlogy,
    zeta as zeta,
)
from jaxon._src.scipy.special_error import (
    dawsn as dawsn,
    erfcx as erfcx,
    owens_t as owens_t,
    wofz as wofz,
)
from jaxon._src.scipy.special_expint import (
    exp1 as exp1,
    expi as expi,
    expn as expn,
    sici as sici,
    spence as spence,
)
from jaxon._src.scipy.special_fresnel import fresnel as fresnel
from jaxon._src.scipy.special_hypergeometric import (
    bernoulli as bernoulli,
    hyp1f1 as hyp1f1,
    hyp2f1 as hyp2f1,
)
from jaxon._src.scipy.special_orthogonal import (
    bessel_jn as bessel_jn,
    sph_harm_y as sph_harm_y,
)
