"""The policy/value network: a small MLP over the observation, sized for CPU.

Input.  The observation vector, plus (``features="draw"``) a few numbers
computed from it in numpy before the network: what taking the top discard
would do to the mover's hand (deadwood gained, whether it allows a knock or
gin).  They only re-express what the observation holds, but learning meld
arithmetic from card bits alone costs an MLP many millions of steps.

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

from hgin_env import actions as A
from hgin_env.cards import CARD_VALUES, NUM_CARDS, pack_masks
from hgin_env.melds import SENTINEL, deadwood_after_discard
from hgin_env.observation import OBS_DIM, observation_spec

#: The per-card slices at the front of the observation (observation.LAYOUT).
CARD_SLICES = 7
MASKED_LOGIT = -1e9
FEATURE_SETS = ("none", "draw")
DRAW_FEATURES = 5
_SPEC = observation_spec()
_VALUES = CARD_VALUES.astype(np.int64)


def extra_dim(features: str) -> int:
    if features not in FEATURE_SETS:
        raise ValueError(f"unknown feature set {features!r} (known: {FEATURE_SETS})")
    return DRAW_FEATURES if features == "draw" else 0


def draw_features(obs: np.ndarray) -> np.ndarray:
    """(B, 5) float32: the effect of taking the top discard, for games in a draw phase.

    Columns: valid (a draw decision with a top card), deadwood gain / 100
    (current deadwood minus the best deadwood after taking it and discarding
    another card), best deadwood after taking / 100, knock possible after
    taking, gin after taking.  Zero where not valid.
    """
    b = obs.shape[0]
    out = np.zeros((b, DRAW_FEATURES), np.float32)
    if b == 0:
        return out
    phase = obs[:, _SPEC["phase"]].argmax(axis=1)
    top_slice = obs[:, _SPEC["top_discard"]]
    has_top = top_slice.max(axis=1) > 0
    rows = np.flatnonzero(has_top & (phase != A.PHASE_DISCARD) & (phase != A.PHASE_DRAW_STOCK))
    if rows.size == 0:
        return out
    top = top_slice[rows].argmax(axis=1)
    hand_bits = obs[rows, _SPEC["hand"]] > 0
    hand_bits[np.arange(rows.size), top] = True
    after = deadwood_after_discard(pack_masks(hand_bits)).astype(np.int64)
    after[np.arange(rows.size), top] = SENTINEL  # the taken card cannot go straight back
    best = after.min(axis=1)
    deadwood = np.rint(obs[rows, _SPEC["deadwood"].start] * 100)
    limit = np.rint(obs[rows, _SPEC["knock_limit"].start] * 10)
    out[rows, 0] = 1.0
    out[rows, 1] = (deadwood - best) / 100.0
    out[rows, 2] = best / 100.0
    out[rows, 3] = best <= limit
    out[rows, 4] = best == 0
    return out


class PolicyValueNet(nn.Module):
    def __init__(
        self,
        obs_dim: int = OBS_DIM,
        num_actions: int = A.NUM_ACTIONS,
        hidden: Sequence[int] = (256, 128),
        card_head: bool = True,
        features: str = "draw",
    ) -> None:
        super().__init__()
        self.obs_dim = int(obs_dim)
        self.num_actions = int(num_actions)
        self.hidden = [int(h) for h in hidden]
        self.card_head = bool(card_head)
        self.features = features
        self.in_dim = self.obs_dim + extra_dim(features)
        layers: list[nn.Module] = []
        width = self.in_dim
        for h in self.hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        self.trunk = nn.Sequential(*layers)
        self.policy = nn.Linear(width, self.num_actions)
        self.value = nn.Linear(width, 1)
        nn.init.orthogonal_(self.policy.weight, gain=0.01)
        nn.init.zeros_(self.policy.bias)
        nn.init.orthogonal_(self.value.weight, gain=1.0)
        nn.init.zeros_(self.value.bias)
        if self.card_head:
            values = torch.as_tensor(CARD_VALUES, dtype=torch.float32).view(1, 1, 4, 13) / 10
            self.register_buffer("card_values", values, persistent=False)
            self.card_coef = nn.Linear(width, 2 * self.card_features)
            nn.init.zeros_(self.card_coef.weight)
            nn.init.zeros_(self.card_coef.bias)
            if self.features == "draw":
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
                "features": self.features}

    @classmethod
    def from_arch(cls, arch: dict) -> PolicyValueNet:
        return cls(**arch)

    def featurize(self, obs: np.ndarray) -> np.ndarray:
        """The network's input (B, in_dim) float32 from observations (B, obs_dim)."""
        obs = np.asarray(obs, dtype=np.float32)
        if obs.ndim != 2 or obs.shape[1] != self.obs_dim:
            raise ValueError(f"observation must be (B, {self.obs_dim}), got {obs.shape}")
        if self.features == "none":
            return obs
        return np.concatenate([obs, draw_features(obs)], axis=1)

    def _card_feats(self, x: torch.Tensor) -> torch.Tensor:
        """(B, F, 52) per-card features from the observation part of ``x``."""
        b = x.shape[0]
        f = x[:, : CARD_SLICES * NUM_CARDS].reshape(b, CARD_SLICES, 4, 13)
        s = f[:, [0, 3, 4]]  # hand, opponent known, unseen
        same_rank = s.sum(dim=2, keepdim=True) - s
        p = nn.functional.pad(s, (2, 2))
        adj1 = p[..., 1:14] + p[..., 3:16]
        adj2 = p[..., 0:13] + p[..., 4:17]
        vals = self.card_values.expand(b, 1, 4, 13)
        return torch.cat([f, same_rank, adj1, adj2, vals], dim=1).reshape(b, -1, NUM_CARDS)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Raw (unmasked) logits (B, A) and values (B,) for featurized input ``x``."""
        h = self.trunk(x)
        logits = self.policy(h)
        if self.card_head:
            coef = self.card_coef(h).view(-1, 2, self.card_features)
            card = torch.bmm(coef, self._card_feats(x)).view(-1, 2 * NUM_CARDS)
            parts = [logits[:, : 2 * NUM_CARDS] + card]
            if self.features == "draw":
                d = self.draw_coef(h).view(-1, 3, DRAW_FEATURES)
                draw = torch.bmm(d, x[:, self.obs_dim :, None]).squeeze(2)
                parts.append(logits[:, A.DRAW_STOCK : A.PASS + 1] + draw)
                parts.append(logits[:, A.PASS + 1 :])
            else:
                parts.append(logits[:, 2 * NUM_CARDS :])
            logits = torch.cat(parts, 1)
        return logits, self.value(h).squeeze(-1)


def masked_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Logits with illegal actions (``mask == 0``) pushed to ``MASKED_LOGIT``."""
    return logits.masked_fill(mask == 0, MASKED_LOGIT)


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


def logp_entropy(
    logits: torch.Tensor, mask: torch.Tensor, actions: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probabilities of ``actions`` and the entropy of the masked policy."""
    z = masked_logits(logits, mask)
    logp_all = torch.log_softmax(z, dim=-1)
    probs = logp_all.exp()
    entropy = -(probs * logp_all).sum(-1)
    return logp_all.gather(1, actions[:, None]).squeeze(1), entropy


__all__ = ["FEATURE_SETS", "MASKED_LOGIT", "PolicyValueNet", "draw_features", "logp_entropy",
           "masked_logits", "sample_masked"]
