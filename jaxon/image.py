"""jaxon.image: image resampling (re-exports only)."""
from jaxon._src.image import (
    ResizeMethod as ResizeMethod,
    resize as resize,
    scale_and_translate as scale_and_translate,
)
