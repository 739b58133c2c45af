"""Distilling search (bench/distill_search.py): the labels are the search's own moves,
training moves the network towards them, and the script's bad inputs are one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents.evaluation.arena import play_matches
from agents.search import SearchAgent
from bench.distill_search import _LabellingSearch, load_labels, main, soft_targets, train

torch = pytest.importorskip("torch")

TEACHER = "search:belief=hand,samples=4,uncertain=1,depth=8"


def test_the_labelling_search_plays_exactly_as_the_search() -> None:
    base = make_agent(TEACHER, seed=3)
    assert isinstance(base, SearchAgent)
    labelling = _LabellingSearch(base.config, "friendly", base.blueprint, 3, anchor=0.5)
    plain = SearchAgent(base.config, "friendly", base.blueprint, 3)
    a = play_matches(labelling, make_agent("strong", seed=3), 2, "friendly", seed=3)
    b = play_matches(plain, make_agent("strong", seed=3), 2, "friendly", seed=3)
    assert np.array_equal(a.a_won, b.a_won) and np.array_equal(a.a_points, b.a_points)
    assert labelling.counts == plain.counts
    rows = {k: np.concatenate(v) for k, v in labelling.rows.items()}
    searched = rows["searched"]
    assert searched.sum() == labelling.counts["searched"]
    assert (rows["choice"][searched] > 0).sum() == labelling.counts["deviations"]
    assert (rows["choice"][~searched] == -1).all()
    # Every searched row's candidates are legal and its label is one of them.
    for c, m, b_ in zip(rows["candidates"][searched], rows["mask"][searched],
                        rows["choice"][searched], strict=True):
        legal = c[c >= 0]
        assert legal.size >= 2 and m[legal].all() and 0 <= b_ < legal.size


def _labels(folder: Path) -> None:
    assert main(["label", "--matches", "2", "--chunk", "2", "--teacher", TEACHER,
                 "--out", str(folder)]) == 0
    assert main(["label", "--matches", "4", "--chunk", "2", "--teacher", TEACHER,
                 "--opponent", "pretrained", "--out", str(folder)]) == 0


@pytest.fixture(scope="module")
def labels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("labels")
    _labels(folder)
    return folder


def test_label_goes_on_where_it_stopped_and_train_writes_an_agent(labels: Path,
                                                                   tmp_path: Path) -> None:
    files = sorted(labels.glob("*.npz"))
    assert [f.name for f in files] == ["pretrained_s0_000000.npz", "pretrained_s0_000002.npz",
                                       "strong_s0_000000.npz"]
    before = [f.stat().st_mtime_ns for f in files]
    _labels(labels)  # every chunk is there: nothing is played again
    assert [f.stat().st_mtime_ns for f in files] == before
    out = tmp_path / "distilled.pt"
    figures = train(labels, "pretrained", out, epochs=1, lr=1e-4, kl=1.0, holdout=0.3,
                    batch=64, seed=0)
    assert figures["held_out"]["changed"] >= 0
    agent = make_agent(f"ckpt:{out}")
    assert agent.meta["figures"] == figures
    st = play_matches(agent, make_agent("random", seed=0), 2, "friendly", seed=0)
    assert st.a_won.size == 2


def test_training_moves_the_network_to_the_searchs_choices(labels: Path, tmp_path: Path
                                                            ) -> None:
    data, _ = load_labels(labels)
    if (data["choice"] > 0).sum() == 0:  # pragma: no cover - the seeds above change moves
        pytest.skip("search changed no move in these matches")
    figures = train(labels, "pretrained", tmp_path / "d.pt", epochs=40, lr=3e-3, kl=0.0,
                    holdout=0.0, batch=256, seed=0)
    assert figures["train"]["plays_search_where_changed"] >= 0.5
    assert figures["train"]["keeps_blueprint_where_unchanged"] >= 0.9


def test_soft_training_moves_the_network_to_the_tilted_targets(labels: Path,
                                                               tmp_path: Path) -> None:
    from agents.model import masked_logits

    data, _ = load_labels(labels)
    bp = make_agent("pretrained").model
    x = torch.from_numpy(bp.featurize(data["obs"].astype(np.float32)))
    m = torch.from_numpy(data["mask"])
    with torch.inference_mode():
        bp_logp = torch.log_softmax(masked_logits(bp(x)[0], m), -1)
    target = soft_targets(bp_logp, data["candidates"], data["q"], data["searched"], 0.02)
    tilted = (target.argmax(1) != bp_logp.argmax(1)).numpy()
    if not tilted.any():  # pragma: no cover
        pytest.skip("no target moved off the blueprint's move")
    train(labels, "pretrained", tmp_path / "d.pt", epochs=40, lr=3e-3, kl=0.0, holdout=0.0,
          batch=256, seed=0, tau=0.02)
    net = make_agent(f"ckpt:{tmp_path / 'd.pt'}").model
    with torch.inference_mode():
        play = masked_logits(net(x)[0], m).argmax(1).numpy()
    want = target.argmax(1).numpy()
    assert (play[tilted] == want[tilted]).mean() >= 0.5
    assert (play[~tilted] == want[~tilted]).mean() >= 0.9


@pytest.mark.parametrize("argv, words", [
    (["train", "{tmp}", "--out", "{tmp}/x.pt"], "no label chunks"),
    (["train", "{tmp}", "--out", "{tmp}/x.pt", "--holdout", "1.5"], "--holdout"),
    (["label", "--teacher", "pretrained", "--out", "{tmp}"], "must be a search spec"),
    (["label", "--matches", "1", "--out", "{tmp}"], "--matches >= 2"),
])
def test_bad_input_is_one_line(tmp_path: Path, argv: list[str], words: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    message = str(exc.value.code) if not isinstance(exc.value.code, int) else \
        capsys.readouterr().err
    assert words in message and "Traceback" not in message


def test_soft_targets_tilt_the_blueprint_by_the_advantage() -> None:
    bp = torch.log_softmax(torch.tensor([[2.0, 1.0, 0.0, -1e9], [0.0, 0.0, 0.0, 0.0]]), 1)
    cands = np.array([[0, 1, -1], [0, 2, -1]], np.int16)
    q = np.array([[0.1, 0.3, 0.0], [0.0, 0.0, 0.0]], np.float32)
    out = soft_targets(bp, cands, q, np.array([True, False]), tau=0.1)
    p = out.exp()
    assert torch.allclose(p.sum(1), torch.ones(2))
    assert torch.allclose(out[1], bp[1])  # not searched: the blueprint
    w = torch.softmax(torch.tensor([2.0, 1.0]), 0)  # blueprint over the two candidates
    mean = float(w[0] * 0.1 + w[1] * 0.3)
    expect = torch.log_softmax(torch.tensor([2.0 + (0.1 - mean) / 0.1,
                                             1.0 + (0.3 - mean) / 0.1, 0.0]), 0)
    assert torch.allclose(out[0, :3], expect, atol=1e-5) and p[0, 3] < 1e-9


def test_the_command_line_trains_and_compares(labels: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli.pt"
    assert main(["train", str(labels), "--out", str(out), "--epochs", "1",
                 "--holdout", "0"]) == 0
    assert main(["compare", f"ckpt:{out}", "--opponents", "random", "--matches", "4",
                 "--seed", "3"]) == 0
    text = capsys.readouterr().out
    assert f"wrote {out}" in text
    assert f"ckpt:{out} minus pretrained vs random: " in text
    assert "points over 2 duplicate pairs" in text
