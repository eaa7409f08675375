"""arviz-stats' numpy ``array_stats``, imported on first use.

Importing ``arviz_stats.base`` imports arviz-base, whose default plotting backend "auto" imports
matplotlib or plotly to see which is installed; ``import bsvm`` must not pull in plotting code (the
library is used without the dashboard), so the samplers' diagnostics reach arviz-stats through this proxy.
"""

from __future__ import annotations


class _LazyArrayStats:
    def __getattr__(self, name):
        from arviz_stats.base import array_stats as real

        return getattr(real, name)


array_stats = _LazyArrayStats()
