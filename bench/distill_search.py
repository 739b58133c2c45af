"""Distil search's moves into the network (issue 31, section 4: expert iteration).

Run, in order:

* ``python bench/distill_search.py label --matches 40 --opponent strong --out outputs/distill``
  plays ``search`` (its wide scope by default) against an opponent on seeded duplicate
  matches and writes, chunk by chunk, every searched decision (the observation, the
  candidates, each candidate's mean rollout value, the search's choice) plus a fraction of
  the other decisions (``--anchor``), which keep the network where search did not look.
  A chunk already written is skipped, so a stopped run goes on where it stopped.
* ``python bench/distill_search.py train outputs/distill --out outputs/distilled.pt`` fine-tunes
  the blueprint: cross-entropy towards the search's choice on the searched decisions, plus
  ``--kl`` times the KL divergence from the blueprint on every recorded decision.  The last
  ``--holdout`` of the matches are held out and report how often the network now plays the
  search's move where search changed the blueprint's (never seen in training).
* ``python bench/distill_search.py compare ckpt:outputs/distilled.pt --opponents strong
  pretrained`` plays it and the blueprint on the same duplicate deals against each opponent
  and reports the difference per duplicate pair with a 95% interval.

The labels cost rollouts (search is 1 to 5 CPU s a match); the network they train plays
at the blueprint's speed, which is the point of distilling.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from agents import make_agent
from agents.search import SearchAgent
from hgin_env.rules import load_rules

#: The teacher: the shipped search (every discard, 64 whole hands, the value network after
#: the searched move).  The labels of docs/search.md were made with an earlier one,
#: named there in full.
DEFAULT_TEACHER = "search"
MAX_CANDIDATES = 8


class _LabellingSearch(SearchAgent):
    """Plays as the search does and keeps, per searched decision, what it saw and chose."""

    def __init__(self, *args: Any, anchor: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.anchor = anchor
        self._pick = np.random.default_rng(0)
        self.rows: dict[str, list[np.ndarray]] = {k: [] for k in (
            "obs", "mask", "searched", "candidates", "q", "se", "choice")}
        self._pending: list[tuple[list[int], np.ndarray, np.ndarray, int]] = []

    def _to_search(self, x: np.ndarray, mask: np.ndarray,
                   probs: np.ndarray) -> tuple[np.ndarray, list[list[int]]]:
        rows, cands = super()._to_search(x, mask, probs)
        self._searched_rows = rows
        return rows, cands

    def _decide(self, q: np.ndarray, candidates: list[int], independent: int | None) -> int:
        best = super()._decide(q, candidates, independent)
        diff = q - q[:, :1]
        n = max(int(independent or q.shape[0]), 2)
        se = diff.std(axis=0, ddof=1) / np.sqrt(n) if q.shape[0] > 1 else np.zeros(q.shape[1])
        self._pending.append((candidates, q.mean(axis=0), se, best))
        return best

    def _act(self, obs: dict[str, np.ndarray], rng: Any) -> np.ndarray:
        self._pending = []
        self._searched_rows = np.zeros(0, np.int64)
        choice = super()._act(obs, rng)
        x = np.asarray(obs["observation"], np.float32)
        mask = np.asarray(obs["action_mask"]).astype(bool)
        searched = np.zeros(x.shape[0], bool)
        searched[self._searched_rows] = True
        keep = searched | (self._pick.random(x.shape[0]) < self.anchor)
        cands = np.full((x.shape[0], MAX_CANDIDATES), -1, np.int16)
        q = np.zeros((x.shape[0], MAX_CANDIDATES), np.float32)
        se = np.zeros_like(q)
        best = np.full(x.shape[0], -1, np.int8)
        for i, (c, m, s, b) in zip(self._searched_rows, self._pending, strict=True):
            cands[i, : len(c)] = c
            q[i, : len(c)] = m
            se[i, : len(c)] = s
            best[i] = b
        for key, arr in (("obs", x), ("mask", mask), ("searched", searched),
                         ("candidates", cands), ("q", q), ("se", se), ("choice", best)):
            self.rows[key].append(arr[keep])
        return choice


def label(matches: int, opponent: str, teacher: str, rules: str, seed: int, chunk: int,
          anchor: float, out: Path) -> None:
    """Play ``matches`` duplicate matches of the teacher against ``opponent``, in chunks."""
    from agents.evaluation.arena import play_matches

    out.mkdir(parents=True, exist_ok=True)
    base = make_agent(teacher, rules=rules, seed=seed)
    if not isinstance(base, SearchAgent):
        raise SystemExit(f"distill_search: --teacher must be a search spec, got {teacher!r}")
    chunk -= chunk % 2
    for start in range(0, matches, chunk):
        n = min(chunk, matches - start)
        path = out / f"{opponent}_s{seed}_{start:06d}.npz"
        if path.exists():
            continue
        t0 = time.process_time()
        # Each chunk is its own seeded set of deals, so chunks never repeat a deal.
        s = seed * 1_000_003 + start
        agent = _LabellingSearch(base.config, rules, base.blueprint, s, anchor=anchor)
        play_matches(agent, make_agent(opponent, rules=rules, seed=s), n, rules, seed=s)
        data = {k: np.concatenate(v) for k, v in agent.rows.items()}
        data["obs"] = data["obs"].astype(np.float16)
        header = {"teacher": teacher, "opponent": opponent, "rules": rules, "seed": s,
                  "matches": n, "cpu_s": time.process_time() - t0, "counts": agent.counts}
        tmp = path.with_suffix(".tmp.npz")
        np.savez_compressed(tmp, header=np.array(json.dumps(header)), **data)
        tmp.replace(path)
        sr = data["searched"]
        changed = int((data["choice"][sr] > 0).sum())
        print(f"{path.name}: {n} matches, {int(sr.sum())} searched, {changed} changed, "
              f"{header['cpu_s']:.0f} CPU s", flush=True)


def load_labels(folder: Path) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every chunk of ``folder`` concatenated, and each row's chunk index (its matches)."""
    files = sorted(folder.glob("*.npz"))
    files = [f for f in files if not f.name.endswith(".tmp.npz")]
    if not files:
        raise SystemExit(f"distill_search: no label chunks in {folder} (run label first)")
    parts: dict[str, list[np.ndarray]] = {}
    group = []
    for g, f in enumerate(files):
        with np.load(f, allow_pickle=False) as z:
            for k in ("obs", "mask", "searched", "candidates", "q", "se", "choice"):
                parts.setdefault(k, []).append(z[k])
            group.append(np.full(len(z["searched"]), g))
    return {k: np.concatenate(v) for k, v in parts.items()}, np.concatenate(group)


