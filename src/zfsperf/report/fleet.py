"""Many machines' runs of one A/B combined (issue 74, 3): is this change faster on our machines, and
on which is it not?

Each host's own paired verdict first: compare's, within that host's run (A and B are never taken
from two hosts: the pairs are its blocks, turns or duet iterations). Then the hosts' changes are
combined as a random-effects meta-analysis of their log ratios (statsmodels' combine_effects with
the Paule-Mandel between-host variance, which stays at 0 where the hosts agree better than their
own noise says -- its DerSimonian-Laird there goes negative and weights nonsense; each host weighted
by its own pairs' spread): the combined change with its 95 % interval, the
between-host spread (τ, as a change in %; I², the share of the hosts' differences that is not
sampling noise) and the interval a new machine of the fleet would see (the prediction interval,
t with k - 2 degrees of freedom; needs 3 hosts). The same per machine class (CPU model and count,
memory, the target's ZFS: derived from run.json, or named by the caller), so that a change that
helps one class and hurts another is seen as such. A host whose run has no such pair (it failed,
or ran another runfile) is listed with why, never dropped silently."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..units import ChangeVerdict, unit_direction
from ..workloads import headline
from .abstats import ALPHA
from .compare import verdict_of
from .comparison import FigureChange
from .model import RunData, load_run


@dataclass
class Host:
    name: str
    path: Path
    klass: str
    change: FigureChange | None = None      # its own paired verdict on the figure
    why: str | None = None                  # why it has none

    @property
    def effect(self) -> tuple[float, float] | None:
        """Its log ratio and that log ratio's variance (the pairs' sd² / pairs), or None."""
        ch = self.change
        if ch is None or ch.pair_sd is None or not ch.pairs or ch.change_pct <= -100:
            return None
        return math.log1p(ch.change_pct / 100), (ch.pair_sd ** 2) / ch.pairs


@dataclass
class Combined:
    """The hosts of one group (the fleet, or a class) combined."""
    label: str
    hosts: int
    change_pct: float
    ci_pct: tuple[float, float]
    p: float
    verdict: ChangeVerdict
    tau_pct: float | None = None                        # between hosts (random effects), as a change
    i2: float | None = None                             # share of the spread that is between hosts
    predict_pct: tuple[float, float] | None = None      # what a new host of the group would see

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("label", "hosts", "change_pct", "ci_pct", "p", "verdict", "tau_pct",
                                              "i2", "predict_pct")}


@dataclass
class FleetComparison:
    case: str
    figure: str
    unit: str
    hosts: list[Host]
    fleet: Combined | None
    classes: list[Combined] = field(default_factory=list)
    between: dict[str, Any] | None = None       # do the classes differ (classes_differ)

    def as_dict(self) -> dict[str, Any]:
        return {"case": self.case, "figure": self.figure, "unit": self.unit, "between_classes": self.between,
                "hosts": [{"name": h.name, "path": str(h.path), "class": h.klass, "why": h.why,
                           "change": h.change.as_dict() if h.change is not None else None} for h in self.hosts],
                "fleet": self.fleet.as_dict() if self.fleet is not None else None,
                "classes": [c.as_dict() for c in self.classes]}


def host_change(run: RunData, case: str | None, figure: str | None) -> tuple[FigureChange | None, str | None]:
    """The host's own paired change of the figure (the case's headline when none is named), or
    why it has none."""
    from .compare import compare_within
    from .pairing import ab_pairs
    pairs = ab_pairs(run)
    if not pairs:
        return None, "its run has no A/B pair (turns, a duet or interleaved blocks)"
    cmp = compare_within(run, pairs)
    chosen = [ch for ch in cmp.changes if (case is None or ch.case.split(" → ")[0].split()[0] == case)
              and ch.figure == (figure or headline(cmp.workload_of(ch.case)))]
    if not chosen:
        return None, f"its run has no {figure or 'headline'} figure" + (f" for {case}" if case else "")
    if len(chosen) > 1:
        raise InputError(f"{run.path}: {len(chosen)} A/B pairs ({', '.join(c.case for c in chosen)}): "
                         "name the test with --case", field="--case")
    ch = chosen[0]
    if ch.pairs is None:
        return ch, "its sides were not paired (compared as separate samples)"
    return ch, None


def combine(label: str, hosts: list[Host], unit: str) -> Combined | None:
    """The hosts' log ratios combined (random effects; one host: its own change and interval)."""
    eff = [(h.effect, h) for h in hosts if h.effect is not None]
    if not eff:
        return None
    if len(eff) == 1:                      # one host: its own verdict
        ch = eff[0][1].change
        assert ch is not None
        return Combined(label, 1, ch.change_pct, ch.ci_pct or (math.nan, math.nan), ch.p if ch.p is not None else 1.0,
                        ch.verdict)
    return random_effects(label, [e[0] for e in eff], unit)


