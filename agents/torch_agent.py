"""Torch policies as agents, and the checkpoint format they load from.

A checkpoint is one ``torch.save`` file holding only tensors and plain
Python values, so it loads with ``torch.load(..., weights_only=True)`` (no
code runs on load).  Its top level::

    {"format": "hgin-torch-agent", "version": 2,
     "obs_dim": 398, "num_actions": 108,
     "arch": {...},            # PolicyValueNet.from_arch
     "model": state_dict,      # the network's tensors
     "config": {...},          # the training config that made it
     "meta": {...},            # updates, env steps, evaluation results, ...
     "trainer": {...},         # optional: optimiser, RNG, engine state (resume)
     "checksums": {...}}       # version 2: a digest of every tensor, and one of the rest

Files are written atomically (a temporary file in the same folder, fsync,
then rename), so a run killed mid-save leaves the previous checkpoint whole.
The checksums catch what atomic writes cannot: a file corrupted after it was
written (a flipped bit in Adam's state loads fine and poisons a resumed run).
Version 1 files (no checksums) still load, unverified.

The checksums are not a signature: anyone can rewrite a file and recompute them.  So
before any tensor is read, :func:`load_checkpoint` checks what the file declares: the
archive's entries may not unpack to more bytes than the file holds (``torch.save`` stores
them uncompressed; a deflated zero tensor of 1.5 GB is 2 MB), the values are read with
every tensor on the ``meta`` device (no data) and must be tables where tables belong,
nested at most :data:`MAX_DEPTH` deep, :data:`MAX_VALUES` in all, with tensors only in
``model`` and ``trainer`` and no more tensor bytes than the file holds, and ``model``
must hold exactly the tensors of its ``arch`` (whose sizes are bounded).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.features import ObsView, decode
from agents.model import PolicyValueNet, masked_logits, sample_masked
from hgin_env.actions import NUM_ACTIONS
from hgin_env.observation import OBS_DIM

FORMAT = "hgin-torch-agent"
VERSION = 2
#: The first version whose files carry checksums.
CHECKSUM_VERSION = 2
PRETRAINED_PATH = Path(__file__).resolve().parent / "pretrained" / "hgin_default.pt"
#: Batches of fewer rows than this run the network on one torch thread.  A small
#: forward pass is over before a second thread has started, so on a 2-core machine one
#: decision took 20x longer on torch's default two threads (bench/bench_latency.py
#: measures the crossover: one thread is faster up to about 128 rows on an idle 2-core
#: machine, and at every size when the other core is busy).
SMALL_BATCH = 128


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block on ``n`` torch CPU threads, then give the caller back its own count
    (``n <= 0`` changes nothing)."""
    before = torch.get_num_threads()
    if n <= 0 or n == before:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class CheckpointError(ValueError):
    """A file that is not a usable hgin agent checkpoint."""


#: The deepest nesting of a checkpoint's values (the shipped files nest 6 deep).
MAX_DEPTH = 32
#: The most values (tables, lists and leaves together) a checkpoint may hold.
MAX_VALUES = 2_000_000
#: The largest ``data.pkl`` (the values and the tensors' declarations, not their data).
MAX_PICKLE_BYTES = 64 * 2**20
#: The top-level entries that may hold tensors.
TENSOR_TABLES = ("model", "trainer")


# --------------------------------------------------------------------------- agent


