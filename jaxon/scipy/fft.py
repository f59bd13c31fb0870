"""jaxon.scipy.fft: discrete cosine transforms (re-exports only)."""
from jaxon._src.scipy.fft import (
    dct as dct,
    dctn as dctn,
    idct as idct,
    idctn as idctn,
)
