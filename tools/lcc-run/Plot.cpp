//===- Plot.cpp - a PNG line chart of the training loss -------------------===//
#include "tools/lcc-run/Plot.h"

#include "runtime/support/AtomicFile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#ifdef LCC_HAVE_PNG
#include <png.h>
#endif

namespace lcc {

namespace {

//===----------------------------------------------------------------------===//
// A 5x7 bitmap font with only the characters the chart prints: tick labels
// (digits, '.', '-', '+', 'e' of %g's exponent) and the words "step", "loss",
// "train", "val". Each glyph is 7 rows; bit 4 is the leftmost column.
//===----------------------------------------------------------------------===//

struct Glyph {
  char c;
  uint8_t rows[7];
};

constexpr Glyph kFont[] = {
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}},
    {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}},
    {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}},
    {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}},
    {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}},
    {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}},
    {'-', {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00}},
    {'+', {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00}},
    {'a', {0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F}},
    {'e', {0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E}},
    {'i', {0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E}},
    {'l', {0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'n', {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11}},
    {'o', {0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E}},
    {'p', {0x00, 0x00, 0x1E, 0x11, 0x1E, 0x10, 0x10}},
    {'r', {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10}},
    {'s', {0x00, 0x00, 0x0E, 0x10, 0x0E, 0x01, 0x1E}},
    {'t', {0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06}},
    {'v', {0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04}},
};

// Glyphs are drawn at 2x: 10x14 pixels, 12 pixels apart.
constexpr int kScale = 2;
constexpr int kAdvance = 6 * kScale;
constexpr int kTextHeight = 7 * kScale;
constexpr int kTickLength = 6;

struct Rgb {
  uint8_t r, g, b;
};
constexpr Rgb kBlack{0, 0, 0};
constexpr Rgb kGrid{225, 225, 225};
constexpr Rgb kTrain{kPlotTrainColor[0], kPlotTrainColor[1], kPlotTrainColor[2]};
constexpr Rgb kVal{kPlotValColor[0], kPlotValColor[1], kPlotValColor[2]};

struct Canvas {
  PlotImage &img;
  // Drawing outside [clipX0, clipX1] x [clipY0, clipY1] is dropped.
  int clipX0, clipY0, clipX1, clipY1;

  explicit Canvas(PlotImage &image)
      : img(image), clipX0(0), clipY0(0), clipX1(image.width - 1), clipY1(image.height - 1) {}

  void set(int x, int y, Rgb c) {
    if (x < clipX0 || x > clipX1 || y < clipY0 || y > clipY1)
      return;
    uint8_t *p = img.rgb.data() + (static_cast<size_t>(y) * img.width + x) * 3;
    p[0] = c.r;
    p[1] = c.g;
    p[2] = c.b;
  }
  void fillRect(int x0, int y0, int x1, int y1, Rgb c) {
    for (int y = y0; y <= y1; ++y)
      for (int x = x0; x <= x1; ++x)
        set(x, y, c);
  }
  /// Bresenham, each point a `thick` x `thick` square.
  void line(int x0, int y0, int x1, int y1, Rgb c, int thick) {
    int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
    int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1, err = dx + dy;
    int lo = -(thick - 1) / 2, hi = thick / 2;
    for (;;) {
      fillRect(x0 + lo, y0 + lo, x0 + hi, y0 + hi, c);
      if (x0 == x1 && y0 == y1)
        break;
      int e2 = 2 * err;
      if (e2 >= dy) {
        err += dy;
        x0 += sx;
      }
      if (e2 <= dx) {
        err += dx;
        y0 += sy;
      }
    }
  }
  /// Text with its top-left corner at (x, y); unknown characters are blank.
  void text(int x, int y, const std::string &s, Rgb c) {
    for (char ch : s) {
      for (const Glyph &g : kFont) {
        if (g.c != ch)
          continue;
        for (int row = 0; row < 7; ++row)
          for (int col = 0; col < 5; ++col)
            if (g.rows[row] & (0x10 >> col))
              fillRect(x + col * kScale, y + row * kScale, x + col * kScale + kScale - 1,
                       y + row * kScale + kScale - 1, c);
      }
      x += kAdvance;
    }
  }
};

int textWidth(const std::string &s) { return s.empty() ? 0 : int(s.size()) * kAdvance - kScale; }

