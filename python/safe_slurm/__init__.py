"""SaFE for Slurm's helper for Python trainers (stdlib only; torch optional): the SAFE_*
environment, the checkpoint signal, checkpoints SaFE can resume from, and the heartbeat.

    import safe_slurm
    request = safe_slurm.install_checkpoint_handler()
    start = safe_slurm.resume()            # a directory to load, or None
    for step in range(first, steps):
        train_one_step()
        safe_slurm.heartbeat(step)
        if step % every == 0 or request.requested:
            safe_slurm.save(step, lambda d: torch.save(state, os.path.join(d, "state.pt")))
            if request.requested:
                sys.exit(0)                # SaFE requeues the job

docs/user-guide.md, "A Python trainer", has the whole of it."""

from .checkpoint_signal import CheckpointRequest, install_checkpoint_handler, signal_number
from .checkpoints import DEFAULT_MARKER, checkpoint_name, heartbeat, label_text, resume, save
from .environment import SafeEnvironment, SafeSlurmError, environment

__all__ = [
    "CheckpointRequest", "DEFAULT_MARKER", "SafeEnvironment", "SafeSlurmError", "checkpoint_name", "environment",
    "heartbeat", "install_checkpoint_handler", "label_text", "resume", "save", "signal_number",
]
