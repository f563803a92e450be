//===- Reference.h - plain C++ semantics of every lcc op --------*- C++ -*-===//
//
// Deliberately naive: loops over multi-indices, everything in double, no
// sharing with the lowering. The op tests trust this file, so it follows the
// op descriptions in LccOps.td word by word and stays easy to audit.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_TEST_UNIT_OPS_REFERENCE_H
#define LCC_TEST_UNIT_OPS_REFERENCE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lcc::ref {

/// A dense row-major tensor of doubles (integers and booleans as exact values).
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;

  Tensor() = default;
  Tensor(std::vector<int64_t> s, std::vector<double> d) : shape(std::move(s)), data(std::move(d)) {}
  /// Zero-filled.
  explicit Tensor(std::vector<int64_t> s);

  int64_t numel() const;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  std::vector<int64_t> strides() const;
  std::vector<int64_t> unravel(int64_t linear) const;
  int64_t ravel(const std::vector<int64_t> &index) const;
  double &at(const std::vector<int64_t> &index) { return data[ravel(index)]; }
  double at(const std::vector<int64_t> &index) const { return data[ravel(index)]; }
};

int64_t normalizeAxis(int64_t axis, int64_t rank);
std::vector<int64_t> broadcastShape(const std::vector<int64_t> &a, const std::vector<int64_t> &b);
/// The element of `t` that broadcasting maps result index `index` to.
double broadcastRead(const Tensor &t, const std::vector<int64_t> &index);

// Elementwise. `op` is the lcc mnemonic; "gelu" is the erf form, "gelu_tanh" GPT-2's.
double unaryScalar(const std::string &op, double x);
Tensor unary(const std::string &op, const Tensor &x);
double binaryScalar(const std::string &op, double a, double b);
Tensor binary(const std::string &op, const Tensor &a, const Tensor &b);
Tensor cmp(const std::string &predicate, const Tensor &a, const Tensor &b);
Tensor where(const Tensor &cond, const Tensor &a, const Tensor &b);
/// Conversion to an integer type truncates toward zero; to i1 tests != 0;
/// to f32 rounds to float.
enum class Kind { F32, F64, I32, I64, I1 };
Tensor convert(const Tensor &x, Kind to);

// Reductions and normalizations.
Tensor reduce(const std::string &kind, const Tensor &x, std::vector<int64_t> axes, bool keepdim);
Tensor softmax(const Tensor &x, int64_t axis);
Tensor logSoftmax(const Tensor &x, int64_t axis);
Tensor layerNorm(const Tensor &x, const Tensor &weight, const Tensor &bias, double eps);
Tensor rmsNorm(const Tensor &x, const Tensor &weight, double eps);

// Linear algebra and attention.
Tensor matmul(const Tensor &a, const Tensor &b, bool transposeA, bool transposeB);
Tensor rope(const Tensor &x, double theta, int64_t offset);
Tensor causalMask(const Tensor &x, double fill);
Tensor attention(const Tensor &q, const Tensor &k, const Tensor &v, bool causal,
                 std::optional<double> scale);
Tensor crossEntropy(const Tensor &logits, const Tensor &targets, int64_t ignoreIndex);

// Shape ops (ReferenceShape.cpp).
Tensor reshape(const Tensor &x, const std::vector<int64_t> &shape);
Tensor transpose(const Tensor &x, const std::vector<int64_t> &perm);
Tensor slice(const Tensor &x, const std::vector<int64_t> &start, const std::vector<int64_t> &limit,
             const std::vector<int64_t> &step);
Tensor concat(const std::vector<Tensor> &xs, int64_t axis);
Tensor broadcastTo(const Tensor &x, const std::vector<int64_t> &shape);
/// Indices outside [0, dim) are clamped into it.
Tensor gather(const Tensor &x, const Tensor &indices, int64_t axis);
/// Zeros of `shape`, then result[pre, clamp(indices[j]), post] += updates[pre, j, post]
/// for every index position j in row-major order.
Tensor scatterAdd(const Tensor &updates, const Tensor &indices, int64_t axis,
                  const std::vector<int64_t> &shape);

// Initializers (ReferenceShape.cpp).
Tensor fill(const std::vector<int64_t> &shape, double value);
Tensor iota(const std::vector<int64_t> &shape, int64_t dim);
uint64_t splitmix64(uint64_t x);
/// U(s, k) in (0, 1): the counter-based uniform both random ops draw from.
double counterUniform(uint64_t seed, uint64_t k);
Tensor randomUniform(const std::vector<int64_t> &shape, double low, double high, int64_t seed);
Tensor randomNormal(const std::vector<int64_t> &shape, double mean, double std, int64_t seed);

} // namespace lcc::ref

#endif
