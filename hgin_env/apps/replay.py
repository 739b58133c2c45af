"""Re-play a match record through the engine and verify every outcome.

    python -m hgin_env.replay FILE                 # verify every match of FILE
    python -m hgin_env.replay FILE --match N       # print match N, hand by hand
    python -m hgin_env.replay FILE --match N --html out.html   # a page to step through it

:func:`replay` deals each hand (the first from the record's seed, or from
its deck when the record says ``first_deal: given``; later hands from the
engine's own seed stream, checked card by card against the record), plays
the recorded actions one by one and checks the mover, the legality of each
action, where the hand ends, the showdown, the award and the sheet after
every hand, and the match result.  Any disagreement, a tampered or cut-off
record included, is a ``ValueError`` naming the match, the hand and the step
(step 0 is the deal, step k the k-th action of the hand).  A record of a match
in progress (``result.winner`` -1, as the play server writes one) is checked up
to its last action, which must leave the hand in play.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from hgin_env.apps.outputs import check_output_file
from hgin_env.records.format import (
    read_records,
)
from hgin_env.records.replay import escape_controls, match_text, replay

__all__ = ["html_target", "main"]


def _emit(text: str, stream: TextIO) -> None:
    """Print ``text``, escaping what ``stream``'s encoding cannot hold instead of failing."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    print(text.encode(encoding, "backslashreplace").decode(encoding), file=stream)


# ---------------------------------------------------------------------- command line


def html_target(value: str, source: str) -> tuple[Path, bool]:
    """Where ``--html value`` writes, checked before any record is read or played.

    Returns ``(path, folder)``: an existing folder (or a value ending in ``/``)
    gets ``match_<N>.html`` inside it (``folder`` true), named once the match is
    known.  Raises ``ValueError`` naming the option when the page cannot be
    written there, or when it would overwrite the record file ``source``.
    """
    path = Path(value)
    if value.endswith(("/", os.sep)) and not path.is_dir():
        raise ValueError(f"--html {value}: directory {path} does not exist")
    if path.is_dir():
        if not os.access(path, os.W_OK | os.X_OK):
            raise ValueError(f"--html {value}: directory {path} is not writable")
        return path, True
    _check_page_path(value, path, source)
    return path, False


def _check_page_path(value: str, path: Path, source: str) -> None:
    """``path`` can take the page: its folder exists and is writable, and it is neither
    a folder, nor a device or other special file, nor the record file being read."""
    check_output_file("--html", value, path)
    if path.exists() and not path.is_file():
        raise ValueError(f"--html {value}: {path} is not a regular file")
    if path.resolve() == Path(source).resolve() or (
            path.exists() and os.path.exists(source) and os.path.samefile(path, source)):
        raise ValueError(f"--html {value}: {path} is the record file being read; "
                         "refusing to overwrite it")


#: The longest error message printed whole.
_MAX_MESSAGE = 2000


def main(argv: Sequence[str] | None = None, prog: str = "python -m hgin_env.replay") -> int:
    """Verify every match of a record file, or print one match as text, or write its page."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Re-play match records (JSON Lines, .gz allowed) through the engine, "
                    "verifying every outcome; print one match with --match.",
        epilog="exit codes: 0 every match verified (or the match printed or written), 1 a "
               "record failed, the file is empty or has no such match, 2 bad arguments")
    parser.add_argument("file", help="a record file (hgin evaluate --record, the env wrappers, "
                        "training evaluations)")
    parser.add_argument("--match", type=int, metavar="N",
                        help="print match N (its 'match' field) hand by hand")
    parser.add_argument("--html", metavar="OUT",
                        help="write match N (the first match without --match) as one "
                             "self-contained HTML page to OUT (a folder gets match_N.html) "
                             "instead of printing it")
    args = parser.parse_args(argv)
    target: tuple[Path, bool] | None = None
    if args.html is not None:
        try:  # before any record is read: a bad path must not cost a replay
            target = html_target(args.html, args.file)
        except ValueError as err:
            parser.error(escape_controls(str(err)))
    try:
        if target is not None:
            return _write_page(parser.prog, args.file, args.match, args.html, *target)
        if args.match is not None:
            for record in read_records(args.file):
                if record["match"] == args.match:
                    _emit(match_text(record), sys.stdout)
                    return 0
            return _none_found(parser.prog, args.file, args.match)
        count = 0
        for record in read_records(args.file):
            result = replay(record)
            count += 1
            if result.winner < 0:
                outcome = "still in play"
            else:
                name = escape_controls(record["agents"][result.winner])
                outcome = f"won by {name} (seat {result.winner})"
            _emit(f"match {result.match}: verified, {result.hands} hands, {result.actions} "
                  f"actions, {outcome}", sys.stdout)
        if count == 0:
            return _none_found(parser.prog, args.file, None)
        print(f"{count} match(es) verified", file=sys.stderr)
        return 0
    except ValueError as err:
        message = str(err)
        if len(message) > _MAX_MESSAGE:  # a hostile value quoted whole would flood the screen
            message = message[:_MAX_MESSAGE] + " ... (cut short)"
        _emit(escape_controls(f"{parser.prog}: {message}"), sys.stderr)
        return 1


def _none_found(prog: str, path: str, match: int | None) -> int:
    """Report a file without the match asked for (or without any record): exit code 1."""
    what = f"has no match {match}" if match is not None else "holds no match record (it is empty)"
    _emit(escape_controls(f"{prog}: {path} {what}"), sys.stderr)
    return 1


def _write_page(prog: str, path: str, match: int | None, value: str, out: Path,
                folder: bool) -> int:
    from hgin_env.records.viewer import write_html  # the viewer imports this module

    for record in read_records(path):
        if match is None or record["match"] == match:
            if folder:
                out = out / f"match_{record['match']}.html"
                _check_page_path(value, out, path)
            try:
                written = write_html(record, out)
            except OSError as err:
                raise ValueError(f"cannot write {out}: {err}") from None
            _emit(escape_controls(f"wrote match {record['match']} to {written}"), sys.stderr)
            return 0
    return _none_found(prog, path, match)


if __name__ == "__main__":
    sys.exit(main())
