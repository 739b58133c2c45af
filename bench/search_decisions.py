"""Search, one decision at a time: how well each estimate picks moves, against the truth.

Run: ``python bench/search_decisions.py collect --matches 40 --opponent strong --out d.npz``,
then ``python bench/search_decisions.py estimate d.npz --estimates search:samples=16
search:belief=net`` (values added to the file), then ``python bench/search_decisions.py
rules d.npz`` (a table of decision rules, nothing played).

Match win rates need hundreds of duplicate matches to tell two settings apart by a
point or two.  This bench measures search where it acts: every decision the search
could change (the discards and knocks where the blueprint leaves a choice, the widest
scope), on positions the blueprint really reaches against an opponent.

* ``collect`` plays the blueprint against ``--opponent`` on seeded duplicate matches
  (friendly rules) and records, at every such decision, the seat's view, the candidate
  moves (``top_k`` most likely, plus the best knock and the best plain discard), the
  blueprint's probabilities, and the true hidden state (**cheating**, bench only).  Then
  it values every candidate under the truth: the opponent's real hand in ``--truth``
  worlds with sampled stock orders, played out to the end of the hand with the real
  opponent on its seat (``truth``) and with the blueprint there (``truth-bp``, the
  search's own model of the opponent).  Their means are what each move is worth given
  the hand, up to the noise of the sampled stocks (reported).
* ``estimate`` values the same candidates as a search setting would (its own belief,
  its own samples: ``search:...`` or ``search-v1:...`` specs, the knobs of
  :class:`agents.search.SearchConfig`; the studies on docs/search.md name ``search-v1``,
  the defaults they were run with).
* ``rules`` applies decision rules to each estimate (``margin``, ``confidence``,
  ``prior``: an extra margin per nat the blueprint prefers its move; ``uncertain``: the
  scope; ``knocks``) and reports, per setting, the decisions changed and the truth's
  gain over the blueprint's move summed per match, with a 95% interval over the
  duplicate pairs.  A rule that gains under ``truth`` should win matches; one that
  gains only under ``truth-bp`` exploits a model of the opponent that is wrong.
  ``--versus NAME`` adds each estimate's gain minus ``NAME``'s, paired on the same
  decisions (two beliefs compared on the same moves and the same truth).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from agents import make_agent
from agents.search import (
    NETWORK_BELIEFS,
    SEARCH_V1,
    SearchAgent,
    SearchConfig,
    Worlds,
    _is_knock,
    _View,
    paired_choice,
    parse_search_spec,
)
from bench.search_diagnosis import TrueStateArena, _Bound
from hgin_env.cards import NUM_CARDS
from hgin_env.rules import load_rules

_U64 = np.uint64


@dataclass
class Decision:
    """One decision the search could change, with its true hidden state."""

    view: _View
    candidates: list[int]
    probs: np.ndarray        # the blueprint's probability of each candidate
    opp_hand: int            # the opponent's true hand (cheating)
    stock_keys: np.ndarray   # the true stock order as keys (cheating)
    match: int
    pair: int


@dataclass
class Study:
    """A collected set of decisions and every value computed on them."""

    opponent: str
    blueprint: str
    rules: str
    seed: int
    matches: int
    decisions: list[Decision] = field(default_factory=list)
    #: name -> per decision (worlds, candidates) values; "truth", "truth-bp": (T, C).
    values: dict[str, list[np.ndarray]] = field(default_factory=dict)
    #: name -> per decision the number of independent worlds (None: exact).
    independent: dict[str, list[int | None]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


class _Recorder(_Bound):
    """Records each would-be searched decision and answers with the true world."""

    def __init__(self, arena_ref: list[Any]) -> None:
        super().__init__()
        self.arena_ref = arena_ref
        self.out: list[Decision] = []
        self.pending: tuple[np.ndarray, list[list[int]], np.ndarray] | None = None

    def sample_worlds(self, agent: SearchAgent, views: list[Any], rows: np.ndarray,
                      gens: list[np.random.Generator]) -> Worlds:
        hands, keys = self.truth(views, rows)
        arena = self.arena_ref[0]
        assert self.pending is not None
        _, cands, probs = self.pending
        for j, (view, h, k) in enumerate(zip(views, hands, keys, strict=True)):
            g = int(self._rows[int(rows[j])])
            match = int(arena.game_ids[g])
            self.out.append(Decision(view, cands[j], probs[j], h, k, match,
                                     int(arena.pair[match])))
        # One exact world; the huge margin below keeps the blueprint's move anyway.
        return Worlds([np.array([h], _U64) for h in hands], [k[None] for k in keys],
                      [None] * len(views))


class _RecordingSearch(SearchAgent):
    """The widest scope, never leaving the blueprint: it plays exactly as the blueprint."""

    def _to_search(self, x: np.ndarray, mask: np.ndarray,
                   probs: np.ndarray) -> tuple[np.ndarray, list[list[int]]]:
        rows, cands = super()._to_search(x, mask, probs)
        cand_probs = [probs[i, c].astype(np.float64) for i, c in zip(rows, cands, strict=True)]
        assert isinstance(self.worlds, _Recorder)
        self.worlds.pending = (rows, cands, np.array(cand_probs, dtype=object))
        return rows, cands

    def _decide(self, q: np.ndarray, candidates: list[int], independent: int | None) -> int:
        return 0


def collect(matches: int, opponent: str, blueprint: str, rules: str, seed: int,
            top_k: int) -> Study:
    """Play the blueprint against ``opponent`` and record every decision search could change."""
    spec = (f"search-v1:uncertain=1,knocks=true,top_k={top_k},belief=net,"
            f"blueprint={blueprint}")  # belief=net: the views keep its features
    agent = make_agent(spec, rules=rules, seed=seed)
    assert isinstance(agent, SearchAgent)
    searcher = _RecordingSearch(agent.config, rules, agent.blueprint, seed)
    ref: list[Any] = []
    searcher.worlds = _Recorder(ref)
    arena = TrueStateArena(searcher, make_agent(opponent, rules=rules, seed=seed), matches,
                           load_rules(rules), seed)
    ref.append(arena)
    arena.run()
    study = Study(opponent, blueprint, rules, seed, arena.num_matches)
    study.decisions = searcher.worlds.out
    return study


def _chunks(n: int, size: int) -> list[range]:
    return [range(i, min(i + size, n)) for i in range(0, n, size)]


def truth(study: Study, worlds: int, seed: int, chunk: int = 64) -> None:
    """``truth`` and ``truth-bp``: the true opponent hand, ``worlds`` sampled stock orders."""
    agent = make_agent(f"search-v1:blueprint={study.blueprint}", rules=study.rules, seed=seed)
    assert isinstance(agent, SearchAgent)
    opponent = make_agent(study.opponent, rules=study.rules, seed=seed)
    for name, opp in (("truth", opponent), ("truth-bp", None)):
        t0 = time.process_time()
        out: list[np.ndarray] = []
        for part in _chunks(len(study.decisions), chunk):
            ds = [study.decisions[i] for i in part]
            gens = [np.random.default_rng([seed, i]) for i in part]  # same stocks for both
            hands = [np.full(worlds, d.opp_hand, _U64) for d in ds]
            keys = [g.random((worlds, NUM_CARDS)) for g in gens]
            out += agent._rollouts([d.view for d in ds], hands, [d.candidates for d in ds],
                                   keys, opponent=opp)
        study.values[name] = out
        study.independent[name] = [worlds] * len(out)
        study.seconds[name] = time.process_time() - t0


def estimate(study: Study, spec: str, seed: int, chunk: int = 64) -> None:
    """The values a search setting would compute at each decision (its own worlds).

    ``oracle`` (**cheating**): the one true world (hand and stock order), exact.
    ``oracle-hand:samples=N`` (**cheating**): the true hand, N stock orders of its own.
    """
    if spec.startswith("oracle"):
        return _oracle_estimate(study, spec, seed, chunk)
    cfg = parse_search_spec(spec)
    built = spec if "blueprint=" in spec else \
        f"{spec}{',' if ':' in spec else ':'}blueprint={study.blueprint}"
    agent = make_agent(built, rules=study.rules, seed=seed)
    assert isinstance(agent, SearchAgent)
    t0 = time.process_time()
    out: list[np.ndarray] = []
    indep: list[int | None] = []
    for part in _chunks(len(study.decisions), chunk):
        ds = [study.decisions[i] for i in part]
        views = [d.view for d in ds]
        if cfg.belief in NETWORK_BELIEFS:
            _fill_belief_features(views)
        gens = [np.random.default_rng([seed, 1, i]) for i in part]
        worlds = agent.sample_worlds(views, gens)
        out += agent._rollouts(views, worlds.hands, [d.candidates for d in ds],
                               worlds.stock_keys)
        indep += worlds.independent
    study.values[spec] = out
    study.independent[spec] = indep
    study.seconds[spec] = time.process_time() - t0


def _oracle_estimate(study: Study, spec: str, seed: int, chunk: int) -> None:
    mode, _, rest = spec.partition(":")
    if mode not in ("oracle", "oracle-hand"):
        raise ValueError(f"estimate {spec!r}: expected oracle, oracle-hand:samples=N or a "
                         "search spec")
    samples = parse_search_spec("search-v1:" + rest).samples if rest else 16
    agent = make_agent(f"search-v1:blueprint={study.blueprint}", rules=study.rules, seed=seed)
    assert isinstance(agent, SearchAgent)
    t0 = time.process_time()
    out: list[np.ndarray] = []
    for part in _chunks(len(study.decisions), chunk):
        ds = [study.decisions[i] for i in part]
        if mode == "oracle":
            hands = [np.array([d.opp_hand], _U64) for d in ds]
            keys = [d.stock_keys[None] for d in ds]
        else:
            gens = [np.random.default_rng([seed, 2, i]) for i in part]
            hands = [np.full(samples, d.opp_hand, _U64) for d in ds]
            keys = [g.random((samples, NUM_CARDS)) for g in gens]
        out += agent._rollouts([d.view for d in ds], hands, [d.candidates for d in ds], keys)
    study.values[spec] = out
    study.independent[spec] = [None if mode == "oracle" else samples] * len(out)
    study.seconds[spec] = time.process_time() - t0


def _fill_belief_features(views: list[_View]) -> None:
    missing = [v for v in views if v.belief_x is None]
    if missing:
        raise ValueError("belief=net needs the belief features recorded at collection "
                         "(collect again with this version)")


# --------------------------------------------------------------------------- the file

#: A study file larger than this is refused before it is read (60 matches make ~100 MB).
MAX_STUDY_BYTES = 4 << 30
_ARRAYS = ("scores", "wins", "decided", "winner")


def save_study(study: Study, path: Path) -> None:
    """The study as one ``.npz`` of plain arrays and a JSON header (never a pickle)."""
    views = [d.view for d in study.decisions]
    head = {"kind": "hgin-search-decisions", "opponent": study.opponent,
            "blueprint": study.blueprint, "rules": study.rules, "seed": study.seed,
            "matches": study.matches, "seconds": study.seconds,
            "names": list(study.values), "independent": study.independent,
            "decisions": [{"view": {k: (v.tolist() if isinstance(v, np.ndarray) else v)
                                    for k, v in d.view.__dict__.items() if k != "belief_x"},
                           "candidates": [int(c) for c in d.candidates],
                           "probs": [float(p) for p in d.probs], "opp_hand": int(d.opp_hand),
                           "match": d.match, "pair": d.pair} for d in study.decisions]}
    arrays: dict[str, np.ndarray] = {
        "head": np.frombuffer(json.dumps(head).encode(), np.uint8),
        "stock_keys": np.array([d.stock_keys for d in study.decisions]).reshape(-1, NUM_CARDS),
        "has_belief": np.array([v.belief_x is not None for v in views], bool)}
    feats = [v.belief_x for v in views if v.belief_x is not None]
    arrays["belief_x"] = np.array(feats, np.float32) if feats else np.zeros((0, 0), np.float32)
    for i, name in enumerate(study.values):
        arrays[f"values_{i}"] = np.concatenate([v.reshape(-1) for v in study.values[name]]) \
            if study.values[name] else np.zeros(0)
        arrays[f"shapes_{i}"] = np.array([v.shape for v in study.values[name]],
                                         np.int64).reshape(-1, 2)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


class BadInput(SystemExit):
    """A one-line error for the command line: :func:`main` prints it and exits with 2."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message

    def __str__(self) -> str:
        return self.message


