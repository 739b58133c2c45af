"""A privileged critic: the value function of an asymmetric actor-critic.

With ``model.critic = "privileged"`` the trainer's value function is this network, on
the policy's input plus what the acting seat cannot see (:mod:`hgin_env.hidden`: the
opponent's hand and the stock).  Values that know the hidden cards have less variance,
so the advantages the policy learns from are less noisy; the policy itself still sees
only its observation.  The critic lives in the trainer's state alone: agent files
(``agent_final.pt``, ``pretrained``) hold the policy network, whose own value head is
then unused, so nothing privileged reaches play or search.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from hgin_env.hidden import HIDDEN_DIM

__all__ = ["PrivilegedCritic"]


class PrivilegedCritic(nn.Module):
    """An MLP from ``[policy input, hidden cards]`` to one value per row.

    ``hidden_inputs = 0`` leaves the hidden cards out (``model.critic = "separate"``): a
    value function with a network of its own that sees what the policy sees, the control
    that tells the hidden cards' effect from that of a separate network.
    """

    def __init__(self, in_dim: int, hidden: Sequence[int] = (256, 128),
                 hidden_inputs: int = HIDDEN_DIM) -> None:
        super().__init__()
        self.in_dim = int(in_dim)
        self.hidden = [int(h) for h in hidden]
        self.hidden_dim = int(hidden_inputs)
        layers: list[nn.Module] = []
        width = self.in_dim + self.hidden_dim
        for h in self.hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        self.trunk = nn.Sequential(*layers)
        self.value = nn.Linear(width, 1)
        nn.init.orthogonal_(self.value.weight, gain=1.0)
        nn.init.zeros_(self.value.bias)

    def forward(self, x: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """Values (B,) of policy inputs ``x`` (B, in_dim) with ``hidden`` (B, hidden_dim)."""
        inputs = torch.cat([x, hidden], dim=1) if self.hidden_dim else x
        return self.value(self.trunk(inputs)).squeeze(-1)