def train(folder: Path, blueprint: str, out: Path, epochs: int, lr: float, kl: float,
          holdout: float, batch: int, seed: int, tau: float = 0.0) -> dict[str, Any]:
    """Fine-tune the blueprint towards the search's moves; returns the agreement figures.

    ``tau`` 0: cross-entropy towards the search's choice (its decision rule's move) plus
    ``kl`` times KL(blueprint || network).  ``tau`` > 0: KL(target || network) with the
    target of :func:`soft_targets` on searched decisions and the blueprint elsewhere.
    """
    import copy

    import torch

    from agents.model import masked_logits
    from agents.torch_agent import save_agent

    data, group = load_labels(folder)
    groups = np.unique(group)
    n_hold = min(groups.size - 1, round(holdout * groups.size))
    if holdout > 0:
        n_hold = max(n_hold, 1)
    if n_hold >= groups.size:
        raise SystemExit(f"distill_search: --holdout {holdout} leaves no chunk of {folder} "
                         f"to train on ({groups.size} chunk(s)); label more matches")
    # Held-out chunks spread evenly over the sorted files: every opponent has some.
    held = np.unique(np.round(np.linspace(groups.size - 1, 0, n_hold)).astype(int)) \
        if n_hold else np.zeros(0, int)
    hold = np.isin(group, groups[held])
    bp_agent = make_agent(blueprint)
    model = copy.deepcopy(bp_agent.model).train()
    frozen = bp_agent.model.eval()
    feats = model.featurize(data["obs"].astype(np.float32))
    x_all = torch.from_numpy(feats)
    m_all = torch.from_numpy(data["mask"])
    with torch.inference_mode():
        bp_logp = torch.cat([torch.log_softmax(masked_logits(frozen(x_all[i:i + 8192])[0],
                                                             m_all[i:i + 8192]), -1)
                             for i in range(0, len(x_all), 8192)])
    target = np.where(data["choice"] >= 0,
                      data["candidates"][np.arange(len(group)), np.maximum(data["choice"], 0)],
                      -1).astype(np.int64)
    t_all = torch.from_numpy(target)
    soft = soft_targets(bp_logp, data["candidates"], data["q"], data["searched"], tau) \
        if tau > 0 else None
    train_idx = np.flatnonzero(~hold)
    gen = np.random.default_rng(seed)
    torch.manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)

    bp_play = bp_logp.argmax(1).numpy()

    def agreement(rows: np.ndarray) -> dict[str, float]:
        """How the network's greedy move on ``rows`` compares with the labels."""
        with torch.inference_mode():
            play = masked_logits(model(x_all[rows])[0], m_all[rows]).argmax(1).numpy()
        t, bp = target[rows], bp_play[rows]
        changed, same, other = (t >= 0) & (t != bp), (t >= 0) & (t == bp), t < 0

        def share(hit: np.ndarray, where: np.ndarray) -> float:
            return float(hit[where].mean()) if where.any() else float("nan")

        return {"changed": int(changed.sum()),
                "plays_search_where_changed": share(play == t, changed),
                "keeps_blueprint_where_unchanged": share(play == t, same),
                "agrees_with_blueprint_elsewhere": share(play == bp, other)}

    def report() -> dict[str, Any]:
        return {"train": agreement(train_idx), "held_out": agreement(np.flatnonzero(hold))}

    print(f"{len(group)} decisions ({int((target >= 0).sum())} searched, "
          f"{int(((target >= 0) & (target != bp_play)).sum())} changed), "
          f"{int(hold.sum())} held out", flush=True)
    print("before:", json.dumps(report()), flush=True)
    for epoch in range(epochs):
        order = gen.permutation(train_idx)
        total = 0.0
        for i in range(0, order.size, batch):
            idx = torch.from_numpy(order[i:i + batch])
            logits, _ = model(x_all[idx])
            logp = torch.log_softmax(masked_logits(logits, m_all[idx]), -1)
            if soft is not None:  # one target everywhere: KL(target || network)
                tl = soft[idx]
                loss = (tl.exp() * (tl - logp)).nan_to_num().sum(1).mean()
            else:
                t = t_all[idx]
                has = t >= 0
                ce = -(logp[has].gather(1, t[has, None])).mean() if has.any() \
                    else logp.sum() * 0
                div = (bp_logp[idx].exp() * (bp_logp[idx] - logp)).nan_to_num().sum(1).mean()
                loss = ce + kl * div
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * idx.numel()
        print(f"epoch {epoch + 1}: loss {total / order.size:.4f}", json.dumps(report()),
              flush=True)
    model.eval()
    figures = report()
    save_agent(out, model, meta={"distilled_from": blueprint, "labels": str(folder),
                                 "epochs": epochs, "lr": lr, "kl": kl, "tau": tau,
                                 "figures": figures})
    print(f"wrote {out}")
    return figures


