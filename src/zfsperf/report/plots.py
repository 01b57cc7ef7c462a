"""Pictures with matplotlib (Agg, no display): thread scaling, steady-state charts, latency
histograms per class (side by side for A/B) and A/B bars with intervals. Each function returns PNG
bytes (or None when the data for that picture is not there)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..results.record import SteadyRecord  # noqa: E402
from ..results.stats import summarise  # noqa: E402
from ..steady import Criteria, decide, read_series, redecide, timescale  # noqa: E402
from ..steady.series import decision_samples, is_marker  # noqa: E402
from ..steady.rounds import CaseSteady  # noqa: E402
from ..units import METRIC_UNITS, ChangeVerdict  # noqa: E402
from .model import CaseData, RunData  # noqa: E402

DPI = 100


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def thread_scaling(run: RunData) -> bytes | None:
    """MiB/s and blocks/s against threads, mean with 95 % CI error bars, one line per receive test
    and corpus."""
    lines: dict[str, list[tuple[int, CaseData]]] = {}
    for c in run.cases.values():
        if c.workload != "receive" or "threads" not in c.sweep or not c.passed:
            continue
        label = c.test + "".join(f" {k}={v}" for k, v in c.sweep.items() if k != "threads" and not isinstance(v, dict))
        lines.setdefault(label, []).append((int(c.sweep["threads"]), c))
    lines = {k: sorted(v, key=lambda x: x[0]) for k, v in lines.items() if len(v) >= 2}
    if not lines:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, fig_name, unit in ((axes[0], "throughput", "MiB/s"), (axes[1], "blocks", "blocks/s")):
        for label, pts in lines.items():
            xs, ys, err = [], [], []
            for th, c in pts:
                s = summarise(c.values(fig_name))
                if s.n == 0:
                    continue
                xs.append(th)
                ys.append(s.mean)
                err.append(0 if s.n < 2 else (s.ci_high - s.mean))
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=4, label=label)
        ax.set_xlabel("concurrent receives (threads)")
        ax.set_ylabel(f"{fig_name} ({unit})")
        ax.set_xscale("log", base=2)
        ticks = sorted({th for pts in lines.values() for th, _c in pts})
        ax.set_xticks(ticks, [str(x) for x in ticks])
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"receive thread scaling — {run.label} (mean, 95 % CI)")
    return _png(fig)


def steady_chart(series_path: Path, verdict: SteadyRecord | None, title: str | None = None) -> bytes | None:
    """Small multiples: one panel per metric in its own units, the workload's headline first and full
    width; every sample drawn thin, the samples the verdict judged (at its time scale) as the bold
    line; each metric's steady stretch shaded, its change points as dotted lines, the judged window
    as a grey band, and the verdict in the title."""
    try:
        raw = read_series(str(series_path))
    except Exception:  # noqa: BLE001 - a missing or torn series has no picture
        return None
    samples = [s for s in raw if not is_marker(s)]        # drawn: every sample, the measurement too
    if len(samples) < 3:
        return None
    headline = verdict.headline if verdict is not None else None
    width = (verdict.timescale or {}).get("span_s") if verdict is not None else None
    if verdict is not None:                                  # decided: on what the runner decided on
        v, judged = redecide(raw, verdict)
    else:
        judged = timescale.running(decision_samples(raw), None)
        v = decide(judged, Criteria(), headline=None)
    names = sorted({n for s in samples for n in s["metrics"]
                    if any(isinstance(x["metrics"].get(n), (int, float)) for x in samples)})
    if headline in names:
        names.remove(headline)
        names.insert(0, headline)
    if not names:
        return None
    rest = names[1:] if headline else names
    rows = (1 if headline else 0) + (len(rest) + 1) // 2
    fig = plt.figure(figsize=(11, 2.3 * rows + 0.6))
    grid = fig.add_gridspec(rows, 2, hspace=0.55, wspace=0.22)
    places = ([grid[0, :]] if headline else []) + [grid[(1 if headline else 0) + i // 2, i % 2]
                                                      for i in range(len(rest))]
    tj = [s["t"] for s in judged]
    for name, place in zip(names, places):
        _steady_panel(fig.add_subplot(place), name, samples, judged, v.metrics.get(name), name == headline)
    scale = f", judged on {width:g} s bins" if width else ""
    verdict_text = (f"steady from {v.onset and tj[v.onset - 1]:.1f} s" if v.steady and v.onset
                    else f"not steady ({v.note})" if v.note else "not steady")
    fig.suptitle(title or f"{series_path.name} — {verdict_text}{scale}  "
                          f"[grey band: judged; green: steady stretch; red dotted: change points]", fontsize=10)
    fig.supxlabel("time since the case started (s)", fontsize=9)
    return _png(fig)


def _steady_panel(ax: Any, name: str, samples: list[dict[str, Any]], judged: list[dict[str, Any]], m: Any,
                  headline: bool) -> None:
    """One metric's panel of the steady chart: every sample thin, the judged ones bold, the judged
    window grey, the metric's steady stretch green, its change points dotted red."""
    def points(of: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
        have = [s for s in of if isinstance(s["metrics"].get(name), (int, float))]
        return [s["t"] for s in have], [s["metrics"][name] for s in have]
    tj = [s["t"] for s in judged]
    xs, ys = points(samples)
    ax.plot(xs, ys, color="0.6", lw=0.8, marker=".", ms=3)
    ax.plot(*points(judged), color="tab:blue", lw=2)
    if tj:
        ax.axvspan(tj[0], tj[-1], color="0.85", alpha=0.5, zorder=0)
    if m is not None and m.steady and m.onset is not None and m.onset <= len(tj):
        ax.axvspan(tj[m.onset - 1], tj[-1], color="tab:green", alpha=0.18, zorder=0)
    for cp in (m.changepoints if m is not None else []):
        if 0 <= cp < len(tj):
            ax.axvline(tj[cp], color="tab:red", ls=":", lw=1.2)
    state = "—" if m is None else (m.kind or ("steady" if m.steady else "not steady"))
    star = " ★ headline (veto)" if headline else ""
    ax.set_title(f"{name}{star}: {state}", fontsize=9, loc="left")
    ax.set_ylabel(METRIC_UNITS.get(name, ""), fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    if ys and min(ys) >= 0:
        ax.set_ylim(bottom=0)


def rounds_chart(case: str, unit: str, verdict: dict[str, Any]) -> bytes | None:
    """The verdict of a case across its iterations as it was made: the window's iteration figures,
    the band their spread was judged against (the range of the iterations kept, within R of their
    mean), the line whose change was judged, and the iteration set aside; the verdict as title."""
    its, ys = verdict.get("window") or [], verdict.get("values") or []
    if len(its) < 2 or len(its) != len(ys):
        return None
    apart = verdict.get("apart")
    kept = [y for i, y in zip(its, ys) if i != apart]
    fig, ax = plt.subplots(figsize=(8, 3.2))
    lo, hi = min(kept), max(kept)
    ax.axhspan(lo, hi, color="#2ca02c", alpha=0.15, label=f"spread of the kept iterations ({verdict.get('range_pct') or 0:.1f} %)")
    ax.plot([i for i in its if i != apart], kept, "o", color="#1f77b4", label=verdict.get("figure") or "figure")
    if apart is not None:
        ax.plot([apart], [ys[its.index(apart)]], "x", ms=9, mew=2, color="#d62728", label=f"iteration {apart} set apart")
    line = verdict.get("line")
    if line and len(line) == 2:
        # a steady verdict's line is one its test did not find significant: the label says so, so that
        # the title ("steady") and a steep-looking line agree
        ax.plot([its[0], its[-1]], line, "--", color="#ff7f0e", label=line_label(verdict))
    ax.set_xticks(its)
    ax.set_xlabel("iteration")
    ax.set_ylabel(unit)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    word = CaseSteady.from_dict(verdict).word
    ax.set_title(f"{case}: {word} across iterations ({verdict.get('rule') or 'rounds'} rule): {verdict.get('why')}",
                 fontsize=8, loc="left")
    return _png(fig)


def line_label(verdict: dict[str, Any]) -> str:
    """The fitted line's legend in the steady chart: what the verdict made of it, so that the title
    and a steep-looking line agree (a steady verdict's line is one its test found within the
    tolerance; a can't-tell line is a drift found or none found, as the verdict says)."""
    cv = CaseSteady.from_dict(verdict)
    judged = {"steady": "a drift beyond the tolerance ruled out", "not steady": "the trend found",
              "can't tell": ("a drift found, which may pass the tolerance" if cv.drift_found
                             else "no trend found, none ruled out")}.get(cv.word, "not judged")
    return f"fitted line {verdict.get('slope_pct') or 0:+.1f} % across the window ({judged})"


def histograms(named: list[tuple[str, dict[str, dict[str, Any]]]]) -> bytes | None:
    """Latency histograms per I/O class; several runs side by side (A/B) as grouped bars."""
    classes = sorted({k for _label, hs in named for k in hs})
    if not classes:
        return None
    fig, axes = plt.subplots(len(classes), 1, figsize=(11, 2.8 * len(classes)), squeeze=False)
    width = 0.8 / max(1, len(named))
    for ax, cls in zip(axes[:, 0], classes):
        buckets = sorted({b for _l, hs in named if cls in hs for b, _c in hs[cls]["buckets"]})
        pos = {b: i for i, b in enumerate(buckets)}
        for k, (label, hs) in enumerate(named):
            if cls not in hs:
                continue
            h = hs[cls]
            total = sum(c for _b, c in h["buckets"]) or 1
            ax.bar([pos[b] + k * width for b, _c in h["buckets"]], [100 * c / total for _b, c in h["buckets"]],
                   width=width, label=label)
        ax.set_xticks([i + width * (len(named) - 1) / 2 for i in range(len(buckets))])
        ax.set_xticklabels([str(b) for b in buckets], rotation=45, fontsize=8)
        title = next(hs[cls].get("title", cls) for _l, hs in named if cls in hs)
        unit = next(hs[cls].get("unit", "us") for _l, hs in named if cls in hs)
        ax.set_title(f"{title} latency", fontsize=10)
        ax.set_ylabel("% of I/Os")
        ax.set_xlabel(f"latency bucket ({unit}, power of two)")
        ax.grid(alpha=0.3, axis="y")
        if len(named) > 1:
            ax.legend(fontsize=8)
    fig.tight_layout()
    return _png(fig)


def ab_bars(changes: list[Any]) -> bytes | None:
    """A/B: change % per case and figure with its 95 % CI; colour by verdict."""
    rows = [c for c in changes if (c.ci_pct is not None or c.p is not None) and c.verdict != ChangeVerdict.NONE]
    if not rows:
        return None
    rows = rows[:40]
    colour = {ChangeVerdict.BETTER: "tab:green", ChangeVerdict.WORSE: "tab:red"}
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(rows) + 1.2))
    ys = range(len(rows))
    ax.barh(list(ys), [c.change_pct for c in rows], color=[colour.get(c.verdict, "tab:grey") for c in rows])
    for y, c in zip(ys, rows):
        if c.ci_pct is not None:
            ax.plot(list(c.ci_pct), [y, y], color="black", lw=1.5)
    ax.set_yticks(list(ys))
    ax.set_yticklabels([f"{c.case}: {c.figure}" for c in rows], fontsize=8)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xlabel("change of the median, new vs base (%), with 95 % CI (green better, red worse, grey ~)")
    ax.invert_yaxis()
    ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    return _png(fig)


