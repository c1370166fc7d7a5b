"""Where netrepro's own data lives: platforms/, firmware/ and reports/.

In a checkout (or an editable install) they sit beside the harness package. A plain
`pip install` puts them under the environment's data directory, share/netrepro.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path


def _data_root() -> Path:
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "platforms").is_dir() and (checkout / "firmware").is_dir():
        return checkout
    return Path(sysconfig.get_path("data")) / "share" / "netrepro"


PROJECT_ROOT = _data_root()
