"""The helper against the contract of docs/user-guide.md ("Inside the job"): stdlib only, no torch.
The end-to-end test (a real SaFE job, a drained node) is tests/integration/failover_python_trainer.sh."""

import os
import signal
import sys
import tempfile
import types
import unittest

import safe_slurm

JOB_ENV = {
    "SLURM_JOB_ID": "4242", "SLURM_PROCID": "0", "SLURM_NTASKS": "16", "SLURM_JOB_NUM_NODES": "2",
    "SLURM_NODEID": "1", "SAFE_ATTEMPT": "3", "SAFE_MAX_RETRIES": "5", "SAFE_WORKSPACE": "ml",
    "SAFE_CKPT_DIR": "/ck", "SAFE_RESUME_FROM": "/ck/step-1000-attempt-2", "SAFE_CKPT_SIGNAL": "USR1@120",
    "SAFE_HEARTBEAT_FILE": "/ck/.safe-heartbeat",
}


class EnvironmentTest(unittest.TestCase):
    def test_reads_what_safe_and_slurm_set(self):
        env = safe_slurm.environment(JOB_ENV)
        self.assertEqual(("4242", 3, 5, "ml"), (env.job_id, env.attempt, env.max_retries, env.workspace))
        self.assertEqual(("/ck", "/ck/step-1000-attempt-2", "/ck/.safe-heartbeat"),
                         (env.ckpt_dir, env.resume_from, env.heartbeat_file))
        self.assertEqual(("USR1", 120), (env.ckpt_signal, env.ckpt_lead_s))
        self.assertEqual((0, 16, 2, 1), (env.rank, env.tasks, env.nodes, env.node_rank))
        self.assertTrue(env.under_safe)

    def test_outside_a_safe_job_nothing_is_set(self):
        env = safe_slurm.environment({})
        self.assertFalse(env.under_safe)
        self.assertEqual(("", "", "", None), (env.ckpt_dir, env.resume_from, env.ckpt_signal, env.ckpt_lead_s))
        self.assertIsNone(safe_slurm.resume(env))

    def test_a_signal_without_a_lead_time_leaves_it_to_the_cluster(self):
        env = safe_slurm.environment({"SAFE_CKPT_SIGNAL": "TERM"})
        self.assertEqual(("TERM", None), (env.ckpt_signal, env.ckpt_lead_s))

    def test_a_broken_variable_is_an_error_that_names_it(self):
        with self.assertRaisesRegex(safe_slurm.SafeSlurmError, "SAFE_ATTEMPT='x'"):
            safe_slurm.environment({"SAFE_ATTEMPT": "x"})
        with self.assertRaisesRegex(safe_slurm.SafeSlurmError, "lead time"):
            safe_slurm.environment({"SAFE_CKPT_SIGNAL": "USR1@soon"})


class SignalTest(unittest.TestCase):
    def test_names_as_safe_writes_them(self):
        self.assertEqual(signal.SIGUSR1, safe_slurm.signal_number("USR1"))
        self.assertEqual(signal.SIGUSR2, safe_slurm.signal_number("SIGUSR2"))
        self.assertEqual(signal.SIGTERM, safe_slurm.signal_number(str(int(signal.SIGTERM))))
        for name in ("KILL", "STOP", "9", "NOPE", ""):
            with self.assertRaises(safe_slurm.SafeSlurmError, msg=name):
                safe_slurm.signal_number(name)

    def test_the_signal_sets_the_request_until_cleared(self):
        previous = signal.getsignal(signal.SIGUSR2)
        try:
            request = safe_slurm.install_checkpoint_handler(safe_slurm.environment({"SAFE_CKPT_SIGNAL": "USR2@30"}))
            self.assertEqual((signal.SIGUSR2, 30), (request.signum, request.lead_s))
            self.assertFalse(request.requested)
            os.kill(os.getpid(), signal.SIGUSR2)
            self.assertTrue(request.requested)
            request.clear()
            self.assertFalse(request.requested)
        finally:
            signal.signal(signal.SIGUSR2, previous)

    def test_without_a_checkpoint_signal_no_handler_is_installed(self):
        before = signal.getsignal(signal.SIGUSR1)
        request = safe_slurm.install_checkpoint_handler(safe_slurm.environment({}))
        self.assertIsNone(request.signum)
        self.assertIs(before, signal.getsignal(signal.SIGUSR1))


class CheckpointTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.env = safe_slurm.environment(dict(JOB_ENV, SAFE_CKPT_DIR=self.dir,
                                               SAFE_HEARTBEAT_FILE=os.path.join(self.dir, ".safe-heartbeat")))

    def tearDown(self):
        self.tmp.cleanup()

    def test_the_marker_comes_last_labelled_with_job_and_attempt(self):
        seen = []

        def write(directory):
            seen.append(os.listdir(directory))
            with open(os.path.join(directory, "model.pt"), "w") as f:
                f.write("weights")

        path = safe_slurm.save(1200, write, env=self.env)
        self.assertEqual(os.path.join(self.dir, "step-1200-attempt-3"), path)
        self.assertEqual([[]], seen, "write_fn ran once, into an empty directory without a marker")
        with open(os.path.join(path, "COMPLETE")) as f:
            self.assertEqual("job=4242 attempt=3\n", f.read())
        self.assertEqual(["COMPLETE", "model.pt"], sorted(os.listdir(path)), "no partial marker left")

    def test_a_write_that_fails_leaves_a_torn_checkpoint_safe_ignores(self):
        def write(directory):
            with open(os.path.join(directory, "model.pt"), "w") as f:
                f.write("half")
            raise OSError("disk full")

        with self.assertRaises(OSError):
            safe_slurm.save(5, write, env=self.env)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "step-5-attempt-3", "COMPLETE")))

    def test_a_checkpoint_the_attempt_completed_is_not_written_again(self):
        calls = []
        safe_slurm.save(50, calls.append, env=self.env)
        safe_slurm.save(50, calls.append, env=self.env)  # the periodic save, then the signal's at the same step
        self.assertEqual(1, len(calls))

    def test_the_marker_name_is_the_clusters(self):
        path = safe_slurm.save(7, lambda d: None, env=self.env, marker="DONE")
        self.assertTrue(os.path.isfile(os.path.join(path, "DONE")))

    def test_only_rank_0_writes(self):
        other = safe_slurm.environment(dict(JOB_ENV, SAFE_CKPT_DIR=self.dir, SLURM_PROCID="3"))
        calls = []
        path = safe_slurm.save(10, calls.append, env=other)
        self.assertEqual([], calls)
        self.assertFalse(os.path.exists(path))

    def test_with_torch_distributed_its_rank_decides_and_every_rank_waits_at_a_barrier(self):
        barriers = []
        fake = types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: True,
                                     get_rank=lambda: 0, barrier=lambda: barriers.append(1))
        other = safe_slurm.environment(dict(JOB_ENV, SAFE_CKPT_DIR=self.dir, SLURM_PROCID="3"))
        saved = sys.modules.get("torch.distributed")
        # A stand-in with the four calls of torch.distributed the helper makes: the suite does not
        # install torch (python3-torch) yet; the real DDP job is issue 19's part 2.
        sys.modules["torch.distributed"] = fake
        try:
            calls = []
            safe_slurm.save(10, calls.append, env=other)
            self.assertEqual(1, len(calls), "torch's rank 0 writes, whatever SLURM_PROCID says")
            fake.get_rank = lambda: 1
            safe_slurm.save(20, calls.append, env=other)
            self.assertEqual(1, len(calls))
            self.assertEqual(2, len(barriers))
        finally:
            if saved is None:
                del sys.modules["torch.distributed"]
            else:
                sys.modules["torch.distributed"] = saved

    def test_without_a_checkpoint_directory_save_says_how_to_get_one(self):
        with self.assertRaisesRegex(safe_slurm.SafeSlurmError, "--safe-ckpt-dir"):
            safe_slurm.save(1, lambda d: None, env=safe_slurm.environment({}))

    def test_resume_is_safes_choice(self):
        self.assertEqual("/ck/step-1000-attempt-2", safe_slurm.resume(self.env))
        self.assertIsNone(safe_slurm.resume(safe_slurm.environment(dict(JOB_ENV, SAFE_RESUME_FROM=""))))

    def test_heartbeat_rewrites_the_file(self):
        self.assertTrue(safe_slurm.heartbeat(31, self.env))
        with open(self.env.heartbeat_file) as f:
            self.assertEqual("31\n", f.read())
        self.assertFalse(safe_slurm.heartbeat(1, safe_slurm.environment({})))

    def test_heartbeat_replaces_the_file_and_never_truncates_it(self):
        # A reader holding the old file still reads the old step; a truncated-then-written file
        # would be empty to a reader in between (the integration test once caught it so).
        safe_slurm.heartbeat(31, self.env)
        with open(self.env.heartbeat_file) as old:
            safe_slurm.heartbeat(32, self.env)
            self.assertEqual("31\n", old.read())
        with open(self.env.heartbeat_file) as f:
            self.assertEqual("32\n", f.read())
        self.assertEqual([".safe-heartbeat"], os.listdir(self.dir), "no partial file is left")


if __name__ == "__main__":
    unittest.main()
