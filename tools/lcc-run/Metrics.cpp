//===- Metrics.cpp - per-step training metrics as CSV ---------------------===//
#include "tools/lcc-run/Metrics.h"

#include "runtime/support/AtomicFile.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace lcc {

namespace {

std::string formatNumber(double v) {
  // printf's "nan"/"-nan" depends on the sign bit; normalise it so the CSV
  // is the same whatever produced the NaN.
  if (std::isnan(v))
    return "nan";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

bool parseNumber(const std::string &field, double &out) {
  if (field.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  out = std::strtod(field.c_str(), &end);
  // ERANGE on underflow still yields a usable value (a denormal or 0).
  return end == field.c_str() + field.size();
}

/// The complete lines of `text` (a last line without '\n' is left out: it is
/// a row cut short by a crash), '\r' stripped so files edited on Windows work.
std::vector<std::string> completeLines(const std::string &text) {
  std::vector<std::string> lines;
  size_t begin = 0;
  for (size_t nl; (nl = text.find('\n', begin)) != std::string::npos; begin = nl + 1) {
    std::string line = text.substr(begin, nl - begin);
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

Status errnoFailure(const std::string &path, const char *what) {
  return Status::failure(path + ": " + what + ": " + std::strerror(errno));
}

} // namespace

const char *metricsHeader() { return "step,loss,lr,grad_norm,tokens_per_s,val_loss,elapsed_s"; }

std::string formatMetricsRow(const MetricsRow &row) {
  std::string line = std::to_string(row.step);
  for (double v : {row.loss, row.lr, row.gradNorm, row.tokensPerSec})
    line += "," + formatNumber(v);
  line += ",";
  if (row.valLoss)
    line += formatNumber(*row.valLoss);
  line += "," + formatNumber(row.elapsedSec);
  return line;
}

bool parseMetricsRow(const std::string &line, MetricsRow &row) {
  std::vector<std::string> fields;
  size_t begin = 0;
  for (;;) {
    size_t comma = line.find(',', begin);
    fields.push_back(line.substr(begin, comma == std::string::npos ? comma : comma - begin));
    if (comma == std::string::npos)
      break;
    begin = comma + 1;
  }
  if (fields.size() != 7 || fields[0].empty())
    return false;
  MetricsRow r;
  char *end = nullptr;
  errno = 0;
  long long step = std::strtoll(fields[0].c_str(), &end, 10);
  if (errno != 0 || end != fields[0].c_str() + fields[0].size())
    return false;
  r.step = step;
  if (!parseNumber(fields[1], r.loss) || !parseNumber(fields[2], r.lr) ||
      !parseNumber(fields[3], r.gradNorm) || !parseNumber(fields[4], r.tokensPerSec) ||
      !parseNumber(fields[6], r.elapsedSec))
    return false;
  if (!fields[5].empty()) {
    double v;
    if (!parseNumber(fields[5], v))
      return false;
    r.valLoss = v;
  }
  row = r;
  return true;
}

Status readMetrics(const std::string &path, std::vector<MetricsRow> &rows) {
  rows.clear();
  std::string text;
  if (!readWholeFile(path, text))
    return errnoFailure(path, "cannot read");
  std::vector<std::string> lines = completeLines(text);
  if (lines.empty() || lines[0] != metricsHeader())
    return Status::failure(path + ": not a metrics CSV: the first line is not \"" +
                           metricsHeader() + "\"");
  for (size_t i = 1; i < lines.size(); ++i) {
    MetricsRow row;
    if (!parseMetricsRow(lines[i], row)) {
      rows.clear();
      return Status::failure(path + ":" + std::to_string(i + 1) + ": malformed row \"" + lines[i] +
                             "\"");
    }
    rows.push_back(row);
  }
  return {};
}

Status MetricsWriter::create(const std::string &path, MetricsWriter &out) {
  (void)out.close(); // the file `out` had before, if any
  // Written atomically like the resume path, so both start from a complete
  // header even if the process dies right away.
  std::string header = std::string(metricsHeader()) + "\n";
  if (Status s = writeFileAtomically(path, header.data(), header.size()); !s)
    return s;
  return AppendFile::open(path, /*createNew=*/false, out.file_);
}

Status MetricsWriter::resume(const std::string &path, int64_t resumeStep, MetricsWriter &out) {
  (void)out.close(); // the file `out` had before, if any
  std::string text;
  if (!readWholeFile(path, text)) {
    if (errno == ENOENT)
      return create(path, out);
    return errnoFailure(path, "cannot read");
  }
  std::vector<std::string> lines = completeLines(text);
  if (lines.empty() || lines[0] != metricsHeader())
    return Status::failure(path + ": not a metrics CSV (the first line is not \"" +
                           metricsHeader() + "\"), refusing to truncate it");
  std::string kept = lines[0] + "\n";
  for (size_t i = 1; i < lines.size(); ++i) {
    MetricsRow row;
    if (!parseMetricsRow(lines[i], row))
      return Status::failure(path + ":" + std::to_string(i + 1) + ": malformed row \"" + lines[i] +
                             "\"");
    // Rows after the checkpoint are rewritten by the resumed run. The lines
    // are kept verbatim, not reformatted, so resuming changes nothing else.
    if (row.step <= resumeStep)
      kept += lines[i] + "\n";
  }
  // Atomic: a crash here must not lose the rows before the checkpoint.
  if (Status s = writeFileAtomically(path, kept.data(), kept.size()); !s)
    return s;
  return AppendFile::open(path, /*createNew=*/false, out.file_);
}

} // namespace lcc
