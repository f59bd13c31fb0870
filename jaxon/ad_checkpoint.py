"""jaxon.ad_checkpoint: rematerialization (`checkpoint`), its policies and names."""
from jaxon._src.lax.control_flow.remat import (
    checkpoint as checkpoint,
    checkpoint_name as checkpoint_name,
    checkpoint_policies as checkpoint_policies,
    remat as remat,
)
from jaxon._src.remat_decisions import (
    Offloadable as Offloadable,
    Recompute as Recompute,
    Saveable as Saveable,
)
from jaxon._src.saved_residuals import print_saved_residuals as print_saved_residuals
