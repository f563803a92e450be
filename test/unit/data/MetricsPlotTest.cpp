//===- MetricsPlotTest.cpp - the metrics CSV and the loss plot ------------===//
//
// The CSV is parsed back, reaches the file row by row, and is truncated on
// resume so a resumed run has no duplicate steps. The plot is read back with
// libpng: its size, and the train curve where a descending loss must put it.
//
//===----------------------------------------------------------------------===//
#include "tools/lcc-run/Metrics.h"
#include "tools/lcc-run/Plot.h"

#include "TestFiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#ifdef LCC_HAVE_PNG
#include <png.h>
#endif

using namespace lcc;
using namespace lcc::test;

namespace {

MetricsRow row(int64_t step, double loss, std::optional<double> val = std::nullopt) {
  MetricsRow r;
  r.step = step;
  r.loss = loss;
  r.lr = 3e-4;
  r.gradNorm = 1.25;
  r.tokensPerSec = 10240;
  r.valLoss = val;
  r.elapsedSec = 0.5 * double(step);
  return r;
}

std::vector<int64_t> steps(const std::vector<MetricsRow> &rows) {
  std::vector<int64_t> out;
  for (const MetricsRow &r : rows)
    out.push_back(r.step);
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// Metrics CSV
//===----------------------------------------------------------------------===//

TEST(Metrics, WrittenCsvParsesBack) {
  TempDir dir;
  std::string p = dir.file("metrics.csv");
  MetricsWriter w;
  ASSERT_TRUE(MetricsWriter::create(p, w));
  std::vector<MetricsRow> written = {row(1, 5.5), row(2, 4.25, 4.75), row(3, NAN),
                                     row(4, 3.0999999, 3.2)};
  written[2].gradNorm = INFINITY;
  for (const MetricsRow &r : written) {
    ASSERT_TRUE(w.append(r));
    // Each row reaches the file at once, before close (a crash keeps it).
    std::string text = readText(p);
    ASSERT_EQ(text.back(), '\n');
    EXPECT_EQ(text.substr(text.rfind('\n', text.size() - 2) + 1), formatMetricsRow(r) + "\n");
  }
  ASSERT_TRUE(w.close());
  EXPECT_FALSE(w.append(row(5, 1)));

  std::string text = readText(p);
  EXPECT_EQ(text, "step,loss,lr,grad_norm,tokens_per_s,val_loss,elapsed_s\n"
                  "1,5.5,0.0003,1.25,10240,,0.5\n"
                  "2,4.25,0.0003,1.25,10240,4.75,1\n"
                  "3,nan,0.0003,inf,10240,,1.5\n"
                  "4,3.0999999,0.0003,1.25,10240,3.2,2\n");
  std::vector<MetricsRow> back;
  ASSERT_TRUE(readMetrics(p, back));
  ASSERT_EQ(back.size(), written.size());
  for (size_t i = 0; i < back.size(); ++i) {
    const MetricsRow &a = back[i], &b = written[i];
    EXPECT_EQ(a.step, b.step);
    if (std::isnan(b.loss))
      EXPECT_TRUE(std::isnan(a.loss));
    else
      EXPECT_EQ(float(a.loss), float(b.loss)); // 9 digits: every float round-trips
    EXPECT_EQ(a.lr, b.lr);
    EXPECT_EQ(a.gradNorm, b.gradNorm);
    EXPECT_EQ(a.tokensPerSec, b.tokensPerSec);
    EXPECT_EQ(a.valLoss.has_value(), b.valLoss.has_value());
    if (b.valLoss)
      EXPECT_EQ(float(*a.valLoss), float(*b.valLoss));
    EXPECT_EQ(a.elapsedSec, b.elapsedSec);
  }
}

TEST(Metrics, ResumeDropsLaterRows) {
  TempDir dir;
  std::string p = dir.file("metrics.csv");
  {
    MetricsWriter w;
    ASSERT_TRUE(MetricsWriter::create(p, w));
    for (int s = 1; s <= 10; ++s)
      ASSERT_TRUE(w.append(row(s, 10.0 - s, s % 5 == 0 ? std::optional<double>(11.0 - s)
                                                        : std::nullopt)));
  }
  std::string before = readText(p);
  // Resumed from the checkpoint after step 6: rows 7..10 are written again.
  MetricsWriter w;
  ASSERT_TRUE(MetricsWriter::resume(p, 6, w));
  std::string kept = readText(p);
  EXPECT_EQ(kept, before.substr(0, before.find("\n7,") + 1)) << "rows kept verbatim";
  for (int s = 7; s <= 8; ++s)
    ASSERT_TRUE(w.append(row(s, 1.0)));
  EXPECT_TRUE(w.close().ok());
  std::vector<MetricsRow> rows;
  ASSERT_TRUE(readMetrics(p, rows));
  EXPECT_EQ(steps(rows), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(rows[6].loss, 1.0);
  EXPECT_EQ(rows[4].valLoss, std::optional<double>(6.0));

  // A crash cut the last row: it is ignored when reading, dropped on resume.
  writeText(p, readText(p) + "9,0.5,0.00");
  ASSERT_TRUE(readMetrics(p, rows));
  EXPECT_EQ(rows.size(), 8u);
  ASSERT_TRUE(MetricsWriter::resume(p, 100, w));
  ASSERT_TRUE(w.append(row(9, 0.5)));
  EXPECT_TRUE(w.close().ok());
  ASSERT_TRUE(readMetrics(p, rows));
  EXPECT_EQ(steps(rows), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));

  // Resuming at step 0 keeps only the header.
  ASSERT_TRUE(MetricsWriter::resume(p, 0, w));
  EXPECT_TRUE(w.close().ok());
  EXPECT_EQ(readText(p), std::string(metricsHeader()) + "\n");
  // No temporaries are left behind.
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"metrics.csv"}));
}

