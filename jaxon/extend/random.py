"""jaxon.extend.random: PRNG implementations (re-exports only)."""
from jaxon._src.extend import (
    seed_with_impl as seed_with_impl,
)
from jaxon._src.prng import (
    threefry2x32_p as threefry2x32_p,
    threefry_2x32 as threefry_2x32,
)
from jaxon._src.prng_keys import (
    random_seed as random_seed,
    threefry_prng_impl as threefry_prng_impl,
)
