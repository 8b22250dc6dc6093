#!/usr/bin/python3
"""torch_ddp_trainer.py: a real PyTorch data-parallel trainer, written the way docs/user-guide.md
tells an ML engineer to, for the goodput tests (tests/integration/failover_torch_ddp.sh).

One task per node (srun), DistributedDataParallel over gloo on CPU, rendezvous from Slurm's
variables (rank SLURM_PROCID, world SLURM_NTASKS; MASTER_ADDR from the job script, the port from
the job id and attempt unless MASTER_PORT is set). Deterministic: fixed seeds, a batch that is a
function of the step and rank alone, one thread, deterministic algorithms only, so that a run
that is interrupted and resumed ends with exactly the parameters of one that is not.

Checkpoints through the safe_slurm helper every --ckpt-every steps and on the checkpoint signal:
model, optimizer and every rank's RNG state (gathered to rank 0, which writes). The ranks agree on
the signal with an all-reduce, so they all stop at the same step boundary. Prints safe-trainer's
lines ("step N attempt A", "checkpoint step N (on signal)", "resumed from step N (DIR) attempt A",
"done N steps attempt A") from rank 0, and at the end saves the final model and optimizer state
to --final (compared by tests/trainer/torch_compare.py)."""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import safe_slurm

FEATURES = 16


def model_for(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    # Dropout draws from the RNG each step: a resumed run matches only if RNG state is restored.
    return nn.Sequential(nn.Linear(FEATURES, 64), nn.Tanh(), nn.Dropout(0.1), nn.Linear(64, 1))


def batch(seed: int, step: int, rank: int, size: int):
    """The data a rank trains on at a step: a function of (seed, step, rank) only."""
    gen = torch.Generator().manual_seed(seed * 1_000_003 + step * 1_009 + rank)
    x = torch.randn(size, FEATURES, generator=gen)
    return x, torch.sin(x.sum(dim=1, keepdim=True))


def rendezvous(env: safe_slurm.SafeEnvironment) -> None:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    # A port of the attempt's own (the previous attempt's listener may still be closing), above
    # the kernel's ephemeral ports and the ports the test clusters pick (20000 up to them).
    os.environ.setdefault("MASTER_PORT", str(61000 + (int(env.job_id or 0) % 500) * 8 + env.attempt % 8))
    dist.init_process_group("gloo", rank=env.rank, world_size=env.tasks)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rate", type=float, default=20, help="steps a second at most")
    parser.add_argument("--ckpt-every", type=int, default=20)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--final", required=True, help="where rank 0 saves the final state")
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    env = safe_slurm.environment()
    request = safe_slurm.install_checkpoint_handler(env)
    rendezvous(env)
    rank, world = dist.get_rank(), dist.get_world_size()
    writer = rank == 0

    model = DistributedDataParallel(model_for(args.seed))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    torch.manual_seed(args.seed + 1 + rank)  # each rank's own dropout stream
    step = 0
    start = safe_slurm.resume(env)
    if start:
        state = torch.load(os.path.join(start, "state.pt"))
        model.module.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["rng"][rank])
        step = state["step"]
        if writer:
            print(f"resumed from step {step} ({start}) attempt {env.attempt}", flush=True)
    elif writer:
        print(f"starting attempt {env.attempt} with {world} ranks", flush=True)

    def save(on_signal: bool) -> None:
        rng = [None] * world
        dist.all_gather_object(rng, torch.get_rng_state())
        state = {"step": step, "model": model.module.state_dict(),
                 "optimizer": optimizer.state_dict(), "rng": rng}
        safe_slurm.save(step, lambda d: torch.save(state, os.path.join(d, "state.pt")), env=env)
        if writer:
            print(f"checkpoint step {step}" + (" (on signal)" if on_signal else ""), flush=True)

    loss_fn = nn.MSELoss()
    period = 1.0 / args.rate
    next_at = time.monotonic()
    while step < args.steps:
        next_at = max(next_at + period, time.monotonic() - period)
        time.sleep(max(0.0, next_at - time.monotonic()))
        x, y = batch(args.seed, step, rank, args.batch)
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()  # DDP averages the gradients over the ranks
        optimizer.step()
        step += 1
        # Stop together: one rank's signal is every rank's.
        stop = torch.tensor([1 if request.requested else 0])
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if writer:
            print(f"step {step} attempt {env.attempt}", flush=True)
            safe_slurm.heartbeat(step, env)
        if env.ckpt_dir and (stop.item() or step % args.ckpt_every == 0):
            save(on_signal=bool(stop.item()))
        if stop.item():
            if writer:
                print(f"exiting at step {step} attempt {env.attempt} for SaFE to requeue", flush=True)
            dist.destroy_process_group()
            return 0
    if writer:
        torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict()}, args.final)
        print(f"done {args.steps} steps attempt {env.attempt}", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
