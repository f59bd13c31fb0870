"""`jaxon.debug.visualize_array_sharding` and `inspect_array_sharding`: which device holds
which block of an array, drawn as JAX 0.10.2 draws it.

JAX draws the picture with `rich` (a table of padded, centered labels). jaxon draws the
same table itself, so the picture needs no extra package: in a pipe or a captured stream
(where rich uses no colour) the text is character for character JAX's, including how
rich shrinks and wraps cells that do not fit in `max_width`; in a colour terminal each
block is a coloured rectangle (24-bit ANSI colours from `color_map`, matplotlib's
`tab20b` by default, as JAX picks them) instead of a boxed one.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxon._src import core, tree_util

ColorMap = Callable[[float], tuple[float, float, float, float]]

_HEIGHT_TO_WIDTH = 2.5  # terminal cells are about this much taller than wide


class _Cell:
  """One block of the picture: its label and the padding around it (rich's `Padding`)."""

  __slots__ = ("label", "top", "right", "bottom", "left", "color")

  def __init__(self, label: str, top: int, right: int, bottom: int, left: int,
               color: tuple[int, int, int] | None):
    self.label, self.color = label, color
    self.top, self.right, self.bottom, self.left = top, right, bottom, left

  @property
  def extra(self) -> int:
    return self.left + self.right

  def natural_width(self, available: int) -> int:
    """The width the cell asks for when the table may be `available` wide."""
    if available - self.extra < 1:
      return available
    return min(len(self.label) + self.extra, available)

  def lines(self, width: int) -> list[str]:
    """The cell's text lines at column width `width`: the label wrapped into what the
    padding leaves and centered there, the padding blank."""
    inner = width - self.extra
    body = [" " * self.left + _center(line, inner) + " " * self.right
            for line in _wrap(self.label, inner)]
    blank = " " * width
    return [blank] * self.top + [line[:width].ljust(width) for line in body] + \
        [blank] * self.bottom


def _wrap(text: str, width: int) -> list[str]:
  """Words of `text` greedily on lines of at most `width`; a longer word is cut with an
  ellipsis (rich's wrapping with `overflow="ellipsis"`). No room, no lines."""
  if width <= 0:
    return []
  lines: list[str] = []
  for word in text.split(" "):
    if len(word) > width:
      word = word[:width - 1] + "…"
    if lines and len(lines[-1]) + 1 + len(word) <= width:
      lines[-1] += " " + word
    else:
      lines.append(word)
  return lines


def _center(line: str, width: int) -> str:
  if width <= 0:
    return ""
  left = (width - len(line)) // 2
  return (" " * left + line).ljust(width)


def _reduce(total: int, ratios: Sequence[int], maximums: Sequence[int],
            values: Sequence[int]) -> list[int]:
  """`values` less `total` in all, shared by `ratios` and each at most its `maximum`
  (rich's `ratio_reduce`, which columns of a table too wide are shrunk by)."""
  ratios = [r if m else 0 for r, m in zip(ratios, maximums)]
  total_ratio = sum(ratios)
  if not total_ratio:
    return list(values)
  remaining, out = total, []
  for ratio, maximum, value in zip(ratios, maximums, values):
    if ratio and total_ratio > 0:
      cut = min(maximum, round(ratio * remaining / total_ratio))
      out.append(value - cut)
      remaining -= cut
      total_ratio -= ratio
    else:
      out.append(value)
  return out


def _column_widths(columns: Sequence[Sequence[_Cell]], available: int) -> list[int]:
  """Each column's width: what its cells ask for, the widest columns shrunk first (then
  all evenly) when the table would be wider than `available`."""
  widths = [max(c.natural_width(available) for c in column) or 1 for column in columns]
  excess = sum(widths) - available
  while excess > 0:
    widest = max(widths)
    runner_up = max((w for w in widths if w != widest), default=0)
    if widest == runner_up:
      break
    ratios = [int(w == widest) for w in widths]
    widths = _reduce(excess, ratios, [min(excess, widest - runner_up)] * len(widths), widths)
    excess = sum(widths) - available
  if excess > 0:
    widths = _reduce(excess, [1] * len(widths), widths, widths)
  return widths


def _grid(shape: Sequence[int], sharding: Any) -> dict[tuple[int, int], tuple[set, float,
                                                                             float | None]]:
  """(row, column) of each block -> (device ids holding it, its width and height as
  fractions of the array's; height None for a 1-D array)."""
  blocks: dict[tuple[int, int], tuple[set, float, float | None]] = {}
  for device, index in sharding.devices_indices_map(tuple(shape)).items():
    spans = [range(*s.indices(n)) for s, n in zip(index, shape)]
    chunk = tuple(r.start // len(r) if len(r) else 0 for r in spans)
    if len(shape) == 1:
      key, width, height = (0, chunk[0]), len(spans[0]) / shape[0], None
    else:
      key, width, height = chunk, len(spans[1]) / shape[1], len(spans[0]) / shape[0]
    blocks.setdefault(key, (set(), width, height))[0].add(device.id)
  return blocks


def _color_order(n: int) -> list[float]:
  """Where on the colour map each of `n` blocks takes its colour: neighbours far apart
  (JAX's order)."""
  values = np.linspace(0, 1, n)
  out, i = [], 0
  for _ in range(n):
    out.append(float(values[i]))
    i = (i + n // 2 + int(n % 2 == 0)) % n
  return out


def _default_color_map() -> ColorMap | None:
  try:
    import matplotlib  # optional: without it, the picture has no colours (as JAX's)
  except ModuleNotFoundError:
    return None
  return matplotlib.colormaps["tab20b"]


def _terminal_has_color() -> bool:
  """Whether stdout shows colours (rich's test: a terminal that is not 'dumb', or
  FORCE_COLOR)."""
  if os.environ.get("FORCE_COLOR"):
    return True
  isatty = getattr(sys.stdout, "isatty", None)
  return bool(isatty and isatty()) and os.environ.get("TERM", "").lower() not in (
      "dumb", "unknown")


def render_sharding(shape: Sequence[int], sharding: Any, *, use_color: bool = True,
                    scale: float = 1.0, min_width: int = 9, max_width: int = 80,
                    color_map: ColorMap | None = None) -> str:
  """The picture `visualize_sharding` prints (colours as ANSI escapes when `use_color`
  and a colour map is at hand)."""
  if len(shape) not in (1, 2):
    raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
  if use_color and color_map is None:
    color_map = _default_color_map()
  use_color = use_color and color_map is not None
  base_height = int(10 * scale)
  base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
  kind = next(iter(sharding.device_set)).platform.upper()
  blocks = _grid(shape, sharding)
  n_rows = max(r for r, _ in blocks) + 1
  n_cols = max(c for _, c in blocks) + 1
  colors = iter(_color_order(n_rows * n_cols))
  rows: list[list[_Cell]] = []
  for r in range(n_rows):
    row = []
    for c in range(n_cols):
      ids, width_frac, height_frac = blocks[r, c]
      label = f"{kind} " + ",".join(map(str, sorted(ids)))
      width = min(max(int(width_frac * base_width * _HEIGHT_TO_WIDTH), min_width), max_width)
      height = 1 if height_frac is None else int(height_frac * base_height)
      left, odd = divmod(width - len(label) - 2, 2)
      top, odd_rows = divmod(height - 2, 2)
      pads = [top, left + odd, top + odd_rows, left]
      color = None
      if use_color:
        pads = [p + 1 for p in pads]
        color = tuple(int(v * 255) for v in color_map(next(colors))[:3])
      row.append(_Cell(label, *(max(p, 0) for p in pads), color=color))
    rows.append(row)
  border = 0 if use_color else n_cols + 1
  widths = _column_widths([[row[c] for row in rows] for c in range(n_cols)],
                          max_width - border)
  return (_colored(rows, widths) if use_color else _boxed(rows, widths)) + "\n"


def _row_lines(row: Sequence[_Cell], widths: Sequence[int]) -> list[list[str]]:
  """Each cell's lines, the shorter cells filled with blank lines below (cells align at
  the top of their row, which is at least one line high)."""
  cells = [cell.lines(w) for cell, w in zip(row, widths)]
  height = max(1, *map(len, cells))
  return [lines + [" " * w] * (height - len(lines)) for lines, w in zip(cells, widths)]


def _boxed(rows: Sequence[Sequence[_Cell]], widths: Sequence[int]) -> str:
  def rule(left: str, middle: str, right: str) -> str:
    return left + middle.join("─" * w for w in widths) + right
  out = [rule("┌", "┬", "┐")]
  for i, row in enumerate(rows):
    if i:
      out.append(rule("├", "┼", "┤"))
    out += ["│" + "│".join(parts) + "│" for parts in zip(*_row_lines(row, widths))]
  out.append(rule("└", "┴", "┘"))
  return "\n".join(out)


def _colored(rows: Sequence[Sequence[_Cell]], widths: Sequence[int]) -> str:
  out = []
  for row in rows:
    styles = []
    for cell in row:
      r, g, b = cell.color
      text = (0, 0, 0) if r * 0.299 + g * 0.587 + b * 0.114 > 186 else (255, 255, 255)
      styles.append("\x1b[38;2;{};{};{}m\x1b[48;2;{};{};{}m".format(*text, r, g, b))
    out += ["".join(style + part + "\x1b[0m" for style, part in zip(styles, parts))
            for parts in zip(*_row_lines(row, widths))]
  return "\n".join(out)


def visualize_sharding(shape: Sequence[int], sharding: Any, *, use_color: bool = True,
                       scale: float = 1.0, min_width: int = 9, max_width: int = 80,
                       color_map: ColorMap | None = None) -> None:
  """Prints which device holds which block of an array of `shape` laid out as `sharding`
  (1-D and 2-D shapes): one rectangle per block, sized as the block, labelled with the
  devices holding it. Colours only on a colour terminal.

  Raises:
    ValueError: `shape` has neither 1 nor 2 dimensions.
  """
  use_color = use_color and _terminal_has_color()
  sys.stdout.write(render_sharding(shape, sharding, use_color=use_color, scale=scale,
                                   min_width=min_width, max_width=max_width,
                                   color_map=color_map))


def inspect_array_sharding(value: Any, *, callback: Callable[[Any], None]) -> None:
  """Calls `callback` with the sharding of each Array in the pytree `value`.

  Raises:
    NotImplementedError: `value` holds a traced value (inside `jit` or another
      transformation, where JAX reports the layout XLA picks when it compiles; jaxon
      does not yet).
  """
  for leaf in tree_util.tree_leaves(value):
    if isinstance(leaf, core.Tracer):
      raise NotImplementedError(
          "inspect_array_sharding/visualize_array_sharding: jaxon shows the sharding of "
          "concrete Arrays only, not of a value traced inside jit or another "
          "transformation; call it on the jitted function's result instead.")
    callback(leaf.sharding)


def visualize_array_sharding(arr: Any, **kwargs: Any) -> None:
  """Prints which device holds which block of `arr` (see `visualize_sharding`)."""
  inspect_array_sharding(arr, callback=lambda sharding: visualize_sharding(
      arr.shape, sharding, **kwargs))
