"""Checkpoints SaFE can resume from (docs/user-guide.md, "Checkpoints SaFE can resume from"): a
directory of its own inside SAFE_CKPT_DIR, complete once its marker file (COMPLETE) is there,
written last and labelled "job=<SLURM_JOB_ID> attempt=<SAFE_ATTEMPT>" so that SaFE can fence off
the checkpoints of an attempt it has superseded (common/checkpoint_fence.hpp)."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from typing import Callable, Optional

from .environment import SafeEnvironment, SafeSlurmError, environment

DEFAULT_MARKER = "COMPLETE"  # the cluster's checkpoint.complete_marker unless its admin changed it


def checkpoint_name(step: int, attempt: int) -> str:
    """The attempt is in the name: a superseded attempt still running on a cut-off node must not
    write into the directory of the current attempt's checkpoint of the same step."""
    return f"step-{step}-attempt-{attempt}"


def label_text(job_id: str, attempt: int) -> str:
    return f"job={job_id} attempt={attempt}\n"


def _distributed():
    """torch.distributed when the trainer has initialised it (torch is never imported here)."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist
    return None


def _fsync(path: str, directory: bool) -> None:
    fd = os.open(path, (os.O_RDONLY | os.O_DIRECTORY) if directory else os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(top: str) -> None:
    """Every regular file and directory under `top`, deepest first; links are not followed."""
    for root, dirs, files in os.walk(top, topdown=False):
        for name in files:
            path = os.path.join(root, name)
            if stat.S_ISREG(os.lstat(path).st_mode):
                _fsync(path, directory=False)
        _fsync(root, directory=True)


def _write_checkpoint(path: str, write_fn: Callable[[str], None], marker: str, label: str) -> None:
    marker_path = os.path.join(path, marker)
    os.makedirs(path, exist_ok=True)
    if os.path.isfile(marker_path) and not os.path.islink(marker_path):
        return  # this attempt completed this checkpoint already (a periodic save, then the signal's)
    write_fn(path)
    _fsync_tree(path)
    # The marker last, whole or not at all: an empty marker would be a checkpoint without a label.
    partial = os.path.join(path, "." + marker + ".partial")
    with open(partial, "w", encoding="ascii") as f:
        f.write(label)
        f.flush()
        os.fsync(f.fileno())
    os.replace(partial, marker_path)
    _fsync(path, directory=True)
    _fsync(os.path.dirname(path), directory=True)


def save(step: int, write_fn: Callable[[str], None], *, env: Optional[SafeEnvironment] = None,
         marker: str = DEFAULT_MARKER) -> str:
    """Writes checkpoint `step` and returns its directory. `write_fn(directory)` writes the
    trainer's files into it (torch.save(..., os.path.join(directory, "model.pt")), ...); then
    every file is flushed to disk and the labelled marker written last. Rank 0 writes (of
    torch.distributed when initialised, else SLURM_PROCID); with torch.distributed every rank
    waits at a barrier until the checkpoint is complete, so none exits on the checkpoint signal
    before it is."""
    env = env or environment()
    if not env.ckpt_dir:
        raise SafeSlurmError("SAFE_CKPT_DIR is empty: submit the job with --safe-ckpt-dir=DIR to checkpoint")
    if step < 0:
        raise SafeSlurmError(f"checkpoint step {step}: steps count from 0")
    attempt = max(env.attempt, 1)
    path = os.path.join(env.ckpt_dir, checkpoint_name(step, attempt))
    dist = _distributed()
    rank = dist.get_rank() if dist else env.rank
    if rank == 0:
        _write_checkpoint(path, write_fn, marker, label_text(env.job_id, attempt))
    if dist:
        dist.barrier()
    return path


def resume(env: Optional[SafeEnvironment] = None) -> Optional[str]:
    """The checkpoint to load, or None to start afresh: SAFE_RESUME_FROM, SaFE's choice when the
    task started (the newest complete checkpoint the job's user owns that no fence excludes)."""
    env = env or environment()
    return env.resume_from or None


def heartbeat(step: Optional[int] = None, env: Optional[SafeEnvironment] = None) -> bool:
    """Shows progress to --safe-hang-timeout: rewrites SAFE_HEARTBEAT_FILE (with the step when
    given). False when the job has no heartbeat file (no checkpoint directory)."""
    env = env or environment()
    if not env.heartbeat_file:
        return False
    # A new file renamed over the old, never the old truncated: whoever reads it (a test, a
    # watcher of the step) must not catch it empty between the truncation and the write.
    fd, partial = tempfile.mkstemp(dir=os.path.dirname(env.heartbeat_file) or ".",
                                   prefix=os.path.basename(env.heartbeat_file) + ".", suffix=".partial")
    try:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write("" if step is None else f"{step}\n")
        os.replace(partial, env.heartbeat_file)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    return True
