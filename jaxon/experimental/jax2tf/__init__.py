"""Interoperation with TensorFlow, as `jax.experimental.jax2tf`: `convert` a jaxon function
into a TensorFlow one (for TF programs and SavedModels), `call_tf` a TensorFlow function
from jaxon. Importing this module imports TensorFlow (`pip install jaxon[tf]`)."""
from jaxon._src.jax2tf.convert import (
    convert as convert,
    dtype_of_val as dtype_of_val,
)
from jaxon._src.jax2tf.call_tf import call_tf as call_tf
