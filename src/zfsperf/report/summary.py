"""`zfsperf report`: per case and figure over iterations — n, mean, median, stddev, CV %, min, max,
95 % CI and outliers in plain words — plus the fio class tables and histograms and the steady-state
verdicts. One typed structure (`RunReport` of `CaseReport`s of `FigureRow`s) that every output
format renders; `to_json()` is the `--format json` form."""

from __future__ import annotations

import re

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..metrics import counts, cpucost, crosscheck, profile, taskq, txgtable, zil
from ..workloads import latsearch

from ..steady.rounds import case_verdict
from ..workloads import DURATIONS, SUMMARY_FIGURES, figure_direction, headline
from .model import CaseData, RunData
from ..metrics.quantize import quantize
from ..results.stats import summarise

FIO_CLASS_ORDER = ("Write", "Delete", "Read", "Flush")


@dataclass(frozen=True)
class FigureRow:
    """One figure of a case over its passed iterations."""
    figure: str
    unit: str
    n: int
    mean: float | None
    median: float | None
    stddev: float | None
    cv_pct: float | None
    min: float | None
    max: float | None
    ci95: list[float | None]             # [low, high] of the mean's 95 % t interval
    values: list[float]                  # per iteration, in order
    iterations: list[int]                # the iteration each value is of
    outliers: list[int]                  # iterations the median/MAD rule flags


@dataclass(frozen=True)
class CaseReport:
    """One case: its statuses, figures and the fio class table, histograms, steady-state summary
    and cross-checks (each of those a JSON-able dict of its own), and its errors."""
    test: str
    case: str
    workload: str
    sweep: dict[str, Any]
    statuses: dict[str, int]
    figures: list[FigureRow]
    class_table: list[dict[str, Any]]
    histograms: dict[str, dict[str, Any]]
    steady: dict[str, Any] | None
    cross_checks: list[dict[str, Any]]
    errors: list[str]
    txgs: dict[str, Any] | None = None   # the per-txg table over the iterations (metrics/txgtable.py)
    taskqs: dict[str, Any] | None = None  # the I/O taskqs' queues over the iterations (metrics/taskq.py)
    zil: dict[str, Any] | None = None     # the ZIL's counters, mean per iteration (metrics/zil.py)
    counts: dict[str, Any] | None = None  # exact counts over the iterations (metrics/counts.py)
    cpu: dict[str, Any] | None = None     # where the CPU figures' seconds came from (metrics/cpucost.py)
    latency_search: dict[str, Any] | None = None   # a latency-target search's brackets (workloads/latsearch.py)
    profile: dict[str, Any] | None = None  # --profile: samples, the case's folded file, top shares (metrics/profile.py)


@dataclass(frozen=True)
class RunReport:
    """One results directory: how it was obtained (target, host, runfile, version, start), its cases
    and the warnings said about them."""
    path: str
    target: dict[str, Any]
    host: Any
    runfile: str | None
    zfsperf_version: str | None
    start: Any
    interrupted: Any
    cases: list[CaseReport]
    warnings: list[str]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _num(x: float) -> float | None:
    return None if x != x else float(x)


def figure_rows(case: CaseData) -> list[FigureRow]:
    rows = []
    for name in case.figure_names():
        vals = case.values(name)
        s = case.summary(name)
        its = [r.iteration for r in case.passed if name in r.figures]
        rows.append(FigureRow(figure=name, unit=case.unit(name), n=s.n, mean=_num(s.mean), median=_num(s.median),
                              stddev=_num(s.stddev), cv_pct=_num(s.cv), min=_num(s.min), max=_num(s.max),
                              ci95=[_num(s.ci_low), _num(s.ci_high)], values=vals, iterations=its,
                              outliers=[its[i] for i in s.outliers]))
    return rows


# An outlier is worth a warning only when it is far in absolute terms too: iterations inside a run
# here agree to 1-3 % (docs/guide.md), and a default run's median/MAD rule flagged nine 1-2 %
# deviations, burying the real ones. hyperfine likewise warns only on a substantial deviation.
OUTLIER_FLOOR_PCT = 10.0


