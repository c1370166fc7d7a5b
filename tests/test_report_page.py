"""The reproduce page: one self-contained HTML file, checked as text and as Chromium renders it."""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from captures_gen import DEVICE_IP, Scenario, write_scenario
from matplotlib.figure import Figure

from harness import __version__
from harness.analysis import load_capture
from harness.analysis.plots import plot_capture
from harness.studies.cases import CaseResult
from harness.studies.report_page import PAGE_LIMIT_BYTES, inline_svg, median_run_dir, write_report_page
from harness.studies.reproduce import judged_document

TITLE = "OpenMV N6: TCP_WND 16*MSS -> 32*MSS <&> test"


def _svg(marker: str, colour: str = "#1f4e9c") -> str:
    """A small hand-written SVG whose text says which run folder it came from."""
    return (f'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 200 100" width="200pt">'
            f'<defs><clipPath id="clip"><rect width="200" height="100"/></clipPath></defs>'
            f'<rect width="200" height="100" fill="{colour}" clip-path="url(#clip)"/>'
            f'<text x="10" y="50">{marker}</text></svg>\n')


def _matplotlib_svg(path: Path) -> None:
    """A plot as plots.py writes them: prologue, metadata, clip paths, a rasterized part."""
    fig = Figure(figsize=(4, 2.5), dpi=80)
    ax = fig.subplots()
    ax.plot([0, 1, 2, 3], [0, 2, 1, 3], color="#e6a100", rasterized=True)
    ax.plot([0, 3], [1, 1], "x--", color="#2a9d3a")
    ax.set_title("goodput")
    fig.savefig(path, format="svg")


def _run(root: Path, name: str, mbps: float | None, plots: dict[str, str]) -> str:
    run_dir = root / name
    (run_dir / "plots").mkdir(parents=True)
    (run_dir / "result.json").write_text(json.dumps({"status": "ok", "throughput_mbps": mbps}))
    for plot, text in plots.items():
        (run_dir / "plots" / f"{plot}.svg").write_text(text)
    return str(run_dir)


