#!/usr/bin/python3
"""python_trainer.py: safe-trainer's stand-in trainer written the way docs/user-guide.md tells an
ML engineer to, through the safe_slurm helper (python/): it resumes from what resume() returns,
checkpoints every K steps with save(), touches the heartbeat, and on the checkpoint signal saves
at the next step boundary and exits for SaFE to requeue it. It prints safe-trainer's lines
("step N attempt A", "checkpoint step N (on signal)", "resumed from step N (DIR) attempt A",
"done N steps attempt A") so the failover tests read both alike. Rank 0 ($SLURM_PROCID) writes
and prints; the others keep time. No torch: the steps are a clock."""

import argparse
import os
import sys
import time

import safe_slurm


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rate", type=float, default=10, help="steps a second")
    parser.add_argument("--ckpt-every", type=int, default=10)
    args = parser.parse_args()

    env = safe_slurm.environment()
    request = safe_slurm.install_checkpoint_handler(env)
    writer = env.rank == 0
    step = 0
    start = safe_slurm.resume(env)
    if start:
        with open(os.path.join(start, "state"), encoding="ascii") as f:
            step = int(f.read())
        if writer:
            print(f"resumed from step {step} ({start}) attempt {env.attempt}", flush=True)
    elif writer:
        print(f"starting attempt {env.attempt}", flush=True)

    def write_state(directory: str) -> None:
        with open(os.path.join(directory, "state"), "w", encoding="ascii") as f:
            f.write(f"{step}\n")

    period = 1.0 / args.rate
    next_at = time.monotonic()
    while step < args.steps:
        next_at += period
        # Stopped or starved of CPU: go on at the rate from now, not race through missed steps.
        next_at = max(next_at, time.monotonic() - period)
        time.sleep(max(0.0, next_at - time.monotonic()))
        step += 1
        on_signal = request.requested
        if writer:
            print(f"step {step} attempt {env.attempt}")
            safe_slurm.heartbeat(step, env)
            if env.ckpt_dir and (on_signal or step % args.ckpt_every == 0):
                safe_slurm.save(step, write_state, env=env)
                print(f"checkpoint step {step}" + (" (on signal)" if on_signal else ""))
            sys.stdout.flush()
        if on_signal:
            if writer:
                print(f"exiting at step {step} attempt {env.attempt} for SaFE to requeue", flush=True)
            return 0
    if writer:
        print(f"done {args.steps} steps attempt {env.attempt}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
