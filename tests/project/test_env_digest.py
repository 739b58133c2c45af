"""Behaviour digest above the engine: the environments, records and apps play the same.

``test_digest.py`` pins the engine; this file pins what is built on it, so that a
reorganisation of the package (moving modules, one match driver, the Gymnasium env on
the one-game engine) cannot change what a user sees.  In every rule profile: the
PettingZoo env's observations, masks, rewards, terminations, truncations and infos
under seeded random play; the Gymnasium env's against ``random``, ``simple`` and
``strong``; the batched Gymnasium env's; the records a recording wrapper and a
tournament write; the terminal game's text and the browser play session's record.
The digests were recorded before the package was split into layers.
"""

from __future__ import annotations

import hashlib
import io
import json
import pathlib
from typing import Any

import numpy as np
import pytest

from hgin_env.rules import load_rules

PROFILES = {
    "friendly": ("friendly", {}, "columns"),
    "classic": ("classic", {}, "points"),
    "bonus": ("bonus", {}, "match"),
    "oklahoma_big": ("friendly", {"oklahoma": True, "big_gin": True}, "points"),
    "straight_gin": ("classic", {"straight_gin": True}, "columns"),
    "eaai": ("eaai", {}, "match"),
}


def _rules(name: str) -> Any:
    profile, changes, _ = PROFILES[name]
    return load_rules(profile).replace(**changes)


def _plain(value: Any) -> Any:
    """A JSON-able form of an observation, info or reward (arrays as dtype + bytes)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray) and value.dtype == object:
        return [list(value.shape), [_plain(v) for v in value.ravel()]]
    if isinstance(value, np.ndarray):
        return [str(value.dtype), list(value.shape), hashlib.sha256(value.tobytes()).hexdigest()]
    if isinstance(value, np.generic):
        return value.item()
    return value


class _Hash:
    def __init__(self) -> None:
        self._h = hashlib.sha256()

    def add(self, *values: Any) -> None:
        self._h.update(json.dumps(_plain(list(values)), sort_keys=True, default=repr).encode())

    def hexdigest(self) -> str:
        return self._h.hexdigest()


def _pick(rng: np.random.Generator, mask: np.ndarray) -> int:
    """A seeded random legal action, knocking (or going big gin) nine times in ten when
    it may, so that matches end within the steps played."""
    legal = np.flatnonzero(mask)
    knocks = legal[(legal >= 52) & (legal < 104) | (legal == 107)]
    if len(knocks) and rng.random() < 0.9:
        return int(rng.choice(knocks))
    return int(rng.choice(legal))


def aec_digest(name: str) -> str:
    import hgin_env

    env = hgin_env.env(rules=_rules(name), reward=PROFILES[name][2])
    rng = np.random.default_rng(11)
    h = _Hash()
    for match in range(2):
        env.reset(seed=100 + match)
        for agent in env.agent_iter(max_iter=4000):
            obs, reward, term, trunc, info = env.last()
            h.add(agent, obs, reward, term, trunc, info)
            env.step(None if term or trunc else _pick(rng, obs["action_mask"]))
        h.add(env.rewards, env.terminations, env.truncations)
    return h.hexdigest()


def gym_digest(name: str, opponent: str) -> str:
    from hgin_env.envs.gym_env import HollywoodGinEnv

    env = HollywoodGinEnv(opponent=opponent, rules=_rules(name), reward=PROFILES[name][2])
    rng = np.random.default_rng(12)
    h = _Hash()
    obs, info = env.reset(seed=7)
    h.add(obs, info)
    for _ in range(1500):
        obs, reward, term, trunc, info = env.step(_pick(rng, obs["action_mask"]))
        h.add(obs, reward, term, trunc, info)
        if term or trunc:
            obs, info = env.reset()
            h.add(obs, info)
    return h.hexdigest()


def vector_digest(name: str) -> str:
    from hgin_env.envs.gym_env import HollywoodGinVectorEnv

    env = HollywoodGinVectorEnv(6, opponent="strong", rules=_rules(name),
                                reward=PROFILES[name][2])
    rng = np.random.default_rng(13)
    h = _Hash()
    obs, info = env.reset(seed=5)
    h.add(obs, info)
    for _ in range(400):
        actions = np.array([_pick(rng, m) for m in obs["action_mask"]])
        obs, reward, term, trunc, info = env.step(actions)
        h.add(obs, reward, term, trunc, info)
    return h.hexdigest()


def _record_lines(path: pathlib.Path) -> list[dict[str, Any]]:
    from hgin_env.records import read_records

    out = []
    for record in read_records(path):
        record = dict(record)
        record.pop("hgin", None)  # the installed version, not behaviour
        out.append(record)
    return out


def records_digest(name: str, tmp: pathlib.Path) -> str:
    import hgin_env
    from hgin_env.envs.wrappers import RecordMatches

    path = tmp / f"{name}.jsonl"
    env = RecordMatches(hgin_env.env(rules=_rules(name)), path)
    rng = np.random.default_rng(14)
    for match in range(2):
        env.reset(seed=200 + match)
        for _agent in env.agent_iter(max_iter=6000):
            obs, _, term, trunc, _ = env.last()
            env.step(None if term or trunc else _pick(rng, obs["action_mask"]))
    env.close()
    h = _Hash()
    h.add(_record_lines(path))
    # Random play rarely finishes a match under Oklahoma or straight gin: the arena's
    # records of two heuristic players cover every profile.
    from agents.evaluation.tournament import run_tournament
    from hgin_env.records import RecordWriter

    arena_path = tmp / f"{name}-arena.jsonl"
    with RecordWriter(arena_path) as writer:
        result = run_tournament(["simple", "strong"], matches=2, rules=_rules(name), seed=8,
                                record=writer.write)
    h.add(_summary(result.pair("simple", "strong")), _record_lines(arena_path))
    return h.hexdigest()


def _summary(pair: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in pair.items() if k != "seconds"}  # wall-clock time


def tournament_digest(tmp: pathlib.Path) -> str:
    from agents.evaluation.tournament import run_tournament
    from hgin_env.records import RecordWriter

    path = tmp / "tournament.jsonl"
    with RecordWriter(path) as writer:
        result = run_tournament(["random", "simple", "strong"], matches=4, rules="classic",
                                seed=3, record=writer.write)
    h = _Hash()
    h.add([[p.a, p.b, _summary(result.pair(p.a, p.b))] for p in result.pairs], result.elo)
    h.add(_record_lines(path))
    return h.hexdigest()


def terminal_digest() -> str:
    """The terminal game's whole text for a scripted player who always plays move 1."""
    from agents import make_agent
    from hgin_env.apps.play import play

    out = io.StringIO()
    answers = iter(["1"] * 400 + ["quit"])
    code = play(make_agent("simple", seed=1), rules="friendly", seed=9, seat=1,
                input_fn=lambda _prompt: next(answers), out=out, color=False)
    h = _Hash()
    h.add(code, out.getvalue())
    return h.hexdigest()