def _case(name: str, run_dirs: list[str], runs: list[float], **extra: Any) -> dict[str, Any]:
    """A case as the document holds it, for the tests that only need a row's run folders."""
    return {"case": name, "runs_mbps": runs, "median_mbps": sorted(runs)[len(runs) // 2] if runs else None,
            "run_dirs": run_dirs, **extra}


def _result(name: str, run_dirs: list[str], runs: list[float], **extra: Any) -> CaseResult:
    given = {"report_mbps": 31, "verdict": "window-limited", "claim_holds": True,
             "claim_notes": ["holds: verdict window-limited (claim window-limited)"], **extra}
    return CaseResult(case=name, platform="openmv-n6", profile="mp-n6-before", link="wifi", workload="sock-rx",
                      runs_mbps=runs, median_mbps=sorted(runs)[len(runs) // 2], min_mbps=min(runs),
                      max_mbps=max(runs), bound_mbps=28.698, device_mss=1460, device_window_max=23360,
                      verdict_reason="in flight sat at the window", claim={"verdict": "window-limited"},
                      run_dirs=run_dirs, **given)


INPUTS = [{"name": "wifi rate", "value": 43, "unit": "Mbit/s", "provenance": "report",
           "source": "PR #19629: ~43 Mbit/s of UDP", "sets": "platforms/openmv-n6.toml: links.wifi.rate"},
          {"name": "wifi RTT", "value": 5.5, "unit": "ms", "provenance": "assumed", "why": "the report says 5-6 ms",
           "range": [5, 6]},
          {"name": "read delay", "value": 2, "unit": "ms", "provenance": "fitted", "from": "the after figure",
           "cases": ["wifi rx after"]}]


def _document(root: Path) -> dict[str, Any]:
    """Two cases judged as reproduce judges them: the first with three runs (the median is the third
    folder), the second with one run that has a matplotlib SVG and two plots missing."""
    before = [_run(root, f"wifi-rx-before-{i}", mbps, {p: _svg(f"before-run-{i}") for p in ("timeseq", "goodput",
                                                                                             "window")})
              for i, mbps in ((1, 26.4), (2, 27.9), (3, 27.2))]
    after = _run(root, "wifi-rx-after-1", 40.8, {})
    _matplotlib_svg(Path(after) / "plots" / "goodput.svg")
    results = [_result("wifi rx before", before, [26.4, 27.9, 27.2]),
               _result("wifi rx after", [after], [40.8], report_mbps=[35, 39], verdict="link-limited",
                       claim_holds=False, claim_notes=["fails: 40.8 is not within 15 % of 35-39"])]
    return {"report": "openmv-n6", "title": TITLE, "source": "https://github.com/micropython/micropython/pull/19629",
            "note": None, "stand_in": {"cpu": "Cortex-M55 on QEMU mps3-an547", "nic": "SMSC LAN9118",
                                       "honesty": "WiFi is a shaped wired link."},
            "unit": "Mbit/s", "repeats": 3, "time": "device", "run_dir": str(root),
            **judged_document({"inputs": INPUTS, "band": 0.15}, results)}


@pytest.fixture
def page(tmp_path: Path) -> tuple[Path, str]:
    path = write_report_page(_document(tmp_path / "runs"), tmp_path / "out" / "page.html",
                             command="netrepro reproduce openmv-n6 --html page.html")
    return path, path.read_text()


def _links(html: str) -> list[str]:
    return re.findall(r"""\b(?:src|href)\s*=\s*["']([^"']*)["']""", html, re.I)


def test_the_page_holds_title_inputs_table_and_inline_plots(page):
    path, html = page
    assert path.name == "page.html"
    assert "<h1>OpenMV N6: TCP_WND 16*MSS -&gt; 32*MSS &lt;&amp;&gt; test</h1>" in html
    assert "github.com/micropython/micropython/pull/19629" in html  # the source, as text
    inputs = html.split('<table class="inputs">')[1].split("</table>")[0]
    for text in ("wifi rate", "43 Mbit/s", "report", "PR #19629: ~43 Mbit/s of UDP", "links.wifi.rate", "5.5 ms",
                 "assumed", "the report says 5-6 ms; range 5-6 ms", "fitted from the after figure",
                 "fitted to the figures of wifi rx after"):
        assert text in inputs, text
    rows = re.findall(r'<tr class="case">(.*?)</tr>', html, re.S)
    assert len(rows) == 2
    assert "agrees (within 15 %)" in html and "delta %" in html
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows]
    assert cells[0][1:5] == ["31", "27.2 (26.4-27.9, 3 runs)", "-12.3", "yes"] and cells[0][-1] == "holds"
    assert cells[1][1:5] == ["35-39", "40.8 (40.8-40.8, 1 run)", "+4.6", "fitted"] and cells[1][-1] == "FAILS"
    assert "wifi rx before" in cells[0][0] and "wifi rx after" in cells[1][0]
    assert "1 of 1 report figures agree within 15 %" in html  # the text table's summary line
    assert "fails: 40.8 is not within 15 % of 35-39" in html
    assert html.count("<svg") == 4 and html.count("no plot") == 2  # 3 of the median run, 1 of the other case
    assert "before-run-3" in html and "before-run-1" not in html  # the median run's (27.2), not the first's
    assert "WiFi is a shaped wired link." in html and "SMSC LAN9118" in html
    assert "Same core and the same lwIP" in html  # platforms/openmv-n6.toml's [stand_in].honesty
    assert "netrepro reproduce openmv-n6 --html page.html" in html and f"netrepro {__version__}" in html


def test_the_page_is_self_contained(page):
    _, html = page
    assert "<?xml" not in html and "<!DOCTYPE svg" not in html
    assert all(link.startswith(("#", "data:")) for link in _links(html)), _links(html)
    assert not re.search(r"<(?:link|script|img|iframe)\b", html, re.I)
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids)), "every embedded SVG's ids are its own"
    for ref in re.findall(r"url\(#([^)]+)\)", html):
        assert ref in ids, ref


def test_the_median_run_is_the_one_summarise_runs_picks(tmp_path):
    dirs = [_run(tmp_path, f"r{i}", mbps, {"timeseq": _svg(str(i))}) for i, mbps in enumerate((30.0, 10.0, 20.0))]
    assert median_run_dir(_case("c", dirs, [30.0, 10.0, 20.0])) == Path(dirs[2])
    for d in dirs:  # no result.json: runs_mbps, in the folders' order, still tells
        (Path(d) / "result.json").unlink()
    assert median_run_dir(_case("c", dirs, [30.0, 10.0, 20.0])) == Path(dirs[2])
    assert median_run_dir(_case("c", dirs, [30.0, 20.0])) == Path(dirs[0])  # one run failed: the first with plots
    assert median_run_dir(_case("c", [str(tmp_path / "gone")], [])) is None


def test_older_and_partial_documents_do_not_crash(tmp_path):
    html = write_report_page({"cases": [{"case": "x", "run_dirs": [str(tmp_path / "gone")]}, "junk"]},
                             tmp_path / "p.html").read_text()
    assert "inputs: not listed" in html and html.count('<tr class="case">') == 1 and "no plot" in html
    assert "command not recorded" in html and "failed" in html
    html = write_report_page({}, tmp_path / "q.html", command="x").read_text()
    assert "no cases" in html and "stand-in: not described" in html


