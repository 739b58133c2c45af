"""The decision study (bench/search_decisions.py): rollouts with another opponent, the
decision rules on hand-built estimates, the netlik belief, and the script end to end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents.search import SearchAgent, parse_search_spec
from bench.search_decisions import (
    BadInput,
    Rule,
    choose,
    collect,
    compare,
    estimate,
    evaluate_rule,
    load_study,
    main,
    pair_gains,
    parse_rule,
    rules_table,
    save_study,
    truth,
)
from hgin_env import actions as A

torch = pytest.importorskip("torch")

_U64 = np.uint64


@pytest.fixture(scope="module")
def study():  # type: ignore[no-untyped-def]
    s = collect(2, "strong", "pretrained", "friendly", 3, top_k=3)
    truth(s, 4, 3)
    return s


def test_collect_records_the_blueprints_own_games(study) -> None:  # type: ignore[no-untyped-def]
    assert study.matches == 2 and len(study.decisions) > 20
    for d in study.decisions:
        assert d.view.own & d.opp_hand == 0
        assert d.opp_hand & d.view.opp_known == d.view.opp_known
        assert len(d.candidates) == len(d.probs) >= 2
        assert d.probs[0] == max(d.probs)  # the blueprint's move comes first
        assert 0 <= d.match < 2 and d.pair == 0
    for name in ("truth", "truth-bp"):
        assert len(study.values[name]) == len(study.decisions)
        assert all(v.shape == (4, len(d.candidates))
                   for v, d in zip(study.values[name], study.decisions, strict=True))


def test_rollouts_with_the_blueprint_as_opponent_are_the_default(study) -> None:  # type: ignore[no-untyped-def]
    agent = make_agent("search-v1", seed=0)  # rollouts to the hand's end
    assert isinstance(agent, SearchAgent)
    ds = study.decisions[:6]
    gen = np.random.default_rng(1)
    hands = [np.full(3, d.opp_hand, _U64) for d in ds]
    keys = [gen.random((3, 52)) for _ in ds]
    args = ([d.view for d in ds], hands, [d.candidates for d in ds], keys)
    plain = agent._rollouts(*args)
    split = agent._rollouts(*args, opponent=agent.blueprint)
    strong = agent._rollouts(*args, opponent=make_agent("strong"))
    for a, b in zip(plain, split, strict=True):
        assert np.array_equal(a, b)
    assert any(not np.array_equal(a, c) for a, c in zip(plain, strong, strict=True))


def test_choose_follows_margin_prior_scope_and_knocks() -> None:
    cands = [5, 6, A.KNOCK + 7]
    probs = np.array([0.5, 0.3, 0.2])
    q = np.array([[0.0, 0.3, 0.9], [0.0, 0.32, 0.9], [0.0, 0.28, 0.9]])
    assert choose(Rule(uncertain=1.0), q, cands, probs, None) == 1  # knocks stay
    assert choose(Rule(uncertain=1.0, knocks=True), q, cands, probs, None) == 2
    assert choose(Rule(uncertain=0.4), q, cands, probs, None) == 0  # blueprint sure enough
    # log(0.5/0.3) = 0.51 nats: a prior of 0.5 asks 0.05 + 0.26 > 0.3 more.
    assert choose(Rule(uncertain=1.0, prior=0.5), q, cands, probs, None) == 0
    assert choose(Rule(uncertain=1.0, prior=0.3), q, cands, probs, None) == 1
    noisy = np.array([[0.0, 1.0, 0.0], [0.0, -0.6, 0.0], [0.0, 0.5, 0.0]])
    assert choose(Rule(uncertain=1.0), noisy, cands, probs, 3) == 0  # within 2 standard errors
    assert choose(Rule(uncertain=1.0, confidence=0.0), noisy, cands, probs, 3) == 1
    assert choose(Rule(uncertain=1.0, top_k=1), q, cands, probs, None) == 0


def test_estimates_and_rules_table(study) -> None:  # type: ignore[no-untyped-def]
    estimate(study, "oracle", 0)
    estimate(study, "search:samples=2,particles=4,belief=netlik", 0)
    assert all(v.shape == (1, len(d.candidates))
               for v, d in zip(study.values["oracle"], study.decisions, strict=True))
    never = evaluate_rule(study, "oracle", Rule(margin=10.0, uncertain=1.0))
    assert never["changed"] == 0 and never["gain"] == 0
    # Judged by the values it chose with, a rule never loses.
    self_judged = evaluate_rule(study, "truth", Rule(uncertain=1.0, confidence=0.0), "truth")
    assert self_judged["gain"] >= 0


def test_two_estimates_compare_paired_on_the_same_decisions(study) -> None:  # type: ignore[no-untyped-def]
    """``--versus``: the paired difference is the mean of the per-pair differences, zero
    against itself, and a column of the table; an unknown base is one clear error."""
    estimate(study, "search:samples=2,particles=4,belief=hand", 0)
    rule = Rule(uncertain=1.0, confidence=0.0)
    same = compare(study, "oracle", "oracle", rule)
    assert same["gain"] == 0  # (the fixture has one pair: no interval to check)
    a, _ = pair_gains(study, "oracle", rule)
    b, _ = pair_gains(study, "search:samples=2,particles=4,belief=hand", rule)
    d = compare(study, "oracle", "search:samples=2,particles=4,belief=hand", rule)
    assert d["gain"] == pytest.approx(float((a - b).mean()))
    assert evaluate_rule(study, "oracle", rule)["gain"] == pytest.approx(float(a.mean()))
    table = rules_table(study, [rule], ["oracle"], versus="oracle")
    assert "minus `oracle`" in table.splitlines()[0]
    assert table.splitlines()[2].count("|") == 7
    with pytest.raises(BadInput, match="no such estimate"):
        rules_table(study, [rule], versus="search:samples=99")


def test_netlik_weights_the_networks_hands(study) -> None:  # type: ignore[no-untyped-def]
    cfg = parse_search_spec("search:belief=netlik,particles=64,samples=8")
    assert cfg.belief == "netlik"
    views = [d.view for d in study.decisions[-4:]]
    net = make_agent("search:belief=net,particles=16,samples=4")
    lik = make_agent("search:belief=netlik,particles=16,samples=4")
    assert isinstance(net, SearchAgent) and isinstance(lik, SearchAgent)
    a = net.particles(views, [np.random.default_rng(i) for i in range(4)])
    b = lik.particles(views, [np.random.default_rng(i) for i in range(4)])
    for (ha, _), (hb, wb), view in zip(a, b, views, strict=True):
        assert np.array_equal(ha, hb)  # the network's hands ...
        assert wb.sum() == pytest.approx(1.0) and (wb >= 0).all()
        assert not (hb & _U64(view.own | view.opp_known)).any()
    assert any(np.ptp(wb) > 0 for _, wb in b)  # ... weighted by the likelihood
    with pytest.raises(ValueError, match="netlik"):
        parse_search_spec("search:belief=nope")


def test_main_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "d.npz"
    assert main(["collect", "--matches", "2", "--truth", "2", "--out", str(out)]) == 0
    assert main(["estimate", str(out), "--estimates", "oracle-hand:samples=2"]) == 0
    assert main(["rules", str(out)]) == 0
    text = capsys.readouterr().out
    assert "decisions in 2 matches against strong" in text
    assert "| `oracle-hand:samples=2` | defaults |" in text


def test_run_does_it_all_in_one_go(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--matches", "2", "--truth", "2", "--estimates", "oracle",
                 "--rule", "uncertain=1,prior=0.1"]) == 0
    text = capsys.readouterr().out
    assert "| `oracle` | prior=0.1,uncertain=1.0 |" in text
    assert "(one pair: no interval)" in text  # two matches are one duplicate pair
    with pytest.raises(SystemExit, match="unknown key 'nope'"):
        parse_rule("nope=1")
    with pytest.raises(SystemExit, match="bad value for prior"):
        parse_rule("prior=high")


def test_the_study_file_round_trips_without_pickle(study, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    estimate(study, "oracle", 0)
    path = tmp_path / "s.npz"
    save_study(study, path)
    back = load_study(path)
    assert back.matches == study.matches and len(back.decisions) == len(study.decisions)
    for a, b in zip(study.decisions, back.decisions, strict=True):
        assert a.candidates == b.candidates and a.opp_hand == b.opp_hand
        assert np.array_equal(a.stock_keys, b.stock_keys) and np.allclose(a.probs, b.probs)
        assert a.view.events == b.view.events and np.array_equal(a.view.scores, b.view.scores)
        assert np.array_equal(a.view.belief_x, b.view.belief_x)
    for name in study.values:
        assert all(np.array_equal(x, y)
                   for x, y in zip(study.values[name], back.values[name], strict=True))
    assert back.independent == study.independent
    with np.load(path, allow_pickle=False) as data:  # plain arrays only
        assert all(data[k].dtype != object for k in data.files)


@pytest.mark.parametrize("content", [b"garbage", b"PK\x03\x04broken"])
def test_a_bad_study_file_is_one_line_and_exit_2(content: bytes, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.npz"
    path.write_bytes(content)
    assert main(["rules", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "is not a decision study file" in err and "\n" not in err
    np.savez(path, head=np.frombuffer(b'{"kind": "other"}', np.uint8))
    assert main(["rules", str(path)]) == 2
    assert "not written by this script" in capsys.readouterr().err