class TorchAgent:
    """A :class:`PolicyValueNet` acting on batches of observations.

    ``greedy=True`` plays the most likely legal action; otherwise it samples
    from the masked policy, from ``rng`` when one is given (reproducible) or
    from the agent's own seeded generator.  On the CPU, batches of fewer than
    ``small_batch`` rows run on one torch thread (see :data:`SMALL_BATCH`; 0 keeps the
    caller's thread count for every batch).
    """

    def __init__(
        self,
        model: PolicyValueNet,
        greedy: bool = True,
        device: str | torch.device = "cpu",
        name: str = "torch",
        seed: int | None = None,
        small_batch: int = SMALL_BATCH,
    ) -> None:
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()
        self.greedy = greedy
        self.name = name
        self.small_batch = int(small_batch)
        self._rng = np.random.default_rng(seed)
        self.meta: dict[str, Any] = {}

    def threads_for(self, rows: int) -> int:
        """The torch threads a batch of ``rows`` runs on: 1 for a small CPU batch, else 0
        (the caller's setting)."""
        return 1 if self.device.type == "cpu" and rows < self.small_batch else 0

    def policy(self, obs: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Action probabilities (B, 108) (zero on illegal actions) and values (B,)."""
        x, m = self._tensors(decode(obs))
        with torch_threads(self.threads_for(x.shape[0])), torch.inference_mode():
            logits, value = self.model(x)
            probs = torch.softmax(masked_logits(logits, m), dim=-1)
        return probs.cpu().numpy(), value.cpu().numpy()

    def act(self, obs: dict[str, np.ndarray], rng: np.random.Generator | None = None) -> np.ndarray:
        view = decode(obs)  # once: the features read this view, not the raw batch again
        mask = view.mask
        if mask is None:
            raise ValueError("a torch agent needs the action mask with the observation")
        if mask.shape[0] == 0:
            return np.zeros(0, np.int64)
        empty = ~mask.any(axis=1)
        if empty.any():
            row = int(np.flatnonzero(empty)[0])
            raise ValueError(f"game {row} has no legal action (all-zero action mask)")
        x, m = self._tensors(view)
        gen = None
        if not self.greedy:
            source = rng if rng is not None else self._rng
            gen = torch.Generator(device=self.device)
            gen.manual_seed(int(source.integers(0, 2**63 - 1)))
        with torch_threads(self.threads_for(mask.shape[0])), torch.inference_mode():
            logits, _ = self.model(x)
            action, _ = sample_masked(logits, m, gen, greedy=self.greedy)
        out = action.cpu().numpy().astype(np.int64)
        if not mask[np.arange(out.size), out].all():  # pragma: no cover - guarded by masking
            raise RuntimeError("TorchAgent produced an illegal action")
        return out

    def _tensors(self, view: ObsView) -> tuple[torch.Tensor, torch.Tensor]:
        """The network's input and the action mask as tensors, from one decoded view."""
        if view.mask is None:
            raise ValueError("a torch agent needs the action mask with the observation")
        x = torch.from_numpy(self.model.featurize(view)).to(self.device)
        mask = view.mask
        if not mask.flags.writeable:  # the engine's mask is read-only; torch wants to own one
            mask = mask.copy()
        m = torch.as_tensor(mask, device=self.device)
        return x, m


# --------------------------------------------------------------------------- files


def _file_mode() -> int:
    """0666 less the process's umask: the mode ``open`` gives a new file."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


_FILE_MODE = _file_mode()


def atomic_save(obj: Any, path: str | Path) -> Path:
    """``torch.save`` to ``path`` through a temporary file and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _FILE_MODE)  # mkstemp makes 0600; outputs are readable like any other
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _leaves(obj: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Every leaf of a checkpoint's nested dicts and lists, with its path."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _leaves(value, f"{path}/{key}")
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            yield from _leaves(value, f"{path}/{i}")
    else:
        yield path, obj


def _tensor_digest(t: torch.Tensor) -> str:
    t = t.detach().cpu().contiguous()
    h = hashlib.blake2b(f"{t.dtype}{tuple(t.shape)}".encode(), digest_size=16)
    if t.numel():
        h.update(t.reshape(-1).view(torch.uint8).numpy())
    return h.hexdigest()


def checksums(ckpt: dict[str, Any]) -> dict[str, str]:
    """A digest per tensor (keyed by its path, e.g. ``model/trunk.0.weight``) and one,
    under ``"values"``, of every other value (paths, types and reprs)."""
    out: dict[str, str] = {}
    rest = hashlib.blake2b(digest_size=16)
    for path, value in _leaves({k: v for k, v in ckpt.items() if k != "checksums"}, ""):
        if isinstance(value, torch.Tensor):
            out[path] = _tensor_digest(value)
        else:
            rest.update(f"{path}={type(value).__name__}:{value!r}\n".encode())
    out["values"] = rest.hexdigest()
    return out


def verify_checksums(ckpt: dict[str, Any], path: str | Path) -> None:
    """Raise :class:`CheckpointError` naming ``path`` and the first corrupted entry."""
    stored = ckpt.get("checksums")
    if not isinstance(stored, dict):
        raise CheckpointError(f"{path}: checkpoint version {ckpt.get('version')} lacks its "
                              "checksums table (the file is damaged)")
    actual = checksums(ckpt)
    for key in sorted(set(stored) | set(actual)):
        if key not in actual:
            raise CheckpointError(f"{path}: tensor {key!r} listed in the checksums is missing "
                                  "(the file is damaged)")
        if stored.get(key) != actual[key]:
            what = "the non-tensor values" if key == "values" else f"tensor {key!r}"
            raise CheckpointError(f"{path}: checksum mismatch in {what} (the file is "
                                  "corrupted; use an earlier checkpoint)")


def make_checkpoint(
    model: PolicyValueNet,
    config: dict | None = None,
    meta: dict | None = None,
    trainer: dict | None = None,
) -> dict[str, Any]:
    ckpt: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "obs_dim": model.obs_dim,
        "num_actions": model.num_actions,
        "arch": model.arch(),
        "model": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
        "config": config or {},
        "meta": meta or {},
    }
    if trainer is not None:
        ckpt["trainer"] = trainer
    ckpt["checksums"] = checksums(ckpt)
    return ckpt