def soft_targets(bp_logp: Any, candidates: np.ndarray, q: np.ndarray, searched: np.ndarray,
                 tau: float) -> Any:
    """Log-probabilities (N, A): the blueprint's, tilted by ``exp(advantage / tau)``.

    On a searched decision a candidate's advantage is its mean rollout value minus the
    candidates' mean under the blueprint's probabilities (renormalised over them); the
    other actions were not searched and keep the blueprint's share.  Every searched
    value counts, not only the ones that crossed the search's margin (a policy
    improvement step, as in MPO), and the network averages their noise over positions.
    """
    import torch

    out = bp_logp.clone()
    rows = np.flatnonzero(searched)
    c = torch.from_numpy(candidates[rows].astype(np.int64))
    valid = c >= 0
    r = torch.from_numpy(rows)[:, None].expand_as(c)
    lp = torch.where(valid, bp_logp[r, c.clamp(min=0)],
                     torch.full(c.shape, -1e9, dtype=torch.float32))
    w = torch.softmax(lp, 1)
    qt = torch.from_numpy(q[rows])
    adv = torch.where(valid, qt - (w * qt).sum(1, keepdim=True), torch.zeros_like(qt))
    out[r[valid], c[valid]] += adv[valid] / tau
    return torch.log_softmax(out, 1)


