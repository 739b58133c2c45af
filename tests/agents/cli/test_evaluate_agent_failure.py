"""``hgin evaluate`` with an agent that fails mid-tournament (issue 35): one line naming the
agent, the match and the move, exit code 3, and a record of every match that finished."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

from agents.cli import evaluate
from hgin_env.records import read_records
from hgin_env.records.replay import replay
from tests.helpers.paths import ROOT

BOT = """
import sys
answers = int(sys.argv[1])
position = []
for line in sys.stdin:
    line = line.rstrip("\\n")
    if line != "END":
        position.append(line)
        continue
    if answers == 0:
        sys.exit(4)
    answers -= 1
    start = position.index("Legal moves (answer with one code, or the move in words):")
    print(position[start + 1].strip().split("  ")[0], flush=True)
    position = []
"""


def test_a_failed_agent_is_one_line_exit_3_and_the_finished_matches_are_recorded(
        tmp_path: Path, capsys) -> None:
    script = tmp_path / "bot.py"
    script.write_text(BOT, encoding="utf-8")
    # 400 answers: past the first batch of two matches, short of the second.
    spec = "text:timeout=10:" + shlex.join([sys.executable, str(script), "400"])
    record, results = tmp_path / "matches.jsonl", tmp_path / "results.json"
    code = evaluate.main(["--agents", spec, "random", "--names", "bot", "random",
                          "--matches", "4", "--batch-size", "2", "--no-progress",
                          "--record", str(record), "--json", str(results)])
    assert code == evaluate.EXIT_AGENT_FAILED == 3
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    lines = captured.err.splitlines()
    failed = [line for line in lines if "failed in match" in line]
    assert len(failed) == 1
    # the pairing is played, and named, in its canonical order (specs sorted): random first
    found = re.fullmatch(r"evaluate\.py: agent 'bot' failed in match (\d) \(random vs bot\), "
                         r"hand \d+, move \d+ of the match: move 401 of 'text:.*': the program "
                         r"exited \(code 4\) without answering; legal moves: .+", failed[0])
    assert found, failed[0]
    kept = list(read_records(record))
    note = f"evaluate.py: wrote {record} ({len(kept)} finished matches; the "
    assert any(line.startswith(note) and "in play when the agent failed are not in it"
               in line for line in lines), lines
    assert len(kept) >= 2  # the first batch finished
    numbers = [r["match"] for r in kept]
    assert numbers[:2] == [0, 1] and int(found.group(1)) not in numbers
    assert len(set(numbers)) == len(numbers) and all(0 <= n < 4 for n in numbers)
    assert all(r["agents"] in (["bot", "random"], ["random", "bot"]) for r in kept)
    for r in kept:
        replay(r)  # every record kept is a whole match that verifies
    assert not results.exists()
    assert "not written, the tournament being unfinished: --json" in captured.err


def test_the_exit_code_is_documented() -> None:
    assert "3 an agent failed" in evaluate.EPILOG
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert "3 an agent failed" in text