def session_digest() -> str:
    """A browser play session's record after seeded random moves by the person."""
    from agents import make_agent
    from hgin_env.apps.play_session import PlaySession

    session = PlaySession(make_agent("strong"), load_rules("bonus"), seed=21, seat=0,
                          opponent_name="strong")
    rng = np.random.default_rng(15)
    h = _Hash()
    for _ in range(600):
        if session.over:
            break
        mask = session.game.legal_action_mask()[0]
        session.play(_pick(rng, mask), expected=session.moves)
        h.add(session.moves, session.log)
    record = dict(session.record())
    record.pop("hgin", None)
    h.add(record)
    return h.hexdigest()


# The records/* and tournament digests were re-recorded when the pair summary gained
# a_knock_deadwood and b_knock_deadwood (the mean deadwood at a knock): with those two
# keys dropped, the new code gives the earlier digests, so every match is unchanged.
EXPECTED: dict[str, str] = {
    'aec/friendly': '0f40bb91664752bf4a56824889c1f40616c61c51ca8b03ead29fbb5740dd5b95',
    'gym/friendly/random': '714c42c2b726ccd889b85e6aa174fc4472561a59470f4097ec73e7d70bb37a51',
    'gym/friendly/simple': '236a3df9b8865fde7d7aa419b632a03378f1d8058e0034741dbfe6804ccee57c',
    'gym/friendly/strong': 'b554d83f43d65deaea39eb7b514e90dbccfcabc4fb997e68de95774a5aa5d1bd',
    'vector/friendly': '341e0e5481305738d8120007eab0ce6b48d126c601f5d299e605404405ea186f',
    'records/friendly': '59b1fffd785aeae6ec57e6253f635dfed6bf6a5406a256d7e9a84966346a5776',
    'aec/classic': '215a228d5162a03d5b3c700de3a3d579d5aa05d342c71bcd7065678d61d92374',
    'gym/classic/random': '3885a8acd91f11a50be0887e8a224be978e2e5bda9a0753387022d5fe91f940a',
    'gym/classic/simple': 'd8ec1ba38aab9f427445f180bd05c6e7974427dee22be4aad4ece7b64d8dc895',
    'gym/classic/strong': '776e885942392cd8a1a6077e7da0a3b500191c6a5226007bcd632bbfc869531a',
    'vector/classic': '8783ea2e555fe4a0592a3b4a1e2e25dd2c8e94b185ad60a9ee944c35a1c2a502',
    'records/classic': '6c0cb773f8002c6adbcc07e9a9cea4a0a1a209c9286a31fc85c46c6fc1fecc21',
    'aec/bonus': '53560acc86b9e4554a5b721d4a180015dd4e7314088d83c67a9e40568e70f2d5',
    'gym/bonus/random': '2c9391a2fe10c4684e8d30d3a83e2bbe7572799f2c853cc5b0e4c8356ed7926d',
    'gym/bonus/simple': '2c4dccf0acd1d10f1baaa66f0383162a49026661ad336435d1dd4255dbb9774f',
    'gym/bonus/strong': '1e78234905f011f9b6bff37993a622d975f3aff36f441d5ea88c7c0dd24b591a',
    'vector/bonus': '9edec68e4bb4b492bfd4f0b8b0c87b21c87237fe502f17e8b51d98325169c765',
    'records/bonus': '0aacb0392cc50920a95f0d3917e482c043652189d9966aa56a8611e0982e2b27',
    'aec/oklahoma_big': '35a74d256d88bf8cd8b992d061496d66ddea3a630ed2f9749f76a4aba6a6f7a5',
    'gym/oklahoma_big/random': 'fb79f7a4e2e44c64644021dc257f3070093212eece5521a8218891766fc8764e',
    'gym/oklahoma_big/simple': '94c4025c08429ee6811b2ec5eb0c775408267aac044c9610dc8860c3cc556902',
    'gym/oklahoma_big/strong': 'c96595fd2155d89d62cfa50a65abe9f2234cb585708c6d75b2e9ac02cae189b3',
    'vector/oklahoma_big': 'f762bc9829bc1320f0d4502435be5d326abab75b5c0138c2bc2063d4bbfb696c',
    'records/oklahoma_big': '9c1587e50b2b3fe275cafcabc6c819e38402223ff56fb2c4a192b74508da24ab',
    'aec/straight_gin': 'cbbae0ff09b2bb31752649f958bf8fdfd98a78712035ce3318de3e8552d95ead',
    'gym/straight_gin/random': '9610b640a66a529df8a78a6c46b9e79172870e6a47c4f6b7aad99a5588a6bda4',
    'gym/straight_gin/simple': 'aa9fb2fa0cf58e49b2a05655a65632078c31a7411bc68548e745189f3eee798a',
    'gym/straight_gin/strong': '0851b3629849cfb25d7140c2f6c2a13d77968cbc2defa0cdccf8d6cd33e80aca',
    'vector/straight_gin': '2bd75843bb2380453949523e2d3f0acf74d4ef80afcbb8940bfb3503c86860e1',
    'records/straight_gin': 'e7393b2044d1de866ad7094fbb6720653c3fa8beae1860f2bde2b32a0b44c654',
    'aec/eaai': 'fe8ac29a969d702f3bca33c784eb7418500205ad61d86e6cc84c6abda2664c6b',
    'gym/eaai/random': '7b430467f7173db491a0ea5f3edfc384802509b3472f5dd85bff20b3b94ff0c9',
    'gym/eaai/simple': '12cca91826c5428bd84be4303638352931a1c4ebaa66a6ef7f172b90d31f12dc',
    'gym/eaai/strong': '48ce38d39f49fb903f57783820bea3c856250291cc123db0a1f31d62cf7678b1',
    'vector/eaai': '079075d49140f5dc256fb3f425f039f7509f6ba240e621e2333ce1037f4d3c8e',
    'records/eaai': '4155bf10759b0dd002d468ec44a1a13eef4f4b355c59f61ec9f565fb9544ccd5',
    'tournament': '3d24fb482ac2d83b9f4c7fe9b7da131385932cd9406b97172bedf8bc381ea762',
    'terminal': '4a8525968a7b854539ca14038caa96dc05f1f62017cd8cda6baa4c852415b765',
    'session': 'fdb2cb4c9420e721aab53d1da07c594cc4fbcb135ef543b788fa1267a4c4de93',
}


