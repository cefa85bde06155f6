"""``python -m hrefine``: the ``hrefine`` command line."""

from __future__ import annotations

import sys

from hrefine.cli import main

sys.exit(main())
