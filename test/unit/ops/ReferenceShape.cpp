//===- ReferenceShape.cpp - shape ops and initializers in plain C++ -------===//
#include "Reference.h"

#include <algorithm>
#include <cmath>

namespace lcc::ref {

Tensor reshape(const Tensor &x, const std::vector<int64_t> &shape) {
  Tensor out(shape, x.data);
  return out;
}

Tensor transpose(const Tensor &x, const std::vector<int64_t> &perm) {
  std::vector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(x.shape[p]);
  Tensor out(shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    auto index = out.unravel(i);
    std::vector<int64_t> src(x.shape.size());
    for (size_t d = 0; d < perm.size(); ++d)
      src[perm[d]] = index[d]; // result dim d is input dim perm[d]
    out.data[i] = x.at(src);
  }
  return out;
}

Tensor slice(const Tensor &x, const std::vector<int64_t> &start, const std::vector<int64_t> &limit,
             const std::vector<int64_t> &step) {
  std::vector<int64_t> shape;
  for (size_t d = 0; d < x.shape.size(); ++d)
    shape.push_back((limit[d] - start[d] + step[d] - 1) / step[d]);
  Tensor out(shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    auto index = out.unravel(i);
    for (size_t d = 0; d < index.size(); ++d)
      index[d] = start[d] + index[d] * step[d];
    out.data[i] = x.at(index);
  }
  return out;
}

Tensor concat(const std::vector<Tensor> &xs, int64_t axis) {
  axis = normalizeAxis(axis, xs[0].rank());
  std::vector<int64_t> shape = xs[0].shape;
  shape[axis] = 0;
  for (const Tensor &t : xs)
    shape[axis] += t.shape[axis];
  Tensor out(shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    auto index = out.unravel(i);
    size_t which = 0;
    while (index[axis] >= xs[which].shape[axis])
      index[axis] -= xs[which++].shape[axis];
    out.data[i] = xs[which].at(index);
  }
  return out;
}

Tensor broadcastTo(const Tensor &x, const std::vector<int64_t> &shape) {
  Tensor out(shape);
  for (int64_t i = 0; i < out.numel(); ++i)
    out.data[i] = broadcastRead(x, out.unravel(i));
  return out;
}

Tensor gather(const Tensor &x, const Tensor &indices, int64_t axis) {
  axis = normalizeAxis(axis, x.rank());
  std::vector<int64_t> shape(x.shape.begin(), x.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), x.shape.begin() + axis + 1, x.shape.end());
  Tensor out(shape);
  int64_t ir = indices.rank();
  for (int64_t i = 0; i < out.numel(); ++i) {
    auto index = out.unravel(i);
    std::vector<int64_t> idx(index.begin() + axis, index.begin() + axis + ir);
    auto sel = static_cast<int64_t>(indices.at(idx));
    sel = std::clamp<int64_t>(sel, 0, x.shape[axis] - 1);
    std::vector<int64_t> src(index.begin(), index.begin() + axis);
    src.push_back(sel);
    src.insert(src.end(), index.begin() + axis + ir, index.end());
    out.data[i] = x.at(src);
  }
  return out;
}

Tensor scatterAdd(const Tensor &updates, const Tensor &indices, int64_t axis,
                  const std::vector<int64_t> &shape) {
  Tensor out(shape);
  axis = normalizeAxis(axis, out.rank());
  int64_t ir = indices.rank();
  for (int64_t i = 0; i < updates.numel(); ++i) {
    auto index = updates.unravel(i);
    std::vector<int64_t> idx(index.begin() + axis, index.begin() + axis + ir);
    auto sel = static_cast<int64_t>(indices.at(idx));
    sel = std::clamp<int64_t>(sel, 0, shape[axis] - 1);
    std::vector<int64_t> dst(index.begin(), index.begin() + axis);
    dst.push_back(sel);
    dst.insert(dst.end(), index.begin() + axis + ir, index.end());
    out.at(dst) += updates.data[i];
  }
  return out;
}

Tensor fill(const std::vector<int64_t> &shape, double value) {
  Tensor out(shape);
  std::fill(out.data.begin(), out.data.end(), value);
  return out;
}

Tensor iota(const std::vector<int64_t> &shape, int64_t dim) {
  Tensor out(shape);
  dim = normalizeAxis(dim, out.rank());
  for (int64_t i = 0; i < out.numel(); ++i)
    out.data[i] = static_cast<double>(out.unravel(i)[dim]);
  return out;
}

uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double counterUniform(uint64_t seed, uint64_t k) {
  uint64_t bits = splitmix64((seed * 0x100000001B3ull) ^ k) >> 11;
  return (static_cast<double>(bits) + 0.5) * std::ldexp(1.0, -53);
}

Tensor randomUniform(const std::vector<int64_t> &shape, double low, double high, int64_t seed) {
  Tensor out(shape);
  for (int64_t i = 0; i < out.numel(); ++i)
    out.data[i] = low + (high - low) * counterUniform(static_cast<uint64_t>(seed),
                                                      static_cast<uint64_t>(i));
  return out;
}

Tensor randomNormal(const std::vector<int64_t> &shape, double mean, double std, int64_t seed) {
  Tensor out(shape);
  auto s = static_cast<uint64_t>(seed);
  for (int64_t i = 0; i < out.numel(); ++i) {
    double u1 = counterUniform(s, 2 * static_cast<uint64_t>(i));
    double u2 = counterUniform(s, 2 * static_cast<uint64_t>(i) + 1);
    out.data[i] = mean + std * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
  return out;
}

} // namespace lcc::ref