def test_an_svg_cannot_run_script_or_reach_out(tmp_path):
    path = tmp_path / "evil.svg"
    path.write_text('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script>'
                    '<image href="https://example.org/x.png"/><use xlink:href="#a"/></svg>')
    svg = inline_svg(path, "p")
    assert "alert" not in svg and "example.org" not in svg and 'xlink:href="#p-a"' in svg
    path.write_text("not an svg")
    assert inline_svg(path, "p") is None and inline_svg(tmp_path / "missing.svg", "p") is None


def test_reproduce_html_writes_the_page(tmp_path, monkeypatch, capsys):
    document = _document(tmp_path / "runs")
    cli = importlib.import_module("harness.cli.main")  # harness.cli's `main` is the function, not the module
    monkeypatch.setattr(cli, "reproduce", lambda *args, **kwargs: document)
    out = tmp_path / "share" / "n6.html"
    assert cli.main(["reproduce", "openmv-n6", "--quiet", "--html", str(out)]) == 0
    assert f"report page: {out}" in capsys.readouterr().out.splitlines()
    assert out.read_text().count('<tr class="case">') == 2


def _chromium(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("chromium")
    if binary is None:
        pytest.fail("chromium is not installed: run ./tools/bootstrap --all (it installs Debian's chromium)")
    # as root Chromium needs --no-sandbox; its own profile folder keeps it off the user's
    return subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--user-data-dir={cwd / 'chromium-profile'}", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=180, check=False)


def test_chromium_renders_the_page(page, tmp_path):
    from PIL import Image  # matplotlib's own dependency, so always in the venv

    path, _ = page
    shot = tmp_path / "page.png"
    done = _chromium(f"--screenshot={shot}", "--window-size=1280,2000", path.as_uri(), cwd=tmp_path)
    assert shot.is_file() and shot.stat().st_size > 0, done.stderr[-2000:]
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 2000)
    top = image.crop((0, 0, 1280, 700))  # title, inputs and the table
    colours = top.getcolors(maxcolors=1 << 20)
    assert len(colours) > 20, "the page rendered as a blank or flat image"
    white = sum(count for count, colour in colours if colour == (255, 255, 255))
    assert 1280 * 700 - white > 0.01 * 1280 * 700, "hardly anything drawn where the title and table are"
    dom = _chromium("--dump-dom", path.as_uri(), cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert len(re.findall(r'<tr class="case">', dom.stdout)) == 2
    assert dom.stdout.count("<svg") == 4 and "wifi rx after" in dom.stdout


# ------------------------------------------------------------------ the page's size

ROOT = Path(__file__).resolve().parent.parent
# 3 s at 30 Mbit/s, two segments lost: ~7000 segments and ~3500 ACKs, past MAX_MARKS in every series
BUSY = Scenario(duration=3.0, rcv_buf=23360, rtt=0.006, rate_bps=30e6, drop=frozenset({500, 2500}))


@pytest.fixture(scope="module")
def busy_plots(tmp_path_factory) -> Path:
    """The plots folder of a busy run, as plots.py writes it."""
    folder = tmp_path_factory.mktemp("busy")
    analysis = load_capture(write_scenario(folder / "capture.pcap", BUSY), device_ip=DEVICE_IP)
    plot_capture(analysis, folder / "plots", "openmv-rt1060 / mp-rt1060-before / sock-rx / rtt 6 ms, 30 Mbit/s")
    return folder / "plots"


def _busy_document(root: Path, plots: Path, runs: int) -> dict[str, Any]:
    """A case per run, each its own run folder holding the busy run's plots."""
    cases = []
    for i in range(runs):
        shutil.copytree(plots, root / f"case-{i}-1" / "plots")
        cases.append(_case(f"case {i}", [str(root / f"case-{i}-1")], [20.0 + i]))
    return {"report": "busy", "title": "busy", "cases": cases}


def test_a_page_of_nine_busy_runs_draws_every_plot_under_the_limit(busy_plots, tmp_path):
    """Nine runs, as many as the Xbox report's cases (more than any stored report runs): every plot
    drawn, the page under its limit, and each SVG a few tens of kB."""
    assert all(p.stat().st_size < 40_000 for p in busy_plots.glob("*.svg")), \
        {p.name: p.stat().st_size for p in busy_plots.glob("*.svg")}
    page = write_report_page(_busy_document(tmp_path / "runs", busy_plots, 9), tmp_path / "page.html")
    html = page.read_text()
    assert page.stat().st_size < PAGE_LIMIT_BYTES
    assert html.count("<svg") == 27 and "left out" not in html and "no plot" not in html
    assert "data:image/png;base64," in html   # the series, as bitmaps inside the SVGs
    assert not re.search(r"<(?:link|script|img|iframe)\b", html, re.I)
    assert all(link.startswith(("#", "data:")) for link in _links(html))
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids))
    assert not re.search(r'<[^>]*\sclass="[^"]*"[^>]*\sclass="', html)  # a style made a class: one a tag