TEST(Metrics, ResumeErrorsAndMissingFile) {
  TempDir dir;
  std::string p = dir.file("new.csv");
  MetricsWriter w;
  ASSERT_TRUE(MetricsWriter::resume(p, 5, w)) << "a missing file starts fresh";
  ASSERT_TRUE(w.append(row(6, 2.0)));
  EXPECT_TRUE(w.close().ok());
  std::vector<MetricsRow> rows;
  ASSERT_TRUE(readMetrics(p, rows));
  EXPECT_EQ(steps(rows), (std::vector<int64_t>{6}));

  std::string foreign = dir.file("foreign.csv");
  writeText(foreign, "a,b\n1,2\n");
  Status s = MetricsWriter::resume(foreign, 1, w);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), foreign + ": not a metrics CSV (the first line is not \"step,loss,lr,"
                                   "grad_norm,tokens_per_s,val_loss,elapsed_s\"), refusing to "
                                   "truncate it");
  EXPECT_EQ(readText(foreign), "a,b\n1,2\n") << "left untouched";

  std::string bad = dir.file("bad.csv");
  writeText(bad, std::string(metricsHeader()) + "\n1,2,3,4,5,,6\n2,x,3,4,5,,6\n");
  s = readMetrics(bad, rows);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), bad + ":3: malformed row \"2,x,3,4,5,,6\"");
  EXPECT_TRUE(rows.empty());
  EXPECT_FALSE(MetricsWriter::resume(bad, 10, w));
  s = readMetrics(dir.file("none.csv"), rows);
  EXPECT_EQ(s.message(), dir.file("none.csv") + ": cannot read: No such file or directory");

  MetricsRow r;
  EXPECT_FALSE(parseMetricsRow("1,2,3,4,5,6", r)) << "six fields";
  EXPECT_FALSE(parseMetricsRow("1.5,2,3,4,5,,6", r)) << "fractional step";
  ASSERT_TRUE(parseMetricsRow("7,2,3,4,5,,6", r));
  EXPECT_EQ(r.step, 7);
  EXPECT_FALSE(r.valLoss);
}

//===----------------------------------------------------------------------===//
// Loss plot
//===----------------------------------------------------------------------===//

namespace {

PlotSeries descending(int n) {
  PlotSeries s;
  for (int i = 0; i < n; ++i) {
    s.x.push_back(i * 10);
    s.y.push_back(1.5 + 4.0 * std::exp(-i / 40.0));
  }
  return s;
}

bool isColor(const uint8_t *p, const uint8_t (&c)[3]) {
  return p[0] == c[0] && p[1] == c[1] && p[2] == c[2];
}

/// Mean row of `color` pixels in the plot-area columns [x0, x1); -1 if none.
double meanRow(const PlotImage &img, const uint8_t (&color)[3], int x0, int x1) {
  double sum = 0;
  int n = 0;
  for (int y = img.plotTop; y <= img.plotBottom; ++y)
    for (int x = x0; x < x1; ++x)
      if (isColor(img.pixel(x, y), color)) {
        sum += y;
        ++n;
      }
  return n ? sum / n : -1;
}

int countColor(const PlotImage &img, const uint8_t (&color)[3], int x0, int y0, int x1, int y1) {
  int n = 0;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x)
      n += isColor(img.pixel(x, y), color);
  return n;
}