def random_effects(label: str, effects: list[tuple[float, float]], unit: str) -> Combined:
    """Log ratios and their variances, one a host, combined: statsmodels' combine_effects with the
    Paule-Mandel between-host variance; one host: its own normal interval."""
    from scipy import stats
    import numpy as np
    way = unit_direction(unit)
    z = stats.norm.ppf(1 - ALPHA / 2)
    if len(effects) == 1:
        mean, se = effects[0][0], math.sqrt(max(effects[0][1], 0.0))
        p = float(2 * stats.norm.sf(abs(mean / se))) if se > 0 else (0.0 if mean else 1.0)
        change = math.expm1(mean) * 100
        return Combined(label, 1, change, (math.expm1(mean - z * se) * 100, math.expm1(mean + z * se) * 100), p,
                        verdict_of(change, p, way, 0.0))
    from statsmodels.stats.meta_analysis import combine_effects
    ys = np.array([e[0] for e in effects])
    vs = np.array([max(e[1], 1e-12) for e in effects])
    import warnings
    with warnings.catch_warnings():          # its own I² divides by 0 for hosts that agree exactly (ours: below)
        warnings.simplefilter("ignore", RuntimeWarning)
        res = combine_effects(ys, vs, method_re="iterated")
    mean, se = float(res.mean_effect_re), float(res.sd_eff_w_re)
    p = float(2 * stats.norm.sf(abs(mean / se))) if se > 0 else (0.0 if mean else 1.0)
    tau2 = max(float(res.tau2), 0.0)
    k = len(effects)
    pred = None
    if k >= 3:
        t = stats.t.ppf(1 - ALPHA / 2, k - 2)
        half = t * math.sqrt(tau2 + se ** 2)
        pred = (math.expm1(mean - half) * 100, math.expm1(mean + half) * 100)
    change = math.expm1(mean) * 100
    verdict = verdict_of(change, p, way, 0.0)     # compare's rule: significant, then which way
    q = float(res.q)                       # Cochran's Q: I² = (Q - df) / Q, 0 where Q <= df
    i2 = max(0.0, (q - (k - 1)) / q) if q > 0 else 0.0
    return Combined(label, k, change, (math.expm1(mean - z * se) * 100, math.expm1(mean + z * se) * 100), p, verdict,
                    tau_pct=math.expm1(math.sqrt(tau2)) * 100, i2=i2,
                    predict_pct=pred)


