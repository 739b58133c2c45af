"""Masked PPO in one file, in the style of CleanRL's ``ppo.py``, on hgin's batched vector env.

CleanRL's ``ppo.py`` (Huang et al., "CleanRL", JMLR 2022) with the two changes a card game
needs: the env is :class:`hgin_env.envs.gym_env.HollywoodGinVectorEnv` (B matches on one
batched engine, against a fixed opponent, same-step autoreset as CleanRL expects), and the
policy is a *masked* categorical (CleanRL's invalid-action masking: illegal logits set to a
large negative number, their entropy terms left out), read from ``obs["action_mask"]``.
Everything else is CleanRL's: GAE, advantage normalisation, the clipped surrogate and
clipped value loss, an entropy bonus, gradient clipping, a linearly annealed learning rate.
No hgin training code is used, so the file is a starting point to copy.

    pip install -e .              # or the wheel; torch is the only other need
    python -m hgin_env.examples.cleanrl_ppo --seed 0

The reward is ``points`` (each hand's award, a signal every hand; a match's result alone
arrives every few hundred moves), plus ``--shaping`` times the drop in the learner's
deadwood since its previous move within a hand (read from the observation's ``deadwood``
entry, as the SB3 example does): inside a hand it sums to the first minus the last
deadwood, a dense signal toward the low-deadwood hands that knock and go gin. At the end
the greedy policy plays ``--eval-matches`` duplicate matches against ``--opponent`` on
hgin's arena and the table is printed; the result of :func:`main` holds the learning
curve and that evaluation.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

from agents import make_agent
from agents.evaluation.arena import duplicate_rates, format_rates
from hgin_env.envs.gym_env import HollywoodGinVectorEnv
from hgin_env.observation import observation_spec
from hgin_env.rules import load_rules

#: A logit no softmax gives weight to: CleanRL's mask value.
MASKED_LOGIT = -1e8
#: Where the learner's own deadwood (scaled by 1/100) sits in the observation vector.
DEADWOOD_INDEX = observation_spec()["deadwood"].start


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--total-timesteps", type=int, default=200_000,
                   help="learner decisions to train on (all envs together)")
    p.add_argument("--opponent", default="simple", help="agent spec the learner plays")
    p.add_argument("--rules", default="friendly", help="rule profile or TOML path")
    p.add_argument("--reward", default="points", choices=["match", "columns", "points"])
    p.add_argument("--shaping", type=float, default=1.0,
                   help="weight of the deadwood-drop reward inside a hand (0: off)")
    p.add_argument("--num-envs", type=int, default=64, help="matches played at once")
    p.add_argument("--num-steps", type=int, default=128, help="steps per env per rollout")
    p.add_argument("--learning-rate", type=float, default=2.5e-4)
    p.add_argument("--no-anneal-lr", dest="anneal_lr", action="store_false",
                   help="keep the learning rate constant")
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--num-minibatches", type=int, default=4)
    p.add_argument("--update-epochs", type=int, default=4)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--target-kl", type=float, default=None,
                   help="stop an update's epochs once the KL passes this (default: never)")
    p.add_argument("--hidden", type=int, default=256, help="width of the two hidden layers")
    p.add_argument("--eval-matches", type=int, default=200,
                   help="duplicate matches of the greedy policy at the end (0: none)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    return p


def check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject bad values up front, naming the option."""
    for name in ("total_timesteps", "num_envs", "num_steps", "num_minibatches",
                 "update_epochs", "hidden", "threads"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if not np.isfinite(args.shaping) or args.shaping < 0:
        p.error(f"--shaping must be a number >= 0, got {args.shaping}")
    if args.eval_matches < 0:
        p.error(f"--eval-matches must be >= 0, got {args.eval_matches}")
    if (args.num_envs * args.num_steps) % args.num_minibatches:
        p.error(f"--num-envs x --num-steps ({args.num_envs * args.num_steps}) must divide "
                f"into --num-minibatches ({args.num_minibatches})")
    try:
        make_agent(args.opponent, seed=args.seed, rules=load_rules(args.rules))
    except ValueError as exc:
        p.error(str(exc))


def layer_init(layer: nn.Linear, std: float = np.sqrt(2), bias: float = 0.0) -> nn.Linear:
    """CleanRL's orthogonal initialisation."""
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class Agent(nn.Module):
    """CleanRL's separate actor and critic MLPs, with a masked categorical policy."""

    def __init__(self, obs_dim: int, num_actions: int, hidden: int) -> None:
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, 1), std=1.0))
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, num_actions), std=0.01))

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def get_action_and_value(self, x: torch.Tensor, mask: torch.Tensor,
                             action: torch.Tensor | None = None
                             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        logits = self.actor(x).masked_fill(~mask, MASKED_LOGIT)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        # CleanRL's masked entropy: the illegal actions' p log p terms are left out.
        p_log_p = torch.where(mask, probs.logits * probs.probs, torch.zeros_like(logits))
        return action, probs.log_prob(action), -p_log_p.sum(-1), self.critic(x)


class GreedyAgent:
    """The trained actor as an hgin agent (``act(obs) -> actions``), for the arena."""

    name = "cleanrl-ppo"

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def act(self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None
            ) -> np.ndarray:
        with torch.no_grad():
            x = torch.as_tensor(obs["observation"], dtype=torch.float32)
            mask = torch.as_tensor(np.asarray(obs["action_mask"]) > 0)
            logits = self.agent.actor(x).masked_fill(~mask, MASKED_LOGIT)
        return logits.argmax(-1).numpy().astype(np.int64)


def train(args: argparse.Namespace) -> dict[str, Any]:
    """CleanRL's loop: collect ``num_steps`` from every env, then ``update_epochs`` of PPO."""
    torch.manual_seed(args.seed)  # the networks' initial weights and the sampled actions
    envs = HollywoodGinVectorEnv(args.num_envs, opponent=args.opponent, rules=args.rules,
                                 reward=args.reward, mask_dtype=bool)
    obs_dim = envs.single_observation_space["observation"].shape[0]
    num_actions = envs.single_action_space.n
    agent = Agent(obs_dim, num_actions, args.hidden)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    num_iterations = max(1, args.total_timesteps // batch_size)

    shape = (args.num_steps, args.num_envs)
    obs = torch.zeros((*shape, obs_dim))
    masks = torch.zeros((*shape, num_actions), dtype=torch.bool)
    actions = torch.zeros(shape, dtype=torch.long)
    logprobs, rewards, dones, values = (torch.zeros(shape) for _ in range(4))

    global_step, start = 0, time.perf_counter()
    next_obs_np, _ = envs.reset(seed=args.seed)
    next_obs = torch.as_tensor(next_obs_np["observation"])
    next_mask = torch.as_tensor(next_obs_np["action_mask"])
    next_done = torch.zeros(args.num_envs)
    deadwood = next_obs_np["observation"][:, DEADWOOD_INDEX].copy()
    curve: list[dict[str, float]] = []
    print(f"{'step':>9} {'SPS':>6} {'hands':>6} {'hand win':>8} {'matches':>7} {'won':>5} "
          f"{'value loss':>10} {'entropy':>7}", flush=True)
    for iteration in range(1, num_iterations + 1):
        if args.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / num_iterations
            optimizer.param_groups[0]["lr"] = frac * args.learning_rate
        hands = hands_won = matches = matches_won = 0
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step], masks[step], dones[step] = next_obs, next_mask, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs, next_mask)
            values[step] = value.flatten()
            actions[step], logprobs[step] = action, logprob
            next_obs_np, reward, terminations, truncations, info = envs.step(action.numpy())
            over = np.asarray(info["hand_over"], bool)
            now = next_obs_np["observation"][:, DEADWOOD_INDEX]
            # The deadwood drop since the learner's last move, within a hand only (a new
            # hand, or match, starts from its own deal).
            shaped = np.where(over, 0.0, args.shaping * (deadwood - now))
            deadwood = now.copy()
            rewards[step] = torch.as_tensor(reward + shaped, dtype=torch.float32)
            next_done = torch.as_tensor(np.logical_or(terminations, truncations),
                                        dtype=torch.float32)
            next_obs = torch.as_tensor(next_obs_np["observation"])
            next_mask = torch.as_tensor(next_obs_np["action_mask"])
            hands += int(over.sum())
            hands_won += int((np.asarray(info["hand_result"])[over] == 1).sum())
            ended = np.asarray(info["match_over"], bool)
            matches += int(ended.sum())
            matches_won += int(np.asarray(info["match_won"], bool)[ended].sum())

        # GAE over the rollout, bootstrapped from the value of the next observation.
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = torch.zeros(args.num_envs)
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    nextnonterminal, nextvalues = 1.0 - next_done, next_value
                else:
                    nextnonterminal, nextvalues = 1.0 - dones[t + 1], values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
                advantages[t] = lastgaelam
            returns = advantages + values

        b_obs, b_masks = obs.reshape(-1, obs_dim), masks.reshape(-1, num_actions)
        b_logprobs, b_actions = logprobs.reshape(-1), actions.reshape(-1)
        b_advantages, b_returns, b_values = (advantages.reshape(-1), returns.reshape(-1),
                                             values.reshape(-1))
        b_inds = np.arange(batch_size)
        rng = np.random.default_rng([args.seed, iteration])
        for _ in range(args.update_epochs):
            rng.shuffle(b_inds)
            approx_kl = torch.zeros(())
            for lo in range(0, batch_size, minibatch_size):
                mb = b_inds[lo : lo + minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    b_obs[mb], b_masks[mb], b_actions[mb])
                logratio = newlogprob - b_logprobs[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - logratio).mean()
                mb_adv = b_advantages[mb]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(-mb_adv * ratio, -mb_adv * torch.clamp(
                    ratio, 1 - args.clip_coef, 1 + args.clip_coef)).mean()
                newvalue = newvalue.view(-1)
                v_clipped = b_values[mb] + torch.clamp(newvalue - b_values[mb],
                                                       -args.clip_coef, args.clip_coef)
                v_loss = 0.5 * torch.max((newvalue - b_returns[mb]) ** 2,
                                         (v_clipped - b_returns[mb]) ** 2).mean()
                entropy_loss = entropy.mean()
                loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
            if args.target_kl is not None and approx_kl > args.target_kl:
                break

        sps = global_step / (time.perf_counter() - start)
        row = {"step": global_step, "sps": sps, "hands": hands,
               "hand_win_rate": hands_won / hands if hands else float("nan"),
               "matches": matches, "matches_won": matches_won,
               "value_loss": v_loss.item(), "entropy": entropy_loss.item()}
        curve.append(row)
        print(f"{global_step:9d} {sps:6.0f} {hands:6d} {100 * row['hand_win_rate']:7.1f}% "
              f"{matches:7d} {matches_won:5d} {row['value_loss']:10.4f} "
              f"{row['entropy']:7.3f}", flush=True)
    envs.close()
    return {"agent": agent, "curve": curve, "steps": global_step,
            "train_seconds": time.perf_counter() - start}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    p = build_parser()
    args = p.parse_args(argv)
    check_args(p, args)
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    try:
        result = train(args)
        if args.eval_matches:
            rules = load_rules(args.rules)
            opponent = make_agent(args.opponent, seed=args.seed, rules=rules)
            rates = duplicate_rates(GreedyAgent(result["agent"]), opponent,
                                    args.eval_matches, rules, args.seed)
            result["evaluation"] = rates
            print(f"greedy policy after {result['steps']} steps "
                  f"({result['train_seconds']:.0f} s), duplicate matches, 95% intervals:")
            print(format_rates("cleanrl-ppo", args.opponent, rates))
        return result
    finally:
        torch.set_num_threads(threads)


if __name__ == "__main__":
    main()
