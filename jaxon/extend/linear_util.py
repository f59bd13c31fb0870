"""jaxon.extend.linear_util: functions wrapped with deferred transformations (re-exports
only)."""
from jaxon._src.linear_util import (
    StoreException as StoreException,
    WrappedFun as WrappedFun,
    cache as cache,
    merge_linear_aux as merge_linear_aux,
    transformation as transformation,
    transformation2 as transformation2,
    transformation_with_aux as transformation_with_aux,
    transformation_with_aux2 as transformation_with_aux2,
    wrap_init as wrap_init,
)