/// A "nice" tick step (1, 2 or 5 times a power of ten) near range / target.
double niceStep(double range, int target) {
  double raw = range / std::max(target, 1);
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

/// An axis: [lo, hi] rounded out to whole steps, with the tick values.
struct Axis {
  double lo, hi, step;
  std::vector<double> ticks;
  std::vector<std::string> labels;
};

std::string tickLabel(double v, double step, double maxAbs) {
  char buf[48];
  if (maxAbs >= 1e6 || step < 1e-4) {
    // Exponent form: enough significant digits to tell neighbours apart.
    int digits = int(std::floor(std::log10(maxAbs)) - std::floor(std::log10(step))) + 1;
    std::snprintf(buf, sizeof buf, "%.*g", std::clamp(digits, 1, 15), v);
  } else {
    int decimals = std::max(0, int(std::ceil(-std::log10(step) - 1e-9)));
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  }
  return buf;
}

Axis makeAxis(double lo, double hi, int targetTicks) {
  if (!(hi > lo)) { // one value (or one point): give it some room
    double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  Axis a;
  a.step = niceStep(hi - lo, targetTicks);
  a.lo = std::floor(lo / a.step) * a.step;
  a.hi = std::ceil(hi / a.step) * a.step;
  long long n = std::llround((a.hi - a.lo) / a.step);
  double maxAbs = std::max(std::abs(a.lo), std::abs(a.hi));
  for (long long k = 0; k <= n; ++k) {
    double v = a.lo + double(k) * a.step;
    if (std::abs(v) < a.step * 1e-9)
      v = 0; // not "-0.0" or "1.4e-17"
    a.ticks.push_back(v);
    a.labels.push_back(tickLabel(v, a.step, maxAbs));
  }
  return a;
}

Status checkSeries(const PlotSeries &s, const char *name) {
  if (s.x.size() != s.y.size())
    return Status::failure(std::string(name) + " series has " + std::to_string(s.x.size()) +
                           " x values but " + std::to_string(s.y.size()) + " y values");
  return {};
}

bool finitePoint(const PlotSeries &s, size_t i) {
  return std::isfinite(s.x[i]) && std::isfinite(s.y[i]);
}

} // namespace

Status renderLossPlot(const PlotSeries &train, const PlotSeries &val, const PlotOptions &options,
                      PlotImage &out) {
  out = PlotImage();
  if (options.width < 200 || options.height < 150)
    return Status::failure("plot size " + std::to_string(options.width) + "x" +
                           std::to_string(options.height) + " is below 200x150");
  if (Status s = checkSeries(train, "train"); !s)
    return s;
  if (Status s = checkSeries(val, "val"); !s)
    return s;

  // Data bounds over both series' finite points.
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  size_t trainPoints = 0;
  for (const PlotSeries *s : {&train, &val})
    for (size_t i = 0; i < s->x.size(); ++i)
      if (finitePoint(*s, i)) {
        x0 = std::min(x0, s->x[i]);
        x1 = std::max(x1, s->x[i]);
        y0 = std::min(y0, s->y[i]);
        y1 = std::max(y1, s->y[i]);
        trainPoints += s == &train;
      }
  if (trainPoints == 0)
    return Status::failure("nothing to plot: no finite train loss value");

  PlotImage img;
  img.width = options.width;
  img.height = options.height;
  img.rgb.assign(static_cast<size_t>(img.width) * img.height * 3, 255);

  // The layout: the left margin fits the widest y label; the top margin holds
  // the "loss" title and the legend, the bottom one the x labels and "step".
  int top = 12 + kTextHeight + 12;
  int bottom = kTickLength + 6 + kTextHeight + 10 + kTextHeight + 8;
  Axis ya = makeAxis(y0, y1, std::max(2, (img.height - top - bottom) / 60));
  int labelW = 0;
  for (const std::string &l : ya.labels)
    labelW = std::max(labelW, textWidth(l));
  img.plotLeft = 10 + labelW + 6 + kTickLength;
  img.plotTop = top;
  img.plotBottom = img.height - 1 - bottom;
  Axis xa;
  // The last x label is centred on the right edge: keep room for its half.
  int right = 16;
  for (int pass = 0; pass < 2; ++pass) {
    img.plotRight = img.width - 1 - right;
    xa = makeAxis(x0, x1, std::max(2, (img.plotRight - img.plotLeft) / 110));
    right = std::max(16, textWidth(xa.labels.back()) / 2 + 6);
  }
  img.plotRight = img.width - 1 - right;
  if (img.plotRight - img.plotLeft < 50 || img.plotBottom - img.plotTop < 50)
    return Status::failure("plot size " + std::to_string(options.width) + "x" +
                           std::to_string(options.height) + " leaves no room for the plot");

  auto px = [&](double x) {
    return img.plotLeft + int(std::lround((x - xa.lo) / (xa.hi - xa.lo) *
                                          (img.plotRight - img.plotLeft)));
  };
  auto py = [&](double y) {
    return img.plotBottom - int(std::lround((y - ya.lo) / (ya.hi - ya.lo) *
                                            (img.plotBottom - img.plotTop)));
  };

  Canvas c(img);
  // Grid and ticks first, so curves and the frame are drawn over them.
  for (size_t k = 0; k < xa.ticks.size(); ++k) {
    int x = px(xa.ticks[k]);
    c.line(x, img.plotTop, x, img.plotBottom, kGrid, 1);
    c.line(x, img.plotBottom, x, img.plotBottom + kTickLength, kBlack, 1);
    c.text(x - textWidth(xa.labels[k]) / 2, img.plotBottom + kTickLength + 6, xa.labels[k],
           kBlack);
  }
  for (size_t k = 0; k < ya.ticks.size(); ++k) {
    int y = py(ya.ticks[k]);
    c.line(img.plotLeft, y, img.plotRight, y, kGrid, 1);
    c.line(img.plotLeft - kTickLength, y, img.plotLeft, y, kBlack, 1);
    c.text(img.plotLeft - kTickLength - 6 - textWidth(ya.labels[k]), y - kTextHeight / 2,
           ya.labels[k], kBlack);
  }
  c.text((img.plotLeft + img.plotRight - textWidth("step")) / 2,
         img.height - 8 - kTextHeight, "step", kBlack);
  c.text(10, 12, "loss", kBlack);

  // Curves, clipped to the inside of the frame.
  c.clipX0 = img.plotLeft + 1;
  c.clipY0 = img.plotTop + 1;
  c.clipX1 = img.plotRight - 1;
  c.clipY1 = img.plotBottom - 1;
  auto polyline = [&](const PlotSeries &s, Rgb color, int thick, int marker) {
    bool have = false;
    int lx = 0, ly = 0;
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!finitePoint(s, i)) {
        have = false; // a NaN/inf loss breaks the line
        continue;
      }
      int x = px(s.x[i]), y = py(s.y[i]);
      if (have)
        c.line(lx, ly, x, y, color, thick);
      else
        c.line(x, y, x, y, color, thick);
      if (marker > 0)
        c.fillRect(x - marker, y - marker, x + marker, y + marker, color);
      lx = x;
      ly = y;
      have = true;
    }
  };
  polyline(train, kTrain, 2, 0);
  polyline(val, kVal, 1, 2);

  // The frame, then the legend in the top margin (outside the plot area, so
  // it never hides a curve).
  c.clipX0 = 0;
  c.clipY0 = 0;
  c.clipX1 = img.width - 1;
  c.clipY1 = img.height - 1;
  c.line(img.plotLeft, img.plotTop, img.plotRight, img.plotTop, kBlack, 1);
  c.line(img.plotLeft, img.plotBottom, img.plotRight, img.plotBottom, kBlack, 1);
  c.line(img.plotLeft, img.plotTop, img.plotLeft, img.plotBottom, kBlack, 1);
  c.line(img.plotRight, img.plotTop, img.plotRight, img.plotBottom, kBlack, 1);
  int lx = img.plotRight - textWidth("train") - 30;
  bool hasVal = false;
  for (size_t i = 0; i < val.x.size(); ++i)
    hasVal = hasVal || finitePoint(val, i);
  if (hasVal)
    lx -= textWidth("val") + 30 + 16;
  int ly = 12 + kTextHeight / 2;
  c.line(lx, ly, lx + 20, ly, kTrain, 2);
  c.text(lx + 26, 12, "train", kBlack);
  if (hasVal) {
    lx += 26 + textWidth("train") + 16;
    c.line(lx, ly, lx + 20, ly, kVal, 1);
    c.fillRect(lx + 8, ly - 2, lx + 12, ly + 2, kVal);
    c.text(lx + 26, 12, "val", kBlack);
  }
  out = std::move(img);
  return {};
}

