"""Compare two lwIP configurations on the same platform, link and workload.

Both firmwares are built first (a configuration that does not compile stops everything before
any run), then the runs alternate A, B, A, B, ... so that whatever else loads the machine
weighs on both alike. Each configuration is summarised as `reproduce` summarises a case (the
median run speaks for it), the effective options the firmware reported are diffed, and the
verdict of each is turned into a recommendation computed from the measured figures:

    window-limited       TCP_WND >= rate x RTT (the link's data-direction rate, the capture's RTT)
    send-buffer-limited  TCP_SND_BUF >= rate x RTT
    link-limited         the link is the limit: options will not help
    bus-limited          the WiFi chip's host bus is the limit: options will not help
    loss-limited         a one-line hint (recovery options, the link's loss)
    receiver-limited     a one-line hint (the reading application)
    sender-limited       a one-line hint (per-segment cost; window options will not help)
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.analysis import AnalysisSummary
from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import LinkSpec
from harness.rig.build import build_firmware, lwip_tree
from harness.rig.devicetime import TimeChoice
from harness.rig.lwip_ram import ram_line
from harness.rig.platform import load_platform
from harness.rig.profile import Profile
from harness.rig.session import make_run_dir
from harness.rig.workload import Workload
from harness.runs.analyse import Analyser, Repeats, data_rate_bps
from harness.runs.plan import Configuration, RunPlan
from harness.runs.result import RunResult
from harness.studies.cases import (
    CaseResult,
    format_number,
    leak_notes,
    risk_notes,
    summarise_runs,
    thread_notes,
    time_line,
)
from harness.studies.plan_pool import PlanPool, planned_jobs

_WINDOW_LIMIT_UNSCALED = 0xFFFF
_HEADERS = 14 + 20 + 20                 # Ethernet + IPv4 + TCP, what a pool pbuf holds besides payload
TABLE_WIDTH = 120                       # wider than this, the differing options go above the table


@dataclass
class Recommendation:
    """What the verdict suggests, with the figures it was computed from."""

    verdict: str
    text: str
    option: str | None = None         # the option to raise (TCP_WND, TCP_SND_BUF)
    needed_bytes: int | None = None   # rate x RTT
    segments: int | None = None       # needed_bytes in whole MSS, rounded up
    current: int | None = None        # the option's effective value now
    rate_mbps: float | None = None
    rtt_ms: float | None = None
    mss: int | None = None


# ------------------------------------------------------------------ the pure parts


def differing_options(a: Mapping[str, int], b: Mapping[str, int]) -> list[dict[str, Any]]:
    """The options whose effective values differ, in the firmware's order: [{"name", "a", "b"}]."""
    names = list(a) + [n for n in b if n not in a]
    return [{"name": n, "a": a.get(n), "b": b.get(n)} for n in names if a.get(n) != b.get(n)]


def recommend(verdict: str | None, *, rate_bps: float | None, rtt_ms: float | None, options: Mapping[str, int],
              device_mss: int | None = None, device_window: float | None = None, bound_mbps: float | None = None,
              device_receives: bool | None = None, retransmissions: int | None = None,
              rto_retransmissions: int | None = None) -> Recommendation | None:
    """A recommendation where the verdict makes one obvious, else None."""
    if verdict in ("window-limited", "send-buffer-limited"):
        option = "TCP_WND" if verdict == "window-limited" else "TCP_SND_BUF"
        peer_side = device_receives is (verdict == "send-buffer-limited")  # the peer's window or buffer
        if device_receives is not None and peer_side:
            what = "receive window" if verdict == "window-limited" else "send buffer"
            return Recommendation(verdict, f"{verdict}: the peer's {what} is the limit: the device's options "
                                           "will not help")
        return _size_option(verdict, option, rate_bps, rtt_ms, options, device_mss, device_window, bound_mbps)
    if verdict == "link-limited":
        return Recommendation(verdict, "link-limited: the link is the limit: options will not help")
    if verdict == "bus-limited":
        return Recommendation(verdict, "bus-limited: the WiFi chip's host bus is the limit: options will not help")
    if verdict == "loss-limited":
        count = (f"{retransmissions} retransmissions ({rto_retransmissions or 0} after timeouts)"
                 if retransmissions is not None else "retransmissions")
        if device_receives:
            helpers = [f"{n}=1" for n in ("TCP_QUEUE_OOSEQ", "LWIP_TCP_SACK_OUT") if options.get(n) == 0]
            hint = (f"{' and '.join(helpers)} would shorten recovery" if helpers
                    else "the device already keeps out-of-order data; look at the link's loss and queue")
        else:
            hint = "lwIP recovers by fast retransmit or timeout; look at the link's loss and queue"
        return Recommendation(verdict, f"loss-limited: {count} set the rate, not the window: {hint}")
    if verdict == "receiver-limited":
        if device_receives is False:
            text = "receiver-limited: the peer's application reads too slowly: the device's options will not help"
        else:
            text = ("receiver-limited: the device's application reads too slowly (its window shrank or closed): "
                    "read sooner or in larger chunks; a larger TCP_WND only buffers more")
        return Recommendation(verdict, text)
    if verdict == "sender-limited":
        return Recommendation(verdict, "sender-limited: the sender's own CPU, application or memory set the pace, "
                                       "not its window or buffer: larger segments (TCP_MSS) cut per-segment cost; "
                                       "window options will not help")
    return None