int countDark(const PlotImage &img, int x0, int y0, int x1, int y1) {
  int n = 0;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x)
      n += img.pixel(x, y)[0] == 0 && img.pixel(x, y)[1] == 0 && img.pixel(x, y)[2] == 0;
  return n;
}

} // namespace

TEST(Plot, DescendingCurveGoesDown) {
  PlotImage img;
  PlotSeries train = descending(200), val;
  for (int i = 0; i < 200; i += 25) {
    val.x.push_back(train.x[i]);
    val.y.push_back(train.y[i] + 0.2);
  }
  ASSERT_TRUE(renderLossPlot(train, val, PlotOptions{}, img));
  ASSERT_EQ(img.width, 800);
  ASSERT_EQ(img.height, 500);
  ASSERT_EQ(img.rgb.size(), 800u * 500 * 3);
  ASSERT_LT(img.plotLeft, img.plotRight);
  ASSERT_LT(img.plotTop, img.plotBottom);
  int w = img.plotRight - img.plotLeft;
  // The curve is in the plot area, high on the left and low on the right.
  double left = meanRow(img, kPlotTrainColor, img.plotLeft, img.plotLeft + w / 10);
  double right = meanRow(img, kPlotTrainColor, img.plotRight - w / 10, img.plotRight);
  ASSERT_GE(left, 0) << "no train pixels at the left";
  ASSERT_GE(right, 0) << "no train pixels at the right";
  EXPECT_LT(left + 100, right) << "rows grow downwards: a descending loss starts higher";
  // The curve starts in the top third of the area and ends in the bottom half.
  EXPECT_LT(left, img.plotTop + (img.plotBottom - img.plotTop) / 3);
  EXPECT_GT(right, img.plotBottom - (img.plotBottom - img.plotTop) / 2);
  // Val points are drawn; below the plot area there is no curve colour.
  EXPECT_GT(countColor(img, kPlotValColor, img.plotLeft, img.plotTop, img.plotRight,
                       img.plotBottom),
            8 * 9);
  EXPECT_EQ(countColor(img, kPlotTrainColor, 0, img.plotBottom + 1, img.width, img.height), 0);
  EXPECT_EQ(countColor(img, kPlotTrainColor, 0, 0, img.plotLeft, img.height), 0);
  // Tick labels: dark pixels left of the axis (y labels) and below it (x).
  EXPECT_GT(countDark(img, 0, img.plotTop, img.plotLeft - 8, img.plotBottom), 100);
  EXPECT_GT(countDark(img, img.plotLeft, img.plotBottom + 8, img.plotRight, img.height), 100);

  // An ascending series puts the curve the other way round.
  PlotSeries up;
  for (int i = 0; i < 100; ++i) {
    up.x.push_back(i);
    up.y.push_back(i * 0.01);
  }
  ASSERT_TRUE(renderLossPlot(up, {}, PlotOptions{}, img));
  w = img.plotRight - img.plotLeft;
  EXPECT_GT(meanRow(img, kPlotTrainColor, img.plotLeft, img.plotLeft + w / 10),
            meanRow(img, kPlotTrainColor, img.plotRight - w / 10, img.plotRight) + 100);
}

TEST(Plot, Errors) {
  PlotImage img;
  PlotSeries bad;
  bad.x = {1, 2};
  bad.y = {1};
  Status s = renderLossPlot(bad, {}, PlotOptions{}, img);
  EXPECT_EQ(s.message(), "train series has 2 x values but 1 y values");
  s = renderLossPlot(descending(3), bad, PlotOptions{}, img);
  EXPECT_EQ(s.message(), "val series has 2 x values but 1 y values");
  PlotSeries nan;
  nan.x = {1, 2};
  nan.y = {NAN, INFINITY};
  s = renderLossPlot(nan, {}, PlotOptions{}, img);
  EXPECT_EQ(s.message(), "nothing to plot: no finite train loss value");
  s = renderLossPlot(descending(3), {}, PlotOptions{100, 100}, img);
  EXPECT_EQ(s.message(), "plot size 100x100 is below 200x150");
  // One point, a flat line, NaNs in the middle, the smallest size: all draw.
  PlotSeries one;
  one.x = {5};
  one.y = {2};
  EXPECT_TRUE(renderLossPlot(one, {}, PlotOptions{}, img));
  PlotSeries gaps = descending(50);
  gaps.y[10] = NAN;
  EXPECT_TRUE(renderLossPlot(gaps, {}, PlotOptions{200, 150}, img));
  PlotSeries huge;
  huge.x = {0, 5e6};
  huge.y = {1e-7, 3e-7};
  EXPECT_TRUE(renderLossPlot(huge, {}, PlotOptions{}, img));
}

