//===- Plot.h - a PNG line chart of the training loss ------------*- C++ -*-===//
//
// `lcc-run` draws loss.png next to its metrics CSV so a run can be judged at
// a glance without Python: the train loss as a line, the validation loss as
// points joined by a thinner line, with axes, grid, ticks and numeric tick
// labels. The rasteriser is self-contained (a 5x7 bitmap font for the few
// characters needed); only the PNG encoding needs libpng, and a build without
// libpng still renders but cannot write.
//
// Part of the runtime: no MLIR/LLVM, no exceptions.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_PLOT_H
#define LCC_RUNTIME_PLOT_H

#include "runtime/support/Status.h"

#include "tools/lcc-run/Metrics.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lcc {

/// Points (x[i], y[i]); x and y have the same length. Non-finite y values (a
/// diverged loss) are skipped and break the line.
struct PlotSeries {
  std::vector<double> x, y;
};

struct PlotOptions {
  int width = 800;  // pixels, at least 200
  int height = 500; // pixels, at least 150
};

/// The colours of the two series (RGB), exposed for tests.
constexpr uint8_t kPlotTrainColor[3] = {31, 119, 180}; // blue
constexpr uint8_t kPlotValColor[3] = {255, 127, 14};   // orange

/// A rendered chart: rows top to bottom, 3 bytes (RGB) per pixel, and where
/// the plot area lies (inclusive pixel bounds, the frame drawn on them).
struct PlotImage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
  int plotLeft = 0, plotTop = 0, plotRight = 0, plotBottom = 0;
  const uint8_t *pixel(int x, int y) const {
    return rgb.data() + (static_cast<size_t>(y) * static_cast<size_t>(width) + x) * 3;
  }
};

/// Draws the chart. `val` may be empty. Errors: mismatched x/y lengths, no
/// finite train point, a too small size.
Status renderLossPlot(const PlotSeries &train, const PlotSeries &val, const PlotOptions &options,
                      PlotImage &out);

/// Renders and writes a PNG to `path` atomically (a temporary file renamed
/// over it). Without libpng: the error "<path>: built without libpng".
Status writeLossPlot(const std::string &path, const PlotSeries &train, const PlotSeries &val = {},
                     const PlotOptions &options = {});

/// Whether this build can write PNG files.
bool plotSupportsPng();

/// The train loss of every row and the val loss of rows that have one,
/// against the step.
void lossSeriesFromMetrics(const std::vector<MetricsRow> &rows, PlotSeries &train,
                           PlotSeries &val);

} // namespace lcc

#endif // LCC_RUNTIME_PLOT_H
