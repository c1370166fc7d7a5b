"""Firmware build: platform + profile + lwIP tree -> ELF, cached by a hash of every input."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.core.cache import cache_dir, content_hash, tree_files
from harness.core.errors import NetreproError
from harness.rig.platform import PROJECT_ROOT, Platform
from harness.rig.profile import Profile, known_options

FIRMWARE_DIR = PROJECT_ROOT / "firmware"
LWIP_TREE_ENV = "NETREPRO_LWIP_TREE"
BUILD_TIMEOUT_S = 600


@dataclass(frozen=True)
class Firmware:
    """A built firmware image and what went into it."""

    elf: Path
    build_dir: Path
    key: str
    profile: Profile
    lwip_tree: Path
    lwip_version: str
    rebuilt: bool


def lwip_tree(path: str | Path | None = None) -> Path:
    """The lwIP source tree: the given path, $NETREPRO_LWIP_TREE, or the one bootstrap fetched."""
    chosen = path or os.environ.get(LWIP_TREE_ENV)
    tree = Path(chosen).expanduser().resolve() if chosen else cache_dir("lwip") / "lwip-2.1.3"
    if not (tree / "src" / "include" / "lwip" / "init.h").is_file():
        if chosen:
            raise NetreproError(f"{tree} is not an lwIP source tree (no src/include/lwip/init.h)",
                                f"point --lwip-tree or {LWIP_TREE_ENV} at the top of an lwIP checkout")
        raise NetreproError("lwIP source is missing", "run ./tools/bootstrap (it fetches Debian's lwip source)")
    return tree


def lwip_version(tree: Path) -> str:
    text = (tree / "src" / "include" / "lwip" / "init.h").read_text()
    parts = [re.search(rf"#define LWIP_VERSION_{p}\s+(\d+)", text) for p in ("MAJOR", "MINOR", "REVISION")]
    return ".".join(m.group(1) if m else "?" for m in parts)


def generated_files(platform: Platform) -> dict[str, str]:
    """board_config.h and memory.ld, made from the platform description."""
    config = [
        f'#define BOARD_NAME "{platform.firmware["board"]}"',
        f'#define NIC_NAME "{platform.firmware["nic"]}"',
        f"#define CPU_HZ {int(platform.firmware['cpu_hz'])}u",
        f"#define CONSOLE_UART_BASE {int(platform.console['base']):#010x}u",
        f"#define NIC_BASE {int(platform.nic['base']):#010x}u",
        f"#define NIC_IRQ {int(platform.nic['irq'])}",
    ]
    regions = [f"  {r.role.upper():<5} ({'rx' if r.role == 'code' else 'rwx'}) : "
               f"ORIGIN = {r.origin:#010x}, LENGTH = {r.length}" for r in platform.memory.values()]
    memory = "MEMORY\n{\n" + "\n".join(regions) + "\n}\n"
    return {"board_config.h": "\n".join(config) + "\n", "memory.ld": memory}


def build_firmware(platform: Platform, profile: Profile, tree: Path,
                   progress: Callable[[str], None] = lambda _: None) -> Firmware:
    """Build (or reuse) the firmware for this platform, profile and lwIP tree."""
    generated = generated_files(platform)
    toolchain = _toolchain(platform)
    inputs = [*tree_files(FIRMWARE_DIR), *tree_files(tree / "src"), profile.header,
              *(f for d in profile.include_dirs for f in d.glob("*.h"))]
    key = content_hash(inputs, [*generated.values(), profile.overlay(), profile.name, toolchain,
                                *map(str, profile.include_dirs)])
    final = cache_dir("builds") / key
    version = lwip_version(tree)
    result = Firmware(final / "firmware.elf", final, key, profile, tree, version, rebuilt=False)
    if result.elf.is_file():
        return result
    with open(cache_dir("builds") / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test workers building the same image wait here
        if result.elf.is_file():
            return result
        progress(f"building firmware {platform.firmware['board']}/{profile.name} (lwIP {version})")
        _make(platform, profile, tree, generated, final)
    return Firmware(final / "firmware.elf", final, key, profile, tree, version, rebuilt=True)


def _toolchain(platform: Platform) -> str:
    gcc = f"{platform.firmware['toolchain']}gcc"
    if shutil.which(gcc) is None:
        raise NetreproError(f"compiler {gcc} not found", "run ./tools/bootstrap to install the toolchain")
    out = subprocess.run([gcc, "--version"], capture_output=True, text=True, check=False).stdout
    return out.splitlines()[0] if out else gcc


def _make(platform: Platform, profile: Profile, tree: Path, generated: dict[str, str], final: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix=f"{final.name}.", dir=final.parent))
    gen = work / "gen"
    gen.mkdir()
    for name, text in generated.items():
        (gen / name).write_text(text)
    (gen / "netrepro_overrides.h").write_text(profile.overlay())
    (work / "profile.txt").write_text(f"{profile.name}\n{profile.header}\n")
    argv = ["make", "-C", str(FIRMWARE_DIR), f"-j{os.cpu_count() or 2}",
            f"BOARD={platform.firmware['board']}", f"NIC={platform.firmware['nic']}",
            f"LWIP_DIR={tree}", f"OUT={work}", f"GEN_DIR={gen}", f"PROFILE_H={profile.header}",
            f"PROFILE_NAME={profile.name}", f"USER_INC={' '.join(map(str, profile.include_dirs))}"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise NetreproError(f"firmware build took over {BUILD_TIMEOUT_S} s", f"see {work}") from None
    (work / "build.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not (work / "firmware.elf").is_file():
        raise NetreproError(_compile_error(profile, proc.stderr, tree), f"fix it; full log: {work / 'build.log'}")
    if final.exists():
        shutil.rmtree(final)
    work.rename(final)


def _compile_error(profile: Profile, stderr: str, tree: Path) -> str:
    """One line: the option at fault and the compiler's message."""
    lines = [ln for ln in stderr.splitlines() if re.search(r"\berror\b", ln)]
    if not lines:
        tail = stderr.strip().splitlines()[-1:] or ["no output"]
        return f"profile {profile.name} does not build: {tail[0]}"
    first = lines[0]
    message = re.sub(r"^.*?\berror:\s*", "", first).replace("#error ", "").strip().strip('"')
    options = known_options(tree) | {name for name, _ in profile.overrides}
    names = re.findall(r"[A-Z][A-Z0-9_]{2,}", first)
    option = next((n for n in names if n in options), names[0] if names else None)
    where = re.match(r"^([^:\s]+):(\d+)", first)
    location = f" ({Path(where.group(1)).name}:{where.group(2)})" if where else ""
    subject = f"option {option}" if option else "a setting"
    return f"profile {profile.name} does not compile: {subject}: {message}{location}"