def outlier_warnings(case: CaseData, rows: list[FigureRow]) -> list[str]:
    """hyperfine-style warnings in plain words (median/MAD rule, modified z-score > 3.5), only for
    the figures a case is judged by (its workload's summary figures, no duration) and only when the
    iteration is at least OUTLIER_FLOOR_PCT % off the median; never on a context figure (direction 0:
    bytes, txgs)."""
    judged = [f for f in SUMMARY_FIGURES.get(case.workload, []) if f not in DURATIONS]
    out = []
    for row in rows:
        if (judged and row.figure not in judged) or figure_direction(case.workload, row.figure, row.unit) == 0:
            continue                        # a context figure (bytes, txgs ...): shown, never warned on
        for it in row.outliers:
            v = row.values[row.iterations.index(it)]
            med = row.median
            if not med or abs(v - med) < OUTLIER_FLOOR_PCT / 100 * abs(med):
                continue
            out.append(f"{case.case}: iteration {it} {row.figure} = {v:.4g} {row.unit} is an outlier "
                       f"(far from the median {med:.4g}); a noisy neighbour, a cold cache or a txg "
                       "burst can cause this — consider more iterations or a warm-up")
    return out


def class_table(case: CaseData) -> list[dict[str, Any]]:
    """Seed 003's table averaged over iterations: class | avg latency | stddev | iops | throughput."""
    acc: dict[str, list[dict[str, Any]]] = {}
    for r in case.passed:
        for row in r.class_table or []:
            acc.setdefault(row["class"], []).append(row)
    out = []
    for cls in FIO_CLASS_ORDER:
        rows = acc.get(cls)
        if not rows:
            continue
        n = len(rows)
        out.append({"class": cls, "latency": rows[0].get("latency", "completion"), **{k: sum(x[k] for x in rows) / n
                                    for k in ("avg_latency_us", "stddev_us", "iops", "throughput_kib_s")}})
    return out


def merged_histograms(case: CaseData) -> dict[str, dict[str, Any]]:
    """Each class's quantize histogram summed over the case's iterations."""
    out: dict[str, dict[str, Any]] = {}
    for r in case.passed:
        for key, h in (r.histograms or {}).items():
            o = out.setdefault(key, {"title": h.get("title", key), "unit": h.get("unit", "us"), "counts": {}})
            for b, c in h.get("buckets") or []:
                o["counts"][b] = o["counts"].get(b, 0) + c
    for o in out.values():
        counts = o.pop("counts")
        o["buckets"] = quantize(((b if b else 0.5, c) for b, c in counts.items()))
        o["count"] = sum(counts.values())
    return out


def case_steady(case: CaseData, stored: dict[str, Any] | None) -> dict[str, Any] | None:
    """The case's verdict across its iterations: the one the run stored (run.json "verdicts") and,
    when today's rule judges its records differently, today's beside it; a run made before verdicts
    were stored is judged by today's rule and says so."""
    from ..steady.rounds import CaseSteady
    cv = case_verdict(case.records, headline(case.workload))
    today = None if cv is None else cv.as_dict() | {"text": cv.short()}
    if stored is None:
        return None if today is None else today | {"stored": False}
    out = dict(stored) | {"text": CaseSteady.from_dict(stored).short(), "stored": True}
    if today is not None and (today["steady"] != stored.get("steady") or today["why"] != stored.get("why")):
        out["today"] = today
    return out


def timescale_words(scales: list[dict[str, Any]]) -> list[str]:
    """The time scales a case's iterations were judged at, one phrase per kind of cycle with the
    range of its length: "a receive round, 0.44-0.49 s", not one phrase per iteration."""
    kinds: dict[str, list[float]] = {}
    for x in scales:
        m = re.match(r"^(.*?) \((\d+(?:\.\d+)?) s\b", str(x.get("cycle")))
        if m:
            kinds.setdefault(m.group(1), []).append(float(m.group(2)))
        else:
            kinds.setdefault(str(x.get("cycle")), [])
    out = []
    for kind, secs in sorted(kinds.items()):
        if not secs:
            out.append(kind)
        else:
            lo, hi = min(secs), max(secs)
            out.append(f"{kind}, {lo:.2g} s" if lo == hi else f"{kind}, {lo:.2g}-{hi:.2g} s")
    return out + [f"judged on {part}" for part in sorted({str(x["part"]) for x in scales if x.get("part")})]


