//===- Checkpoint.h - checkpoint directories of lcc-run --------*- C++ -*-===//
//
// A checkpoint directory holds checkpoints and `latest`, the name of the
// newest one. A checkpoint is either one file, step-<N>.safetensors
// (parameters and optimizer state under their names, the step and data seed
// in the metadata; what one process writes), or a step directory,
// step-<N>.d/rank-<r>-of-<W>.safetensors (what a distributed run writes:
// every rank its pieces of partitioned tensors, runtime/support/Sharding.h). Files
// are written atomically (runtime/AtomicFile) and `latest` only after the
// checkpoint it names is complete, so a crash or kill -9 at any moment
// leaves `latest` naming a complete checkpoint. Loading gives whole tensors
// whichever layout wrote them, so a checkpoint resumes at any world size.
// Every file carries a CRC-32C of each tensor's bytes in its metadata
// ("lcc.crc32c.<tensor>": 8 hex digits) and one of the other metadata
// ("lcc.crc32c"), checked on load: a flipped bit is an error naming the
// tensor (or the metadata), never a silently different run.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_CHECKPOINT_H
#define LCC_RUNTIME_CHECKPOINT_H

#include "runtime/support/Safetensors.h"

#include <string>

namespace lcc {

/// "step-00000050.safetensors".
std::string checkpointFileName(int64_t step);
/// "step-00000050.d" and, inside it, "rank-00001-of-00004.safetensors".
std::string checkpointStepDirName(int64_t step);
std::string checkpointRankFileName(int rank, int world);

/// Writes `file` as DIR/step-<step>.safetensors, then DIR/latest; keeps the
/// newest `keep` checkpoints. Creates DIR if needed.
Status saveCheckpoint(const std::string &dir, int64_t step, SafetensorsFile file, int64_t keep);

/// Adds the CRC-32C of each tensor of `file` to its metadata.
void addChecksums(SafetensorsFile &file);

/// Checks `file`'s tensors (read from `path`) against their CRC-32Cs: an
/// error naming the first that differs. `checked` is false for a file
/// without them (an lcc before checksums wrote it).
Status verifyChecksums(const SafetensorsFile &file, const std::string &path, bool &checked);

/// Makes `name` (a checkpoint in DIR, complete) the one DIR/latest names,
/// then removes all but the newest `keep` checkpoints of either layout.
Status commitCheckpoint(const std::string &dir, const std::string &name, int64_t keep);

/// The name of the checkpoint DIR/latest names (a file or step directory
/// in DIR); an error when there is none or it is not a checkpoint's name.
Status latestCheckpoint(const std::string &dir, std::string &name);

/// Removes a step directory and the files in it.
void removeCheckpointDir(const std::string &dir);

/// Reads a checkpoint (a file, a step directory, or a checkpoint directory's
/// latest) as whole tensors (pieces of partitioned tensors put together).
/// `used` receives the checkpoint read. A step directory must hold exactly
/// the W rank files its names say. Every file's checksums are verified;
/// `unchecked` (if given) is set when some file had none.
Status loadCheckpoint(const std::string &path, SafetensorsFile &file, std::string &used,
                      bool *unchecked = nullptr);

} // namespace lcc

#endif
