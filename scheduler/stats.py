"""Small statistics used by scorecards."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

Z95 = 1.959963984540054


def wilson(passes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion; (0, 1) when there is no data."""
    if n == 0:
        return 0.0, 1.0
    p = passes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def percentiles(values: ArrayLike, qs: tuple[float, ...] = (50, 95, 99)) -> tuple[float, ...]:
    """Linear-interpolated percentiles; NaN for an empty sample."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return tuple(math.nan for _ in qs)
    return tuple(float(v) for v in np.percentile(arr, qs))
