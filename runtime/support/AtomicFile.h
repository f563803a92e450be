//===- AtomicFile.h - replace a file atomically -----------------*- C++ -*-===//
//
// Checkpoints and train.bin files are read by long-running jobs (and by other
// ranks) while a new version is being written. Writing in place would let a
// reader, or a crash, see half a file; instead the bytes go to a temporary file
// beside the target, which is fsynced and then renamed over it. A reader (or a
// reboot) sees either the old file or the new one, never a mix.
//
// Part of the runtime: POSIX only, no MLIR/LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_ATOMICFILE_H
#define LCC_RUNTIME_ATOMICFILE_H

#include "runtime/support/Status.h"

#include <cstddef>
#include <string>
#include <vector>

namespace lcc {

/// A piece of a file being written; pieces are written back to back, so a
/// caller can write a large file without first concatenating it in memory.
struct FilePiece {
  const void *data;
  size_t size;
};

/// Writes the concatenation of `pieces` to `path` atomically: a temporary
/// `<path>.tmp.<random>` in the same directory (rename is only atomic within
/// one file system), created with mode 0666 less the umask, written, fsynced,
/// renamed over `path`, then the directory is fsynced so the rename itself is
/// durable. On failure the temporary is removed, `path` is untouched, and
/// the message is one line "<path>: <what failed>: <strerror>".
Status writeFileAtomically(const std::string &path, const std::vector<FilePiece> &pieces);

/// The same for one buffer.
Status writeFileAtomically(const std::string &path, const void *data, size_t size);

} // namespace lcc

#endif // LCC_RUNTIME_ATOMICFILE_H
