"""Identity agreement of two raters' tracks over the frames of one video (docs/video.md).

One rater is the *reference* (the role of the ground truth in tracking benchmarks), the other
is compared to it; every count here is a sum over frames, so that the counts of several videos
add up (:class:`PairCounts`, mergeable) and the scores are computed from the sums at the end.

* **HOTA** (Luiten et al., IJCV 2021), at each localisation threshold α = 0.05, 0.10, ..., 0.95:
  per frame, the boxes are matched by the Hungarian algorithm maximising
  ``A(i, j) * IoU(i, j)``, where ``A`` is the global alignment of the two tracks (their
  IoU-weighted co-occurrence over the video, as a Jaccard index of the tracks' frame counts);
  a matched pair counts as a true positive at α when its IoU >= α. DetA = TP / (TP + FN + FP),
  AssA = Σ_TP matches(i, j) / (frames(i) + frames(j) - matches(i, j)) / TP, LocA = mean IoU of
  the TPs, HOTA = sqrt(DetA · AssA); the reported scores are their means over the 19 α.
* **IDF1** (Ristani et al. 2016): one global one-to-one assignment of tracks maximising the
  frames where the two tracks' boxes overlap with IoU >= ``threshold``; IDF1 = 2 IDTP / (boxes
  of both raters).
* **Identity switches and fragmentations** (CLEAR-MOT, Bernardin & Stiefelhagen 2008): frame by
  frame, each reference track keeps the partner it was last matched to while their IoU stays
  >= ``threshold``; the rest are matched by the Hungarian algorithm on 1 - IoU. A switch is a
  reference track matched to a partner other than its last one; a fragmentation is a reference
  track going from matched to unmatched between its first and last matched frames (frames
  where it is absent do not count).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linear_sum_assignment

#: HOTA's localisation thresholds: 0.05, 0.10, ..., 0.95
HOTA_ALPHAS = np.arange(0.05, 0.99, 0.05)
_EPS = np.finfo(float).eps


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(len(a), len(b))`` IoU of ``(x, y, w, h)`` boxes (0 where either box has no area)."""
    ax0, ay0, ax1, ay1 = a[:, 0], a[:, 1], a[:, 0] + a[:, 2], a[:, 1] + a[:, 3]
    bx0, by0, bx1, by1 = b[:, 0], b[:, 1], b[:, 0] + b[:, 2], b[:, 1] + b[:, 3]
    iw = np.maximum(np.minimum(ax1[:, None], bx1[None]) - np.maximum(ax0[:, None], bx0[None]), 0)
    ih = np.maximum(np.minimum(ay1[:, None], by1[None]) - np.maximum(ay0[:, None], by0[None]), 0)
    inter = iw * ih
    area_a, area_b = (ax1 - ax0) * (ay1 - ay0), (bx1 - bx0) * (by1 - by0)
    union = area_a[:, None] + area_b[None] - inter
    inter[(area_a <= _EPS)[:, None] | (area_b <= _EPS)[None] | (union <= _EPS)] = 0
    return inter / np.where(union <= _EPS, 1.0, union)