def series_for(run: RunData) -> list[tuple[Path, SteadyRecord | None, str | None]]:
    """Each case's series of its first counted iteration (with its recorded verdict), and a title
    that agrees with the verdict that counts: an iteration too short to judge within says that the
    case was judged across its iterations, and how (None: the iteration's own verdict counts)."""
    out = []
    for c in run.cases.values():
        for r in sorted(c.records, key=lambda r: r.iteration):
            if r.series:
                title = None
                if r.steady is not None and not r.steady.judged:
                    stored = run.run.verdicts.get(c.case) or {}
                    word = CaseSteady.from_dict(stored).word
                    title = (f"{c.case}, iteration {r.iteration}: too short to judge within; the case is judged "
                             f"across its iterations: {word}" + (f" ({stored['why']})" if stored.get("why") else ""))
                out.append((run.path / r.series, r.steady, title))
                break
    return out


def trend_chart(series: Any) -> bytes | None:
    """A figure over runs (history.analysis.Series): each run's median, the mean of each segment
    between change points as a step, every change point marked with its size and what changed."""
    pts = series.points
    if len(pts) < 2:
        return None
    x = list(range(1, len(pts) + 1))
    y = [p.value for p in pts]
    fig, ax = plt.subplots(figsize=(11, 3.6))
    ax.plot(x, y, "o-", ms=4, lw=1, color="#1f77b4", label="median of the run's iterations")
    bounds = [0, *[c.index for c in series.change_points], len(pts)]
    for lo, hi in zip(bounds, bounds[1:]):
        m = sum(y[lo:hi]) / (hi - lo)
        ax.hlines(m, lo + 0.6, hi + 0.4, colors="#ff7f0e", lw=2)
    # run annotations: where ZFS, the kernel, the host, the runfile or its -D values changed
    for i, what in getattr(series, "annotations", []):
        ax.axvline(i + 0.5, color="#7f7f7f", ls=":", lw=1)
        ax.annotate(what[:50], (i + 0.55, 0), fontsize=7, color="#555555", rotation=90, va="bottom")
    for i in getattr(series, "outliers", []):
        ax.plot([i + 1], [y[i]], "x", color="#7f7f7f", ms=9, mew=2)
    for c in series.change_points:
        ax.axvline(c.index + 0.5, color="#7f7f7f" if c.accepted else "#d62728" if c.verdict == ChangeVerdict.WORSE else "#2ca02c",
                   ls="--", lw=1)
        note = f"{c.change_pct:+.0f} % (p {c.p:.3f})"
        if c.what_changed:
            note += "\n" + "; ".join(c.what_changed)[:60]
        if c.accepted:
            note += "\naccepted: " + c.accepted[:50]
        ax.annotate(note, (c.index + 0.6, max(y)), fontsize=8, va="top")
    ax.set_xlabel("run (oldest first)")
    ax.set_ylabel(f"{series.figure} ({series.unit})")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title(f"{series.case} — {series.figure}: {len(pts)} runs, {len(series.change_points)} change point(s)")
    return _png(fig)
