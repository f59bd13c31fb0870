"""jaxon: composable transformations of Python+NumPy programs (grad, jit, vmap, …), traced
into jaxprs and compiled with XLA. Its API is JAX's: port a program by changing the import."""
import os as _os

_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # keep jaxlib's INFO lines off stderr

from jaxon._src.config import (  # noqa: E402
    check_tracer_leaks as check_tracer_leaks,
    checking_leaks as checking_leaks,
    config as config,
    debug_infs as debug_infs,
    debug_nans as debug_nans,
    default_matmul_precision as default_matmul_precision,
    default_prng_impl as default_prng_impl,
    disable_jit as disable_jit,
    enable_checks as enable_checks,
    explain_cache_misses as explain_cache_misses,
    log_compiles as log_compiles,
    numpy_dtype_promotion as numpy_dtype_promotion,
    numpy_rank_promotion as numpy_rank_promotion,
    threefry_partitionable as threefry_partitionable,
)
from jaxon._src.dtypes import float0 as float0
from jaxon._src.mesh import make_mesh as make_mesh
from jaxon._src.xla.array import Array as Array
from jaxon._src.xla.client import Device as Device
from jaxon._src.devices import (
    block_until_ready as block_until_ready,
    default_backend as default_backend,
    device_count as device_count,
    device_get as device_get,
    device_put as device_put,
    devices as devices,
    host_count as host_count,
    host_id as host_id,
    host_ids as host_ids,
    local_device_count as local_device_count,
    local_devices as local_devices,
    process_count as process_count,
    process_index as process_index,
    process_indices as process_indices,
)
from jaxon._src.api import (
    ShapeDtypeStruct as ShapeDtypeStruct,
    clear_caches as clear_caches,
    eval_shape as eval_shape,
    grad as grad,
    hessian as hessian,
    jacfwd as jacfwd,
    jacrev as jacrev,
    jacobian as jacobian,
    jit as jit,
    jvp as jvp,
    linear_transpose as linear_transpose,
    linearize as linearize,
    make_jaxpr as make_jaxpr,
    typeof as typeof,
    value_and_grad as value_and_grad,
    vjp as vjp,
    vmap as vmap,
)
from jaxon._src.lax.custom_derivatives import (
    closure_convert as closure_convert,
    custom_gradient as custom_gradient,
    custom_jvp as custom_jvp,
    custom_vjp as custom_vjp,
)
from jaxon._src.lax.control_flow.remat import (
    checkpoint as checkpoint,
    checkpoint_policies as checkpoint_policies,
    remat as remat,
)
from jaxon._src.named_scope import named_call as named_call, named_scope as named_scope
from jaxon._src.callback import (
    effects_barrier as effects_barrier,
    pure_callback as pure_callback,
)
from jaxon._src.tree_util import (
    tree_flatten as tree_flatten,
    tree_leaves as tree_leaves,
    tree_map as tree_map,
    tree_structure as tree_structure,
    tree_unflatten as tree_unflatten,
)
from jaxon._src.errors import (
    ConcretizationTypeError as ConcretizationTypeError,
    TracerBoolConversionError as TracerBoolConversionError,
    UnexpectedTracerError as UnexpectedTracerError,
)
from jaxon import numpy as numpy
from jaxon import lax as lax
from jaxon import tree_util as tree_util
from jaxon import tree as tree
from jaxon import core as core
from jaxon import dtypes as dtypes
from jaxon import ops as ops
from jaxon import errors as errors
from jaxon import test_util as test_util
from jaxon import scipy as scipy
from jaxon import nn as nn
from jaxon import random as random
from jaxon import image as image
from jaxon import ad_checkpoint as ad_checkpoint
from jaxon import custom_derivatives as custom_derivatives
from jaxon import custom_batching as custom_batching
from jaxon import debug as debug
from jaxon import typing as typing
from jaxon import stages as stages
from jaxon import sharding as sharding
from jaxon._src.sharding_impls import NamedSharding as NamedSharding
from jaxon._src.sharding_impls import PartitionSpec as P  # noqa: F401 (JAX exports jax.P)
from jaxon import dlpack as dlpack
from jaxon import monitoring as monitoring
from jaxon import profiler as profiler
from jaxon import distributed as distributed
from jaxon import ffi as ffi
from jaxon import api_util as api_util
from jaxon import extend as extend
from jaxon._src.extend_core import ensure_compile_time_eval as ensure_compile_time_eval
from jaxon._src.config import enable_x64 as enable_x64
from jaxon._src.config_guards import (
    allow_f16_reductions as allow_f16_reductions,
    array_garbage_collection_guard as array_garbage_collection_guard,
    auto_pcast as auto_pcast,
    debug_key_reuse as debug_key_reuse,
    default_device as default_device,
    enable_custom_prng as enable_custom_prng,
    jax2tf_associative_scan_reductions as jax2tf_associative_scan_reductions,
    legacy_prng_key as legacy_prng_key,
    no_execution as no_execution,
    no_tracing as no_tracing,
    remove_size_one_mesh_axis_from_type as remove_size_one_mesh_axis_from_type,
    softmax_custom_jvp as softmax_custom_jvp,
    thread_guard as thread_guard,
    transfer_guard as transfer_guard,
    transfer_guard_device_to_device as transfer_guard_device_to_device,
    transfer_guard_device_to_host as transfer_guard_device_to_host,
    transfer_guard_host_to_device as transfer_guard_host_to_device,
)
from jaxon._src.api_extras import (
    copy_to_host_async as copy_to_host_async,
    fwd_and_bwd as fwd_and_bwd,
    live_arrays as live_arrays,
    make_user_context as make_user_context,
    print_environment_info as print_environment_info,
)
from jaxon._src.explicit_sharding import (
    reshard as reshard,
    set_mesh as set_mesh,
    smap as smap,
)
from jaxon._src.xla.array import Shard as Shard
from jaxon import lib as lib
from jaxon import memory as memory
from jaxon import version as version
from jaxon._src.array_creation import (
    make_array_from_callback as make_array_from_callback,
    make_array_from_process_local_data as make_array_from_process_local_data,
    make_array_from_single_device_arrays as make_array_from_single_device_arrays,
)
from jaxon._src import leak_checker as _leak_checker  # noqa: F401  (its flag's hooks)
from jaxon._src.install import install_as_jax as install_as_jax
from jaxon._src.pmap import pmap as pmap
from jaxon._src.shard_map import shard_map as shard_map
from jaxon import ref as ref
from jaxon.ref import (Ref as Ref, empty_ref as empty_ref, free_ref as free_ref,
                       freeze as freeze, new_ref as new_ref)
from jaxon._src.state.types import ds as ds

from jaxon.version import __version__ as __version__  # noqa: E402

# Read by libraries as `jax._src.xla_bridge._backends` without importing it (chex).
import jaxon._src.xla_bridge  # noqa: E402, F401