def save_agent(path: str | Path, model: PolicyValueNet, config: dict | None = None,
               meta: dict | None = None) -> Path:
    """A model-only checkpoint (what ``make_agent("ckpt:PATH")`` loads)."""
    return atomic_save(make_checkpoint(model, config, meta), path)


def check_archive(path: Path) -> None:
    """Refuse, from the zip directory alone, an archive that would unpack to more than the
    file holds (``torch.save`` stores its entries uncompressed) or whose ``data.pkl`` is
    beyond :data:`MAX_PICKLE_BYTES`."""
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise CheckpointError(f"{path}: not a readable hgin checkpoint (not the zip archive "
                              f"torch.save writes: {str(exc)[:200]})") from None
    size = path.stat().st_size
    declared = sum(e.file_size for e in entries)
    if declared > size:
        raise CheckpointError(f"{path}: its archive declares {declared:,} bytes unpacked in "
                              f"a file of {size:,} (torch.save stores its entries "
                              "uncompressed); refusing to unpack it")
    pickles = [e for e in entries if e.filename.rpartition("/")[2] == "data.pkl"]
    if len(pickles) != 1:
        raise CheckpointError(f"{path}: not a readable hgin checkpoint (its archive holds "
                              f"{len(pickles)} data.pkl entries, torch.save writes one)")
    if pickles[0].file_size > MAX_PICKLE_BYTES:
        raise CheckpointError(f"{path}: its values take {pickles[0].file_size:,} bytes, "
                              f"beyond the {MAX_PICKLE_BYTES:,} a checkpoint may use")


def _torch_load(path: Path, map_location: str | torch.device) -> Any:
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # any failure to unpickle means "not ours"
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CheckpointError(
            f"{path}: not a readable hgin checkpoint (torch.load with weights_only=True "
            f"failed: {type(exc).__name__}: {msg[:300]})"
        ) from exc