def steady_summary(case: CaseData, stored: dict[str, Any] | None = None) -> dict[str, Any] | None:
    vs = case.steady()
    if not vs:
        return None
    short = [v for v in vs if not v.judged]                   # too short to judge within
    judged = [v for v in vs if v.judged]
    steady = [v for v in judged if v.steady]
    tts = [v.time_to_steady for v in steady if v.time_to_steady is not None]
    failed: dict[str, int] = {}
    for v in judged:
        for m in v.failed:
            failed[m] = failed.get(m, 0) + 1
    tt = _time_to_steady(tts, len(judged))
    verdict = case_steady(case, stored)
    scales = timescale_words([x.timescale for x in vs if x.timescale])
    return {"mode": vs[0].mode, "steady": len(steady), "of": len(judged), "too_short": len(short),
            "window": vs[0].window, "mean_time_to_steady_s": tt["mean_s"] if tt else None,
            "time_to_steady": tt,
            "failed_metrics": failed, "notes": sorted({v.note for v in judged if v.note}),
            "verdict": verdict, "timescales": scales}


def _time_to_steady(tts: list[float], judged: int) -> dict[str, Any] | None:
    """Time to steady over the iterations that reached it (a gated test repeated): mean, 95 % t
    interval of the mean (from 2 iterations on), n, and how many judged iterations never reached it."""
    if not tts:
        return None
    s = summarise(tts)
    ci = [s.ci_low, s.ci_high] if s.n >= 2 else None
    return {"mean_s": s.mean, "ci_s": ci, "n": s.n, "never": judged - s.n}


def cross_check_summary(case: CaseData) -> list[dict[str, Any]]:
    """Each cross-check of the case over its passed iterations: the largest deviation seen and how
    many iterations agreed (of those judged)."""
    by: dict[str, list[crosscheck.CrossCheck]] = {}
    for r in case.passed:
        for c in r.cross_checks or []:
            by.setdefault(c.name, []).append(c)
    out = []
    for name, cs in by.items():
        devs = [c.deviation_pct for c in cs if c.deviation_pct is not None]
        judged = [c for c in cs if c.agrees is not None]
        out.append({"name": name, "unit": cs[0].unit, "margin_pct": cs[0].margin_pct,
                    "max_deviation": max(devs, key=abs) if devs else None, "iterations": len(cs),
                    "judged": len(judged), "agreed": sum(1 for c in judged if c.agrees), "how": cs[0].how})
    return out


def details(cases: list[CaseData], key: str) -> list[dict[str, Any]]:
    """What the cases' passed iterations recorded under `key` beside their figures (txgs, taskqs, zil, counts)."""
    return [r.detail[key] for c in cases for r in c.passed if r.detail.get(key)]


def cut_short(records: list) -> str | None:
    """One line for a case whose counted iterations ended early (the pool would not hold another
    round): how many of how many, and the first one's reason; its figures are rates over the
    work each did, and the line says the iterations did unequal work."""
    short = [r for r in records if r.iteration >= 1 and (r.detail or {}).get("duration_note")]
    if not short:
        return None
    counted = sum(1 for r in records if r.iteration >= 1)
    return (f"{short[0].case}: {len(short)} of {counted} iterations cut short (iteration "
            f"{', '.join(str(r.iteration) for r in short)}): {short[0].detail['duration_note']}; its figures are "
            "rates over unequal work")


def build(run: RunData) -> RunReport:
    cases = []
    warnings = []
    for c in run.cases.values():
        rows = figure_rows(c)
        warnings += outlier_warnings(c, rows)
        warnings += [f"{c.case}: iteration {r.iteration}: cross-check disagrees: {w}"
                     for r in c.records for w in crosscheck.summary(r.cross_checks or [])]
        short = cut_short(c.records)
        if short:
            warnings.append(short)
        cases.append(CaseReport(test=c.test, case=c.case, workload=c.workload, sweep=c.sweep, statuses=c.statuses(),
                                figures=rows, class_table=class_table(c), histograms=merged_histograms(c),
                                steady=steady_summary(c, run.run.verdicts.get(c.case)),
                                cross_checks=cross_check_summary(c),
                                errors=sorted({r.error for r in c.records if r.error}),
                                txgs=txgtable.merged(details([c], "txgs")), taskqs=taskq.merged(details([c], "taskqs")),
                                zil=zil.merged(details([c], "zil")), counts=counts.merged(details([c], "counts")),
                                cpu=cpucost.merged(details([c], "cpu")),
                                latency_search=latsearch.merged(details([c], "latency_search")),
                                profile=profile.case_summary(run.path, details([c], "profile"))))
    r = run.run
    warnings += [str(c) for c in r.target.get("caveats") or []]    # how the figures were obtained, said
    return RunReport(path=str(run.path), target=r.target, host=r.host, runfile=r.runfile.get("source"),
                     zfsperf_version=r.zfsperf_version, start=r.start, interrupted=r.interrupted, cases=cases,
                     warnings=warnings)
