"""What SaFE tells a job's tasks: the SAFE_* variables (docs/user-guide.md, "Inside the job"),
with Slurm's own for the job id, the rank and the node counts."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping, Optional


class SafeSlurmError(Exception):
    """A variable SaFE or Slurm set that the helper cannot use; the message says what to do."""


@dataclass(frozen=True)
class SafeEnvironment:
    job_id: str                # SLURM_JOB_ID ("" outside Slurm)
    attempt: int               # SAFE_ATTEMPT: 1 on the first run, +1 for each requeue
    max_retries: int           # SAFE_MAX_RETRIES
    workspace: str             # SAFE_WORKSPACE ("" without one)
    ckpt_dir: str              # SAFE_CKPT_DIR ("" without one)
    resume_from: str           # SAFE_RESUME_FROM: the checkpoint SaFE chose ("" none)
    ckpt_signal: str           # SAFE_CKPT_SIGNAL's signal, e.g. "USR1" ("" none)
    ckpt_lead_s: Optional[int]  # its lead time in seconds (None: the cluster's checkpoint.grace_s)
    heartbeat_file: str        # SAFE_HEARTBEAT_FILE ("" without a checkpoint directory)
    rank: int                  # SLURM_PROCID
    tasks: int                 # SLURM_NTASKS
    nodes: int                 # SLURM_JOB_NUM_NODES
    node_rank: int             # SLURM_NODEID

    @property
    def under_safe(self) -> bool:
        """Whether SaFE's plugin set the environment (SAFE_ATTEMPT is there)."""
        return self.attempt > 0


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name, "")
    if text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise SafeSlurmError(f"{name}={text!r} is not a whole number; was it overwritten in the job script?") from None


def environment(env: Optional[Mapping[str, str]] = None) -> SafeEnvironment:
    """The job's SaFE environment, from `env` (default: os.environ). Outside a SaFE job the
    attempt is 0 and the paths are empty."""
    env = os.environ if env is None else env
    signal_text = env.get("SAFE_CKPT_SIGNAL", "")
    name, _, lead = signal_text.partition("@")
    if lead and not lead.isdigit():
        raise SafeSlurmError(f"SAFE_CKPT_SIGNAL={signal_text!r}: the lead time after '@' must be seconds")
    return SafeEnvironment(
        job_id=env.get("SLURM_JOB_ID", ""),
        attempt=_int(env, "SAFE_ATTEMPT", 0),
        max_retries=_int(env, "SAFE_MAX_RETRIES", 0),
        workspace=env.get("SAFE_WORKSPACE", ""),
        ckpt_dir=env.get("SAFE_CKPT_DIR", ""),
        resume_from=env.get("SAFE_RESUME_FROM", ""),
        ckpt_signal=name,
        ckpt_lead_s=int(lead) if lead else None,
        heartbeat_file=env.get("SAFE_HEARTBEAT_FILE", ""),
        rank=_int(env, "SLURM_PROCID", 0),
        tasks=_int(env, "SLURM_NTASKS", 1),
        nodes=_int(env, "SLURM_JOB_NUM_NODES", 1),
        node_rank=_int(env, "SLURM_NODEID", 0),
    )