def _key(key: object) -> str:
    text = str(key) if isinstance(key, str | int) else type(key).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _check_values(ckpt: dict[str, Any], path: Path) -> None:
    """The declared values (tensors on ``meta``, no data): bounded nesting and count,
    tables where tables belong, tensors only in :data:`TENSOR_TABLES`, and no more tensor
    bytes than the file holds.  Iterative, so no nesting depth can overflow the stack."""
    for key in ("arch", "model", "config", "meta", "trainer"):
        if key in ckpt and not isinstance(ckpt[key], dict):
            raise CheckpointError(f"{path}: its {key!r} entry is a "
                                  f"{type(ckpt[key]).__name__}, not a table")
    stack: list[tuple[Any, str, int]] = [(ckpt, "", 0)]
    count = 0
    storages: dict[int, int] = {}
    while stack:
        value, where, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise CheckpointError(f"{path}: holds more than {MAX_VALUES:,} values; no hgin "
                                  "checkpoint has that many")
        if depth > MAX_DEPTH:
            raise CheckpointError(f"{path}: its values are nested more than {MAX_DEPTH} "
                                  f"deep (at {where[:120]}); no hgin checkpoint is")
        if isinstance(value, dict):
            stack.extend((v, f"{where}/{_key(k)}", depth + 1) for k, v in value.items())
        elif isinstance(value, list | tuple):
            stack.extend((v, f"{where}/{i}", depth + 1) for i, v in enumerate(value))
        elif isinstance(value, torch.Tensor):
            if where.split("/")[1] not in TENSOR_TABLES:
                raise CheckpointError(f"{path}: holds a tensor at {where[:120]}, outside "
                                      f"the {' and '.join(TENSOR_TABLES)} tables")
            storage = value.untyped_storage()  # views of one storage count it once
            key = getattr(storage, "_checkpoint_offset", None)  # on meta: its record
            storages[storage.data_ptr() or id(storage) if key is None else key] = \
                storage.nbytes()
    size = path.stat().st_size
    if sum(storages.values()) > size:
        raise CheckpointError(f"{path}: its tensors declare {sum(storages.values()):,} bytes "
                              f"in a file of {size:,}")


