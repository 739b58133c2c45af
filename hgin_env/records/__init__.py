"""Match records: the format (:mod:`.format`), replay with verification
(:mod:`.replay`) and the HTML viewer (:mod:`.viewer`).

``hgin_env.records`` keeps the names it had as a single module (the format's).
"""

from hgin_env.records.format import (
    FORMAT,
    MAX_LINE_BYTES,
    VERSION,
    MatchRecorder,
    MatchStream,
    RecordWriter,
    check_record,
    hgin_version,
    in_progress,
    make_record,
    meld_lists,
    open_text,
    read_records,
    sheet_dict,
    showdown_dict,
    shown,
)

__all__ = [
    "FORMAT", "MAX_LINE_BYTES", "VERSION", "MatchRecorder", "MatchStream", "RecordWriter",
    "check_record", "hgin_version", "in_progress", "make_record", "meld_lists", "open_text",
    "read_records", "sheet_dict", "showdown_dict", "shown"
]