def members(paths: list[Path]) -> list[tuple[str | None, Path | None, str | None]]:
    """The hosts of the directories given: a fleet's directory (fleet.json, `fleet run`) stands for
    its hosts, by inventory name, a host that did not run named with why; any other directory is
    one host's results directory. Each (name or None, results directory or None, why not)."""
    out: list[tuple[str | None, Path | None, str | None]] = []
    for p in paths:
        rec_path = p / "fleet.json"
        if not rec_path.is_file():
            out.append((None, p, None))
            continue
        try:
            rec = json.loads(rec_path.read_text())
            hosts = rec["hosts"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise InputError(f"{rec_path}: not a fleet record ({e})", field="RUN") from None
        for name, e in hosts.items():
            if e.get("status") == "ok" and e.get("dir"):
                out.append((name, p / e["dir"], None))
            else:
                why = e.get("why") or "no results"
                out.append((name, None, f"{e.get('status')}" + (f" at {e['task']!r}" if e.get("task") else "")
                            + f": {why}"))
    return out


def compare_fleet(paths: list[Path], case: str | None = None, figure: str | None = None,
                  classes: dict[str, str] | None = None) -> FleetComparison:
    """Each results directory a host's run of one A/B, or a fleet's directory (its hosts); classes:
    host name -> class, over what run.json says."""
    found = members(paths)
    if len(found) < 2:
        raise InputError("a fleet comparison takes two or more hosts' results directories (or a fleet's)",
                         field="RUN")
    hosts: list[Host] = []
    seen: dict[str, int] = {}
    unit, fig, case_name = "", figure or "", case or ""
    for given, p, not_run in found:
        if p is None:
            assert given is not None
            hosts.append(Host(given, Path("-"), (classes or {}).get(given) or "-", None, not_run))
            continue
        run = load_run(p)
        name = given or str((run.run.fleet or {}).get("host") or run.run.host or run.path.name)
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:                    # one machine's two runs: told apart by their directories
            name = f"{name} ({run.path.name})"
        ch, why = host_change(run, case, figure)
        if ch is not None:
            unit, fig, case_name = ch.unit, ch.figure, case_name or ch.case
        hosts.append(Host(name, p, (classes or {}).get(name) or run.run.class_label(), ch if why is None else None,
                          why))
    if not fig:
        raise InputError("no host's run has an A/B pair to combine: "
                         + "; ".join(f"{h.name}: {h.why}" for h in hosts), field="RUN")
    out = FleetComparison(case_name, fig, unit, hosts, combine("fleet", hosts, unit))
    by_class: dict[str, list[Host]] = {}
    for h in hosts:
        if h.change is not None:
            by_class.setdefault(h.klass, []).append(h)
    if len(by_class) > 1:
        out.classes = [c for k, hs in sorted(by_class.items()) if (c := combine(k, hs, unit)) is not None]
        out.between = classes_differ(out.classes, unit)
    return out


def classes_differ(classes: list[Combined], unit: str) -> dict[str, Any] | None:
    """Whether the classes' changes differ more than their own intervals allow: the subgroup test
    of a meta-analysis (Cochran's Q between the classes' combined log ratios, each weighted by its
    interval, chi² with classes - 1 degrees of freedom), and the class that fared worst (the least
    change where higher is better, the most where lower is). None: fewer than two classes with an
    interval."""
    from scipy import stats
    z = stats.norm.ppf(1 - ALPHA / 2)
    pts = []
    for c in classes:
        lo, hi = c.ci_pct
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo <= -100 or c.change_pct <= -100:
            continue
        se = (math.log1p(hi / 100) - math.log1p(lo / 100)) / (2 * z)
        if se > 0:
            pts.append((c, math.log1p(c.change_pct / 100), 1 / se ** 2))
    if len(pts) < 2:
        return None
    mean = sum(w * m for _c, m, w in pts) / sum(w for _c, _m, w in pts)
    q = sum(w * (m - mean) ** 2 for _c, m, w in pts)
    df = len(pts) - 1
    p = float(stats.chi2.sf(q, df))
    way = unit_direction(unit) or 1
    worst = min(pts, key=lambda t: way * t[1])[0]
    return {"q": q, "df": df, "p": p, "differ": p < ALPHA, "worst": worst.label, "worst_change_pct": worst.change_pct}


def text(fc: FleetComparison) -> str:
    """The terminal's view: each host's own verdict, then the fleet's and each class's."""
    def pct(x: tuple[float, float] | None) -> str:
        return "" if x is None else f"[{x[0]:+.1f} … {x[1]:+.1f} %]"
    lines = [f"{fc.case}, {fc.figure} ({fc.unit}): each host's own paired verdict, then combined"]
    for h in fc.hosts:
        if h.change is None:
            lines.append(f"  {h.name:<24} no verdict: {h.why}")
            continue
        ch = h.change
        lines.append(f"  {h.name:<24} {ch.change_pct:+6.1f} % {pct(ch.ci_pct)}  {ch.verdict}  ({ch.pairs} pairs; "
                     f"{h.klass})")
    for c in ([fc.fleet] if fc.fleet else []) + fc.classes:
        head = "the fleet" if c.label == "fleet" else f"class {c.label}"
        spread = (f"; between hosts τ {c.tau_pct:.1f} %, I² {100 * c.i2:.0f} %" if c.tau_pct is not None and
                  c.i2 is not None else "")
        new = f"; a new host would see {pct(c.predict_pct)}" if c.predict_pct else ""
        lines.append(f"{head}: {c.change_pct:+.1f} % {pct(c.ci_pct)} over {c.hosts} host"
                     f"{'s' if c.hosts != 1 else ''}, {c.verdict} (p {c.p:.3g}){spread}{new}")
    if fc.between is not None:
        b = fc.between
        lines.append((f"the classes differ (Q {b['q']:.1f}, df {b['df']}, p {b['p']:.3g}): class {b['worst']} fares "
                      f"worst, {b['worst_change_pct']:+.1f} %") if b["differ"] else
                     f"the classes do not differ beyond their intervals (Q {b['q']:.1f}, df {b['df']}, p {b['p']:.3g})")
    return "\n".join(lines)


# ---------------------------------------------------------------- the history store, fleet-wide
@dataclass
class Step:
    """One case's figure from one fleet run to the next: each host's own change first (its mean
    against its own mean in the fleet before), then combined as `fleet compare` combines."""
    case: str
    figure: str
    unit: str
    before: str
    after: str
    hosts: list[tuple[str, str, float | None]]       # (host, class, change %; None: not in both fleets)
    fleet: Combined | None
    classes: list[Combined] = field(default_factory=list)
    between: dict[str, Any] | None = None       # do the classes differ (classes_differ)

    def as_dict(self) -> dict[str, Any]:
        return {"case": self.case, "figure": self.figure, "unit": self.unit, "between_classes": self.between, "before": self.before,
                "after": self.after, "hosts": [{"name": h, "class": k, "change_pct": c} for h, k, c in self.hosts],
                "fleet": self.fleet.as_dict() if self.fleet else None, "classes": [c.as_dict() for c in self.classes]}


def trend(rows: list[dict[str, Any]], figure: str | None = None) -> list[Step]:
    """Fleet-wide trends from the store's fleet runs (Store.fleet_figures): for each case and
    figure (the case's headline unless named), each pair of consecutive fleets; a host's change is
    the log ratio of its means, its variance the two means' (sd / mean)² / n (the delta method)."""
    series: dict[tuple[str, str], dict[str, dict[str, dict[str, Any]]]] = {}
    order: dict[str, float] = {}
    for r in rows:
        if figure is None and r["figure"] != headline(r["workload"] or ""):
            continue
        series.setdefault((r["case"], r["figure"]), {}).setdefault(r["fleet"], {})[r["host"]] = r
        order[r["fleet"]] = min(order.get(r["fleet"], math.inf), r["started"] or 0.0)
    steps: list[Step] = []
    for (case, fig), fleets in sorted(series.items()):
        ids = sorted(fleets, key=lambda f: order[f])
        for a, b in zip(ids, ids[1:]):
            effects: dict[str, tuple[float, float]] = {}
            hosts: list[tuple[str, str, float | None]] = []
            unit = ""
            for h in sorted(set(fleets[a]) | set(fleets[b])):
                ra, rb = fleets[a].get(h), fleets[b].get(h)
                klass = (rb or ra or {}).get("class") or "-"
                eff = _log_change(ra, rb)
                unit = (rb or ra or {}).get("unit") or unit
                hosts.append((h, klass, math.expm1(eff[0]) * 100 if eff else None))
                if eff:
                    effects[h] = eff
            if not effects:
                continue
            step = Step(case, fig, unit, a, b, hosts, random_effects("fleet", list(effects.values()), unit))
            by_class: dict[str, list[tuple[float, float]]] = {}
            for h, klass, _c in hosts:
                if h in effects:
                    by_class.setdefault(klass, []).append(effects[h])
            if len(by_class) > 1:
                step.classes = [random_effects(k, e, unit) for k, e in sorted(by_class.items())]
            steps.append(step)
    return steps


def _log_change(a: dict[str, Any] | None, b: dict[str, Any] | None) -> tuple[float, float] | None:
    if a is None or b is None:
        return None
    try:
        ma, mb, sa, sb, na, nb = (float(x) for x in (a["mean"], b["mean"], a["sd"], b["sd"], a["n"], b["n"]))
    except (TypeError, ValueError):
        return None
    if ma <= 0 or mb <= 0 or na < 2 or nb < 2:
        return None
    return math.log(mb / ma), (sa / ma) ** 2 / na + (sb / mb) ** 2 / nb


def trend_text(steps: list[Step], fleets: int) -> str:
    if not steps:
        return (f"{fleets} fleet run(s) in the store: a trend needs two of the same hosts" if fleets < 2 else
                "no host ran a case in two fleet runs")
    lines = []
    for st in steps:
        lines.append(f"{st.case}, {st.figure} ({st.unit}): fleet {st.before} → {st.after}")
        for h, k, c in st.hosts:
            lines.append(f"  {h:<24} " + (f"{c:+6.1f} %  ({k})" if c is not None else "not in both fleets"))
        for c in ([st.fleet] if st.fleet else []) + st.classes:
            head = "the fleet" if c.label == "fleet" else f"class {c.label}"
            ci = f"[{c.ci_pct[0]:+.1f} … {c.ci_pct[1]:+.1f} %]"
            spread = f"; τ {c.tau_pct:.1f} %, I² {100 * c.i2:.0f} %" if c.tau_pct is not None and c.i2 is not None else ""
            lines.append(f"{head}: {c.change_pct:+.1f} % {ci} over {c.hosts} host{'s' if c.hosts != 1 else ''}, "
                         f"{c.verdict} (p {c.p:.3g}){spread}")
    return "\n".join(lines)