def compute_all(tmp: pathlib.Path) -> dict[str, str]:
    out = {}
    for name in PROFILES:
        out[f"aec/{name}"] = aec_digest(name)
        for opponent in ("random", "simple", "strong"):
            out[f"gym/{name}/{opponent}"] = gym_digest(name, opponent)
        out[f"vector/{name}"] = vector_digest(name)
        out[f"records/{name}"] = records_digest(name, tmp)
    out["tournament"] = tournament_digest(tmp)
    out["terminal"] = terminal_digest()
    out["session"] = session_digest()
    return out


CASES = [f"{kind}/{name}" for name in PROFILES for kind in ("aec", "vector", "records")]
CASES += [f"gym/{name}/{o}" for name in PROFILES for o in ("random", "simple", "strong")]
CASES += ["tournament", "terminal", "session"]


@pytest.mark.parametrize("case", CASES)
def test_env_digest(case: str, tmp_path: pathlib.Path) -> None:
    kind, _, rest = case.partition("/")
    if kind == "aec":
        got = aec_digest(rest)
    elif kind == "gym":
        name, _, opponent = rest.partition("/")
        got = gym_digest(name, opponent)
    elif kind == "vector":
        got = vector_digest(rest)
    elif kind == "records":
        got = records_digest(rest, tmp_path)
    elif kind == "tournament":
        got = tournament_digest(tmp_path)
    elif kind == "terminal":
        got = terminal_digest()
    else:
        got = session_digest()
    assert got == EXPECTED[case]


if __name__ == "__main__":  # print the digests, to record them after a deliberate change
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        for key, value in compute_all(pathlib.Path(folder)).items():
            print(f"    {key!r}: {value!r},")
