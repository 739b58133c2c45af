"""The policy/value network: a small MLP over the observation, sized for CPU.

Input.  The observation vector, plus (``features="draw"``) a few numbers
computed from it in numpy before the network: what taking the top discard
would do to the mover's hand (deadwood gained, whether it allows a knock or
gin); ``features="knock"`` adds the best knock on offer (least deadwood after
a legal discard, knock and gin flags, the opponent's visible cards).  They
only re-express what the observation holds, but learning meld arithmetic
from card bits alone costs an MLP many millions of steps.

Output.  Logits come from the trunk through a linear head, plus
(``card_head``) a per-card term for the discard and the knock actions: the
trunk emits, for each of the two, weights over per-card features — the seven
card slices of the observation (held, top of pile, pile, known to the
opponent, unseen, forbidden, deadwood after discarding it), each card's
meld partners (same rank, ranks ±1 and ±2 of the same suit) among our hand,
the opponent's known cards and the unseen cards, and the card's value — so
"shed the card that leaves the least deadwood, unless the opponent can use
it" is a few weights away.  Likewise the draw / take / pass logits get a term
linear in the draw features, with weights from the trunk, so "take the
discard when it cuts the deadwood" does not have to be found through the
trunk before the take action has been abandoned.  Illegal actions get a logit of ``MASKED_LOGIT``
and are never sampled.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from agents.features import ObsView, decode
from hgin_env import actions as A
from hgin_env.cards import CARD_VALUES, NUM_CARDS, pack_masks
from hgin_env.melds import SENTINEL, deadwood_after_discard
from hgin_env.observation import DEADWOOD_SCALE, LAYOUT, OBS_DIM

#: The per-card slices at the front of the observation (the leading 52-wide slices of
#: ``observation.LAYOUT``): the card head reads them as (B, CARD_SLICES, 52).
CARD_SLICES = next(i for i, s in enumerate(LAYOUT) if s.width != NUM_CARDS)
MASKED_LOGIT = -1e9
FEATURE_SETS = ("none", "draw", "knock")
DRAW_FEATURES = 5
KNOCK_FEATURES = 5
#: The knock feature "cards the opponent visibly holds" is divided by this.
OPPONENT_CARDS_SCALE = 10.0
#: Card values (1..10) enter the card head divided by this.
CARD_VALUE_SCALE = 10.0


#: Bounds on the network's size, checked before anything is allocated: an
#: architecture read from a file (a checkpoint's ``arch``) must not be able to ask
#: for gigabytes.
MAX_HIDDEN_LAYERS = 4
HIDDEN_WIDTH_RANGE = (8, 4096)
MAX_IO_DIM = 4096


def check_arch(obs_dim: object, num_actions: object, hidden: object, card_head: object,
               features: object, knock_gate: object) -> None:
    """Raise ``ValueError`` unless these make a network within the stated bounds."""
    def is_int(x: object) -> bool:
        return isinstance(x, (int, np.integer)) and not isinstance(x, bool)

    lo, hi = HIDDEN_WIDTH_RANGE
    for name, value in (("obs_dim", obs_dim), ("num_actions", num_actions)):
        if not is_int(value) or not 1 <= int(value) <= MAX_IO_DIM:
            raise ValueError(f"network {name} must be an integer in 1..{MAX_IO_DIM}, "
                             f"got {value!r}")
    if (isinstance(hidden, (str, bytes)) or not isinstance(hidden, Sequence)
            or not 1 <= len(hidden) <= MAX_HIDDEN_LAYERS
            or not all(is_int(h) and lo <= int(h) <= hi for h in hidden)):
        shown = hidden if not isinstance(hidden, Sequence) or len(hidden) <= 8 else "[...]"
        raise ValueError(f"network hidden sizes must be a list of 1..{MAX_HIDDEN_LAYERS} "
                         f"layer widths in {lo}..{hi}, got {shown!r}")
    for name, value in (("card_head", card_head), ("knock_gate", knock_gate)):
        if not isinstance(value, bool):
            raise ValueError(f"network {name} must be true or false, got {value!r}")
    if features not in FEATURE_SETS:
        raise ValueError(f"unknown feature set {features!r} (known: {FEATURE_SETS})")


def extra_dim(features: str) -> int:
    if features not in FEATURE_SETS:
        raise ValueError(f"unknown feature set {features!r} (known: {FEATURE_SETS})")
    return {"none": 0, "draw": DRAW_FEATURES, "knock": DRAW_FEATURES + KNOCK_FEATURES}[features]


def draw_features(obs: np.ndarray | ObsView) -> np.ndarray:
    """(B, 5) float32: the effect of taking the top discard, for games in a draw phase.

    Columns: valid (a draw decision with a top card), deadwood gain (current
    deadwood minus the best deadwood after taking it and discarding another
    card), best deadwood after taking, knock possible after taking, gin after
    taking; deadwood divided by the observation's ``DEADWOOD_SCALE``.  Zero
    where not valid.
    """
    view = obs if isinstance(obs, ObsView) else decode(obs)
    out = np.zeros((view.size, DRAW_FEATURES), np.float32)
    if view.size == 0:
        return out
    phase = view.phase
    rows = np.flatnonzero(view.has_top & (phase != A.PHASE_DISCARD)
                          & (phase != A.PHASE_DRAW_STOCK))
    if rows.size == 0:
        return out
    sub = view.take(rows)
    top = sub.top
    hand_bits = sub.hand_bits.copy()
    hand_bits[np.arange(rows.size), top] = True
    after = deadwood_after_discard(pack_masks(hand_bits)).astype(np.int64)
    after[np.arange(rows.size), top] = SENTINEL  # the taken card cannot go straight back
    best = after.min(axis=1)
    out[rows, 0] = 1.0
    out[rows, 1] = (sub.deadwood - best) / DEADWOOD_SCALE
    out[rows, 2] = best / DEADWOOD_SCALE
    out[rows, 3] = best <= sub.knock_limit
    out[rows, 4] = best == 0
    return out


def knock_features(obs: np.ndarray | ObsView) -> np.ndarray:
    """(B, 5) float32: the best knock on offer, for games where the mover must discard.

    Columns: valid (a discard decision), least deadwood after a legal discard
    (divided by ``DEADWOOD_SCALE``; 1 when no discard is legal), knock possible
    with it, gin with it, and the cards the opponent visibly holds / 10 (each
    one is a meld they are building: the undercut risk grows with them).
    Knocking is a threshold on a minimum over the hand's cards, which an MLP
    learns slowly from the per-card slice.
    """
    view = obs if isinstance(obs, ObsView) else decode(obs)
    out = np.zeros((view.size, KNOCK_FEATURES), np.float32)
    if view.size == 0:
        return out
    rows = np.flatnonzero((view.phase == A.PHASE_DISCARD) & view.to_move)
    if rows.size == 0:
        return out
    sub = view.take(rows)
    legal = sub.hand_bits & ~sub.forbidden_bits
    best = np.where(legal, sub.after_discard, SENTINEL).min(axis=1)
    any_legal = legal.any(axis=1)
    out[rows, 0] = 1.0
    out[rows, 1] = np.where(any_legal, best / DEADWOOD_SCALE, 1.0)
    out[rows, 2] = any_legal & (best <= sub.knock_limit)
    out[rows, 3] = any_legal & (best == 0)
    out[rows, 4] = sub.opp_known_bits.sum(axis=1) / OPPONENT_CARDS_SCALE
    return out


def _relation_matrix() -> torch.Tensor:
    """(3 * 52, 52): row ``r * 52 + d``, column ``c`` is 1 when card d is a meld partner of
    card c by relation r (0: same rank, 1: same suit one rank away, 2: two ranks away)."""
    rel = np.zeros((3, NUM_CARDS, NUM_CARDS), np.float32)
    suit, rank = np.divmod(np.arange(NUM_CARDS), 13)
    same_suit = suit[:, None] == suit[None, :]
    gap = np.abs(rank[:, None] - rank[None, :])
    rel[0] = (gap == 0) & ~same_suit
    rel[1] = same_suit & (gap == 1)
    rel[2] = same_suit & (gap == 2)
    return torch.from_numpy(rel.reshape(3 * NUM_CARDS, NUM_CARDS))


class PolicyValueNet(nn.Module):
    def __init__(
        self,
        obs_dim: int = OBS_DIM,
        num_actions: int = A.NUM_ACTIONS,
        hidden: Sequence[int] = (256, 128),
        card_head: bool = True,
        features: str = "draw",
        knock_gate: bool = False,
    ) -> None:
        check_arch(obs_dim, num_actions, hidden, card_head, features, knock_gate)
        super().__init__()
        self.obs_dim = int(obs_dim)
        self.num_actions = int(num_actions)
        self.hidden = [int(h) for h in hidden]
        self.card_head = bool(card_head)
        self.features = features
        self.knock_gate = bool(knock_gate)
        self.in_dim = self.obs_dim + extra_dim(features)
        layers: list[nn.Module] = []
        width = self.in_dim
        for h in self.hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        self.trunk = nn.Sequential(*layers)
        self.policy = nn.Linear(width, self.num_actions + int(self.knock_gate))
        self.value = nn.Linear(width, 1)
        nn.init.orthogonal_(self.policy.weight, gain=0.01)
        nn.init.zeros_(self.policy.bias)
        nn.init.orthogonal_(self.value.weight, gain=1.0)
        nn.init.zeros_(self.value.bias)
        if self.card_head:
            values = torch.as_tensor(CARD_VALUES, dtype=torch.float32).view(1, 1, 4, 13)
            values = values / CARD_VALUE_SCALE
            self.register_buffer("card_values", values, persistent=False)
            self.register_buffer("relations", _relation_matrix(), persistent=False)
            self.card_coef = nn.Linear(width, 2 * self.card_features)
            nn.init.zeros_(self.card_coef.weight)
            nn.init.zeros_(self.card_coef.bias)
            if self.features != "none":
                # Draw, take and pass logits get a term linear in the draw features.
                self.draw_coef = nn.Linear(width, 3 * DRAW_FEATURES)
                nn.init.zeros_(self.draw_coef.weight)
                nn.init.zeros_(self.draw_coef.bias)

    @property
    def card_features(self) -> int:
        return CARD_SLICES + 9 + 1

    def arch(self) -> dict:
        """What :meth:`from_arch` needs to rebuild this network."""
        return {"obs_dim": self.obs_dim, "num_actions": self.num_actions,
                "hidden": list(self.hidden), "card_head": self.card_head,
                "features": self.features, "knock_gate": self.knock_gate}

    @classmethod
    def from_arch(cls, arch: dict) -> PolicyValueNet:
        """The network :meth:`arch` describes; ``ValueError`` for an unknown key or a size
        out of bounds (checked before any weight is allocated)."""
        if not isinstance(arch, dict):
            raise ValueError(f"a network architecture must be a table, got {type(arch).__name__}")
        known = {"obs_dim", "num_actions", "hidden", "card_head", "features", "knock_gate"}
        unknown = sorted(set(map(str, arch)) - known)
        if unknown:
            raise ValueError(f"unknown network architecture keys {unknown} "
                             f"(known: {sorted(known)})")
        return cls(**arch)

    def featurize(self, obs: np.ndarray | ObsView) -> np.ndarray:
        """The network's input (B, in_dim) float32 from observations (B, obs_dim), or from
        their decoded view: a caller that has decoded them (``TorchAgent.act``) passes the
        view, so both feature sets read the fields it has already decoded."""
        view = obs if isinstance(obs, ObsView) else None
        raw = np.asarray(view.obs if view is not None else obs, dtype=np.float32)
        if raw.ndim != 2 or raw.shape[1] != self.obs_dim:
            raise ValueError(f"observation must be (B, {self.obs_dim}), got {raw.shape}")
        if self.features == "none":
            return raw
        if view is None:
            view = decode(raw)
        parts = [raw, draw_features(view)]
        if self.features == "knock":
            parts.append(knock_features(view))
        return np.concatenate(parts, axis=1)

    def _card_feats(self, x: torch.Tensor) -> torch.Tensor:
        """(B, F, 52) per-card features from the observation part of ``x``.

        The reference form of :meth:`_card_logits` (which never builds this tensor).
        """
        b = x.shape[0]
        f = x[:, : CARD_SLICES * NUM_CARDS].reshape(b, CARD_SLICES, 4, 13)
        s = f[:, [0, 3, 4]]  # hand, opponent known, unseen
        same_rank = s.sum(dim=2, keepdim=True) - s
        p = nn.functional.pad(s, (2, 2))
        adj1 = p[..., 1:14] + p[..., 3:16]
        adj2 = p[..., 0:13] + p[..., 4:17]
        vals = self.card_values.expand(b, 1, 4, 13)
        return torch.cat([f, same_rank, adj1, adj2, vals], dim=1).reshape(b, -1, NUM_CARDS)

    def _card_logits(self, coef: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """(B, 104) = ``bmm(coef, _card_feats(x))`` flattened, about twice as fast.

        The partner counts are linear in the hand / opponent / unseen slices,
        so the trunk's weights over them are applied to those slices first
        and the three relations (same rank, ±1, ±2) follow as one matmul with
        a fixed (156, 52) matrix; the (B, 17, 52) feature tensor is never built.
        """
        b = x.shape[0]
        f = x[:, : CARD_SLICES * NUM_CARDS].reshape(b, CARD_SLICES, NUM_CARDS)
        direct = torch.bmm(coef[:, :, :CARD_SLICES], f)
        rel = coef[:, :, CARD_SLICES : CARD_SLICES + 9].reshape(b, 2, 3, 3)  # (b, k, rel, slice)
        s = f[:, [0, 3, 4]].unsqueeze(1)  # hand, opponent known, unseen: (b, 1, 3, 52)
        u = torch.matmul(rel, s).reshape(b * 2, 3 * NUM_CARDS)
        partners = (u @ self.relations).view(b, 2, NUM_CARDS)
        values = coef[:, :, -1:] * self.card_values.view(1, 1, NUM_CARDS)
        return (direct + partners + values).view(b, 2 * NUM_CARDS)

    def forward(self, x: torch.Tensor, detach_value: bool = False
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """Raw logits (B, A) (plus the knock gate column with ``knock_gate``) and values (B,).

        Turn them into the policy with :func:`masked_logits`.  ``detach_value`` keeps
        the value loss out of the trunk (training with a critic of its own, the value
        head still learns to read the policy's features).
        """
        h = self.trunk(x)
        logits = self.policy(h)
        if self.card_head:
            coef = self.card_coef(h).view(-1, 2, self.card_features)
            card = self._card_logits(coef, x)
            parts = [logits[:, : 2 * NUM_CARDS] + card]
            if self.features != "none":
                d = self.draw_coef(h).view(-1, 3, DRAW_FEATURES)
                feats = x[:, self.obs_dim : self.obs_dim + DRAW_FEATURES, None]
                draw = torch.bmm(d, feats).squeeze(2)
                parts.append(logits[:, A.DRAW_STOCK : A.PASS + 1] + draw)
                parts.append(logits[:, A.PASS + 1 :])
            else:
                parts.append(logits[:, 2 * NUM_CARDS :])
            logits = torch.cat(parts, 1)
        return logits, self.value(h.detach() if detach_value else h).squeeze(-1)


#: The knock gate's log-odds are squashed into [-GATE_BOUND, GATE_BOUND]: a
#: gated policy knocks (or waits) with probability at most sigmoid(4) = 98.2%
#: while training samples, so waiting for a better hand is always explored.
GATE_BOUND = 4.0


def masked_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The policy's logits (B, 108): illegal actions (``mask == 0``) at ``MASKED_LOGIT``.

    ``logits`` with one extra column (a network built with ``knock_gate``)
    are factorised where both a discard and a knock are legal:
    P(knock discarding c) = sigmoid(g) P(c | knock) and P(discard c) =
    sigmoid(-g) P(c | discard), with the gate g = the extra column softly
    bounded by :data:`GATE_BOUND`.
    """
    n = mask.shape[1]
    z = logits[:, :n].masked_fill(mask == 0, MASKED_LOGIT)
    if logits.shape[1] == n:
        return z
    knock = slice(A.KNOCK, A.DRAW_STOCK)
    both = mask[:, knock].any(dim=1) & mask[:, : A.KNOCK].any(dim=1)
    if n > A.BIG_GIN:
        both &= mask[:, A.BIG_GIN] == 0
    if not bool(both.any()):
        return z
    g = GATE_BOUND * torch.tanh(logits[:, n] / GATE_BOUND)
    lp_d = torch.log_softmax(z[:, : A.KNOCK], dim=1) + nn.functional.logsigmoid(-g)[:, None]
    lp_k = torch.log_softmax(z[:, knock], dim=1) + nn.functional.logsigmoid(g)[:, None]
    both = both[:, None]
    return torch.cat([torch.where(both, lp_d, z[:, : A.KNOCK]),
                      torch.where(both, lp_k, z[:, knock]), z[:, A.DRAW_STOCK :]], dim=1)


def sample_masked(
    logits: torch.Tensor, mask: torch.Tensor, generator: torch.Generator | None = None,
    greedy: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One action per row from the masked categorical, and its log-probability.

    Sampling inverts the cumulative distribution with one uniform per row.
    Illegal actions have probability exactly 0 (``exp(MASKED_LOGIT)``
    underflows), so they add nothing to the cumulative sum and can never be
    the first entry above the uniform; a row that still lands on one (float
    rounding at the very top) falls back to its most likely action.
    """
    z = masked_logits(logits, mask)
    logp_all = torch.log_softmax(z, dim=-1)
    if greedy:
        action = z.argmax(dim=-1)
    else:
        cdf = logp_all.exp().cumsum_(dim=-1)
        u = torch.rand((z.shape[0], 1), generator=generator, dtype=z.dtype, device=z.device)
        action = torch.searchsorted(cdf, u * cdf[:, -1:], right=True).squeeze_(1)
        action.clamp_(max=z.shape[1] - 1)
        bad = mask.gather(1, action[:, None]).squeeze(1) == 0
        if bool(bad.any()):
            action = torch.where(bad, z.argmax(dim=-1), action)
    return action, logp_all.gather(1, action[:, None]).squeeze(1)


#: Log-probabilities are floored here before ``exp`` in the entropy: exp of the
#: masked logits' -1e9 takes a slow path (about 4x the cost of the whole row),
#: and a probability of exp(-80) ~ 1e-35 adds nothing a float32 sum can see.
_ENTROPY_FLOOR = -80.0


def logp_entropy(
    logits: torch.Tensor, mask: torch.Tensor, actions: torch.Tensor, knock: bool = True
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Log-probabilities of ``actions``, the entropy of the masked policy, and the
    entropy of its knock-or-not choice (0 where no knock is legal, and everywhere
    when ``knock`` is false: the trainer skips it when its weight is 0)."""
    z = masked_logits(logits, mask)
    logp_all = torch.log_softmax(z, dim=-1)
    floored = logp_all.clamp(min=_ENTROPY_FLOOR)
    entropy = -(floored.exp() * floored).sum(-1)
    kent = knock_entropy(logp_all, mask) if knock else torch.zeros_like(entropy)
    return logp_all.gather(1, actions[:, None]).squeeze(1), entropy, kent


def knock_entropy(logp_all: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B,) binary entropy of "knock (any discard)" against "do something else".

    Knocking is one choice spread over many action ids; once a policy always
    knocks when it may, it never again tries waiting for a better hand, and
    the plain entropy bonus barely notices.  This is the term that does.
    """
    knock = slice(A.KNOCK, A.DRAW_STOCK)
    legal = mask[:, knock].any(dim=1) & mask[:, : A.KNOCK].any(dim=1)
    lp_knock = torch.logsumexp(logp_all[:, knock], dim=1)
    p = lp_knock.exp().clamp(0.0, 1.0)
    lp_other = torch.log1p(-p.clamp(max=1 - 1e-6))
    h = -(p * lp_knock.clamp(min=-50) + (1 - p) * lp_other)
    return torch.where(legal, h, torch.zeros_like(h))


__all__ = [
    "FEATURE_SETS",
    "GATE_BOUND",
    "HIDDEN_WIDTH_RANGE",
    "MASKED_LOGIT",
    "MAX_HIDDEN_LAYERS",
    "PolicyValueNet",
    "check_arch",
    "draw_features",
    "knock_entropy",
    "knock_features",
    "logp_entropy",
    "masked_logits",
    "sample_masked",
]
