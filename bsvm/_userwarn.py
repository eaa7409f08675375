"""``warn_user``: a warning attributed to the user's line that called into bsvm, not to bsvm's own.

A fixed ``stacklevel`` cannot do that here: the same fit is reached through ``fit`` (one frame more) or
through the user's own loop over ``fit_iter``, and from stages nested to different depths. So the
warning goes to the first frame outside this package (what Python 3.12's ``skip_file_prefixes`` does).
"""

from __future__ import annotations

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` with the stack level of the first caller outside bsvm (the
    top of the stack when there is none, e.g. in a worker process)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)