def _check_model(ckpt: dict[str, Any], path: Path) -> None:
    """``model`` holds exactly the tensors ``arch`` makes (names, shapes and types), checked
    before any of the file's data is read.  The network is built for real (``from_arch``
    bounds its sizes first): on the ``meta`` device the first build takes seconds of
    imports, and this one is no larger than the network the file is loaded for.  Its
    initial weights draw from a fork of torch's generator, so loading draws nothing."""
    try:
        with torch.random.fork_rng(devices=[]):
            want = PolicyValueNet.from_arch(ckpt["arch"]).state_dict()
    except (TypeError, ValueError, RuntimeError, KeyError) as exc:
        raise CheckpointError(
            f"{path}: the network does not match its architecture: {exc}") from exc
    got = ckpt["model"]
    missing = [k for k in want if k not in got]
    extra = [_key(k) for k in got if k not in want]
    wrong = [k for k in want if k in got and (
        not isinstance(got[k], torch.Tensor) or got[k].shape != want[k].shape
        or got[k].dtype != want[k].dtype)]
    for what, keys in (("missing", missing), ("unexpected", extra), ("wrong shape or type",
                                                                       wrong)):
        if keys:
            shown = ", ".join(keys[:5]) + (", ..." if len(keys) > 5 else "")
            raise CheckpointError(f"{path}: the network does not match its architecture: "
                                  f"{what} tensor(s) {shown}")


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Read and check a checkpoint; raise :class:`CheckpointError` saying what is wrong.

    What the file declares (sizes, values, the network's tensors) is checked before any
    tensor's data is read: see the module's docstring."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    check_archive(path)
    ckpt = _torch_load(path, "meta")
    _check_header(ckpt, path)
    _check_values(ckpt, path)
    _check_model(ckpt, path)
    ckpt = _torch_load(path, map_location)
    _check_header(ckpt, path)  # the same file, read again: it may have changed meanwhile
    _check_values(ckpt, path)
    version = ckpt["version"]
    if version >= CHECKSUM_VERSION:
        verify_checksums(ckpt, path)
    return ckpt


def _check_header(ckpt: Any, path: Path) -> None:
    """The format tag, the version and the engine's dimensions; ``arch`` and ``model``."""
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        tag = ckpt.get("format") if isinstance(ckpt, dict) else type(ckpt).__name__
        raise CheckpointError(
            f"{path}: not a hgin agent checkpoint (format tag {tag!r}, expected {FORMAT!r})"
        )
    version = ckpt.get("version")
    if not isinstance(version, int) or version < 1 or version > VERSION:
        raise CheckpointError(
            f"{path}: checkpoint format version {version!r} is not supported "
            f"(this hgin reads versions 1..{VERSION})"
        )
    for key, want in (("obs_dim", OBS_DIM), ("num_actions", NUM_ACTIONS)):
        if ckpt.get(key) != want:
            raise CheckpointError(
                f"{path}: checkpoint has {key}={ckpt.get(key)!r} but this engine uses {want}; "
                "it was trained for a different observation/action layout"
            )
    for key in ("arch", "model"):
        if not isinstance(ckpt.get(key), dict):
            raise CheckpointError(f"{path}: checkpoint lacks its {key!r} table")


def model_from_checkpoint(ckpt: dict[str, Any], path: str | Path = "checkpoint") -> PolicyValueNet:
    try:
        model = PolicyValueNet.from_arch(ckpt["arch"])
        model.load_state_dict(ckpt["model"])
    except (TypeError, ValueError, RuntimeError, KeyError) as exc:
        raise CheckpointError(
            f"{path}: the network does not match its architecture: {exc}") from exc
    return model


def load_torch_agent(
    path: str | Path, device: str | torch.device = "cpu", greedy: bool = True,
    name: str | None = None,
) -> TorchAgent:
    """A :class:`TorchAgent` from a checkpoint file (model-only or a full training one)."""
    ckpt = load_checkpoint(path, map_location=device)
    agent = TorchAgent(model_from_checkpoint(ckpt, path), greedy=greedy, device=device,
                       name=name or f"ckpt:{path}")
    agent.meta = dict(ckpt.get("meta", {}))
    return agent


# --------------------------------------------------------------------------- numpy <-> tensors


def pack_array(arr: np.ndarray) -> dict[str, Any]:
    """A numpy array as a weights-only-safe value (uint64 travels as int64 bits)."""
    arr = np.ascontiguousarray(arr)
    if arr.dtype == np.uint64:
        data = torch.from_numpy(arr.view(np.int64).copy())
    else:
        data = torch.from_numpy(arr.copy())
    return {"dtype": arr.dtype.str, "data": data}


def unpack_array(packed: dict[str, Any]) -> np.ndarray:
    dtype = np.dtype(packed["dtype"])
    data = packed["data"].cpu().numpy()
    return data.view(np.uint64) if dtype == np.uint64 else data.astype(dtype, copy=False)


def read_network_file(path: Path, kind: str, features: int | tuple[int, ...], what: str,
                      trainer: str, max_hidden: int = 4096) -> dict[str, Any]:
    """The table of a small network file search reads (a belief, a hand value): a user's
    input, so its archive is checked before unpacking (:func:`check_archive`), it is read
    with ``weights_only=True`` (never unpickled), its ``kind`` must match, its
    ``features`` be ``features`` (or one of them) and its width ``hidden`` be bounded;
    otherwise a one-line ``ValueError`` naming ``what`` it should be
    (``FileNotFoundError`` saying which ``trainer`` writes one)."""
    if not path.is_file():
        raise FileNotFoundError(f"{what} {path} not found (train one with python {trainer})")
    try:
        check_archive(path)
        data = torch.load(str(path), map_location="cpu", weights_only=True)
    except CheckpointError as exc:
        raise ValueError(f"{path} is not a {what}: {exc}") from None
    except Exception as exc:  # any failure to read it means "not ours"
        raise ValueError(f"{path} is not a {what} (torch.load failed: "
                         f"{type(exc).__name__}: {str(exc)[:200]})") from None
    widths = features if isinstance(features, tuple) else (features,)
    if not isinstance(data, dict) or data.get("kind") != kind \
            or isinstance(data.get("features"), bool) or data.get("features") not in widths:
        raise ValueError(f"{path} is not a {what} for these features")
    hidden = data.get("hidden")
    if isinstance(hidden, bool) or not isinstance(hidden, int) or not 1 <= hidden <= max_hidden:
        raise ValueError(f"{path}: a {what}'s width must be an integer in 1..{max_hidden}, "
                         f"got {hidden!r}")
    return data


__all__ = ["FORMAT", "PRETRAINED_PATH", "VERSION", "CheckpointError", "TorchAgent",
           "atomic_save", "checksums", "load_checkpoint", "load_torch_agent", "make_checkpoint",
           "model_from_checkpoint", "pack_array", "read_network_file", "save_agent",
           "torch_threads", "unpack_array", "verify_checksums"]