def _size_option(verdict: str, option: str, rate_bps: float | None, rtt_ms: float | None,
                 options: Mapping[str, int], device_mss: int | None, device_window: float | None,
                 bound_mbps: float | None) -> Recommendation:
    mss = options.get("TCP_MSS") or device_mss
    current = options.get(option)
    rec = Recommendation(verdict, "", option=option, current=current, mss=mss, rtt_ms=rtt_ms,
                         rate_mbps=round(rate_bps / 1e6, 3) if rate_bps else None)
    if not rate_bps or not rtt_ms:
        missing = "the link has no rate" if not rate_bps else "the capture gave no RTT"
        bound = f" (window/RTT = {bound_mbps:g} Mbit/s)" if bound_mbps else ""
        rec.text = f"{verdict}: a larger {option} would go faster{bound}; {missing} to size it against"
        return rec
    needed = math.ceil(rate_bps * rtt_ms / 1e3 / 8)
    rec.needed_bytes = needed
    rec.segments = math.ceil(needed / mss) if mss else None
    in_mss = f" = {rec.segments}*MSS" if rec.segments else ""
    text = (f"{verdict}: {option} >= rate x RTT = {rate_bps / 1e6:g} Mbit/s x {rtt_ms:.2f} ms = "
            f"{needed / 1000:.1f} KB{in_mss} would reach the link rate")
    if current is not None and current >= needed:
        text += f"; {option} is already {_bytes_mss(current, mss)}"
        text += (f": the device offered less (median {device_window:g} B) because its application left data unread"
                 if verdict == "window-limited" and device_window is not None
                 else ": TCP_SND_QUEUELEN, MEM_SIZE or the application keep it from filling")
    else:
        wanted = rec.segments * mss if rec.segments and mss else needed
        setting = f"{rec.segments}*TCP_MSS" if rec.segments else str(needed)
        now = f"now {_bytes_mss(current, mss)}; " if current is not None else ""
        text += f" ({now}try --set {option}={setting}{_companions(option, wanted, options)})"
    rec.text = text
    return rec


