"""Testing helpers for users of jaxon: gradient checks against finite differences."""
from jaxon._src.public_test_util import (
    check_grads as check_grads,
    check_jvp as check_jvp,
    check_vjp as check_vjp,
    numerical_jvp as numerical_jvp,
)