TEST(Plot, MetricsToSeries) {
  std::vector<MetricsRow> rows = {row(1, 3.0), row(2, 2.5, 2.75), row(3, 2.0)};
  PlotSeries train, val;
  lossSeriesFromMetrics(rows, train, val);
  EXPECT_EQ(train.x, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(train.y, (std::vector<double>{3.0, 2.5, 2.0}));
  EXPECT_EQ(val.x, (std::vector<double>{2}));
  EXPECT_EQ(val.y, (std::vector<double>{2.75}));
}

#ifdef LCC_HAVE_PNG
TEST(Plot, WritesAValidPng) {
  ASSERT_TRUE(plotSupportsPng());
  TempDir dir;
  std::string p = dir.file("loss.png");
  PlotSeries train = descending(120), val;
  val.x = {0, 500, 1000};
  val.y = {5.6, 2.3, 1.9};
  PlotOptions opt{640, 400};
  Status s = writeLossPlot(p, train, val, opt);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(dir.files(), (std::vector<std::string>{"loss.png"})) << "no temporary left";

  std::vector<uint8_t> bytes = readBytes(p);
  ASSERT_GT(bytes.size(), 8u);
  EXPECT_EQ(std::memcmp(bytes.data(), "\x89PNG\r\n\x1a\n", 8), 0);

  // Decode with libpng and compare with the renderer's pixels.
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  ASSERT_TRUE(png_image_begin_read_from_file(&image, p.c_str())) << image.message;
  EXPECT_EQ(image.width, 640u);
  EXPECT_EQ(image.height, 400u);
  image.format = PNG_FORMAT_RGB;
  PlotImage decoded;
  decoded.width = int(image.width);
  decoded.height = int(image.height);
  decoded.rgb.resize(PNG_IMAGE_SIZE(image));
  ASSERT_TRUE(png_image_finish_read(&image, nullptr, decoded.rgb.data(), 0, nullptr))
      << image.message;
  PlotImage rendered;
  ASSERT_TRUE(renderLossPlot(train, val, opt, rendered));
  EXPECT_TRUE(decoded.rgb == rendered.rgb) << "the PNG holds the rendered pixels";
  decoded.plotLeft = rendered.plotLeft;
  decoded.plotTop = rendered.plotTop;
  decoded.plotRight = rendered.plotRight;
  decoded.plotBottom = rendered.plotBottom;
  int w = decoded.plotRight - decoded.plotLeft;
  double left = meanRow(decoded, kPlotTrainColor, decoded.plotLeft, decoded.plotLeft + w / 10);
  double right = meanRow(decoded, kPlotTrainColor, decoded.plotRight - w / 10, decoded.plotRight);
  ASSERT_GE(left, 0);
  ASSERT_GE(right, 0);
  EXPECT_LT(left, right);

  // Rewriting replaces the file atomically; a bad directory is an error.
  ASSERT_TRUE(writeLossPlot(p, descending(10)));
  EXPECT_NE(readBytes(p), bytes);
  std::string nowhere = dir.file("no/such/dir/loss.png");
  s = writeLossPlot(nowhere, train);
  EXPECT_EQ(s.message().rfind(nowhere + ": cannot create a temporary file", 0), 0u) << s.message();
  s = writeLossPlot(p, PlotSeries{});
  EXPECT_EQ(s.message(), p + ": nothing to plot: no finite train loss value");
}
#else
TEST(Plot, WithoutLibpngWritingFails) {
  EXPECT_FALSE(plotSupportsPng());
  Status s = writeLossPlot("/tmp/x.png", descending(10));
  EXPECT_EQ(s.error, "/tmp/x.png: built without libpng");
}
#endif
