"""A learned belief over the opponent's hidden cards, for ``search`` (``belief=net``).

Weighting uniform opponent hands by how likely the blueprint would have played the
opponent's public choices (the search's default belief) needs many particles: a few
hundred uniform hands of the ~30 unseen cards rarely hold the opponent's melds, so the
weights collapse onto a few of them (``bench/search_diagnosis.py`` measures it).  A
network that reads the hand's public course (what the opponent discarded, which cards
it declined, what it took) and predicts, for every unseen card, the chance that the
opponent holds it, proposes hands near the truth directly; hands are then drawn from
those marginals.

The network is trained by ``bench/train_belief.py`` on positions of seeded matches
between the shipped agents, and shipped beside the policy as its own file
(``agents/pretrained/belief.pt``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hgin_env import actions as A
from hgin_env.cards import NUM_CARDS, unpack_masks
from hgin_env.observation import STOCK_SCALE, observation_spec

__all__ = ["BELIEF_PATH", "FEATURES", "HAND_BELIEF_PATH", "MAX_HIDDEN", "BeliefNet",
           "belief_features", "load_belief", "sample_hands"]

BELIEF_PATH = Path(__file__).resolve().parent / "pretrained" / "belief.pt"
#: The shipped conditional network (whole hands, card by card): ``search:belief=hand``.
HAND_BELIEF_PATH = BELIEF_PATH.with_name("belief_hand.pt")
_SPEC = observation_spec()
_PLANES = ("own", "opp_known", "unseen", "pile", "opp_discarded", "opp_discard_recent",
           "opp_declined", "opp_declined_recent", "my_discarded")
#: Width of one position's features: a 52-card plane per name above, and 3 numbers.
FEATURES = len(_PLANES) * NUM_CARDS + 3
_ME, _OPP = 0, 1
_RECENT = 0.7  # weight kept per later opponent decision (recency of a discard or a pass)


def _plane(x: np.ndarray, name: str) -> np.ndarray:
    return (np.asarray(x)[..., _SPEC[name]] > 0.5).astype(np.float32)


def belief_features(x: np.ndarray, history: np.ndarray, length: np.ndarray,
                    upcard: np.ndarray) -> np.ndarray:
    """(B, FEATURES) float32: what each seat knows of its opponent's hand, as planes.

    ``x`` (B, OBS_DIM) are the seats' observations and ``history``/``length``/``upcard``
    the public history keys the arena adds (:data:`hgin_env.history.HISTORY_KEYS`); the
    history's codes are ``seat * NUM_ACTIONS + action`` with the seat relative to the
    observer (0 = itself).  The opponent's discards and declined cards carry a recency
    weight: a card dropped or passed over just now says more than one from long ago.
    """
    x = np.asarray(x, np.float32)
    b = x.shape[0]
    out = np.zeros((b, len(_PLANES), NUM_CARDS), np.float32)
    out[:, 0] = _plane(x, "hand")
    out[:, 1] = _plane(x, "opponent_known")
    out[:, 2] = _plane(x, "unseen")
    out[:, 3] = np.maximum(_plane(x, "top_discard"), _plane(x, "pile_below_top"))
    extra = np.zeros((b, 3), np.float32)
    extra[:, 0] = x[:, _SPEC["stock_size"]][:, 0]
    lengths = np.asarray(length).astype(np.int64)
    hist = np.asarray(history)
    for i in range(b):
        pile = [int(upcard[i])]
        opp_moves = 0
        stock_draws = 0
        for code in hist[i, : lengths[i]].tolist():
            seat, action = divmod(int(code), A.NUM_ACTIONS)
            if seat == _OPP:
                opp_moves += 1
                out[i, 5] *= _RECENT
                out[i, 7] *= _RECENT
            if action == A.TAKE_DISCARD:
                pile.pop()
            elif action in (A.PASS, A.DRAW_STOCK):
                if seat == _OPP and pile:
                    out[i, 6, pile[-1]] = 1.0
                    out[i, 7, pile[-1]] = 1.0
                stock_draws += (action == A.DRAW_STOCK) and seat == _OPP
            elif action < A.DRAW_STOCK:
                card = action % A.KNOCK
                pile.append(card)
                if seat == _OPP:
                    out[i, 4, card] = 1.0
                    out[i, 5, card] = 1.0
                else:
                    out[i, 8, card] = 1.0
        extra[i, 1] = opp_moves / 40.0
        extra[i, 2] = stock_draws / 20.0
    extra[:, 0] *= STOCK_SCALE / 31.0
    return np.concatenate([out.reshape(b, -1), extra], axis=1)


class BeliefNet:
    """The network: features -> one logit per card (the opponent holds it).

    A ``conditional`` network also reads the cards already drawn for the hand being
    sampled (a 52-card plane) and predicts the rest: hands are then drawn one card
    at a time (:meth:`sample`), so the cards of a meld the opponent likely keeps come
    together or not at all, where independent marginals mix halves of different
    melds.  With nothing drawn it gives the same kind of marginals as the plain one.
    """

    def __init__(self, hidden: int = 256, state: dict[str, Any] | None = None,
                 conditional: bool = False) -> None:
        import torch
        from torch import nn

        self.hidden = hidden
        self.conditional = conditional
        width = FEATURES + (NUM_CARDS if conditional else 0)
        self.module = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(),
                                    nn.Linear(hidden, hidden), nn.ReLU(),
                                    nn.Linear(hidden, NUM_CARDS))
        if state is not None:
            self.module.load_state_dict(state)
        self.module.eval()
        self._torch = torch

    def inputs(self, features: np.ndarray, drawn: np.ndarray | None = None) -> np.ndarray:
        """The network's input rows: the features, and (conditional) the drawn-card plane."""
        features = np.asarray(features, np.float32)
        if not self.conditional:
            return features
        if drawn is None:
            drawn = np.zeros((features.shape[0], NUM_CARDS), np.float32)
        return np.concatenate([features, np.asarray(drawn, np.float32)], axis=1)

    def marginals(self, features: np.ndarray, unseen: np.ndarray, hidden_count: np.ndarray,
                  drawn: np.ndarray | None = None) -> np.ndarray:
        """(B, 52) probabilities that the opponent holds each card, summing to the count.

        Cards outside ``unseen`` (B, 52) get 0; the rest are rescaled in log-odds so
        that each row sums to its ``hidden_count`` (the opponent's hidden cards).  For a
        conditional network, ``drawn`` (B, 52) are cards already taken as held: pass
        ``unseen`` without them and the count of the cards still to draw.
        """
        return _calibrate(self.logits(features, drawn), unseen.astype(bool),
                          np.asarray(hidden_count, np.float64))

    def logits(self, features: np.ndarray, drawn: np.ndarray | None = None) -> np.ndarray:
        """(B, 52) float64 log-odds of each card, before the rows are scaled to their count."""
        torch = self._torch
        with torch.no_grad():
            x = torch.as_tensor(self.inputs(features, drawn), dtype=torch.float32)
            return self.module(x).numpy().astype(np.float64)

    def sample(self, features: np.ndarray, unseen: np.ndarray, counts: np.ndarray, n: int,
               gens: list[np.random.Generator]) -> list[np.ndarray]:
        """``n`` hands (uint64 masks) per row, each row's draws from its own generator.

        A plain network draws from its marginals (:func:`sample_hands`).  A conditional
        one draws card by card: the next card with chance proportional to its
        probability given the cards drawn so far (exact for a random order of the
        hand's cards), every row's ``n`` hands advancing in one batched call a step.
        """
        features = np.asarray(features, np.float32)
        unseen = np.asarray(unseen, bool)
        counts = np.asarray(counts, np.int64)
        rows = len(gens)
        if features.shape[0] != rows or unseen.shape[0] != rows or counts.shape[0] != rows:
            raise ValueError(f"sample: {features.shape[0]} feature rows, {unseen.shape[0]} "
                             f"unseen rows, {counts.shape[0]} counts and {rows} generators "
                             "(one each per row)")
        if not self.conditional:
            marginals = self.marginals(features, unseen, counts)
            return [sample_hands(marginals[j], int(counts[j]), n, gen)
                    for j, gen in enumerate(gens)]
        steps = int(counts.max(initial=0))
        # Each row's uniforms come from its own generator, exactly one per card of each of
        # its hands: the generator is left where it would be with the row alone in the
        # batch (the search draws its stock orders from it next).
        u = np.zeros((rows, steps, n))
        for j, gen in enumerate(gens):
            u[j, : counts[j]] = gen.random((int(counts[j]), n))
        feats = np.repeat(features, n, axis=0)
        avail = np.repeat(unseen, n, axis=0)
        left = np.repeat(counts, n)
        drawn = np.zeros((rows * n, NUM_CARDS), np.float32)
        flat_u = u.transpose(0, 2, 1).reshape(rows * n, steps)
        for t in range(steps):
            live = np.flatnonzero(left > 0)
            if live.size == 0:
                break
            p = _calibrate_newton(self.logits(feats[live], drawn[live]), avail[live],
                                  left[live])
            cum = np.cumsum(p, axis=1)
            pick = (cum < flat_u[live, t, None] * cum[:, -1:]).sum(axis=1)
            pick = np.minimum(pick, NUM_CARDS - 1)
            # Never a card outside the available set (a rounding edge at the top end).
            bad = ~avail[live, pick]
            if bad.any():
                pick[bad] = np.argmax(np.where(avail[live[bad]], p[bad], -1.0), axis=1)
            drawn[live, pick] = 1.0
            avail[live, pick] = False
            left[live] -= 1
        bits = np.where(drawn > 0.5, np.uint64(1) << np.arange(NUM_CARDS, dtype=np.uint64),
                        np.uint64(0))
        masks = np.bitwise_or.reduce(bits, axis=1).reshape(rows, n)
        return [masks[j] for j in range(rows)]

    def save(self, path: Path | str) -> None:
        self._torch.save({"kind": "hgin-belief", "features": FEATURES, "hidden": self.hidden,
                          "conditional": self.conditional,
                          "state": self.module.state_dict()}, str(path))


