//===- Checkpoint.h - checkpoint directories of lcc-run --------*- C++ -*-===//
//
// A checkpoint directory holds step-<N>.safetensors files (parameters and
// optimizer state under their names, the step and data seed in the metadata)
// and `latest`, the name of the newest one. Each file is written atomically
// (runtime/AtomicFile) and `latest` only after the checkpoint it names, so a
// crash or kill -9 at any moment leaves `latest` naming a complete file.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_CHECKPOINT_H
#define LCC_RUNTIME_CHECKPOINT_H

#include "runtime/Safetensors.h"

#include <string>

namespace lcc {

/// "step-00000050.safetensors".
std::string checkpointFileName(int64_t step);

/// Writes `file` as DIR/step-<step>.safetensors, then DIR/latest; keeps the
/// newest `keep` checkpoints. Creates DIR if needed.
bool saveCheckpoint(const std::string &dir, int64_t step, const SafetensorsFile &file,
                    int64_t keep, std::string &error);

/// Reads a checkpoint file, or the one DIR/latest names when `path` is a
/// directory. `used` receives the file read.
bool loadCheckpoint(const std::string &path, SafetensorsFile &file, std::string &used,
                    std::string &error);

} // namespace lcc

#endif
