"""Where a fine-tune starts (``model.init``): a saved policy network, as it is or widened.

A wider ``[model] hidden`` than the file's (the same number of layers, no layer
narrower) starts from the file's network *widened* so that it computes exactly the
same function (Net2Net's wider operator, Chen et al. 2016): every new unit copies an
existing one's incoming weights, and the copies of a unit split its outgoing weights
between them.  The split is uneven (random positive shares that sum to one), so the
copies get different gradients and grow apart, where even halves would keep them
equal for ever.  Training then goes on from the file's strength with room to learn more.
"""

from __future__ import annotations

import torch
from torch import nn

from agents.model import PolicyValueNet

__all__ = ["load_initial_weights", "widen"]


def load_initial_weights(model: PolicyValueNet, spec: str, seed: int = 0) -> None:
    """Start ``model`` from the policy network of ``spec``, widened if ``model`` is wider.

    Any other difference between the file's architecture and the config's is a
    ``ValueError`` naming each setting that differs (loading it would fail deep in torch,
    or silently mean another network)."""
    from agents import make_agent

    source = make_agent(spec).model  # the spec's file, loaded and checksum-verified
    saved, wanted = source.arch(), model.arch()
    differ = [f"{key} = {saved.get(key)!r} in the file, {value!r} in the config"
              for key, value in wanted.items() if saved.get(key) != value and key != "hidden"]
    old_hidden, new_hidden = list(saved["hidden"]), wanted["hidden"]
    widening = len(old_hidden) == len(new_hidden) and all(
        n >= o for o, n in zip(old_hidden, new_hidden, strict=True))
    if not widening:
        differ.append(f"hidden = {old_hidden!r} in the file, {new_hidden!r} in the config "
                      "(a fine-tune can widen layers, not add, remove or narrow them)")
    if differ:
        raise ValueError(f"bad value for config key model.init: {spec!r} is another network "
                         f"than the [model] section asks for: {'; '.join(differ)}")
    gen = torch.Generator().manual_seed(seed)
    model.load_state_dict(widen(source, new_hidden, gen).state_dict())


def _linears(model: PolicyValueNet) -> tuple[list[nn.Linear], list[nn.Linear]]:
    """The trunk's layers in order, and the heads that read the trunk's last layer."""
    trunk = [m for m in model.trunk if isinstance(m, nn.Linear)]
    heads = [m for m in (model.policy, model.value, getattr(model, "card_coef", None),
                         getattr(model, "draw_coef", None)) if m is not None]
    return trunk, heads


@torch.no_grad()
def widen(model: PolicyValueNet, hidden: list[int], generator: torch.Generator
          ) -> PolicyValueNet:
    """A copy of ``model`` with trunk widths ``hidden`` (each at least the old one) that
    gives the same logits and values on every input, up to float rounding."""
    arch = {**model.arch(), "hidden": list(hidden)}
    wide = PolicyValueNet.from_arch(arch)
    old_trunk, old_heads = _linears(model)
    new_trunk, new_heads = _linears(wide)
    share = None  # per input unit of the layer at hand: the share of its source's weights
    source = None  # per input unit: the old unit it copies
    for old, new in zip(old_trunk, new_trunk, strict=True):
        weight, bias = old.weight, old.bias
        if source is not None:  # inputs: the previous layer's copies split its weights
            weight = weight[:, source] * share[None, :]
        width, extra = old.out_features, new.out_features - old.out_features
        picks = torch.randint(width, (extra,), generator=generator)
        units = torch.cat([torch.arange(width), picks])
        new.weight.copy_(weight[units])
        new.bias.copy_(bias[units])
        # Uneven shares of each old unit among its copies, summing to one.
        raw = torch.rand(units.numel(), generator=generator) + 0.5
        total = torch.zeros(width).index_add_(0, units, raw)
        source, share = units, raw / total[units]
    for old, new in zip(old_heads, new_heads, strict=True):
        new.weight.copy_(old.weight[:, source] * share[None, :])
        new.bias.copy_(old.bias)
    return wide
