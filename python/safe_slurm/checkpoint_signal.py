"""The checkpoint signal: SaFE sends it (SAFE_CKPT_SIGNAL, e.g. USR1@120) to every task when one of
the job's nodes is failing, then requeues the job once a new checkpoint is complete or the lead
time is over. The handler only sets a flag: the trainer checkpoints at its next step boundary
(never inside a half-done optimizer step) and exits, and SaFE requeues it."""

from __future__ import annotations

import signal
import threading
from typing import Optional

from .environment import SafeEnvironment, SafeSlurmError, environment

# The signals SaFE may send (common/signal_name.cpp): never KILL or STOP, which no job can act on.
_CHECKPOINT_SIGNALS = ("HUP", "INT", "QUIT", "ABRT", "USR1", "USR2", "ALRM", "TERM", "CONT", "URG", "WINCH")


def signal_number(name: str) -> int:
    """The number of a signal as SAFE_CKPT_SIGNAL names it: "USR1", "SIGUSR1" or "10"."""
    bare = name[3:] if name.startswith("SIG") else name
    if bare.isdigit():
        number = int(bare)
        if any(getattr(signal, "SIG" + s) == number for s in _CHECKPOINT_SIGNALS):
            return number
    elif bare in _CHECKPOINT_SIGNALS:
        return int(getattr(signal, "SIG" + bare))
    raise SafeSlurmError(f"SAFE_CKPT_SIGNAL names {name!r}, not a signal a job can be sent to checkpoint")


class CheckpointRequest:
    """Set when the checkpoint signal arrived; `requested` stays true until `clear()`."""

    def __init__(self, signum: Optional[int], lead_s: Optional[int]):
        self.signum = signum  # None: the job has no checkpoint signal
        self.lead_s = lead_s
        self._event = threading.Event()

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def clear(self) -> None:
        self._event.clear()

    def _on_signal(self, signum, frame) -> None:
        self._event.set()


def install_checkpoint_handler(env: Optional[SafeEnvironment] = None) -> CheckpointRequest:
    """Handles SAFE_CKPT_SIGNAL's signal by setting the returned request's flag. Call it from the
    main thread (Python runs signal handlers there only). Without a checkpoint signal (outside
    SaFE) the request is never set."""
    env = env or environment()
    if not env.ckpt_signal:
        return CheckpointRequest(None, None)
    request = CheckpointRequest(signal_number(env.ckpt_signal), env.ckpt_lead_s)
    signal.signal(request.signum, request._on_signal)
    return request
