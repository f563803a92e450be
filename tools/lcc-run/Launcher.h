//===- Launcher.h - lcc-run -n N: local ranks as child processes -*- C++ -*-===//
//
// `lcc-run -n N train.bin ...` starts N copies of itself on this machine,
// each with the environment torchrun would give it (RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT=a free port), so a rank
// started by lcc-run and one started by torchrun, SLURM or mpirun run the
// same code path. Rank 0 keeps the terminal; the other ranks' output goes
// to DIR/rank-<r>.log with --log-dir, else only their errors are shown.
// When a rank fails, the others get the configured timeout to notice and
// exit on their own (their collectives fail with a clear error), then are
// killed: the launcher never hangs on a dead job.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TOOLS_LCC_RUN_LAUNCHER_H
#define LCC_TOOLS_LCC_RUN_LAUNCHER_H

#include <string>
#include <vector>

namespace lcc::run {

/// Runs `args` (argv of one rank, args[0] ignored: this executable is used)
/// as `ranks` local processes and returns the job's exit code: 0 when every
/// rank succeeded, else the first failing rank's code (128 + signal for a
/// rank killed by a signal).
/// `preemptSignals` (lcc-run --preempt-signals) are passed on to every rank,
/// which then stop at a step they agree on with a checkpoint: the job
/// succeeds when they all exit 0. SIGINT and SIGTERM otherwise are passed on
/// too, and ranks still running 10 s later are killed.
int launchLocalRanks(int ranks, const std::vector<std::string> &args, const std::string &logDir,
                     double timeoutSeconds, const std::vector<int> &preemptSignals);

} // namespace lcc::run

#endif
