"""The torch policy, the self-play PPO trainer, train.py and checkpoints."""

from __future__ import annotations

import io
import json
import os
import pickle
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agents.evaluation.arena import duplicate_rates
from agents.model import PolicyValueNet, logp_entropy, sample_masked
from agents.random_agent import RandomAgent
from agents.torch_agent import (
    FORMAT,
    PRETRAINED_PATH,
    CheckpointError,
    TorchAgent,
    atomic_save,
    checksums,
    load_checkpoint,
    load_torch_agent,
    make_checkpoint,
    pack_array,
    save_agent,
    unpack_array,
)
from agents.training.config import load_config, parse_override, shipped_configs, validate
from agents.training.ppo import Trainer
from agents.training.rollout import RolloutBuffers, stream_gae
from agents.training.shard import KINDS
from hgin_env.actions import NUM_ACTIONS
from hgin_env.engine import VectorGame
from hgin_env.observation import OBS_DIM
from hgin_env.records import read_records
from hgin_env.records.replay import replay
from tests.helpers.paths import ROOT
from tests.helpers.signals import sigint_default

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/agents/conftest.py


def tiny_config(**sections: dict) -> dict:
    raw = {
        "run": {"seed": 3, "total_steps": 16 * 8 * 3, "threads": 1, "checkpoint_every": 1,
                "eval_every": 2, "eval_matches": 2, "final_eval_matches": 2,
                "eval_opponents": ["random"]},
        "env": {"num_games": 16, "rollout_steps": 8, "points_coef": 0.5},
        "model": {"hidden": [32]},
        "ppo": {"epochs": 2, "minibatch_size": 48},
        "opponents": {"self_play": 0.5, "pool": 0.25, "simple": 0.25, "strong": 0.0,
                      "blocks": 4, "snapshot_every": 1, "pool_size": 2},
    }
    for name, keys in sections.items():
        raw.setdefault(name, {}).update(keys)
    return validate(raw)


# --------------------------------------------------------------------------- masking


def test_sampling_never_picks_an_illegal_action() -> None:
    gen = torch.Generator().manual_seed(0)
    rng = np.random.default_rng(0)
    for _ in range(50):
        b = 256
        mask = torch.from_numpy((rng.random((b, NUM_ACTIONS)) < rng.random((b, 1))).astype(np.int8))
        mask[torch.arange(b), torch.from_numpy(rng.integers(0, NUM_ACTIONS, b))] = 1
        # Huge logits on illegal actions must still never be chosen.
        logits = torch.randn(b, NUM_ACTIONS, generator=gen) * 5
        logits = torch.where(mask == 0, logits.abs() * 1e6, logits)
        action, logp = sample_masked(logits, mask, gen)
        assert (mask.gather(1, action[:, None]) == 1).all()
        assert torch.isfinite(logp).all() and (logp <= 0).all()
        greedy, _ = sample_masked(logits, mask, greedy=True)
        assert (mask.gather(1, greedy[:, None]) == 1).all()


def test_knock_gate_bounds_and_legality() -> None:
    from agents.model import GATE_BOUND, masked_logits

    gen = torch.Generator().manual_seed(1)
    b = 512
    mask = torch.zeros(b, NUM_ACTIONS, dtype=torch.int8)
    mask[:, [3, 7, 20]] = 1  # discards
    mask[:, [55, 59]] = 1  # knocks
    logits = torch.randn(b, NUM_ACTIONS + 1, generator=gen) * 3
    logits[:, -1] = torch.linspace(-1e4, 1e4, b)  # the gate, far beyond its bound
    probs = torch.softmax(masked_logits(logits, mask), dim=1)
    knock = probs[:, 52:104].sum(1)
    lo = torch.sigmoid(torch.tensor(-GATE_BOUND))
    assert (knock >= lo - 1e-5).all() and (knock <= 1 - lo + 1e-5).all()
    assert torch.allclose(probs.sum(1), torch.ones(b), atol=1e-5)
    assert (probs[mask == 0] == 0).all()
    for _ in range(20):
        action, _ = sample_masked(logits, mask, gen)
        assert (mask.gather(1, action[:, None]) == 1).all()
    agent = TorchAgent(PolicyValueNet(hidden=[16], knock_gate=True), greedy=False, seed=0)
    game = VectorGame(32, seed=2)
    for _ in range(60):
        game.step(agent.act(game.observe()))


def test_single_legal_action_and_masked_entropy() -> None:
    mask = torch.zeros(4, NUM_ACTIONS, dtype=torch.int8)
    mask[:, 104] = 1
    logits = torch.randn(4, NUM_ACTIONS)
    action, logp = sample_masked(logits, mask)
    assert (action == 104).all()
    assert torch.allclose(logp, torch.zeros(4), atol=1e-6)
    lp, ent, kent = logp_entropy(logits, mask, action)
    assert torch.allclose(ent, torch.zeros(4), atol=1e-6)
    assert torch.allclose(kent, torch.zeros(4))
    assert torch.isfinite(lp).all()


def test_knock_entropy() -> None:
    mask = torch.zeros(3, NUM_ACTIONS, dtype=torch.int8)
    mask[:, [0, 1, 52]] = 1  # two discards, one knock
    mask[2, 52] = 0  # row 2: no knock legal
    logits = torch.zeros(3, NUM_ACTIONS)
    logits[1, 52] = 50.0  # row 1 always knocks
    action = torch.zeros(3, dtype=torch.int64)
    _, _, kent = logp_entropy(logits, mask, action)
    p = torch.tensor(1 / 3)
    expected = -(p * p.log() + (1 - p) * (1 - p).log())
    assert torch.allclose(kent[0], expected, atol=1e-5)
    assert kent[1] < 1e-6 and kent[2] == 0 and torch.isfinite(kent).all()


def test_torch_agent_plays_legal_moves_in_the_engine() -> None:
    agent = TorchAgent(PolicyValueNet(hidden=[16]), greedy=False, seed=0)
    game = VectorGame(64, seed=1)
    rng = np.random.default_rng(1)
    for _ in range(120):  # the engine raises on any illegal action
        game.step(agent.act(game.observe(), rng=rng))
    greedy = TorchAgent(PolicyValueNet(hidden=[16]), greedy=True)
    for _ in range(30):
        game.step(greedy.act(game.observe()))


# --------------------------------------------------------------------------- GAE


def reference_gae(ld, od, values, rewards, done, gamma, lam):
    """Stream by stream, straight from the definition (slow)."""
    s_len, b, _ = values.shape
    adv = np.zeros_like(values)
    trainable = np.zeros(values.shape, bool)
    carry = np.zeros(values.shape, bool)
    carry_r = np.zeros((b, 2), np.float32)
    for g in range(b):
        for seat in range(2):
            events = [s for s in range(s_len) if ld[s, g, seat] or od[s, g, seat]]
            info = {}
            for i in reversed([s for s in events if ld[s, g, seat]]):
                later = [s for s in events if s > i]
                nxt = later[0] if later else None
                stop = nxt - 1 if nxt is not None else s_len - 1
                dones = [k for k in range(i, stop + 1) if done[k, g, seat]]
                end = dones[0] if dones else stop
                ret = float(sum(rewards[k, g, seat] for k in range(i, end + 1)))
                if dones:
                    a = ret - values[i, g, seat]
                    info[i] = (True, a)
                elif nxt is not None and ld[nxt, g, seat]:
                    ok, a_next = info[nxt]
                    a = ret + gamma * values[nxt, g, seat] - values[i, g, seat]
                    a += gamma * lam * (a_next if ok else 0.0)
                    info[i] = (True, a)
                else:
                    info[i] = (False, 0.0)
                    if nxt is None:
                        carry[i, g, seat] = True
                        carry_r[g, seat] = ret
                trainable[i, g, seat], adv[i, g, seat] = info[i]
    return adv, trainable, carry, carry_r