def test_a_run_folder_from_before_compact_plots_is_compacted_as_it_is_inlined(tmp_path):
    path = tmp_path / "old.svg"
    _matplotlib_svg(path)  # matplotlib's own SVG, every glyph a path
    svg = inline_svg(path, "p")
    assert len(svg) < 0.7 * path.stat().st_size and "<metadata" not in svg and "\n " not in svg
    assert "#2a9d3a" in svg and "data:image/png;base64," in svg and 'id="p-' in svg


def test_chromium_draws_the_busy_plots(busy_plots, tmp_path):
    """The compacted SVGs as Chromium renders them inline: the series (bitmaps inside the SVGs) draw
    thousands of pixels that the same page without its bitmaps lacks, and the axes' text is text."""
    from PIL import Image, ImageChops

    page = write_report_page(_busy_document(tmp_path / "runs", busy_plots, 1), tmp_path / "page.html")
    bare = tmp_path / "bare.html"
    bare.write_text(re.sub(r"<image\b[^>]*>", "", page.read_text()))
    shots = []
    for name, path in (("page", page), ("bare", bare)):
        shot = tmp_path / f"{name}.png"
        done = _chromium(f"--screenshot={shot}", "--window-size=1280,2400", path.as_uri(), cwd=tmp_path)
        assert shot.is_file(), done.stderr[-2000:]
        shots.append(Image.open(shot).convert("L"))
    changed = ImageChops.difference(*shots).point(lambda v: 255 if v > 20 else 0).histogram()[255]
    assert changed > 3000, changed
    dom = _chromium("--dump-dom", page.as_uri(), cwd=tmp_path)
    assert dom.stdout.count("<svg") == 3 and "relative sequence" in dom.stdout  # an axis label, as text


def test_plots_past_the_limit_are_named_not_drawn(tmp_path):
    big = _svg("x" * 60_000)
    cases = [_case(f"case {i}", [_run(tmp_path, f"r{i}", 20.0, dict.fromkeys(("timeseq", "goodput", "window"), big))],
                   [20.0]) for i in range(12)]
    page = write_report_page({"cases": cases}, tmp_path / "page.html")
    html = page.read_text()
    assert page.stat().st_size < PAGE_LIMIT_BYTES
    drawn = html.count("<svg")
    assert 0 < drawn < 36 and html.count("left out to keep the page under 500 kB") == 36 - drawn
    assert str(tmp_path / "r11" / "plots" / "window.svg") in html  # where the reader finds it
    assert html.rindex("<svg") < html.index("left out")  # the page's first plots are the ones drawn


def test_a_run_two_cases_share_is_drawn_once(tmp_path):
    """A two-way run's two directions: the second case points to the first's plots."""
    run = [_run(tmp_path, "duplex-1", 20.0, dict.fromkeys(("timeseq", "goodput", "window"), _svg("duplex")))]
    html = write_report_page({"cases": [_case("duplex rx", run, [20.0]), _case("duplex tx", run, [20.0])]},
                             tmp_path / "page.html").read_text()
    assert html.count("<svg") == 3
    assert 'plots: the same run as <a href="#case-0">case 1</a>' in html


def test_every_stored_page_is_under_the_limit():
    pages = sorted((ROOT / "benchmarks" / "results").glob("reproduce-*.html"))
    assert pages
    assert {p.name: p.stat().st_size for p in pages if p.stat().st_size >= PAGE_LIMIT_BYTES} == {}
    assert [p.name for p in pages if "left out" in p.read_text()] == []  # and every plot drawn


@pytest.mark.parametrize("name", ["ethernut2", "openmv-n6", "openmv-rt1060", "xbox"])
def test_chromium_reads_each_stored_page_whole(name, tmp_path):
    """A stored page as a reader opens it: every case of its stored result has its row, and its plots are
    inline SVG (the page is self-contained: nothing to fetch)."""
    path = ROOT / "benchmarks" / "results" / f"reproduce-{name}.html"
    cases = json.loads(path.with_suffix(".json").read_text())["cases"]
    dom = _chromium("--dump-dom", path.as_uri(), cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert len(re.findall(r'<tr class="case">', dom.stdout)) == len(cases)
    assert dom.stdout.count("<svg") >= 3
    assert all(link.startswith(("#", "data:")) for link in _links(dom.stdout)), _links(dom.stdout)