def load_study(path: Path) -> Study:
    """A study written by :func:`save_study`; anything else is a :class:`BadInput`.

    The file is a user's input: its size is bounded, its zip directory is read first
    (``np.savez`` stores entries uncompressed, so they may not declare more bytes than
    the file holds), and it is read with ``allow_pickle=False``.
    """
    try:
        size = path.stat().st_size
        with zipfile.ZipFile(path) as archive:
            declared = sum(e.file_size for e in archive.infolist())
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise BadInput(f"{path} is not a decision study file (not a readable .npz archive: "
                       f"{str(exc)[:120]})") from None
    if size > MAX_STUDY_BYTES or declared > size:
        raise BadInput(f"{path}: {size:,} bytes declaring {declared:,} unpacked; a study "
                       f"file is at most {MAX_STUDY_BYTES:,} bytes and stored uncompressed")
    try:
        with np.load(path, allow_pickle=False) as data:
            head = json.loads(bytes(data["head"]).decode())
            if head.get("kind") != "hgin-search-decisions":
                raise ValueError("not written by this script")
            keys, has_belief = data["stock_keys"], data["has_belief"]
            feats = iter(data["belief_x"])
            study = Study(str(head["opponent"]), str(head["blueprint"]), str(head["rules"]),
                          int(head["seed"]), int(head["matches"]))
            for j, d in enumerate(head["decisions"]):
                v = dict(d["view"])
                for k in _ARRAYS:
                    v[k] = np.array(v[k])
                v["events"] = [(dict(e), int(a)) for e, a in v["events"]]
                view = _View(**v, belief_x=next(feats) if has_belief[j] else None)
                study.decisions.append(Decision(view, list(d["candidates"]),
                                                np.array(d["probs"], np.float64),
                                                int(d["opp_hand"]), keys[j], int(d["match"]),
                                                int(d["pair"])))
            for i, name in enumerate(head["names"]):
                flat, shapes = data[f"values_{i}"], data[f"shapes_{i}"]
                ends = np.cumsum(shapes.prod(axis=1))
                study.values[name] = [flat[e - r * c:e].reshape(r, c)
                                      for (r, c), e in zip(shapes, ends, strict=True)]
                study.independent[name] = list(head["independent"][name])
            study.seconds = {str(k): float(x) for k, x in head["seconds"].items()}
    except (ValueError, KeyError, TypeError, OSError, StopIteration, IndexError,
            json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path} is not a decision study file ({type(exc).__name__}: "
                       f"{str(exc)[:120]})") from None
    return study