@dataclass
class Tracks:
    """One rater's boxes in one video: frame number, track index (``0..n_tracks-1``) and box per row,
    sorted by frame; ``names`` the track ids as the rater gave them (index -> id)."""

    frame: np.ndarray
    track: np.ndarray
    boxes: np.ndarray
    names: np.ndarray

    @classmethod
    def of(cls, frame, track_id, boxes) -> "Tracks":
        frame = np.asarray(frame, np.int64)
        order = np.lexsort((np.asarray(track_id), frame))
        names, track = np.unique(np.asarray(track_id)[order], return_inverse=True)
        return cls(frame[order], track.reshape(-1).astype(np.int64),
                   np.asarray(boxes, float).reshape(-1, 4)[order], names)

    @property
    def n_tracks(self) -> int:
        return len(self.names)

    def by_frame(self, frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``lo[t]:hi[t]``: the rows of frame ``frames[t]``."""
        return np.searchsorted(self.frame, frames), np.searchsorted(self.frame, frames, side="right")


@dataclass
class PairCounts:
    """The sums of one (reference, other) pair over frames (and, merged, over videos)."""

    tp: np.ndarray = field(default_factory=lambda: np.zeros(len(HOTA_ALPHAS)))
    loc: np.ndarray = field(default_factory=lambda: np.zeros(len(HOTA_ALPHAS)))       #: Σ IoU of the TPs
    ass: np.ndarray = field(default_factory=lambda: np.zeros(len(HOTA_ALPHAS)))       #: AssA's numerator
    ass_re: np.ndarray = field(default_factory=lambda: np.zeros(len(HOTA_ALPHAS)))
    ass_pr: np.ndarray = field(default_factory=lambda: np.zeros(len(HOTA_ALPHAS)))
    n_ref: int = 0             #: the reference's boxes
    n_other: int = 0           #: the other rater's boxes
    idtp: float = 0.0
    switches: int = 0          #: reference tracks changing partner
    switches_back: int = 0     #: the other rater's tracks changing partner (the other as reference)
    fragmentations: int = 0
    fragmentations_back: int = 0
    switch_frames: list = field(default_factory=list)   #: frame positions of the switches (both directions)

    def merge(self, other: "PairCounts") -> "PairCounts":
        for name in ("tp", "loc", "ass", "ass_re", "ass_pr"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("n_ref", "n_other", "idtp", "switches", "switches_back", "fragmentations",
                     "fragmentations_back"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.switch_frames = self.switch_frames + other.switch_frames
        return self

    def scores(self) -> dict:
        """HOTA, DetA, AssA, LocA (and their recall/precision parts) as means over the α thresholds, IDF1
        with IDP and IDR, and the switch and fragmentation counts; None where neither rater drew a box."""
        counts = {"id_switches": self.switches + self.switches_back,
                  "id_switches_by_reference": [int(self.switches), int(self.switches_back)],
                  "fragmentations": self.fragmentations + self.fragmentations_back,
                  "fragmentations_by_reference": [int(self.fragmentations), int(self.fragmentations_back)],
                  "n_boxes": [int(self.n_ref), int(self.n_other)]}
        if self.n_ref + self.n_other == 0:
            return {k: None for k in ("HOTA", "DetA", "AssA", "LocA", "DetRe", "DetPr", "AssRe", "AssPr",
                                      "IDF1", "IDP", "IDR")} | counts
        tp, fn, fp = self.tp, self.n_ref - self.tp, self.n_other - self.tp
        det = tp / np.maximum(1, tp + fn + fp)
        ass = self.ass / np.maximum(1, tp)
        out = {"HOTA": np.sqrt(det * ass).mean(), "DetA": det.mean(), "AssA": ass.mean(),
               "LocA": (np.maximum(1e-10, self.loc) / np.maximum(1e-10, tp)).mean(),
               "DetRe": (tp / np.maximum(1, tp + fn)).mean(), "DetPr": (tp / np.maximum(1, tp + fp)).mean(),
               "AssRe": (self.ass_re / np.maximum(1, tp)).mean(), "AssPr": (self.ass_pr / np.maximum(1, tp)).mean(),
               "IDF1": 2 * self.idtp / (self.n_ref + self.n_other),
               "IDP": self.idtp / self.n_other if self.n_other else 0.0,
               "IDR": self.idtp / self.n_ref if self.n_ref else 0.0}
        return {k: float(v) for k, v in out.items()} | counts


def _frame_ious(ref: Tracks, other: Tracks, frames: np.ndarray) -> list:
    (rl, rh), (ol, oh) = ref.by_frame(frames), other.by_frame(frames)
    out = []
    for ra, rz, oa, oz in zip(rl.tolist(), rh.tolist(), ol.tolist(), oh.tolist()):
        out.append((ref.track[ra:rz], other.track[oa:oz], box_iou(ref.boxes[ra:rz], other.boxes[oa:oz])))
    return out


def hota_sums(frames: list, n_ref: int, n_other: int, ref_count: np.ndarray, other_count: np.ndarray,
              out: PairCounts) -> None:
    """HOTA's sums of one video into ``out`` (``frames``: per frame the two raters' track indices and IoU)."""
    potential = np.zeros((n_ref, n_other))
    for ri, oi, sim in frames:
        if sim.size:
            denom = sim.sum(0)[None, :] + sim.sum(1)[:, None] - sim
            part = np.zeros_like(sim)
            ok = denom > _EPS
            part[ok] = sim[ok] / denom[ok]
            potential[ri[:, None], oi[None, :]] += part
    rc, oc = ref_count[:, None].astype(float), other_count[None, :].astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        alignment = potential / (rc + oc - potential)
    pr, po, ps = [], [], []
    for ri, oi, sim in frames:
        if not sim.size:
            continue
        rows, cols = linear_sum_assignment(-(alignment[ri[:, None], oi[None, :]] * sim))
        pr.append(ri[rows]), po.append(oi[cols]), ps.append(sim[rows, cols])
    if not pr:
        return
    pr, po, ps = np.concatenate(pr), np.concatenate(po), np.concatenate(ps)
    key = pr * n_other + po
    for a, alpha in enumerate(HOTA_ALPHAS):
        hit = ps >= alpha - _EPS
        m = np.bincount(key[hit], minlength=n_ref * n_other).reshape(n_ref, n_other).astype(float)
        out.tp[a] += hit.sum()
        out.loc[a] += ps[hit].sum()
        out.ass[a] += (m * m / np.maximum(1, rc + oc - m)).sum()
        out.ass_re[a] += (m * m / np.maximum(1, rc)).sum()
        out.ass_pr[a] += (m * m / np.maximum(1, oc)).sum()


def idtp(frames: list, n_ref: int, n_other: int, threshold: float) -> float:
    """The identity true positives: the best one-to-one track assignment's frames with IoU >= ``threshold``."""
    count = np.zeros((n_ref, n_other))
    for ri, oi, sim in frames:
        if sim.size:
            r, o = np.nonzero(1 - sim <= 1 - threshold)
            np.add.at(count, (ri[r], oi[o]), 1)
    if not count.size:
        return 0.0
    rows, cols = linear_sum_assignment(-count)
    return float(count[rows, cols].sum())