def _companions(option: str, wanted: int, options: Mapping[str, int]) -> str:
    """The other settings lwIP's sanity checks need for `option` = wanted bytes."""
    needs = []
    if wanted > _WINDOW_LIMIT_UNSCALED and not options.get("LWIP_WND_SCALE"):
        needs.append("LWIP_WND_SCALE=1 with TCP_RCV_SCALE (above 65535 B)")
    mss = options.get("TCP_MSS")
    if option == "TCP_WND" and options.get("PBUF_POOL_SIZE") and options.get("PBUF_POOL_BUFSIZE"):
        per_pbuf = options["PBUF_POOL_BUFSIZE"] - _HEADERS - options.get("ETH_PAD_SIZE", 0)
        if per_pbuf > 0 and options["PBUF_POOL_SIZE"] * per_pbuf < wanted:
            needs.append(f"PBUF_POOL_SIZE >= {math.ceil(wanted / per_pbuf)}")
    if option == "TCP_SND_BUF" and mss:
        queue_len, buf = options.get("TCP_SND_QUEUELEN"), options.get("TCP_SND_BUF")
        # Left unset, TCP_SND_QUEUELEN follows lwIP's default (4 * TCP_SND_BUF + TCP_MSS - 1) / TCP_MSS.
        follows = queue_len is not None and buf is not None and queue_len == (4 * buf + mss - 1) // mss
        if follows:
            queue = (4 * wanted + mss - 1) // mss
        else:
            queue = max(queue_len or 0, 2 * (wanted // mss))
            if queue_len is not None and queue_len < queue:
                needs.append(f"TCP_SND_QUEUELEN >= {queue}")
        if options.get("MEMP_NUM_TCP_SEG", queue) < queue:
            grows = " (the default TCP_SND_QUEUELEN grows with TCP_SND_BUF)" if follows else ""
            needs.append(f"MEMP_NUM_TCP_SEG >= {queue}{grows}")
    return "".join(f", {n}" for n in needs)


def _bytes_mss(value: int, mss: int | None) -> str:
    return f"{value} B = {value / mss:g}*MSS" if mss else f"{value} B"


def summarise(label: str, role: str, runs: Sequence[Any], configuration: Configuration, profile: str,
              platform: str, link: str, workload: str, run_dirs: Sequence[str] = (),
              error: str | None = None) -> dict[str, Any]:
    """One configuration's runs as reproduce summarises a case, plus its options, rate and recommendation."""
    case = CaseResult(case=label, platform=platform, profile=profile, link=link, workload=workload,
                      report_mbps=None, run_dirs=list(run_dirs), error=error)
    summarise_runs(case, list(runs))
    out: dict[str, Any] = {"role": role, "label": label, "lwip": configuration.lwip,
                           "include": list(configuration.include), "set": list(configuration.set), **asdict(case)}
    for unused in ("case", "report_mbps", "link_mbps", "claim", "claim_holds", "claim_notes"):
        out.pop(unused)
    ok = [r for r in runs if isinstance(r.throughput_mbps, float | int)]
    middle = sorted(ok, key=lambda r: r.throughput_mbps)[len(ok) // 2] if ok else None
    options = dict(middle.options) if middle else (dict(runs[0].options) if runs else {})
    rate = data_rate_bps(middle) if middle else None
    analysis = (middle.analysis if middle else None) or AnalysisSummary()
    out["options"] = options
    out["lwip_ram"] = next((dict(r.lwip_ram) for r in runs if r.lwip_ram), {})  # one firmware
    out["data_rate_mbps"] = round(rate / 1e6, 3) if rate else None
    rec = recommend(case.verdict, rate_bps=rate, rtt_ms=case.rtt_ms, options=options, device_mss=case.device_mss,
                    device_window=case.device_window, bound_mbps=case.bound_mbps,
                    device_receives=_device_receives(analysis),
                    retransmissions=analysis.retransmissions if middle else None,
                    rto_retransmissions=analysis.rto_retransmissions if middle else None)
    out["recommendation"] = asdict(rec) if rec else None
    return out


def _device_receives(analysis: AnalysisSummary) -> bool | None:
    direction = analysis.data_direction
    return None if direction is None else direction == "peer->device"


# ------------------------------------------------------------------ running


def compare(platform_name: str, configurations: Sequence[Configuration], link: LinkSpec, workload: Workload, *,
            link_name: str = "direct", repeats: int = 3, out: Path | None = None,
            progress: Progress | None = None, lwip_tree_path: str | None = None,
            boot_timeout: float = 60.0, time: TimeChoice | None = None, jobs: int | None = 1) -> dict[str, Any]:
    """Run both configurations `repeats` times each (alternating); the document is also written as JSON.
    `jobs`: runs at once (plan_pool; None: what the machine holds); 1 runs them one at a time."""
    progress = progress or Progress(quiet=True)
    if len(configurations) != 2:
        raise NetreproError(f"compare needs two configurations, got {len(configurations)}",
                            "give --lwip twice: --lwip A --lwip B")
    if workload.kind.two_way:
        raise NetreproError(f"workload {workload.name} measures two directions at once",
                            "compare one direction: rx, tx, discard, sock-rx or sock-tx")
    if repeats < 1:
        raise NetreproError(f"bad repeats {repeats}", "give 1 or more")
    platform = load_platform(platform_name)
    tree = lwip_tree(lwip_tree_path)
    configs = [c.resolve(platform, tree) for c in configurations]
    profiles = [c.profile for c in configs]
    labels = configuration_labels(profiles, configurations)
    plans = [RunPlan(platform, build_firmware(c, progress.step), link, workload,
                     boot_timeout=boot_timeout, time=platform.time(time or TimeChoice())) for c in configs]
    slugs = [_slug(p.name) for p in profiles]
    root = make_run_dir(out, f"compare-{platform.name}", f"{slugs[0]}-vs-{slugs[1]}")
    found = [Repeats([], []), Repeats([], [])]
    pool = PlanPool(jobs, progress) if (jobs := planned_jobs(jobs, 2 * repeats)) > 1 else None
    with Analyser() as analyser:  # a run's capture is analysed while the next one runs, where that is harmless
        for i in range(repeats):
            for k, role in enumerate("AB"):
                run_dir = root / f"{role}-{slugs[k]}-{i + 1}"
                run_dir.mkdir()
                progress.step(f"{role} {labels[k]}: run {i + 1} of {repeats}")
                try:
                    found[k].pending.append(pool.submit(plans[k], run_dir) if pool
                                            else plans[k].start(run_dir, analyser, progress))
                except NetreproError as exc:
                    found[k].error = found[k].error or str(exc)  # the first failure explains
                found[k].run_dirs.append(str(run_dir))
        if pool:
            pool.run()
        for side in found:
            side.settled()
    runs = [side.runs for side in found]
    configs = [summarise(labels[k], role, found[k].runs, configurations[k], profiles[k].name, platform.name,
                         link_name, workload.name, found[k].run_dirs, found[k].error) for k, role in enumerate("AB")]
    document = {
        "platform": platform.name, "link": link_name, "link_effective": _effective_link(runs, link),
        "workload": workload.describe(), "repeats": repeats, "run_dir": str(root),
        "time": (time or TimeChoice()).mode, "jobs": jobs, "schedule": pool.schedule() if pool else None,
        "differing_options": differing_options(configs[0]["options"], configs[1]["options"]),
        "configurations": configs,
        "recommendations": [{"configuration": c["label"], **c["recommendation"]}
                            for c in configs if c["recommendation"]],
    }
    (root / "compare.json").write_text(json.dumps(document, indent=2) + "\n")
    (root / "compare.txt").write_text(format_comparison(document) + "\n")
    return document


def configuration_labels(profiles: Sequence[Profile], configurations: Sequence[Configuration]) -> list[str]:
    """Profile name and its --set overrides; "A "/"B " in front when both would read the same."""
    labels = [" ".join([p.name, *c.set]) for p, c in zip(profiles, configurations, strict=True)]
    if len(set(labels)) < len(labels):
        labels = [f"{role} {label}" for role, label in zip("AB", labels, strict=False)]
    return labels


def _effective_link(runs: list[list[RunResult]], link: LinkSpec) -> dict[str, Any]:
    done = [r for side in runs for r in side]
    return (done[0].link if done else link).as_dict()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:40] or "config"


# ------------------------------------------------------------------ the table


def format_comparison(document: Mapping[str, Any], width: int = TABLE_WIDTH) -> str:
    """The reproduce table for two configurations, the options that differ first.

    They are the table's first columns while it fits in `width` characters; beyond that they are
    listed first, one a line, and the table follows without them.
    """
    configs = document["configurations"]
    workload = document["workload"]
    link = document.get("link_effective") or {}
    rate = _link_rate_text(configs, link)
    runs = f"{document['repeats']} run{'s' if document['repeats'] != 1 else ''}"
    lines = [f"{document['platform']}: {configs[0]['label']} vs {configs[1]['label']} over link {document['link']} "
             f"({rate}RTT {link.get('rtt_s', 0) * 1e3:g} ms), workload {workload['name']}",
             f"({runs} each, {workload['seconds']:g} s a run, alternating; figures in Mbit/s; "
             f"run folders in {document['run_dir']})", time_line(document.get("time")), ""]
    diff = document["differing_options"]
    if not diff:
        lines += ["(no option differs: both firmwares report the same effective options)", ""]
    table = _table(configs, diff)
    if len(table[0]) > width and diff:
        name_w = max(len("option"), *(len(d["name"]) for d in diff))
        value_w = max(8, *(len(_opt(d[k])) for d in diff for k in ("a", "b")))
        lines += [f"options that differ (effective values; A = {configs[0]['label']}, B = {configs[1]['label']}):",
                  f"  {'option':<{name_w}} {'A':>{value_w}} {'B':>{value_w}}",
                  *(f"  {d['name']:<{name_w}} {_opt(d['a']):>{value_w}} {_opt(d['b']):>{value_w}}" for d in diff),
                  ""]
        table = _table(configs, [])
    lines += table
    rams = [f"  {c['label']}: {ram_line(c['lwip_ram'])}" for c in configs if c.get("lwip_ram")]
    if rams:
        lines += ["", "lwIP's static RAM (bytes; the firmware's heap, memp pools and other data):", *rams]
    notes = [f"  {c['label']}: {c['recommendation']['text']}" for c in configs if c["recommendation"]]
    if notes:
        lines += ["", "recommendations:", *notes]
    failures = [f"  {c['label']}: {c['error']}" for c in configs if c["error"]]
    if failures:
        lines += ["", "runs that failed:", *failures]
    return "\n".join(lines + thread_notes(list(configs), "label") + leak_notes(list(configs), "label")
                     + risk_notes(list(configs), "label"))


def _table(configs: Sequence[Mapping[str, Any]], diff: Sequence[Mapping[str, Any]]) -> list[str]:
    """Header, rule and one row a configuration; the given options as the first columns."""
    label_w = max(len("configuration"), *(len(c["label"]) for c in configs))
    opt_w = {d["name"]: max(len(d["name"]), len(_opt(d["a"])), len(_opt(d["b"]))) for d in diff}
    header = (f"{'configuration':<{label_w}}  " + "".join(f"{d['name']:>{opt_w[d['name']]}}  " for d in diff)
              + f"{'median (min-max)':>20} {'bound':>7} {'MSS':>5} {'window':>7} {'cpu %':>6} {'us/seg':>7} "
              f"{'lwIP KiB':>8}  verdict")
    lines = [header, "-" * len(header)]
    for c in configs:
        figure = "failed" if c["median_mbps"] is None else \
            f"{c['median_mbps']:.1f} ({c['min_mbps']:.1f}-{c['max_mbps']:.1f})"
        window = "-" if c["device_window_max"] is None else f"{c['device_window_max']:g}"
        values = "".join(f"{_opt(d['a' if c['role'] == 'A' else 'b']):>{opt_w[d['name']]}}  " for d in diff)
        lines.append(f"{c['label']:<{label_w}}  {values}{figure:>20} {format_number(c['bound_mbps']):>7} "
                     f"{format_number(c['device_mss']):>5} {window:>7} "
                     f"{format_number(c.get('device_cpu_percent')):>6} {format_number(c.get('us_per_segment')):>7} "
                     f"{_kib(c.get('lwip_ram_total')):>8}  "
                     f"{c['verdict'] or '-'}")
    return lines


def _link_rate_text(configs: Sequence[Mapping[str, Any]], link: Mapping[str, Any]) -> str:
    rate = next((c["data_rate_mbps"] for c in configs if c.get("data_rate_mbps")), None)
    if rate:
        return f"{rate:g} Mbit/s, "
    rates = {d.get("rate_bps") for d in (link.get("to_device", {}), link.get("to_peer", {}))} - {None, 0}
    return f"{max(rates) / 1e6:g} Mbit/s, " if rates else "no rate limit, "


def _kib(size: int | None) -> str:
    return "-" if size is None else f"{size / 1024:.1f}"


def _opt(value: int | None) -> str:
    return "-" if value is None else str(value)