# --------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class Rule:
    """How a search turns its estimate into a move (the knobs of ``_decide`` and scope)."""

    # The first defaults (search-v1), which the studies of docs/search.md were run with.
    margin: float = SEARCH_V1["margin"]
    confidence: float = SearchConfig.confidence
    knocks: bool = SearchConfig.knocks
    knock_margin: float = SearchConfig.knock_margin
    prior: float = 0.0  # not a search knob: an extra margin per nat of the blueprint's preference
    uncertain: float = SEARCH_V1["uncertain"]
    top_k: int = SearchConfig.top_k

    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.__dict__.items()
                        if v != getattr(Rule(), k))  or "defaults"


def choose(rule: Rule, q: np.ndarray, candidates: list[int], probs: np.ndarray,
           independent: int | None) -> int:
    """Index of the candidate ``rule`` plays given the estimate ``q`` (worlds, candidates)."""
    probs = np.asarray(probs, np.float64)
    if probs[0] >= rule.uncertain and rule.uncertain < 1.0:
        return 0
    knocks = np.array([_is_knock(c) for c in candidates])
    allowed = np.ones(len(candidates), bool)
    if not rule.knocks:
        allowed &= knocks == knocks[0]
    # The candidates a search with this top_k would have had: its top_k of the allowed ones.
    order = np.flatnonzero(allowed)
    allowed[:] = False
    allowed[order[: rule.top_k]] = True
    if rule.knocks:
        for want in (True, False):
            extra = np.flatnonzero(knocks == want)
            if extra.size:
                allowed[extra[0]] = True
    if allowed.sum() < 2:
        return 0
    need = rule.margin + rule.knock_margin * (knocks != knocks[0])
    need = need + rule.prior * np.maximum(np.log(probs[0]) - np.log(np.maximum(probs, 1e-9)), 0)
    return paired_choice(q, need, independent, rule.confidence, allowed)


