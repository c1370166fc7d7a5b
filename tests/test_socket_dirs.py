"""A session's socket folder (/tmp/nr-PID-*) is removed by the next session when the process that made it is gone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.rig.session import SOCKET_DIR_PREFIX, remove_orphan_socket_dirs


def _folder(root: Path, pid: int | str) -> Path:
    folder = root / f"{SOCKET_DIR_PREFIX}{pid}-abcd1234"
    folder.mkdir()
    (folder / "board.sock").write_text("")
    return folder


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_folder_of_a_process_that_is_gone_is_removed_and_a_live_ones_kept(tmp_path):
    orphan, live = _folder(tmp_path, _dead_pid()), _folder(tmp_path, os.getpid())
    other = tmp_path / f"{SOCKET_DIR_PREFIX}bt-abcd1234"  # not a session's (a bench's basetemp)
    other.mkdir()
    assert remove_orphan_socket_dirs(tmp_path) == [orphan]
    assert not orphan.exists() and live.is_dir() and (live / "board.sock").exists() and other.is_dir()
    assert remove_orphan_socket_dirs(tmp_path) == []
