"""TensorFlow interoperation (`jaxon.experimental.jax2tf`): `convert` runs jaxon functions
in TensorFlow, `call_tf` runs TensorFlow functions in jaxon. These modules import
TensorFlow; nothing else in jaxon imports them."""