def pair_gains(study: Study, estimate_name: str, rule: Rule, truth_name: str = "truth"
               ) -> tuple[np.ndarray, int]:
    """The truth's gain over the blueprint per duplicate pair (the mean of its two matches),
    and the number of decisions the rule changed."""
    gains = np.zeros(study.matches)
    changed = 0
    for d, q, n, t in zip(study.decisions, study.values[estimate_name],
                          study.independent[estimate_name], study.values[truth_name],
                          strict=True):
        best = choose(rule, q, d.candidates, d.probs, n)
        if best:
            changed += 1
            gains[d.match] += float(t[:, best].mean() - t[:, 0].mean())
    pairs = np.unique([d.pair for d in study.decisions])
    per_pair = np.array([gains[[m for m in range(study.matches) if m // 2 == p]].sum()
                         for p in pairs]) / 2.0
    return per_pair, changed


def _mean_interval(per_pair: np.ndarray) -> dict[str, float]:
    mean = float(per_pair.mean()) if per_pair.size else 0.0
    half = 1.96 * float(per_pair.std(ddof=1)) / math.sqrt(per_pair.size) if per_pair.size > 1 \
        else float("nan")
    return {"gain": mean, "low": mean - half, "high": mean + half}


def evaluate_rule(study: Study, estimate_name: str, rule: Rule,
                  truth_name: str = "truth") -> dict[str, float]:
    """Changes made and the truth's gain over the blueprint, per match (95% over pairs)."""
    per_pair, changed = pair_gains(study, estimate_name, rule, truth_name)
    return {"changed": changed / max(len(study.decisions), 1), **_mean_interval(per_pair)}


def compare(study: Study, estimate_name: str, base: str, rule: Rule,
            truth_name: str = "truth") -> dict[str, float]:
    """One estimate's gain minus another's under the same rule, paired on the same
    decisions and pairs: far tighter than the difference of two separate intervals."""
    ours, _ = pair_gains(study, estimate_name, rule, truth_name)
    theirs, _ = pair_gains(study, base, rule, truth_name)
    return _mean_interval(ours - theirs)


DEFAULT_RULES = [
    Rule(),
    Rule(uncertain=1.0),
    Rule(uncertain=1.0, confidence=3.0),
    Rule(uncertain=1.0, prior=0.05),
    Rule(uncertain=1.0, prior=0.1),
    Rule(uncertain=1.0, prior=0.2),
    Rule(uncertain=1.0, margin=0.1),
    Rule(uncertain=1.0, knocks=True),
    Rule(uncertain=1.0, knocks=True, prior=0.1),
    Rule(uncertain=0.8),
    Rule(uncertain=0.8, prior=0.1),
]


def parse_rule(text: str) -> Rule:
    """``uncertain=1,prior=0.1`` as a :class:`Rule` (a bad key or value: one-line error)."""
    kinds = {k: type(v) for k, v in Rule().__dict__.items()}
    values: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = part.partition("=")
        if key not in kinds:
            raise BadInput(f"rule {text!r}: unknown key {key!r} (one of {', '.join(kinds)})")
        try:
            values[key] = value.lower() in ("true", "1") if kinds[key] is bool \
                else kinds[key](value)
        except ValueError:
            raise BadInput(f"rule {text!r}: bad value for {key}: {value!r}") from None
    return Rule(**values)


def rules_table(study: Study, rules: list[Rule], only: list[str] | None = None,
                versus: str | None = None) -> str:
    """Every estimate under every rule, judged by ``truth`` and ``truth-bp``; with
    ``versus``, also each one's truth gain minus that estimate's (paired)."""
    names = only or [k for k in study.values if not k.startswith("truth")] + ["truth-bp"]
    if versus is not None and versus not in study.values:
        raise BadInput(f"--versus {versus!r}: no such estimate in the file (it has "
                       f"{', '.join(study.values)})")
    head = "| estimate | rule | decisions changed | gain per match vs blueprint: truth " \
           "(95%) | truth-bp (95%) |"
    lines = [head + (f" truth: minus `{versus}` (95%, paired) |" if versus else ""),
             "|---|---|---|---|---|" + ("---|" if versus else "")]
    for name in names:
        for rule in rules:
            r = evaluate_rule(study, name, rule, "truth")
            b = evaluate_rule(study, name, rule, "truth-bp")
            line = (f"| `{name}` | {rule.label()} | {100 * r['changed']:.2f}% | "
                    f"{_interval(r)} | {_interval(b)} |")
            if versus:
                line += f" {_interval(compare(study, name, versus, rule))} |"
            lines.append(line)
    return "\n".join(lines) + "\n"


def _interval(r: dict[str, float]) -> str:
    if math.isnan(r["low"]):
        return f"{r['gain']:+.4f} (one pair: no interval)"
    return f"{r['gain']:+.4f} [{r['low']:+.4f}, {r['high']:+.4f}]"


def summary(study: Study) -> str:
    """How many decisions, how noisy the truth is, and what each estimate cost."""
    t = study.values.get("truth", [])
    noise = [float((v - v[:, :1]).std(ddof=1, axis=0)[1:].mean() / math.sqrt(v.shape[0]))
             for v in t if v.shape[1] > 1]
    out = [f"{len(study.decisions)} decisions in {study.matches} matches against "
           f"{study.opponent} (blueprint {study.blueprint}, seed {study.seed}); "
           f"truth's standard error of a candidate's gain: {np.mean(noise):.4f}"]
    for k, s in study.seconds.items():
        out.append(f"  {k}: {s:.0f} CPU s ({1000 * s / max(len(study.decisions), 1):.1f} ms a "
                   f"decision)")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """The command line; a bad file or rule is one line on stderr and exit status 2."""
    try:
        return _main(argv)
    except (BadInput, ValueError) as exc:  # a bad file, rule or search spec: one line
        print(f"search_decisions: {exc}", file=sys.stderr)
        return 2


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    a = sub.add_parser("run", help="collect, estimate and print the table in one go")
    for p in (c, a):
        p.add_argument("--matches", type=int, default=40)
        p.add_argument("--opponent", default="strong")
        p.add_argument("--blueprint", default="pretrained")
        p.add_argument("--rules", default="friendly")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--top-k", type=int, default=3)
        p.add_argument("--truth", type=int, default=64, help="sampled stocks for the truth")
        p.add_argument("--out", type=Path, required=p is c)
    a.add_argument("--estimates", nargs="+", required=True)
    a.add_argument("--rule", action="append", default=None)
    e = sub.add_parser("estimate")
    e.add_argument("file", type=Path)
    e.add_argument("--estimates", nargs="+", required=True)
    e.add_argument("--seed", type=int, default=0)
    r = sub.add_parser("rules")
    r.add_argument("file", type=Path)
    r.add_argument("more", type=Path, nargs="*",
                   help="files estimated from a copy of the first (their values are added)")
    r.add_argument("--rule", action="append", default=None,
                   help="a rule as key=value,... (Rule's fields); repeatable; default: a set")
    r.add_argument("--estimates", nargs="+", help="only these estimates")
    r.add_argument("--versus", help="also each estimate's gain minus this one's, paired on "
                                    "the same decisions")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    if args.cmd in ("collect", "run"):
        study = collect(args.matches, args.opponent, args.blueprint, args.rules, args.seed,
                        args.top_k)
        print(f"{len(study.decisions)} decisions collected", flush=True)
        truth(study, args.truth, args.seed)
        if args.cmd == "run":
            for spec in args.estimates:
                estimate(study, spec, args.seed)
        if args.out is not None:
            save_study(study, args.out)
        print(summary(study))
        if args.cmd == "run":
            rules = [parse_rule(text) for text in args.rule] if args.rule else DEFAULT_RULES
            print(rules_table(study, rules))
        return 0
    study = load_study(args.file)
    if args.cmd == "estimate":
        for spec in args.estimates:
            estimate(study, spec, args.seed)
            save_study(study, args.file)
            print(f"{spec}: {study.seconds[spec]:.0f} CPU s", flush=True)
        return 0
    for path in args.more:
        other = load_study(path)
        if [d.match for d in other.decisions] != [d.match for d in study.decisions]:
            raise BadInput(f"{path}: not the decisions of {args.file}")
        for name in ("values", "independent", "seconds"):
            getattr(study, name).update(getattr(other, name))
    rules = [parse_rule(text) for text in args.rule] if args.rule else DEFAULT_RULES
    print(summary(study))
    print(rules_table(study, rules, args.estimates, args.versus))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
