//===- Metrics.h - per-step training metrics as CSV --------------*- C++ -*-===//
//
// `lcc-run` logs one row per step to a CSV file that people plot, tail and
// load into pandas while the run goes on:
//
//   step,loss,lr,grad_norm,tokens_per_s,val_loss,elapsed_s
//   1,5.54517746,0.0003,1.25,10240,,0.5
//
// val_loss is empty on steps without an evaluation. Numbers are printed with
// 9 significant digits (every float32 round-trips), non-finite ones as
// "nan"/"inf"/"-inf".
//
// Each row goes to the kernel in one write(2) on an O_APPEND descriptor, so a
// crash of the process loses at most the row being written (a power loss can
// lose what the page cache held; fsync per step would cost more than it saves).
// Resuming from a checkpoint at step k keeps the rows up to k and drops the
// later ones, which the resumed run writes again: the CSV never has duplicates.
//
// Part of the runtime: no MLIR/LLVM, no exceptions. Errors are one line,
// prefixed with the file's path.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_METRICS_H
#define LCC_RUNTIME_METRICS_H

#include "runtime/support/Status.h"
#include "tools/lcc-run/AppendFile.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lcc {

struct MetricsRow {
  int64_t step = 0;
  double loss = 0;
  double lr = 0;
  double gradNorm = 0;
  double tokensPerSec = 0;
  std::optional<double> valLoss; // only on evaluation steps
  double elapsedSec = 0;         // since the start of the (first) run
};

/// The header line, without its newline.
const char *metricsHeader();
/// One CSV line for `row`, without its newline.
std::string formatMetricsRow(const MetricsRow &row);
/// Parses one line (no newline) written by formatMetricsRow.
bool parseMetricsRow(const std::string &line, MetricsRow &row);

/// Reads a metrics CSV. A last line without its newline (a row cut by a
/// crash) is ignored; any other malformed line is an error naming its number.
Status readMetrics(const std::string &path, std::vector<MetricsRow> &rows);

/// Appends rows to a metrics CSV (AppendFile.h: a row per write(2)).
/// Move-only; closes the file on destruction.
class MetricsWriter {
public:
  /// Starts a new CSV at `path` (replacing any file there) with the header.
  static Status create(const std::string &path, MetricsWriter &out);

  /// Continues the CSV of a run resumed after step `resumeStep`: the file is
  /// rewritten atomically with its header and the rows with step <=
  /// resumeStep (a row cut by a crash is dropped too), and new rows are
  /// appended after them. A missing file is created as by `create`; a file
  /// with another header is an error (it is not ours to truncate).
  static Status resume(const std::string &path, int64_t resumeStep, MetricsWriter &out);

  /// Writes one row (one write(2), so it reaches the kernel at once).
  Status append(const MetricsRow &row) { return file_.write(formatMetricsRow(row) + "\n"); }
  /// Closes the file; later appends fail. Also done by the destructor.
  Status close() { return file_.close(); }

  bool isOpen() const { return file_.isOpen(); }
  const std::string &path() const { return file_.path(); }

private:
  AppendFile file_;
};

} // namespace lcc

#endif // LCC_RUNTIME_METRICS_H
