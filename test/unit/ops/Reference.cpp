//===- Reference.cpp - elementwise, reductions, nn ops in plain C++ -------===//
#include "Reference.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace lcc::ref {

Tensor::Tensor(std::vector<int64_t> s) : shape(std::move(s)) {
  data.assign(static_cast<size_t>(numel()), 0.0);
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<int64_t> Tensor::strides() const {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t d = rank() - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

std::vector<int64_t> Tensor::unravel(int64_t linear) const {
  std::vector<int64_t> index(shape.size());
  for (int64_t d = rank() - 1; d >= 0; --d) {
    index[d] = linear % shape[d];
    linear /= shape[d];
  }
  return index;
}

int64_t Tensor::ravel(const std::vector<int64_t> &index) const {
  assert(index.size() == shape.size());
  int64_t linear = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    assert(index[d] >= 0 && index[d] < shape[d]);
    linear = linear * shape[d] + index[d];
  }
  return linear;
}

int64_t normalizeAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

std::vector<int64_t> broadcastShape(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument("shapes do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

double broadcastRead(const Tensor &t, const std::vector<int64_t> &index) {
  size_t lead = index.size() - t.shape.size();
  std::vector<int64_t> own(t.shape.size());
  for (size_t d = 0; d < t.shape.size(); ++d)
    own[d] = t.shape[d] == 1 ? 0 : index[lead + d];
  return t.at(own);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double unaryScalar(const std::string &op, double x) {
  if (op == "neg") return -x;
  if (op == "exp") return std::exp(x);
  if (op == "log") return std::log(x);
  if (op == "tanh") return std::tanh(x);
  if (op == "erf") return std::erf(x);
  if (op == "sqrt") return std::sqrt(x);
  if (op == "rsqrt") return 1.0 / std::sqrt(x);
  if (op == "relu") return x > 0.0 ? x : 0.0;
  if (op == "sigmoid") return sigmoid(x);
  if (op == "silu") return x * sigmoid(x);
  if (op == "gelu") return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  if (op == "gelu_tanh") {
    const double c = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
  }
  throw std::invalid_argument("unknown unary op " + op);
}

Tensor unary(const std::string &op, const Tensor &x) {
  Tensor out(x.shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    out.data[i] = unaryScalar(op, x.data[i]);
  return out;
}

double binaryScalar(const std::string &op, double a, double b) {
  if (op == "add") return a + b;
  if (op == "sub") return a - b;
  if (op == "mul") return a * b;
  if (op == "div") return a / b;
  if (op == "pow") return std::pow(a, b);
  if (op == "maximum") return std::max(a, b);
  if (op == "minimum") return std::min(a, b);
  throw std::invalid_argument("unknown binary op " + op);
}

/// Applies f to broadcast operands.
template <typename F>
static Tensor broadcastApply(const std::vector<const Tensor *> &ins, F f) {
  std::vector<int64_t> shape = ins[0]->shape;
  for (const Tensor *t : ins)
    shape = broadcastShape(shape, t->shape);
  Tensor out(shape);
  std::vector<double> vals(ins.size());
  for (int64_t i = 0; i < out.numel(); ++i) {
    auto index = out.unravel(i);
    for (size_t k = 0; k < ins.size(); ++k)
      vals[k] = broadcastRead(*ins[k], index);
    out.data[i] = f(vals);
  }
  return out;
}

Tensor binary(const std::string &op, const Tensor &a, const Tensor &b) {
  return broadcastApply({&a, &b},
                        [&](const std::vector<double> &v) { return binaryScalar(op, v[0], v[1]); });
}

Tensor cmp(const std::string &p, const Tensor &a, const Tensor &b) {
  return broadcastApply({&a, &b}, [&](const std::vector<double> &v) {
    double x = v[0], y = v[1];
    bool r = p == "eq" ? x == y : p == "ne" ? x != y : p == "lt" ? x < y
           : p == "le" ? x <= y : p == "gt" ? x > y : x >= y;
    return r ? 1.0 : 0.0;
  });
}

Tensor where(const Tensor &cond, const Tensor &a, const Tensor &b) {
  return broadcastApply({&cond, &a, &b},
                        [](const std::vector<double> &v) { return v[0] != 0.0 ? v[1] : v[2]; });
}

Tensor convert(const Tensor &x, Kind to) {
  Tensor out(x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = x.data[i];
    switch (to) {
    case Kind::F32: out.data[i] = static_cast<float>(v); break;
    case Kind::F64: out.data[i] = v; break;
    case Kind::I32: out.data[i] = static_cast<int32_t>(std::trunc(v)); break;
    case Kind::I64: out.data[i] = static_cast<double>(static_cast<int64_t>(std::trunc(v))); break;
    case Kind::I1: out.data[i] = v != 0.0 ? 1.0 : 0.0; break;
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

Tensor reduce(const std::string &kind, const Tensor &x, std::vector<int64_t> axes, bool keepdim) {
  std::vector<bool> reduced(x.shape.size(), false);
  for (int64_t a : axes)
    reduced[normalizeAxis(a, x.rank())] = true;
  std::vector<int64_t> keptShape; // with size-1 reduced dims
  for (size_t d = 0; d < x.shape.size(); ++d)
    keptShape.push_back(reduced[d] ? 1 : x.shape[d]);
  Tensor acc(keptShape);
  std::fill(acc.data.begin(), acc.data.end(),
            kind == "max" ? -std::numeric_limits<double>::infinity() : 0.0);
  int64_t count = 1;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (reduced[d])
      count *= x.shape[d];
  for (int64_t i = 0; i < x.numel(); ++i) {
    auto index = x.unravel(i);
    for (size_t d = 0; d < index.size(); ++d)
      if (reduced[d])
        index[d] = 0;
    double &slot = acc.at(index);
    slot = kind == "max" ? std::max(slot, x.data[i]) : slot + x.data[i];
  }
  if (kind == "mean")
    for (double &v : acc.data)
      v /= static_cast<double>(count);
  if (!keepdim) {
    std::vector<int64_t> shape;
    for (size_t d = 0; d < x.shape.size(); ++d)
      if (!reduced[d])
        shape.push_back(x.shape[d]);
    acc.shape = shape;
  }
  return acc;
}

/// Calls f(x, out, indices of one line along `axis`) for every line.
template <typename F> static Tensor alongAxis(const Tensor &x, int64_t axis, F f) {
  axis = normalizeAxis(axis, x.rank());
  Tensor out(x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    auto index = x.unravel(i);
    if (index[axis] != 0)
      continue;
    std::vector<int64_t> line;
    for (int64_t j = 0; j < x.shape[axis]; ++j) {
      index[axis] = j;
      line.push_back(x.ravel(index));
    }
    f(line, out);
  }
  return out;
}

/// Maximum of a line and sum(exp(x - max)) over it.
static std::pair<double, double> maxAndSumExp(const Tensor &x, const std::vector<int64_t> &line) {
  double m = -std::numeric_limits<double>::infinity(), s = 0.0;
  for (int64_t k : line)
    m = std::max(m, x.data[k]);
  for (int64_t k : line)
    s += std::exp(x.data[k] - m);
  return {m, s};
}

Tensor softmax(const Tensor &x, int64_t axis) {
  return alongAxis(x, axis, [&](const std::vector<int64_t> &line, Tensor &out) {
    auto [m, s] = maxAndSumExp(x, line);
    for (int64_t k : line)
      out.data[k] = std::exp(x.data[k] - m) / s;
  });
}

Tensor logSoftmax(const Tensor &x, int64_t axis) {
  return alongAxis(x, axis, [&](const std::vector<int64_t> &line, Tensor &out) {
    auto [m, s] = maxAndSumExp(x, line);
    for (int64_t k : line)
      out.data[k] = x.data[k] - m - std::log(s);
  });
}

Tensor layerNorm(const Tensor &x, const Tensor &weight, const Tensor &bias, double eps) {
  return alongAxis(x, -1, [&](const std::vector<int64_t> &line, Tensor &out) {
    double n = static_cast<double>(line.size()), mean = 0.0, var = 0.0;
    for (int64_t k : line)
      mean += x.data[k];
    mean /= n;
    for (int64_t k : line)
      var += (x.data[k] - mean) * (x.data[k] - mean);
    var /= n; // biased, as PyTorch's layer_norm
    for (size_t j = 0; j < line.size(); ++j)
      out.data[line[j]] =
          (x.data[line[j]] - mean) / std::sqrt(var + eps) * weight.data[j] + bias.data[j];
  });
}

Tensor rmsNorm(const Tensor &x, const Tensor &weight, double eps) {
  return alongAxis(x, -1, [&](const std::vector<int64_t> &line, Tensor &out) {
    double ms = 0.0;
    for (int64_t k : line)
      ms += x.data[k] * x.data[k];
    ms /= static_cast<double>(line.size());
    for (size_t j = 0; j < line.size(); ++j)
      out.data[line[j]] = x.data[line[j]] / std::sqrt(ms + eps) * weight.data[j];
  });
}

//===----------------------------------------------------------------------===//
// Linear algebra and attention
//===----------------------------------------------------------------------===//

Tensor matmul(const Tensor &a, const Tensor &b, bool ta, bool tb) {
  int64_t ra = a.rank(), rb = b.rank();
  int64_t m = a.shape[ta ? ra - 1 : ra - 2], k = a.shape[ta ? ra - 2 : ra - 1];
  int64_t n = b.shape[tb ? rb - 2 : rb - 1];
  std::vector<int64_t> batchA(a.shape.begin(), a.shape.end() - 2);
  std::vector<int64_t> batchB(b.shape.begin(), b.shape.end() - 2);
  std::vector<int64_t> shape = broadcastShape(batchA, batchB);
  size_t nb = shape.size();
  shape.push_back(m);
  shape.push_back(n);
  Tensor out(shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    auto index = out.unravel(i);
    int64_t row = index[nb], col = index[nb + 1];
    // Batch index of each operand under broadcasting.
    std::vector<int64_t> ia(ra), ib(rb);
    for (int64_t d = 0; d < ra - 2; ++d)
      ia[d] = a.shape[d] == 1 ? 0 : index[nb - (ra - 2) + d];
    for (int64_t d = 0; d < rb - 2; ++d)
      ib[d] = b.shape[d] == 1 ? 0 : index[nb - (rb - 2) + d];
    double s = 0.0;
    for (int64_t kk = 0; kk < k; ++kk) {
      ia[ra - 2] = ta ? kk : row;
      ia[ra - 1] = ta ? row : kk;
      ib[rb - 2] = tb ? col : kk;
      ib[rb - 1] = tb ? kk : col;
      s += a.at(ia) * b.at(ib);
    }
    out.data[i] = s;
  }
  return out;
}

Tensor rope(const Tensor &x, double theta, int64_t offset) {
  int64_t r = x.rank(), d = x.shape[r - 1], half = d / 2;
  Tensor out(x.shape);
  for (int64_t lin = 0; lin < x.numel(); ++lin) {
    auto index = x.unravel(lin);
    int64_t j = index[r - 1];
    double pos = static_cast<double>(index[r - 2] + offset);
    int64_t i = j < half ? j : j - half;
    double angle = pos * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(d));
    auto other = index;
    other[r - 1] = j < half ? j + half : j - half;
    double xi = x.data[lin], xo = x.at(other);
    out.data[lin] = j < half ? xi * std::cos(angle) - xo * std::sin(angle)
                             : xi * std::cos(angle) + xo * std::sin(angle);
  }
  return out;
}

Tensor causalMask(const Tensor &x, double fill) {
  int64_t r = x.rank(), tq = x.shape[r - 2], tk = x.shape[r - 1];
  Tensor out = x;
  for (int64_t lin = 0; lin < x.numel(); ++lin) {
    auto index = x.unravel(lin);
    if (index[r - 1] > index[r - 2] + (tk - tq))
      out.data[lin] = fill;
  }
  return out;
}

Tensor attention(const Tensor &q, const Tensor &k, const Tensor &v, bool causal,
                 std::optional<double> scale) {
  int64_t b = q.shape[0], h = q.shape[1], tq = q.shape[2], d = q.shape[3];
  int64_t hkv = k.shape[1], tk = k.shape[2];
  double s = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(d));
  Tensor out(q.shape);
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t hi = 0; hi < h; ++hi) {
      int64_t kvh = hi / (h / hkv);
      for (int64_t i = 0; i < tq; ++i) {
        std::vector<double> scores(tk);
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < tk; ++j) {
          double dot = 0.0;
          for (int64_t c = 0; c < d; ++c)
            dot += q.at({bi, hi, i, c}) * k.at({bi, kvh, j, c});
          scores[j] = causal && j > i + (tk - tq) ? -std::numeric_limits<double>::infinity()
                                                  : dot * s;
          m = std::max(m, scores[j]);
        }
        double sum = 0.0;
        for (double &sc : scores)
          sum += (sc = std::exp(sc - m));
        for (int64_t c = 0; c < d; ++c) {
          double acc = 0.0;
          for (int64_t j = 0; j < tk; ++j)
            acc += scores[j] / sum * v.at({bi, kvh, j, c});
          out.at({bi, hi, i, c}) = acc;
        }
      }
    }
  return out;
}

Tensor crossEntropy(const Tensor &logits, const Tensor &targets, int64_t ignoreIndex) {
  Tensor lsm = logSoftmax(logits, -1);
  int64_t vocab = logits.shape.back();
  double total = 0.0, count = 0.0;
  for (int64_t i = 0; i < targets.numel(); ++i) {
    auto t = static_cast<int64_t>(targets.data[i]);
    if (t == ignoreIndex)
      continue;
    total -= lsm.data[i * vocab + t];
    count += 1.0;
  }
  return Tensor({}, {total / count});
}

} // namespace lcc::ref