def compare(agent: str, base: str, opponents: list[str], matches: int, rules: str,
            seed: int) -> None:
    """``agent`` and ``base`` on the same duplicate deals against each opponent, paired."""
    from agents.evaluation.arena import play_matches

    rl = load_rules(rules)
    for opp in opponents:
        won = {}
        for name in (agent, base):
            t0 = time.time()
            st = play_matches(make_agent(name, rules=rl), make_agent(opp, rules=rl, seed=seed),
                              matches, rl, seed=seed)
            won[name] = st.a_won.astype(float).reshape(-1, 2).mean(axis=1)
            print(f"  {name} vs {opp}: {100 * won[name].mean():.1f}% "
                  f"({time.time() - t0:.0f} s)", flush=True)
        d = won[agent] - won[base]
        se = d.std(ddof=1) / np.sqrt(d.size)
        print(f"{agent} minus {base} vs {opp}: {100 * d.mean():+.1f} "
              f"[{100 * (d.mean() - 1.96 * se):+.1f}, {100 * (d.mean() + 1.96 * se):+.1f}] "
              f"points over {d.size} duplicate pairs", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    fmt = argparse.ArgumentDefaultsHelpFormatter
    lab = sub.add_parser("label", help="play the teacher and record its decisions",
                         formatter_class=fmt)
    lab.add_argument("--matches", type=int, default=40, help="matches to play (even)")
    lab.add_argument("--opponent", default="strong", help="agent spec the teacher plays")
    lab.add_argument("--teacher", default=DEFAULT_TEACHER, help="the search spec to label with")
    lab.add_argument("--rules", default="friendly", help="rule profile or .toml file")
    lab.add_argument("--seed", type=int, default=0, help="seeds the deals and the search")
    lab.add_argument("--chunk", type=int, default=20, help="matches a file")
    lab.add_argument("--anchor", type=float, default=0.25,
                     help="fraction of the other decisions kept (the KL anchor)")
    lab.add_argument("--out", type=Path, required=True, help="folder for the label chunks")
    tr = sub.add_parser("train", help="fine-tune the blueprint on the labels",
                        formatter_class=fmt)
    tr.add_argument("labels", type=Path, help="folder of label chunks written by `label`")
    tr.add_argument("--blueprint", default="pretrained", help="the network spec to fine-tune")
    tr.add_argument("--out", type=Path, required=True, help="the agent file (.pt) to write")
    tr.add_argument("--epochs", type=int, default=4, help="passes over the labels")
    tr.add_argument("--lr", type=float, default=1e-4, help="Adam's learning rate")
    tr.add_argument("--kl", type=float, default=1.0, help="hard labels: the KL weight")
    tr.add_argument("--tau", type=float, default=0.0,
                    help="> 0: soft targets, the blueprint tilted by exp(advantage / tau)")
    tr.add_argument("--holdout", type=float, default=0.1,
                    help="fraction of the chunks held out for the agreement figures")
    tr.add_argument("--batch", type=int, default=512, help="decisions a gradient step")
    tr.add_argument("--seed", type=int, default=0, help="seeds the order and the weights")
    co = sub.add_parser("compare", help="the distilled network against its blueprint, paired",
                        formatter_class=fmt)
    co.add_argument("agent", help="agent spec, e.g. ckpt:outputs/distilled.pt")
    co.add_argument("--base", default="pretrained", help="the agent it is compared with")
    co.add_argument("--opponents", nargs="+", default=["strong", "pretrained"],
                    help="agent specs both play")
    co.add_argument("--matches", type=int, default=2000,
                    help="matches per opponent (duplicate pairs: half as many)")
    co.add_argument("--rules", default="friendly", help="rule profile or .toml file")
    co.add_argument("--seed", type=int, default=11, help="seeds the deals")
    a = p.parse_args(argv)
    if a.cmd == "train" and not (0 <= a.holdout < 1 and a.lr > 0 and a.kl >= 0 <= a.tau
                                 and a.epochs >= 1 and a.batch >= 1):
        p.error("train needs 0 <= --holdout < 1, --lr > 0, --kl >= 0, --tau >= 0, "
                "--epochs >= 1, --batch >= 1")
    if a.cmd == "label" and not (a.matches >= 2 and a.chunk >= 2 and 0 <= a.anchor <= 1):
        p.error("label needs --matches >= 2, --chunk >= 2 (whole duplicate pairs) and "
                "0 <= --anchor <= 1")
    if a.cmd == "compare" and a.matches < 2:
        p.error("compare needs --matches >= 2 (one duplicate pair)")
    if a.cmd == "label":
        label(a.matches, a.opponent, a.teacher, a.rules, a.seed, a.chunk, a.anchor, a.out)
    elif a.cmd == "train":
        train(a.labels, a.blueprint, a.out, a.epochs, a.lr, a.kl, a.holdout, a.batch, a.seed,
              a.tau)
    else:
        compare(a.agent, a.base, a.opponents, a.matches, a.rules, a.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