bool plotSupportsPng() {
#ifdef LCC_HAVE_PNG
  return true;
#else
  return false;
#endif
}

Status writeLossPlot(const std::string &path, const PlotSeries &train, const PlotSeries &val,
                     const PlotOptions &options) {
#ifndef LCC_HAVE_PNG
  (void)train;
  (void)val;
  (void)options;
  return Status::failure(path + ": built without libpng");
#else
  PlotImage img;
  if (Status s = renderLossPlot(train, val, options, img); !s)
    return Status::failure(path + ": " + s.message());
  // libpng's simplified API: no setjmp/longjmp across C++ frames.
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(img.width);
  image.height = static_cast<png_uint_32>(img.height);
  image.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  // A first call with no buffer computes the size.
  if (!png_image_write_to_memory(&image, nullptr, &size, 0, img.rgb.data(), 0, nullptr))
    return Status::failure(path + ": PNG encoding failed: " + image.message);
  std::vector<uint8_t> bytes(size);
  if (!png_image_write_to_memory(&image, bytes.data(), &size, 0, img.rgb.data(), 0, nullptr))
    return Status::failure(path + ": PNG encoding failed: " + image.message);
  png_image_free(&image);
  return writeFileAtomically(path, bytes.data(), size);
#endif
}

void lossSeriesFromMetrics(const std::vector<MetricsRow> &rows, PlotSeries &train,
                           PlotSeries &val) {
  train = PlotSeries();
  val = PlotSeries();
  for (const MetricsRow &r : rows) {
    train.x.push_back(double(r.step));
    train.y.push_back(r.loss);
    if (r.valLoss) {
      val.x.push_back(double(r.step));
      val.y.push_back(*r.valLoss);
    }
  }
}

} // namespace lcc