def _assign_finite(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimum-cost assignment over the finite entries (NaN: no edge), maximising the edges used first."""
    valid = np.isfinite(cost)
    if not valid.any():
        return np.empty(0, np.int64), np.empty(0, np.int64)
    c = np.abs(cost[valid]).max() + 1
    rows, cols = linear_sum_assignment(np.where(valid, cost, 2 * min(cost.shape) * c + 1))
    keep = valid[rows, cols]
    return rows[keep], cols[keep]


def clear_counts(frames: list, n_ref: int, threshold: float, flip: bool = False) -> tuple[int, int, list]:
    """``(identity switches, fragmentations, positions of the switch frames)`` with the first rater of
    ``frames`` as the reference (``flip``: the second)."""
    last = np.full(n_ref, -1)
    rows, flags = [], []
    switches, at = 0, []
    for t, (ri, oi, sim) in enumerate(frames):
        if flip:
            ri, oi, sim = oi, ri, sim.T
        if not len(ri):
            continue
        order = np.argsort(ri, kind="stable")
        ri, sim = ri[order], sim[order]
        matched = np.zeros(len(ri), bool)
        if len(oi):
            dist = 1 - sim
            dist[dist > 1 - threshold] = np.nan
            # 1. a reference track keeps its last partner while they still overlap (in track order:
            # of two tracks whose last partner is the same, the first keeps it)
            col = np.full(max(int(oi.max()) + 1, 1), -1)
            col[oi] = np.arange(len(oi))
            prev = last[ri]
            j = np.where((prev >= 0) & (prev < len(col)), col[np.clip(prev, 0, len(col) - 1)], -1)
            keep = np.flatnonzero(j >= 0)
            keep = keep[np.isfinite(dist[keep, j[keep]])]
            _, first = np.unique(j[keep], return_index=True)
            keep = keep[np.sort(first)]
            taken = np.zeros(len(oi), bool)
            matched[keep] = taken[j[keep]] = True
            dist[matched, :] = np.nan
            dist[:, taken] = np.nan
            # 2. the others by the Hungarian algorithm on 1 - IoU
            for i, k in zip(*_assign_finite(dist)):
                if last[ri[i]] >= 0 and last[ri[i]] != oi[k]:
                    switches += 1
                    at.append(t)
                last[ri[i]] = oi[k]
                matched[i] = True
        rows.append(ri)
        flags.append(matched)
    if not rows:
        return switches, 0, at
    track, flag = np.concatenate(rows), np.concatenate(flags)
    order = np.argsort(track, kind="stable")            # each track's frames, in frame order
    track, flag = track[order], flag[order]
    idx = np.arange(len(track))
    last_hit = np.full(n_ref, -1)
    np.maximum.at(last_hit, track[flag], idx[flag])
    lost = flag[:-1] & ~flag[1:] & (track[:-1] == track[1:]) & (idx[1:] < last_hit[track[1:]])
    return switches, int(lost.sum()), at


def pair_counts(ref: Tracks, other: Tracks, frames: np.ndarray, threshold: float = 0.5) -> PairCounts:
    """Every sum of the pair (``ref`` the reference) over one video's ``frames`` (frame numbers, sorted)."""
    numbers = np.asarray(frames)
    frames = _frame_ious(ref, other, numbers)
    out = PairCounts(n_ref=len(ref.frame), n_other=len(other.frame))
    hota_sums(frames, ref.n_tracks, other.n_tracks, np.bincount(ref.track, minlength=ref.n_tracks),
              np.bincount(other.track, minlength=other.n_tracks), out)
    out.idtp = idtp(frames, ref.n_tracks, other.n_tracks, threshold)
    out.switches, out.fragmentations, at = clear_counts(frames, ref.n_tracks, threshold)
    out.switches_back, out.fragmentations_back, back = clear_counts(frames, other.n_tracks, threshold, flip=True)
    out.switch_frames = numbers[sorted(set(at) | set(back))].tolist()
    return out
