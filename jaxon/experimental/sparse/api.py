"""jaxon.experimental.sparse.api: format-independent constructors and `todense`."""
from jaxon._src.sparse.api import (empty as empty, eye as eye, todense as todense,
                                   todense_p as todense_p)