def test_stream_gae_matches_reference() -> None:
    rng = np.random.default_rng(5)
    for _ in range(30):
        s_len, b = 14, 6
        mover = rng.integers(0, 2, (s_len, b))
        learner = rng.random((s_len, b)) < 0.7
        ld = np.zeros((s_len, b, 2), bool)
        od = np.zeros((s_len, b, 2), bool)
        g = np.arange(b)
        ld[1:][np.nonzero(learner[1:])[0], g[np.nonzero(learner[1:])[1]],
               mover[1:][learner[1:]]] = True
        other = ~learner
        od[1:][np.nonzero(other[1:])[0], g[np.nonzero(other[1:])[1]], mover[1:][other[1:]]] = True
        ld[0] = rng.random((b, 2)) < 0.5  # carried decisions
        values = rng.normal(size=(s_len, b, 2)).astype(np.float32)
        rewards = (rng.normal(size=(s_len, b, 2)) * (rng.random((s_len, b, 2)) < 0.3)).astype(
            np.float32)
        done = np.repeat((rng.random((s_len, b)) < 0.1)[:, :, None], 2, axis=2)
        done[0] = False
        got = stream_gae(ld, od, values, rewards, done, 0.9, 0.8)
        adv, trainable, carry, carry_r = reference_gae(ld, od, values, rewards, done, 0.9, 0.8)
        np.testing.assert_array_equal(got.trainable, trainable)
        np.testing.assert_array_equal(got.carry, carry)
        np.testing.assert_allclose(got.advantages[trainable], adv[trainable], rtol=1e-5,
                                   atol=1e-5)
        has_carry = carry.any(axis=0)
        np.testing.assert_allclose(got.carry_reward[has_carry], carry_r[has_carry], atol=1e-5)


def test_every_self_play_decision_is_trained_once() -> None:
    cfg = tiny_config(opponents={"self_play": 1.0, "pool": 0.0, "simple": 0.0},
                      ppo={"epochs": 1}, run={"pipeline": False})
    trainer = Trainer(cfg)
    trained = 0
    for _ in range(4):
        trained += int(trainer.update()["samples"])
    decisions = trainer.num_games * trainer.steps * 4
    assert trained + int(trainer.pending["valid"].sum()) == decisions


# --------------------------------------------------------------------------- training


def test_points_shaping_matches_the_engine_points_reward() -> None:
    from agents import make_agent
    from agents.training.rollout import posted_points

    player = make_agent("simple")  # knocks at once: many hands and some matches end
    a = VectorGame(128, seed=9, reward="points")
    b = VectorGame(128, seed=9, reward="columns")
    seen = ended = 0.0
    for _ in range(500):
        acts = player.act(a.observe())
        before = b.sheets.scores.sum(axis=2)
        ra, _ = a.step(acts)
        _, info = b.step(acts)
        mine = posted_points(b, before, info, float(b.rules.target * b.rules.columns))
        np.testing.assert_allclose(mine, ra, atol=1e-6)
        seen += np.abs(ra).sum()
        ended += info["match_over"].sum()
    assert seen > 0 and ended > 0


def test_tiny_training_run_end_to_end(tmp_path: Path) -> None:
    from agents.cli import train

    cfg_path = tmp_path / "tiny.toml"
    cfg_path.write_text(
        "[run]\nseed = 1\ntotal_steps = 384\nthreads = 1\ncheckpoint_every = 1\n"
        "eval_every = 2\neval_matches = 2\nfinal_eval_matches = 2\neval_record_matches = 1\n"
        'eval_opponents = ["simple"]\n'
        "[env]\nnum_games = 16\nrollout_steps = 8\npoints_coef = 0.5\n"
        "[model]\nhidden = [32]\n[ppo]\nminibatch_size = 64\n"
        "[opponents]\nsnapshot_every = 1\nsimple = 0.2\nstrong = 0.0\nblocks = 4\n"
    )
    logdir = tmp_path / "run"
    out = train.train(train.parse_args(["--config", str(cfg_path), "--logdir", str(logdir),
                                        "--no-progress"]))
    assert out["updates"] == 3 and out["env_steps"] == 384
    for name in ("config.toml", "checkpoints/latest.pt", "agent_final.pt", "agent_best.pt",
                 "eval.jsonl", "final_eval.json", "learning_curve.png", "learning_curve.svg"):
        assert (logdir / name).exists(), name
    assert list(logdir.glob("events.out.tfevents.*"))
    assert "final_eval" in out and out["final_eval"]["simple"]["matches"] == 2
    final = json.loads((logdir / "final_eval.json").read_text())
    assert final["eval_seed"] == 7 and final["run_seed"] == 1 and "seed" not in final
    # An agent file is readable like every other output (mkstemp alone makes it 0600).
    umask = os.umask(0o022)
    os.umask(umask)
    assert (logdir / "agent_final.pt").stat().st_mode & 0o777 == 0o666 & ~umask
    # One sample match of each evaluation (update 2 and the final one), replayable.
    assert sorted(p.name for p in (logdir / "records").iterdir()) == [
        "eval_00002.jsonl.gz", "final_eval.jsonl.gz"]
    for path in (logdir / "records").iterdir():
        [record] = read_records(path)
        assert sorted(record["agents"]) == ["learner", "simple"]
        assert replay(record).hands == record["result"]["hands"]
    from agents import make_agent

    agent = make_agent(f"ckpt:{logdir / 'agent_final.pt'}")
    game = VectorGame(8, seed=0)
    for _ in range(40):
        game.step(agent.act(game.observe()))
    # A second run into the same folder must be an explicit resume.
    with pytest.raises(ValueError, match="--resume"):
        train.train(train.parse_args(["--config", str(cfg_path), "--logdir", str(logdir)]))
    # Resuming a finished run with a larger budget continues it.
    out2 = train.train(train.parse_args(["--resume", str(logdir / "checkpoints/latest.pt"),
                                         "--total-steps", "512", "--no-progress",
                                         "--no-final-eval"]))
    assert out2["updates"] == 4 and out2["env_steps"] == 512


@pytest.mark.parametrize("pipeline", [True, False])
def test_resume_reproduces_the_next_update(tmp_path: Path, pipeline: bool) -> None:
    cfg = tiny_config(run={"pipeline": pipeline})
    first = Trainer(cfg)
    first.update()
    first.update()  # the pool now holds snapshots and heuristic opponents play
    path = atomic_save(first.checkpoint(), tmp_path / "latest.pt")
    expected = first.update()
    state_after = {k: v.clone() for k, v in first.model.state_dict().items()}

    second = Trainer(cfg)
    second.load_trainer_state(load_checkpoint(path))
    got = second.update()
    for key, value in second.model.state_dict().items():
        assert torch.equal(value, state_after[key]), key
    assert got["samples"] == expected["samples"]
    assert got["loss/policy"] == expected["loss/policy"]
    np.testing.assert_array_equal(second.game.hands, first.game.hands)
    for key in first.pending:
        np.testing.assert_array_equal(second.pending[key], first.pending[key])


