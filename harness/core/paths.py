"""Where netrepro's own data lives: platforms/, firmware/ and reports/.

They are the package's data, read through importlib.resources as harness/files/<folder>. In a
checkout those three are symlinks to the checkout's top-level folders (so an editable install or
PYTHONPATH reads the checkout's files in place); a plain or --target install copies them into the
package (pyproject.toml's package-data), wherever pip put it.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from harness.core.errors import NetreproError

DATA_FOLDERS = ("platforms", "reports", "firmware")


def _data_root() -> Path:
    """The folder holding platforms/, reports/ and firmware/: the checkout, or the installed package's files/."""
    package = files("harness")
    if not isinstance(package, Path):  # a zip import: gcc and the board host need real files
        raise NetreproError(f"netrepro's data is not on the file system ({package})",
                            "install netrepro as plain files: pip install (not a zipapp or egg)")
    # resolved, so that in a checkout the paths shown are the checkout's own (platforms/x.toml)
    return (package / "files" / DATA_FOLDERS[0]).resolve().parent


PROJECT_ROOT = _data_root()