def _calibrate(logits: np.ndarray, unseen: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Shift each row's logits so the unseen cards' probabilities sum to ``count``."""
    shift = np.zeros(logits.shape[0])
    lo, hi = np.full_like(shift, -30.0), np.full_like(shift, 30.0)
    for _ in range(40):  # bisection on the shift: the sum is monotone in it
        shift = (lo + hi) / 2
        p = np.where(unseen, 1.0 / (1.0 + np.exp(-(logits + shift[:, None]))), 0.0)
        high = p.sum(axis=1) > count
        hi = np.where(high, shift, hi)
        lo = np.where(high, lo, shift)
    return p


def _calibrate_newton(logits: np.ndarray, unseen: np.ndarray, count: np.ndarray,
                      steps: int = 8) -> np.ndarray:
    """:func:`_calibrate` by Newton's method from no shift (a trained network's rows need
    a small one): a few steps instead of forty halvings, for the card-by-card draws."""
    shift = np.zeros(logits.shape[0])
    count = np.asarray(count, np.float64)
    for _ in range(steps):
        p = np.where(unseen, 1.0 / (1.0 + np.exp(-(logits + shift[:, None]))), 0.0)
        slope = np.maximum((p * (1.0 - p)).sum(axis=1), 1e-9)
        shift += np.clip((count - p.sum(axis=1)) / slope, -4.0, 4.0)
    return np.where(unseen, 1.0 / (1.0 + np.exp(-(logits + shift[:, None]))), 0.0)


#: The widest hidden layer a belief file may declare (the shipped one has 256).
MAX_HIDDEN = 4096


def load_belief(path: Path | str = BELIEF_PATH) -> BeliefNet:
    """The shipped (or a given) belief network; a one-line ``ValueError`` if the file is not
    one.  The file is a user's input (``belief_file=PATH``): its archive is checked before
    unpacking (:func:`agents.torch_agent.check_archive`), it is read with
    ``weights_only=True`` (never unpickled), and its width is bounded."""
    from agents.torch_agent import read_network_file

    path = Path(path)
    data = read_network_file(path, "hgin-belief", FEATURES, "belief network",
                             "bench/train_belief.py", MAX_HIDDEN)
    hidden = data["hidden"]
    conditional = data.get("conditional", False)
    if not isinstance(conditional, bool):
        raise ValueError(f"{path}: 'conditional' must be true or false, got {conditional!r}")
    try:
        return BeliefNet(hidden, data.get("state"), conditional)
    except (RuntimeError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path}: its weights do not fit a belief network of width "
                         f"{hidden}: {str(exc).splitlines()[0][:200]}") from None


def sample_hands(marginals: np.ndarray, count: int, n: int,
                 gen: np.random.Generator) -> np.ndarray:
    """``n`` hands of ``count`` cards drawn from one row of marginals, as uint64 masks.

    Gumbel top-``count`` on the log-odds: cards are drawn without replacement, each
    next card with a chance proportional to its odds, so likely cards appear in most
    hands and the hands still differ.
    """
    p = np.clip(np.asarray(marginals, np.float64), 0.0, 1.0)
    cards = np.flatnonzero(p > 0)
    if count == 0 or cards.size == 0:
        return np.zeros(n, np.uint64)
    q = np.clip(p[cards], 1e-6, 1 - 1e-6)
    keys = np.log(q / (1 - q)) - np.log(-np.log(gen.random((n, cards.size))))
    pick = np.argsort(-keys, axis=1)[:, :count]
    bits = np.uint64(1) << cards[pick].astype(np.uint64)
    return np.bitwise_or.reduce(bits, axis=1)


def hidden_flags(masks: np.ndarray) -> np.ndarray:
    """(B, 52) float32 card flags of uint64 masks (training targets)."""
    return unpack_masks(np.asarray(masks, np.uint64)).astype(np.float32)
