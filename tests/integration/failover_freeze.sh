#!/usr/bin/env bash
# failover_freeze.sh: failover_partition.sh with the node's slurmd stopped (SIGSTOP: a hung
# slurmd, its jobs running on) instead of its link cut, after a stop shorter than safed's probe
# window that must down nothing.
SAFE_CUT_FAULT=freeze exec bash "$(dirname "${BASH_SOURCE[0]}")/failover_partition.sh" "$@"