def test_opponent_curriculum() -> None:
    cfg = tiny_config(opponents={"self_play": 1.0, "self_play_end": 0.0, "pool": 0.0,
                                 "simple": 0.0, "simple_end": 1.0})
    trainer = Trainer(cfg)
    total = cfg["run"]["total_steps"]
    np.testing.assert_allclose(trainer.opponent_weights(0), [1, 0, 0, 0, 0, 0])
    np.testing.assert_allclose(trainer.opponent_weights(total // 2), [0.5, 0, 0, 0.5, 0, 0])
    np.testing.assert_allclose(trainer.opponent_weights(total), [0, 0, 0, 1, 0, 0])
    kinds = trainer.assign_opponents(total).kinds
    assert kinds == ["simple"] * trainer.num_blocks


# --------------------------------------------------------------------------- agent-spec opponents


def tiny_ckpt(tmp_path: Path) -> Path:
    """A model-only checkpoint of a small random network (a ``ckpt:PATH`` opponent)."""
    torch.manual_seed(11)
    return save_agent(tmp_path / "opp.pt", PolicyValueNet(OBS_DIM, NUM_ACTIONS, [16]))


def test_opponents_can_be_any_agent_specs(tmp_path: Path) -> None:
    path = tiny_ckpt(tmp_path)
    ckpt_spec = f"ckpt:{path}"
    cfg = tiny_config(run={"pipeline": False},
                      opponents={"self_play": 0.0, "pool": 0.0, "simple": 0.0,
                                 "agents": {"simple": 1, ckpt_spec: 1.0}})
    assert cfg["opponents"]["agents"] == {"simple": 1.0, ckpt_spec: 1.0}
    trainer = Trainer(cfg)
    np.testing.assert_allclose(trainer.opponent_weights(), [0, 0, 0, 0, 0, 0, 1, 1])
    assign = trainer.assign_opponents()
    # One entry per spec, whatever the number of blocks it got: a torch opponent plays
    # all its games as one batch per step.
    assert sorted(assign.kinds) == sorted(["simple", ckpt_spec])
    assert len(assign.agents) == 2 and trainer.num_blocks == 4
    assert (assign.opp_index >= 0).all() and (assign.learner_seats.sum(axis=1) == 1).all()
    opp = trainer.baseline(ckpt_spec)
    assert isinstance(opp, TorchAgent)
    assert not any(p.requires_grad for p in opp.model.parameters())
    calls: list[int] = []
    act = opp.act

    def counted(obs: dict, rng: np.random.Generator | None = None) -> np.ndarray:
        calls.append(len(obs["action_mask"]))
        return act(obs, rng=rng)

    opp.act = counted
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    for _ in range(2):
        trainer.update()
    assert 0 < len(calls) <= 2 * trainer.steps  # two rollouts, at most one batch a step
    assert max(calls) > 1
    frozen = load_checkpoint(path)["model"]
    for key, value in opp.model.state_dict().items():  # the opponent never learns
        assert torch.equal(value, frozen[key]), key
    assert any(not torch.equal(v, before[k]) for k, v in trainer.model.state_dict().items())


@pytest.mark.parametrize(("agents", "match"), [
    ({"strnog": 1.0}, r'opponents\.agents\."strnog".*unknown agent spec'),
    ({"ckpt:": 1.0}, r'opponents\.agents\."ckpt:".*lacks its path'),
    ({"ckpt:no/such/file.pt": 1.0}, r'opponents\.agents\."ckpt:no/such/file\.pt".*not found'),
    ({"simple": -0.5}, r'opponents\.agents\."simple": -0\.5 \(negative\)'),
    ({"simple": "lots"}, r'opponents\.agents\."simple".*not a number'),
    ({"simple": True}, r'opponents\.agents\."simple".*not a number'),
    ({"simple": float("nan")}, r'opponents\.agents\."simple".*not a finite number'),
    ({"simple": 0.0}, r"opponents\.\*: the weights .* are all zero"),
    ({}, r"opponents\.\*: the weights .* are all zero"),
])
def test_opponent_agents_are_checked(agents: dict, match: str) -> None:
    zero = {"self_play": 0.0, "pool": 0.0, "simple": 0.0, "strong": 0.0}
    with pytest.raises(ValueError, match=match):
        validate({"opponents": {**zero, "agents": agents}})


def test_opponent_agents_must_be_a_table() -> None:
    with pytest.raises(ValueError, match=r"opponents\.agents.*accepted: a table of agent spec"):
        validate({"opponents": {"agents": ["pretrained"]}})


def test_shipped_configs_keep_their_opponents() -> None:
    """The old keys keep their meaning: no agent-spec opponents, the same weights."""
    for name in ("quick", "default"):
        cfg = load_config(name, ["env.num_games=64"])
        assert cfg["opponents"]["agents"] == {}
        trainer = Trainer(cfg)
        want = [cfg["opponents"][k] for k in KINDS]
        np.testing.assert_allclose(trainer.opponent_weights(0), want)
        assert set(trainer.assign_opponents().kinds) <= {"simple", "strong"}


def test_single_opponent_makes_one_target(tmp_path: Path) -> None:
    from agents.training.config import single_opponent, to_toml

    spec = f"ckpt:{tiny_ckpt(tmp_path)}"
    cfg = load_config("quick", single_opponent(spec))
    assert cfg["opponents"]["agents"] == {spec: 1.0}
    assert cfg["run"]["eval_opponents"] == [spec]
    assert all(cfg["opponents"][k] == 0 and cfg["opponents"][f"{k}_end"] == -1
               for k in ("self_play", "pool", "random", "simple", "strong"))
    # The resolved config written to a run's folder reads back to the same config.
    saved = tmp_path / "config.toml"
    saved.write_text(to_toml(cfg))
    assert load_config(saved) == cfg
    with pytest.raises(ValueError, match=r"unknown agent spec 'nope'"):
        load_config("best_response", single_opponent("nope"))


def test_train_opponent_flag_trains_and_evaluates_against_the_target(tmp_path: Path) -> None:
    from agents.cli import train

    cfg_path = tmp_path / "tiny.toml"
    cfg_path.write_text(TINY_TOML.format(rules='"friendly"').replace(
        "final_eval_matches = 0", "final_eval_matches = 2"))
    spec = f"ckpt:{tiny_ckpt(tmp_path)}"
    out = train.train(train.parse_args(["--config", str(cfg_path), "--logdir",
                                        str(tmp_path / "run"), "--no-progress",
                                        "--opponent", spec]))
    assert list(out["final_eval"]) == [spec] and out["final_eval"][spec]["matches"] == 2
    written = load_config(tmp_path / "run" / "config.toml")
    assert written["opponents"]["agents"] == {spec: 1.0}
    assert written["opponents"]["simple"] == 0.0
    assert train.main(["--config", str(cfg_path), "--logdir", str(tmp_path / "bad"),
                       "--opponent", "strnog"]) == 2


def test_seeded_runs_are_identical() -> None:
    a, b = Trainer(tiny_config()), Trainer(tiny_config())
    for _ in range(2):
        a.update()
        b.update()
    for (k, v), w in zip(a.model.state_dict().items(), b.model.state_dict().values(), strict=True):
        assert torch.equal(v, w), k


# --------------------------------------------------------------------------- checkpoints


def test_checkpoint_round_trip(tmp_path: Path) -> None:
    model = PolicyValueNet(hidden=[24, 16])
    path = save_agent(tmp_path / "a.pt", model, {"x": 1}, {"note": "hi"})
    agent = load_torch_agent(path)
    assert agent.meta["note"] == "hi"
    for k, v in model.state_dict().items():
        assert torch.equal(agent.model.state_dict()[k], v)
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary file was renamed away


class Evil:
    def __reduce__(self):
        return (print, ("this must never run",))


@pytest.mark.parametrize("kind", ["garbage", "empty", "pickle_code", "foreign_dict", "tensor",
                                  "future_version", "wrong_obs_dim", "wrong_weights"])
def test_bad_checkpoints_give_clear_errors(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"{kind}.pt"
    good = make_checkpoint(PolicyValueNet(hidden=[8]))
    if kind == "garbage":
        path.write_bytes(b"this is not a checkpoint at all\x00\x01")
        match = "not a readable hgin checkpoint"
    elif kind == "empty":
        path.write_bytes(b"")
        match = "not a readable hgin checkpoint"
    elif kind == "pickle_code":
        buf = io.BytesIO()
        torch.save({"format": FORMAT, "evil": Evil()}, buf)
        path.write_bytes(buf.getvalue())
        match = "weights_only"
    elif kind == "foreign_dict":
        torch.save({"state_dict": PolicyValueNet(hidden=[8]).state_dict()}, path)
        match = "not a hgin agent checkpoint"
    elif kind == "tensor":
        torch.save(torch.zeros(3), path)
        match = "not a hgin agent checkpoint"
    elif kind == "future_version":
        torch.save({**good, "version": 99}, path)
        match = "version 99"
    elif kind == "wrong_obs_dim":
        torch.save({**good, "obs_dim": OBS_DIM + 1}, path)
        match = "obs_dim"
    else:
        bad = dict(good)
        bad["model"] = {k: v[..., :1] for k, v in good["model"].items()}
        bad["checksums"] = checksums(bad)  # a consistent file whose weights do not fit
        torch.save(bad, path)
        match = "does not match"
    with pytest.raises(CheckpointError, match=match):
        load_torch_agent(path)
    from agents import make_agent

    with pytest.raises(ValueError, match=match):
        make_agent(f"ckpt:{path}")


def test_missing_checkpoint() -> None:
    with pytest.raises(FileNotFoundError, match="checkpoint not found"):
        load_torch_agent("/nonexistent/x.pt")


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_pickle_payload_is_not_executed(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps({"format": FORMAT, "evil": Evil()}))
    with pytest.raises(CheckpointError):
        load_checkpoint(path)
    assert "must never run" not in capsys.readouterr().out


def test_model_only_checkpoint_cannot_resume(tmp_path: Path) -> None:
    path = save_agent(tmp_path / "a.pt", PolicyValueNet(hidden=[8]))
    trainer = Trainer(tiny_config())
    with pytest.raises(ValueError, match="trainer state"):
        trainer.load_trainer_state(load_checkpoint(path))


@pytest.mark.parametrize("spec", ["pretrained", "pretrained-v1", "pretrained-eaai"])
def test_shipped_agents_load_and_beat_random(spec: str) -> None:
    from agents import PRETRAINED, make_agent

    assert PRETRAINED["pretrained"] == PRETRAINED_PATH
    assert PRETRAINED[spec].stat().st_size <= 5 * 1024 * 1024
    agent = make_agent(spec)
    assert agent.name == spec
    res = duplicate_rates(agent, RandomAgent(0), 20, seed=1)
    assert res["match"]["rate"] >= 0.9


# --------------------------------------------------------------------------- config


def test_config_files_are_valid() -> None:
    assert set(shipped_configs()) >= {"quick", "default", "best_response"}
    for name in shipped_configs():
        cfg = load_config(name)
        assert cfg["env"]["reward"] == "columns"
    target = load_config("best_response")["opponents"]
    assert all(target[k] == 0 for k in ("self_play", "pool", "random", "simple", "strong"))
    assert list(target["agents"]) == load_config("best_response")["run"]["eval_opponents"]


def test_eaai_second_stage_configs_differ_only_in_their_opponents() -> None:
    # docs/training.md compares the three second stages as one recipe with more or fewer
    # games against simple: everything else must be the same.
    long, mix, simple = (load_config(n) for n in ("eaai_long", "eaai_mix", "eaai_simple"))
    assert long["model"]["init"] == long["imitation"]["teacher"] == "pretrained-eaai"
    assert (long["env"]["points_coef"], long["env"]["points_coef_end"]) == (1.0, 0.0)
    weights = {}
    for name, cfg in (("long", long), ("mix", mix), ("simple", simple)):
        opp = cfg["opponents"]
        mixture = {k: opp[k] for k in ("self_play", "pool", "random", "simple", "strong",
                                       "ginhunter")} | dict(opp["agents"])
        weights[name] = mixture["simple"] / sum(mixture.values())
        for section in ("env", "model", "imitation", "ppo"):
            assert cfg[section] == long[section], (name, section)
        assert {k: v for k, v in cfg["run"].items() if k != "total_steps"} == \
            {k: v for k, v in long["run"].items() if k != "total_steps"}
    assert weights == pytest.approx({"long": 0.5, "mix": 0.75, "simple": 1.0})
    assert long["run"]["total_steps"] > mix["run"]["total_steps"] == simple["run"]["total_steps"]


def test_config_errors_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"ppo\.lrr"):
        validate({"ppo": {"lrr": 1e-3}})
    with pytest.raises(ValueError, match=r"\[optim\]"):
        validate({"optim": {}})
    with pytest.raises(ValueError, match=r"ppo\.lr"):
        validate({"ppo": {"lr": -1.0}})
    with pytest.raises(ValueError, match=r"env\.reward"):
        validate({"env": {"reward": "score"}})
    with pytest.raises(ValueError, match=r"env\.num_games"):
        validate({"env": {"num_games": "many"}})
    with pytest.raises(ValueError, match=r"model\.hidden"):
        validate({"model": {"hidden": [0]}})
    with pytest.raises(ValueError, match=r"ppo\.epochs"):
        validate({"ppo": {"epochs": True}})
    with pytest.raises(ValueError, match="opponents"):
        validate({"opponents": {"self_play": 0, "pool": 0, "simple": 0, "strong": 0}})
    bad = tmp_path / "bad.toml"
    bad.write_text("[ppo\nlr = 1")
    with pytest.raises(ValueError, match="not valid TOML"):
        load_config(bad)
    with pytest.raises(FileNotFoundError):
        load_config("no_such_config")


def test_overrides() -> None:
    assert parse_override("ppo.lr=1e-4") == ("ppo", "lr", 1e-4)
    assert parse_override("model.hidden=[64, 32]") == ("model", "hidden", [64, 32])
    assert parse_override("env.rules=classic") == ("env", "rules", "classic")
    cfg = load_config("quick", ["ppo.lr=1e-4", "env.num_games=64"])
    assert cfg["ppo"]["lr"] == 1e-4 and cfg["env"]["num_games"] == 64
    with pytest.raises(ValueError, match=r"section\.key"):
        parse_override("lr=1")
    with pytest.raises(ValueError, match=r"ppo\.nope"):
        load_config("quick", ["ppo.nope=1"])


# --------------------------------------------------------------------------- features, imitation


def test_knock_features_match_brute_force() -> None:
    from agents.model import knock_features
    from hgin_env import actions as A
    from hgin_env.melds import min_deadwood
    from hgin_env.observation import DEADWOOD_SCALE, KNOCK_LIMIT_SCALE, observation_spec

    spec = observation_spec()
    game = VectorGame(64, seed=4, rules="classic")  # classic forbids discarding the taken card
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(120):
        ob = game.observe()
        obs, mask = ob["observation"], ob["action_mask"]
        feats = knock_features(obs)
        for r in range(obs.shape[0]):
            discarding = obs[r, spec["phase"]].argmax() == A.PHASE_DISCARD
            if not discarding:
                assert not feats[r].any()
                continue
            hand = np.flatnonzero(obs[r, spec["hand"]])
            legal = [c for c in hand if not obs[r, spec["forbidden_discard"]][c]]
            masks = np.array([sum(1 << int(d) for d in hand if d != c) for c in legal],
                             np.uint64)
            best = int(min_deadwood(masks).min())
            limit = round(float(obs[r, spec["knock_limit"].start]) * KNOCK_LIMIT_SCALE)
            assert feats[r, 0] == 1
            assert round(float(feats[r, 1]) * DEADWOOD_SCALE) == best
            assert feats[r, 2] == (best <= limit) == mask[r, A.KNOCK : A.DRAW_STOCK].any()
            assert feats[r, 3] == (best == 0)
            assert feats[r, 4] == pytest.approx(obs[r, spec["opponent_known"]].sum() / 10)
            checked += 1
        game.step(sample_uniform(mask, rng))
    assert checked > 500


def sample_uniform(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    from agents.base import sample_uniform_legal

    return sample_uniform_legal(mask, rng)


def test_knock_feature_network_plays_and_round_trips(tmp_path: Path) -> None:
    model = PolicyValueNet(hidden=[16], features="knock")
    assert model.in_dim == OBS_DIM + 10
    agent = load_torch_agent(save_agent(tmp_path / "k.pt", model, {}, {}))
    game = VectorGame(16, seed=3)
    for _ in range(80):
        game.step(agent.act(game.observe()))


def test_imitation_phase_plays_and_learns_the_teachers_moves() -> None:
    from agents import make_agent

    cfg = tiny_config(imitation={"teacher": "simple-det", "steps": 16 * 8 * 2},
                      run={"pipeline": False})
    trainer = Trainer(cfg)
    sched = trainer.schedule()
    assert sched["imitate"] == 1.0
    batch = trainer.collect(trainer.assign_opponents(), RolloutBuffers(4096, trainer.model.in_dim),
                            sched)
    bufs, idx = batch.buffers, batch.rows
    assert idx.numel() > 50
    obs = bufs.obs[idx, :OBS_DIM].numpy()
    mask = bufs.mask[idx].numpy()
    teacher = make_agent("simple-det").act({"observation": obs, "action_mask": mask})
    np.testing.assert_array_equal(bufs.act[idx].numpy(), teacher)
    out = trainer.learn(batch)
    assert 0.0 <= out["imitation/accuracy"] <= 1.0
    assert trainer.schedule(16 * 8 * 2)["imitate"] == 0.0  # then PPO takes over
    trainer = Trainer(cfg)
    outs = [trainer.update() for _ in range(3)]
    assert ["imitation/accuracy" in o for o in outs] == [True, True, False]


def test_imitation_config_is_checked() -> None:
    with pytest.raises(ValueError, match=r"imitation\.teacher"):
        tiny_config(imitation={"teacher": "grandmaster"})
    with pytest.raises(ValueError, match=r"imitation\.steps"):
        tiny_config(imitation={"steps": -1})


def test_card_logits_equal_the_feature_form() -> None:
    gen = torch.Generator().manual_seed(0)
    model = PolicyValueNet(hidden=[16], features="knock")
    x = (torch.rand(64, model.in_dim, generator=gen) > 0.7).float()
    coef = torch.randn(64, 2, model.card_features, generator=gen)
    reference = torch.bmm(coef, model._card_feats(x)).view(64, -1)
    torch.testing.assert_close(model._card_logits(coef, x), reference, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- agent specs


def test_agent_specs_are_checked_when_the_config_loads(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"run\.eval_opponents\[1\].*'strnog'.*accepted"):
        tiny_config(run={"eval_opponents": ["random", "strnog"]})
    with pytest.raises(ValueError, match=r"run\.eval_opponents\[0\].*ckpt:.*not found"):
        tiny_config(run={"eval_opponents": [f"ckpt:{tmp_path / 'missing.pt'}"]})
    with pytest.raises(ValueError, match=r"run\.eval_opponents\[0\].*lacks its path"):
        tiny_config(run={"eval_opponents": ["ckpt:"]})
    with pytest.raises(ValueError, match=r"imitation\.teacher.*'grandmaster'"):
        tiny_config(imitation={"teacher": "grandmaster"})
    with pytest.raises(ValueError, match=r"run\.eval_opponents"):
        load_config("quick", ["run.eval_opponents=['simple', 'nope']"])
    path = save_agent(tmp_path / "a.pt", PolicyValueNet(hidden=[8]))
    cfg = tiny_config(run={"eval_opponents": ["heuristic", f"ckpt:{path}"]},
                      imitation={"teacher": f"ckpt:{path}", "steps": 10})
    assert cfg["imitation"]["teacher"] == f"ckpt:{path}"


def test_agent_specs_with_options_are_accepted_and_checked_as_make_agent_would() -> None:
    # ginhunter and search take options (ginhunter:turns=3): the config accepts them
    # with and without options, and a bad option is a config error naming the key.
    good = ["ginhunter", "ginhunter:turns=3,deadwood=10", "search", "search:particles=64"]
    cfg = load_config("quick", [f"run.eval_opponents={good!r}"])
    assert cfg["run"]["eval_opponents"] == good
    with pytest.raises(ValueError, match=r"run\.eval_opponents\[0\].*turns.*'x'"):
        load_config("quick", ["run.eval_opponents=['ginhunter:turns=x']"])
    with pytest.raises(ValueError, match=r"run\.eval_opponents\[0\].*'nope\.pt' not found"):
        load_config("quick", ["run.eval_opponents=['search:blueprint=ckpt:nope.pt']"])
    with pytest.raises(ValueError, match=r"unknown agent spec 'ginhuntr'"):
        load_config("quick", ["run.eval_opponents=['ginhuntr']"])


def test_make_baseline_never_substitutes_the_random_agent(tmp_path: Path) -> None:
    from agents.training.ppo import make_baseline

    assert make_baseline("strong").name == "strong"
    with pytest.raises(ValueError, match="unknown agent spec 'strnog'"):
        make_baseline("strnog")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match=r"bad\.pt"):
        make_baseline(f"ckpt:{bad}")


# --------------------------------------------------------------------------- reliability


TINY_TOML = (
    "[run]\nseed = 1\ntotal_steps = 256\nthreads = 1\ncheckpoint_every = 1\n"
    "eval_every = 0\neval_matches = 2\nfinal_eval_matches = 0\n"
    'eval_opponents = ["random"]\n'
    "[env]\nnum_games = 16\nrollout_steps = 8\nrules = {rules}\n"
    "[model]\nhidden = [16]\n[ppo]\nminibatch_size = 64\n"
    "[opponents]\nsnapshot_every = 1\nsimple = 0.2\nstrong = 0.0\nblocks = 4\n"
)


def tiny_run(tmp_path: Path, rules: str = '"friendly"') -> tuple[Path, Path]:
    """A finished two-update run: (its config file, its log directory)."""
    from agents.cli import train

    cfg_path = tmp_path / "tiny.toml"
    cfg_path.write_text(TINY_TOML.format(rules=rules))
    logdir = tmp_path / "run"
    assert train.main(["--config", str(cfg_path), "--logdir", str(logdir),
                       "--no-progress"]) == 0
    return cfg_path, logdir


def test_non_finite_values_stop_training_and_keep_the_last_checkpoint(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from agents.cli import train

    _, logdir = tiny_run(tmp_path)
    latest = logdir / "checkpoints" / "latest.pt"
    ckpt = load_checkpoint(latest)
    # A consistent file (checksums recomputed) whose Adam state holds NaNs.
    for state in ckpt["trainer"]["optimizer"]["state"].values():
        state["exp_avg"].fill_(float("nan"))
    ckpt["checksums"] = checksums(ckpt)
    atomic_save(ckpt, latest)
    before = latest.read_bytes()
    capsys.readouterr()
    code = train.main(["--resume", str(latest), "--total-steps", "512", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1
    assert "training diverged" in err and "not finite" in err and "was kept" in err
    assert latest.read_bytes() == before


def test_divergence_is_caught_before_the_step() -> None:
    from agents.training.ppo import TrainingDivergedError

    trainer = Trainer(tiny_config(run={"pipeline": False}))
    trainer.update()
    for group in trainer.opt.param_groups:  # what ppo.lr = inf would do, past the config check
        group["lr"] = float("inf")
    trainer.cfg = {**trainer.cfg, "ppo": {**trainer.cfg["ppo"], "lr": float("inf")}}
    with pytest.raises(TrainingDivergedError, match=r"not finite|loss is|gradient norm"):
        trainer.update()
    with pytest.raises(TrainingDivergedError, match="not writing a checkpoint"):
        trainer.checkpoint()


def test_evaluation_records_its_first_matches_against_each_opponent(tmp_path: Path) -> None:
    from agents.cli import train

    trainer = Trainer(tiny_config())
    path = tmp_path / "records" / "eval.jsonl"
    res = train.run_evaluation(trainer, 4, ["random", "simple"], seed=5, record_matches=3,
                               record_path=path)
    assert res["random"]["matches"] == res["simple"]["matches"] == 4
    records = list(read_records(path))
    assert [r["match"] for r in records] == list(range(6))
    assert [r["context"]["pairing"] for r in records] == [["learner", "random"]] * 3 + [
        ["learner", "simple"]] * 3
    assert [r["context"]["pair"] for r in records] == [0, 0, 1] * 2
    for record in records:
        assert replay(record).hands == record["result"]["hands"]
    # Recording changes nothing the evaluation reports.
    again = train.run_evaluation(trainer, 4, ["random", "simple"], seed=5)
    assert again == res


@pytest.mark.parametrize("override", ["ppo.lr=inf", "ppo.lr=nan", "run.seed=1e23",
                                      "run.seed=-1", "env.num_games=1e9", "ppo.lr=5.0",
                                      "imitation.lr=inf", "ppo.max_grad_norm=inf",
                                      "run.eval_record_matches=101",
                                      "run.eval_record_matches=-1"])
def test_absurd_config_values_are_rejected(override: str) -> None:
    key = override.split("=")[0]
    with pytest.raises(ValueError, match=rf"{key.replace('.', r'[.]')}.*accepted"):
        load_config("quick", [override])


def test_a_flipped_byte_is_a_checkpoint_error(tmp_path: Path) -> None:
    model = PolicyValueNet(hidden=[24])
    path = save_agent(tmp_path / "agent.pt", model)
    raw = bytearray(path.read_bytes())
    weights = model.state_dict()["trunk.0.weight"].numpy().tobytes()
    at = bytes(raw).find(weights[:64])
    assert at > 0
    raw[at + 8 : at + 12] = b"\xff\x7f\x00\x01"
    path.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match=r"agent\.pt.*checksum mismatch.*trunk\.0\.weight"):
        load_checkpoint(path)


def test_huge_architecture_fails_fast(tmp_path: Path) -> None:
    import time

    good = make_checkpoint(PolicyValueNet(hidden=[8]))
    bad = {**good, "arch": {**good["arch"], "hidden": [1_000_000, 4096]}}
    bad["checksums"] = checksums(bad)
    path = tmp_path / "huge.pt"
    torch.save(bad, path)
    start = time.perf_counter()
    with pytest.raises(CheckpointError, match=r"huge\.pt.*hidden sizes.*8\.\.4096"):
        load_torch_agent(path)
    assert time.perf_counter() - start < 2.0
    with pytest.raises(ValueError, match="hidden sizes"):
        PolicyValueNet(hidden=[8, 8, 8, 8, 8])


def test_resume_errors_name_the_file_and_the_setting(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture) -> None:
    from agents.cli import train

    rules = tmp_path / "rules.toml"
    rules.write_text('profile = "friendly"\ncolumns = 3\n')
    cfg_path, logdir = tiny_run(tmp_path, rules=f'"{rules}"')
    latest = logdir / "checkpoints" / "latest.pt"
    resume = ["--resume", str(latest), "--total-steps", "512", "--no-progress"]
    capsys.readouterr()
    assert train.main([*resume, "--set", "model.hidden=[32]"]) == 2
    assert "model.hidden" in capsys.readouterr().err
    rules.write_text('profile = "friendly"\ncolumns = 1\n')  # the rules changed under the run
    assert train.main(resume) == 2
    err = capsys.readouterr().err
    assert "latest.pt" in err and "columns = 3 in the checkpoint but 1 now" in err
    rules.write_text('profile = "friendly"\ncolumns = 3\n')
    # A game state the engine refuses (or cannot hold) is the checkpoint's fault.
    ckpt = load_checkpoint(latest)
    hands = ckpt["trainer"]["shards"][0]["game"]["hands"]["data"]
    ckpt["trainer"]["shards"][0]["game"]["hands"]["data"] = torch.cat([hands, hands[:, :1]], dim=1)
    ckpt["checksums"] = checksums(ckpt)
    broken = tmp_path / "broken.pt"
    atomic_save(ckpt, broken)
    trainer = Trainer(load_config(cfg_path))
    with pytest.raises(CheckpointError, match=r"broken\.pt"):
        trainer.load_trainer_state(load_checkpoint(broken), broken)


def test_a_second_run_into_a_locked_logdir_is_refused(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture) -> None:
    from filelock import FileLock

    from agents.cli import train

    cfg_path = tmp_path / "tiny.toml"
    cfg_path.write_text(TINY_TOML.format(rules='"friendly"'))
    logdir = tmp_path / "run"
    logdir.mkdir()
    with FileLock(str(logdir / ".train.lock")):
        assert train.main(["--config", str(cfg_path), "--logdir", str(logdir),
                           "--no-progress"]) == 2
    assert "another training run is using" in capsys.readouterr().err
    assert not (logdir / "config.toml").exists()


def test_orphan_temporaries_are_removed_on_the_next_start(tmp_path: Path) -> None:
    from agents.cli import train

    _, logdir = tiny_run(tmp_path)
    orphan = logdir / "checkpoints" / ".latest.pt.x1y2.tmp"
    orphan.write_bytes(b"\0" * 1000)
    assert train.main(["--resume", str(logdir / "checkpoints" / "latest.pt"),
                       "--total-steps", "384", "--no-progress"]) == 0
    assert not orphan.exists()


def test_eval_matches_zero_needs_eval_every_zero() -> None:
    with pytest.raises(ValueError, match=r"run\.eval_matches.*run\.eval_every"):
        tiny_config(run={"eval_every": 2, "eval_matches": 0})
    assert tiny_config(run={"eval_every": 0, "eval_matches": 0})["run"]["eval_matches"] == 0


def _train_process(tmp_path: Path, *extra: str, stdout=None):
    import subprocess
    import sys

    cfg_path = tmp_path / "slow.toml"
    cfg_path.write_text(TINY_TOML.format(rules='"friendly"').replace(
        "total_steps = 256", "total_steps = 1024000"))
    return subprocess.Popen(
        [sys.executable, str(ROOT / "train.py"), "--config", str(cfg_path), "--logdir",
         str(tmp_path / "proc"), "--no-progress", *extra],
        cwd=ROOT, stdout=stdout, stderr=subprocess.PIPE, text=True,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)}, preexec_fn=sigint_default)


def test_ctrl_c_during_startup_is_one_line(tmp_path: Path) -> None:
    import signal
    import time

    proc = _train_process(tmp_path)
    time.sleep(0.3)  # still importing torch
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "Traceback" not in err and err.strip().count("\n") == 0, err


def test_piping_into_head_is_one_line(tmp_path: Path) -> None:
    import subprocess

    proc = _train_process(tmp_path, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first.startswith("update 1")
    proc.stdout.close()  # what `head -1` does after its line
    err = proc.stderr.read()
    proc.wait(timeout=120)
    assert proc.returncode == 141
    assert "Traceback" not in err, err
    assert (tmp_path / "proc" / "checkpoints" / "latest.pt").exists()


# --------------------------------------------------------------------------- progress, exit codes


def test_status_line_labels_its_figures() -> None:
    from agents.cli import train

    out = {"imitation/accuracy": 0.92, "loss/entropy": 1.234}
    line = train.status_line(out, 12_300.0, {"simple": {"win_rate": 0.66},
                                             "strong": {"win_rate": 0.52}}, 25)
    assert "imitation (teacher-move accuracy 92%)" in line
    assert "eval at update 25: match wins vs simple 66%, strong 52%" in line
    assert "12.3k steps/s" in line and "entropy 1.23" in line
    # The phase stays on the line after imitation: PPO, kickstarted or not.
    ppo = train.status_line({"loss/entropy": 1.0, "schedule/imitate": 0.0}, 1.0, {}, 0)
    assert ppo.startswith("ppo  ") and "imitation" not in ppo
    kick = train.status_line({"schedule/imitate": 0.0, "schedule/kickstart": 0.25}, 1.0, {}, 0)
    assert kick.startswith("ppo, kickstarted (teacher weight 0.25)")
    assert train.status_line({"schedule/imitate": 1.0}, 1.0, {}, 0).startswith("imitation")


def test_progress_lines_name_the_phase_of_every_update(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture) -> None:
    from agents.cli import train

    cfg_path = tmp_path / "tiny.toml"
    cfg_path.write_text(TINY_TOML.format(rules='"friendly"'))
    # 128 steps per update: the first update imitates, the second is PPO.
    assert train.main(["--config", str(cfg_path), "--logdir", str(tmp_path / "run"),
                       "--no-progress", "--set", 'imitation.teacher="strong"',
                       "--set", "imitation.steps=128",
                       "--set", "run.total_steps=256"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines()
             if line.startswith("update ")]
    assert "imitation (teacher-move accuracy" in lines[0]
    assert "256/256 steps  ppo  " in lines[-1]


def test_threads_help_says_what_zero_means(capsys: pytest.CaptureFixture) -> None:
    from agents.cli import train

    with pytest.raises(SystemExit):
        train.parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--threads THREADS torch CPU threads (overrides run.threads; 0 leaves torch's " \
           "default, one per core)" in text


def test_resume_names_every_changed_setting_and_keeps_the_original_config(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from agents.cli import train

    _, logdir = tiny_run(tmp_path)
    original = (logdir / "config.toml").read_text()
    latest = logdir / "checkpoints" / "latest.pt"
    capsys.readouterr()
    assert train.main(["--resume", str(latest), "--total-steps", "384", "--no-progress",
                       "--set", "ppo.lr=1e-3"]) == 0
    err = capsys.readouterr().err
    assert "resume: ppo.lr changed: 0.0003 -> 0.001" in err
    assert "resume: run.total_steps changed: 256 -> 384" in err
    assert sum(line.startswith("resume: ") and "changed" in line
               for line in err.splitlines()) == 2
    assert (logdir / "config.toml").read_text() == original
    first = (logdir / "config.resume-1.toml").read_text()
    header = [line for line in first.splitlines() if line.startswith("#")]
    assert "#   ppo.lr = 0.001  (was 0.0003)" in header
    assert "#   run.total_steps = 384  (was 256)" in header
    resumed = load_config(logdir / "config.resume-1.toml")
    assert resumed["ppo"]["lr"] == 1e-3 and resumed["run"]["total_steps"] == 384
    assert resumed == load_checkpoint(latest)["config"]
    # A second resume is number 2, compared with the config the first one left.
    assert train.main(["--resume", str(latest), "--total-steps", "512", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "ppo.lr" not in err and "run.total_steps changed: 384 -> 512" in err
    second = (logdir / "config.resume-2.toml").read_text()
    assert "#   run.total_steps = 512  (was 384)" in second
    assert (logdir / "config.toml").read_text() == original


def test_budget_is_not_overshot_and_the_clock_survives_resume(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from agents.cli import train

    cfg_path = tmp_path / "tiny.toml"
    cfg_path.write_text(TINY_TOML.format(rules='"friendly"'))
    logdir = tmp_path / "run"
    # 16 games x 8 steps = 128 per update: 300 allows two whole updates.
    assert train.main(["--config", str(cfg_path), "--logdir", str(logdir), "--no-progress",
                       "--total-steps", "300"]) == 0
    out = capsys.readouterr().out
    assert "the run ends at 256 steps" in out
    assert "256/256 steps" in out and "ETA 0.0 min" in out and "-0.0" not in out
    latest = logdir / "checkpoints" / "latest.pt"
    first = load_checkpoint(latest)
    assert first["meta"]["env_steps"] == 256
    elapsed = first["meta"]["elapsed_s"]
    assert elapsed > 0
    assert train.main(["--resume", str(latest), "--total-steps", "3.84e2",
                       "--no-progress"]) == 0
    second = load_checkpoint(latest)["meta"]
    assert second["env_steps"] == 384 and second["elapsed_s"] > elapsed


def test_ctrl_c_during_training_saves_and_exits_130(tmp_path: Path) -> None:
    import signal
    import subprocess

    proc = _train_process(tmp_path, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("update 1")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert "resume with" in err and "Traceback" not in err
    assert load_checkpoint(tmp_path / "proc" / "checkpoints" / "latest.pt")["meta"][
        "reason"] == "stopped"


def test_config_errors_name_key_value_and_what_is_accepted() -> None:
    assert load_config("quick", ["run.total_steps=1e5"])["run"]["total_steps"] == 100_000
    with pytest.raises(ValueError, match=r"run\.total_steps: 100000\.5 \(not an integer\); "
                                         r"accepted: an integer"):
        load_config("quick", ["run.total_steps=100000.5"])
    with pytest.raises(ValueError, match=r"env\.rules: 'nope' .*unknown rules.*accepted"):
        load_config("quick", ["env.rules=nope"])
    with pytest.raises(ValueError, match=r"env\.num_games: 'many'; accepted: an integer"):
        load_config("quick", ["env.num_games=many"])
    with pytest.raises(ValueError, match=r"run\.total_steps.*less than one update.*"
                                         r"or lower env\.num_games or env\.rollout_steps"):
        load_config("quick", ["run.total_steps=1000"])


def test_cli_integer_flags_accept_integral_floats() -> None:
    from agents.cli import train

    assert train.parse_args(["--total-steps", "1e5", "--seed", "7"]).total_steps == 100_000
    with pytest.raises(SystemExit):
        train.parse_args(["--total-steps", "1.5"])


def test_kickstart_keeps_the_teacher_as_a_fading_target() -> None:
    from agents import make_agent

    cfg = tiny_config(imitation={"teacher": "simple-det", "steps": 128, "kickstart_steps": 256,
                                 "kickstart_coef": 0.5}, run={"pipeline": False})
    trainer = Trainer(cfg)
    assert trainer.schedule(0)["imitate"] == 1.0 and "kickstart" not in trainer.schedule(0)
    assert trainer.schedule(128)["kickstart"] == pytest.approx(0.5)
    assert trainer.schedule(256)["kickstart"] == pytest.approx(0.25)
    assert "kickstart" not in trainer.schedule(384)
    trainer.update()  # imitation
    sched = trainer.schedule()
    batch = trainer.collect(trainer.assign_opponents(), RolloutBuffers(4096, trainer.model.in_dim),
                            sched)
    bufs, idx = batch.buffers, batch.rows
    labelled = idx[bufs.teacher[idx] >= 0]
    assert labelled.numel() > 50
    obs = bufs.obs[labelled, :OBS_DIM].numpy()
    mask = bufs.mask[labelled].numpy()
    teacher = make_agent("simple-det").act({"observation": obs, "action_mask": mask})
    np.testing.assert_array_equal(bufs.teacher[labelled].numpy(), teacher)
    out = trainer.learn(batch)
    assert "loss/kickstart" in out and out["loss/kickstart"] > 0


def test_imitation_phase_does_not_depend_on_the_budget_or_kickstart(tmp_path: Path) -> None:
    """Why a run can be measured as imitation + a resumed PPO continuation: imitating for
    the whole budget, then resuming with a larger one and kickstarting, trains exactly the
    network one continuous run does."""
    def config(total: int, kick: int) -> dict:
        return tiny_config(run={"total_steps": total},
                           imitation={"teacher": "strong", "steps": 256,
                                      "kickstart_steps": kick,
                                      "kickstart_coef": 1.0 if kick else 0.0})

    whole = Trainer(config(640, 256))
    for _ in range(5):
        whole.update()
    first = Trainer(config(256, 0))
    for _ in range(2):
        first.update()
    path = atomic_save(first.checkpoint(), tmp_path / "latest.pt")
    resumed = Trainer(config(640, 256))
    resumed.load_trainer_state(load_checkpoint(path), path)
    for _ in range(3):
        resumed.update()
    for (key, value), other in zip(whole.model.state_dict().items(),
                                   resumed.model.state_dict().values(), strict=True):
        assert torch.equal(value, other), key


@pytest.mark.parametrize(("what", "change"), [
    # Every hand holds all 52 cards: before validation, resuming grew past 24 GB in the
    # meld search; now it is refused before any game code runs.
    ("52 cards", lambda game: game["hands"].__setitem__(slice(None), np.uint64((1 << 52) - 1))),
    ("phase", lambda game: game["phase"].__setitem__(0, 7)),
    ("decided", lambda game: game["sheet_scores"].__setitem__((0, 0, 0), 500)),
])
def test_hostile_game_state_in_a_checkpoint_is_refused_quickly(what: str, change) -> None:
    trainer = Trainer(tiny_config())
    trainer.update()
    ckpt = trainer.checkpoint()
    game = {k: unpack_array(v) for k, v in ckpt["trainer"]["shards"][0]["game"].items()}
    change(game)
    ckpt["trainer"]["shards"][0]["game"] = {k: pack_array(v) for k, v in game.items()}
    fresh = Trainer(tiny_config())
    before = fresh.game.state_dict()
    start = time.perf_counter()
    with pytest.raises(CheckpointError, match=rf"hostile\.pt.*{what}"):
        fresh.load_trainer_state(ckpt, "hostile.pt")
    assert time.perf_counter() - start < 2.0
    for key, value in fresh.game.state_dict().items():  # the running game is untouched
        np.testing.assert_array_equal(value, before[key])


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")  # torch's, before our error
@given(data=st.binary(min_size=0, max_size=4096))
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_fuzz_checkpoint_loaders(tmp_path_factory, data: bytes) -> None:
    """Random bytes are a CheckpointError for every loader, never a crash or a hang."""
    path = tmp_path_factory.mktemp("ckpt") / "random.pt"
    path.write_bytes(data)
    for load in (load_checkpoint, load_torch_agent):
        with pytest.raises(CheckpointError, match=r"random\.pt"):
            load(path)


def test_a_checkpoint_from_before_shards_resumes_as_one_shard() -> None:
    """Checkpoints written before the games were kept per shard hold one shard's games,
    pending decisions and generators at the top of the trainer state: they resume as the
    one shard of an in-process run, exactly."""
    whole = Trainer(tiny_config())
    for _ in range(3):
        whole.update()
    first = Trainer(tiny_config())
    first.update()
    ckpt = first.checkpoint()
    state = ckpt["trainer"]
    state.update(state.pop("shards")[0])  # the old layout
    resumed = Trainer(tiny_config())
    resumed.load_trainer_state(ckpt, "old.pt")
    for _ in range(2):
        resumed.update()
    for key, value in whole.model.state_dict().items():
        assert torch.equal(value, resumed.model.state_dict()[key]), key


def test_the_shipped_agent_comes_from_the_shipped_recipe() -> None:
    """``pretrained`` is the final network of ``hgin train --config pretrained``: the
    settings its file carries are that config's (keys added since filled with their
    defaults), and it ran the whole schedule."""
    from agents import PRETRAINED
    from agents.torch_agent import load_checkpoint

    saved = load_checkpoint(PRETRAINED["pretrained"])
    want = load_config("pretrained")
    have = validate(saved["config"])
    for section in ("env", "model", "ppo", "imitation", "opponents"):
        assert have[section] == want[section], section
    per_update = want["env"]["num_games"] * want["env"]["rollout_steps"]
    assert saved["config"]["run"]["total_steps"] == want["run"]["total_steps"]
    assert saved["meta"]["env_steps"] == want["run"]["total_steps"] // per_update * per_update
    assert "critic" not in str(list(saved["model"]))  # the policy alone ships
