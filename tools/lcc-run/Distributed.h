//===- Distributed.h - lcc-run as one rank of a distributed job -*- C++ -*-===//
//
// A train.bin compiled with `lcc --shard=MODE --world=N` declares process
// groups in its manifest (a grid whose sizes multiply to N) and calls the
// runtime's collectives (runtime/dist/Collectives.h) from its code. Here one
// lcc-run process joins the job: it reads its rank from the environment
// (torchrun, SLURM, Open MPI conventions; lcc-run -n sets them for local
// ranks), connects to the others through MASTER_ADDR:MASTER_PORT, creates
// one communicator per group and installs them for the compiled code.
//
// Checkpoints of a distributed run are sharded: every rank writes its own
// file (its pieces of partitioned tensors; rank 0 also the whole ones) into
// DIR/step-<N>.d/, and rank 0 names that directory in DIR/latest only after
// every rank has written. Loading merges the pieces into whole tensors, so
// a checkpoint resumes at any world size or sharding mode.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TOOLS_LCC_RUN_DISTRIBUTED_H
#define LCC_TOOLS_LCC_RUN_DISTRIBUTED_H

#include "runtime/support/Json.h"
#include "runtime/support/Safetensors.h"
#include "runtime/train/Trainer.h"

#include <map>
#include <memory>
#include <string>

namespace lcc::run {

struct DistributedRun {
  int rank = 0, world = 1;
  /// This process's rank in each of the manifest's groups, and their sizes.
  std::map<std::string, int64_t> groupRanks, groupSizes;
  /// The manifest's group names in the order the compiled code indexes them.
  std::vector<std::string> groups;
  /// How long a collective may wait for the peers (--timeout, else $LCC_DIST_TIMEOUT).
  double timeoutSeconds = 300;
  bool active() const { return world > 1; }
};

/// Whether `program` has code for `world` ranks; else a one-line error (the
/// launcher checks before starting any rank).
Status checkWorld(const std::string &program, int64_t world);

/// Joins the job the environment describes (a 1-rank "job" without one) and
/// installs the manifest's groups. Errors are one line.
/// The pipeline stage world rank `rank` runs when `program` was compiled
/// with stages for `world` ranks (its place in the "pp" group), else -1.
Status pipelineStage(const std::string &program, int64_t world, int64_t rank, int64_t &stage);

Status joinJob(const json::Value &manifest, const std::string &backend, double timeoutSeconds,
               DistributedRun &out);

/// Every rank passes its `flags` (one int per question: stop after this
/// step? was its loss finite? ...) and gets each one's largest value over
/// all ranks, so all of them decide the same. A collective: every rank calls
/// it at the same point. Without a job, `flags` stay.
Status agree(const DistributedRun &run, std::vector<int32_t> &flags);

/// Whether every rank's `mine` succeeded (a collective, as agree): this
/// rank's own error, or one naming a rank that failed, so that no rank
/// waits for one that gave up.
Status agreeOk(const DistributedRun &run, Status mine);

/// The trainer's parameters (and state when `withState`) as whole tensors on
/// every rank: partitioned ones are all-gathered over their group.
Status wholeSnapshot(const DistributedRun &run, const Trainer &trainer, bool withState,
                     const std::map<std::string, std::string> &meta, SafetensorsFile &out);

/// Pipeline stages hold different parameters: every rank of a "pp" group
/// gets the tensors of every stage's `whole` (collective over the group;
/// nothing without one).
Status gatherStages(const DistributedRun &run, SafetensorsFile &whole);

/// Writes this rank's part of a checkpoint of step `step` into `dir` (see
/// above); rank 0 commits it in DIR/latest after every rank wrote, and keeps
/// the newest `keep`. When any rank cannot write (a full disk, a read-only
/// or removed directory), every rank returns an error and the previous
/// checkpoint stays `latest`.
Status saveShardedCheckpoint(const DistributedRun &run, const std::string &dir, int64_t step,
                             const Trainer &trainer, const std::map<std::string, std::string> &meta,
                             int64_t keep);

} // namespace lcc::run

#endif
