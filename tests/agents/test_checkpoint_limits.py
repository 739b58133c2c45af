"""Hostile checkpoint files: what a file declares is checked before any tensor is read.

The checksums are not a signature (anyone can rewrite a file and recompute them), so the
loader bounds what it reads from the archive's directory and from the values' declarations
alone: a deflated zero tensor that would unpack to hundreds of MB, values nested 200,000
deep, a list where the metadata table belongs, a tensor the network has no place for.
Each is one :class:`CheckpointError` (exit 2 from ``hgin train --resume``), in a moment.
"""

from __future__ import annotations

import io
import struct
import time
import zipfile
from pathlib import Path

import pytest
import torch

from agents import make_agent
from agents.model import PolicyValueNet
from agents.torch_agent import (
    MAX_DEPTH,
    CheckpointError,
    checksums,
    load_checkpoint,
    load_torch_agent,
    make_checkpoint,
)

PLACEHOLDER = "PLACEHOLDER"


def _saved(ckpt: dict) -> bytes:
    buf = io.BytesIO()
    torch.save(ckpt, buf)
    return buf.getvalue()


def _rewrite(raw: bytes, pickle: bytes | None = None, deflate: tuple[int, int] | None = None
             ) -> bytes:
    """The archive ``raw`` with its ``data.pkl`` replaced by ``pickle``, and with the entry
    of ``deflate[0]`` bytes replaced by ``deflate[1]`` zero bytes, zip-deflated."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            if info.filename.endswith("/data.pkl") and pickle is not None:
                dst.writestr(info.filename, pickle)
            elif deflate is not None and info.file_size == deflate[0]:
                bomb = zipfile.ZipInfo(info.filename)
                bomb.compress_type = zipfile.ZIP_DEFLATED
                with dst.open(bomb, "w") as f:
                    for start in range(0, deflate[1], 2**24):
                        f.write(bytes(min(2**24, deflate[1] - start)))
            else:
                dst.writestr(info, src.read(info))
    return out.getvalue()


def _data_pkl(raw: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        return z.read(next(n for n in z.namelist() if n.endswith("/data.pkl")))


def _refused(path: Path, match: str) -> None:
    began = time.perf_counter()
    with pytest.raises(CheckpointError, match=match):
        load_checkpoint(path)
    assert time.perf_counter() - began < 10.0
    with pytest.raises(ValueError, match=match):
        make_agent(f"ckpt:{path}")


def _resume_exits_2(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> str:
    from agents.cli import train

    capsys.readouterr()
    code = train.main(["--resume", str(path), "--logdir", str(tmp_path / "run"),
                       "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err
    return err


def test_a_zip_bomb_is_refused_from_the_archive_directory(tmp_path: Path) -> None:
    """A tensor the network has no place for, 200 MB of zeros zip-deflated to a fraction of
    a MB: refused from the sizes the archive declares, before anything is unpacked (the
    file of the report, 1.5 GB in 2.0 MB, used 1.71 GB before it was refused)."""
    numel, huge = 123_457, 50_000_000
    ckpt = make_checkpoint(PolicyValueNet(hidden=[8]))
    ckpt["model"]["evil"] = torch.zeros(numel)
    ckpt["checksums"] = checksums(ckpt)
    raw = _saved(ckpt)
    pickle = _data_pkl(raw)
    small, big = b"J" + struct.pack("<i", numel), b"J" + struct.pack("<i", huge)
    assert pickle.count(small) == 2  # its storage's size and the tensor's shape
    bomb = _rewrite(raw, pickle.replace(small, big), deflate=(numel * 4, huge * 4))
    path = tmp_path / "bomb.pt"
    path.write_bytes(bomb)
    assert path.stat().st_size < 2_000_000
    _refused(path, r"bomb\.pt: its archive declares 200,0\d\d,\d\d\d bytes unpacked in a "
                   r"file of [\d,]+ \(torch\.save stores its entries uncompressed\)")


def test_a_tensor_the_network_has_no_place_for_is_refused_before_loading(tmp_path: Path
                                                                         ) -> None:
    """Stored uncompressed (so the file is as large as what it declares), an unexpected
    network tensor is refused by its name, before the data is read; so is a tensor in the
    metadata, where no tensor belongs."""
    ckpt = make_checkpoint(PolicyValueNet(hidden=[8]))
    ckpt["model"]["evil"] = torch.zeros(1000)
    ckpt["checksums"] = checksums(ckpt)
    path = tmp_path / "extra.pt"
    path.write_bytes(_saved(ckpt))
    _refused(path, r"extra\.pt: the network does not match its architecture: unexpected "
                   r"tensor\(s\) evil")
    ckpt = make_checkpoint(PolicyValueNet(hidden=[8]), meta={"x": torch.zeros(3)})
    path = tmp_path / "meta_tensor.pt"
    path.write_bytes(_saved(ckpt))
    _refused(path, r"meta_tensor\.pt: holds a tensor at /meta/x, outside the model and "
                   "trainer tables")


def test_metadata_nested_200000_deep_is_one_checkpoint_error(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture
                                                             ) -> None:
    """Before: RecursionError traceback, exit 1."""
    depth = 200_000
    raw = _saved(make_checkpoint(PolicyValueNet(hidden=[8]), meta={"note": PLACEHOLDER}))
    pickle = _data_pkl(raw)
    text = b"X" + struct.pack("<I", len(PLACEHOLDER)) + PLACEHOLDER.encode()
    assert pickle.count(text) == 1
    nested = b"]" * depth + b"a" * (depth - 1)  # lists, each appended to the one below
    path = tmp_path / "deep.pt"
    path.write_bytes(_rewrite(raw, pickle.replace(text, nested)))
    _refused(path, rf"deep\.pt: its values are nested more than {MAX_DEPTH} deep "
                   r"\(at /meta/note/0/0/0")
    assert "nested more than" in _resume_exits_2(path, tmp_path, capsys)


def test_metadata_that_is_a_list_is_one_checkpoint_error(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    """A consistent file (checksums recomputed) whose metadata is a list.  Before: TypeError
    traceback, exit 1."""
    ckpt = make_checkpoint(PolicyValueNet(hidden=[8]))
    ckpt["meta"] = [1, 2, 3]
    ckpt["checksums"] = checksums(ckpt)
    path = tmp_path / "listed.pt"
    path.write_bytes(_saved(ckpt))
    _refused(path, r"listed\.pt: its 'meta' entry is a list, not a table")
    with pytest.raises(CheckpointError, match="not a table"):
        load_torch_agent(path)
    assert "'meta' entry is a list" in _resume_exits_2(path, tmp_path, capsys)


def test_good_checkpoints_still_load_and_loading_draws_no_random_numbers(tmp_path: Path
                                                                        ) -> None:
    model = PolicyValueNet(hidden=[24, 16])
    path = tmp_path / "good.pt"
    path.write_bytes(_saved(make_checkpoint(model, {"x": 1}, {"note": [1, {"a": 2}]})))
    torch.manual_seed(3)
    want = torch.rand(4)
    torch.manual_seed(3)
    load_checkpoint(path)  # builds a network to check the file's against, on a forked RNG
    assert torch.equal(torch.rand(4), want)
    agent = load_torch_agent(path)
    assert agent.meta["note"] == [1, {"a": 2}]
    assert all(torch.equal(agent.model.state_dict()[k], v)
               for k, v in model.state_dict().items())
