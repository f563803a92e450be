//===- TensorBoard.h - training metrics as TensorBoard event files -*- C++ -*-===//
//
// `lcc-run --tensorboard DIR` writes the metrics of the CSV (Metrics.h) as a
// TensorBoard event file in DIR, one file per run:
// events.out.tfevents.<unix seconds>.<host>.<pid>.lcc. Scalars, per step:
// train/loss, train/lr, train/grad_norm, train/tokens_per_s,
// train/loss_scale (fp16 only) and val/loss (on evaluation steps).
//
// An event file is a sequence of TFRecord records, each
//
//   uint64 length (little-endian) | uint32 masked CRC-32C of the 8 length bytes
//   | `length` bytes: one serialized Event | uint32 masked CRC-32C of them
//
// where masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8 (Crc32c.h). The
// first record's Event holds file_version "brain.Event:2". A run resumed
// after step k starts its file with a SessionLog START at step k+1, which
// makes TensorBoard drop the points of the earlier files at steps > k (those
// the resumed run writes again), as the CSV does.
//
// Each step's records go to the kernel in one write(2) on an O_APPEND
// descriptor, so a crash loses at most that step's records; a reader that
// meets a record cut short ignores it (readEventFile reports it).
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TOOLS_LCC_RUN_TENSORBOARD_H
#define LCC_TOOLS_LCC_RUN_TENSORBOARD_H

#include "runtime/support/Status.h"
#include "tools/lcc-run/AppendFile.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lcc {

/// One record's framing around `payload`.
std::string frameEventRecord(const std::string &payload);

/// Reads the records of an event file, checking both CRCs of each: a
/// mismatch is an error naming the record and its offset. A last record cut
/// short (a crash while writing) ends the list and sets `truncated`.
Status readEventFile(const std::string &path, std::vector<std::string> &records, bool &truncated);

/// One scalar point: a tag and its value.
using ScalarPoint = std::pair<std::string, double>;

/// Writes one run's event file (AppendFile.h: a step's records per
/// write(2)). Move-only; closes the file on destruction.
class TensorBoardWriter {
public:
  /// Creates DIR (and its parents) if needed and a new event file in it.
  /// `firstStep` > 1 (a resumed run) writes the SessionLog START.
  static Status open(const std::string &dir, int64_t firstStep, TensorBoardWriter &out);

  /// The scalars of one step (one write(2)).
  Status scalars(int64_t step, const std::vector<ScalarPoint> &points);
  Status close() { return file_.close(); }

  bool isOpen() const { return file_.isOpen(); }
  const std::string &path() const { return file_.path(); }

private:
  AppendFile file_;
};

} // namespace lcc

#endif // LCC_TOOLS_LCC_RUN_TENSORBOARD_H
