"""jaxon.experimental.jet: Taylor-mode automatic differentiation (re-exports only).

Besides `jet`, JAX's module exposes its trace, its rule table and the helpers that define
rules, and a few pytree and sequence utilities it imports."""
from jaxon._src.jet import (
    JetTrace as JetTrace,
    JetTracer as JetTracer,
    ZeroSeries as ZeroSeries,
    ZeroTerm as ZeroTerm,
    def_comp as def_comp,
    def_deriv as def_deriv,
    deflinear as deflinear,
    defzero as defzero,
    deriv_prop as deriv_prop,
    fact as fact,
    jet as jet,
    jet2 as jet2,
    jet_fun as jet_fun,
    jet_rules as jet_rules,
    jet_subtrace as jet_subtrace,
    linear_prop as linear_prop,
    traceable as traceable,
    zero_prop as zero_prop,
    zero_series as zero_series,
    zero_term as zero_term,
)
from jaxon._src.tree_util import (
    register_pytree_node as register_pytree_node,
    tree_flatten as tree_flatten,
    tree_structure as tree_structure,
    tree_unflatten as tree_unflatten,
    treedef_is_leaf as treedef_is_leaf,
)
from jaxon._src.util import safe_zip as safe_zip, unzip2 as unzip2
