//===- OnnxOpsShape.cpp - shapes, constants and data movement --------------===//
//
// Shape, Size, Constant, ConstantOfShape and Range are always compile-time
// constants; the data-movement ops compute on the host when their input is a
// constant (so Shape -> Gather -> Concat -> Reshape chains fold) and become
// lcc reshape/transpose/slice/concat/broadcast_to/gather otherwise.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/OnnxOps.h"

#include "lcc_onnx.pb.h"

#include "dialects/lcc/LccOps.h"

#include <cstring>
#include <numeric>

using namespace mlir;

namespace lcc::onnx_import {

int64_t product(llvm::ArrayRef<int64_t> s) {
  return std::accumulate(s.begin(), s.end(), int64_t(1), std::multiplies<int64_t>());
}

HostTensor remap(const HostTensor &in, std::vector<int64_t> shape,
                 const std::function<int64_t(int64_t)> &src, double fill) {
  HostTensor out(in.elementType(), std::move(shape));
  size_t size = elementSize(in.elementType());
  const char *from = static_cast<const char *>(in.rawData());
  char *to = static_cast<char *>(out.rawData());
  for (int64_t i = 0; i < out.numElements(); ++i) {
    int64_t j = src(i);
    if (j >= 0)
      std::memcpy(to + i * size, from + j * size, size);
    else
      out.setDouble(i, fill);
  }
  return out;
}

namespace {

using Shape = std::vector<int64_t>;

/// Row-major coordinates of linear index `i` in `shape`.
Shape coords(int64_t i, llvm::ArrayRef<int64_t> shape) {
  Shape c(shape.size());
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    c[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return c;
}

int64_t linear(llvm::ArrayRef<int64_t> c, llvm::ArrayRef<int64_t> shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    i = i * shape[d] + c[d];
  return i;
}

/// The input as a reshaped constant or lcc.reshape.
llvm::Error setReshaped(NodeCtx &c, const Shape &shape) {
  if (product(shape) != c.type(0).getNumElements())
    return c.error("cannot reshape " + llvm::Twine(c.type(0).getNumElements()) +
                   " elements to " + llvm::Twine(product(shape)));
  if (c.isConstant(0)) {
    c.setOutput(0, remap(c.known(0), shape, [](int64_t i) { return i; }));
    return llvm::Error::success();
  }
  if (llvm::ArrayRef<int64_t>(shape) == c.type(0).getShape()) {
    c.setOutput(0, c.tensor(0));
    return llvm::Error::success();
  }
  c.setOutput(0, lcc::ReshapeOp::create(c.b, c.loc,
                                        RankedTensorType::get(shape, c.type(0).getElementType()),
                                        c.tensor(0))
                     .getResult());
  return llvm::Error::success();
}

llvm::Error reshape(NodeCtx &c) {
  auto target = c.constant(1, "shape");
  if (!target)
    return target.takeError();
  Shape in = c.shape(0), shape = toInts(**target);
  bool allowZero = c.attrInt("allowzero", 0) != 0;
  int64_t infer = -1, known = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0 && !allowZero) {
      if (d >= in.size())
        return c.error("shape entry 0 at " + llvm::Twine(d) + " copies a missing dimension");
      shape[d] = in[d];
    }
    if (shape[d] == -1) {
      if (infer >= 0)
        return c.error("shape has more than one -1");
      infer = int64_t(d);
    } else if (shape[d] < 0) {
      return c.error("shape entry " + llvm::Twine(shape[d]) + " is invalid");
    } else {
      known *= shape[d];
    }
  }
  if (infer >= 0)
    shape[infer] = known ? product(in) / known : 0;
  if (llvm::Error e = c.checkShape(shape, false))
    return e;
  return setReshaped(c, shape);
}

llvm::Error flatten(NodeCtx &c) {
  Shape in = c.shape(0);
  int64_t rank = int64_t(in.size());
  int64_t axis = c.attrInt("axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return c.error("axis is out of range");
  return setReshaped(c, {product(llvm::ArrayRef<int64_t>(in).take_front(axis)),
                         product(llvm::ArrayRef<int64_t>(in).drop_front(axis))});
}

OpHandler unsqueeze(bool axesInput) {
  return [axesInput](NodeCtx &c) -> llvm::Error {
    auto axes = c.axes(axesInput);
    if (!axes)
      return axes.takeError();
    if (!*axes)
      return c.error("axes are required");
    Shape in = c.shape(0);
    int64_t rank = int64_t(in.size() + (*axes)->size());
    std::vector<bool> inserted(rank, false);
    for (int64_t a : **axes) {
      auto n = normalizeAxis(a, rank);
      if (!n || inserted[*n])
        return c.error("axis " + llvm::Twine(a) + " is out of range or repeated");
      inserted[*n] = true;
    }
    Shape out;
    size_t next = 0;
    for (int64_t d = 0; d < rank; ++d)
      out.push_back(inserted[d] ? 1 : in[next++]);
    return setReshaped(c, out);
  };
}

OpHandler squeeze(bool axesInput) {
  return [axesInput](NodeCtx &c) -> llvm::Error {
    auto axes = c.axes(axesInput);
    if (!axes)
      return axes.takeError();
    Shape in = c.shape(0);
    int64_t rank = int64_t(in.size());
    std::vector<bool> drop(rank, false);
    if (*axes && !(*axes)->empty()) {
      for (int64_t a : **axes) {
        auto n = normalizeAxis(a, rank);
        if (!n || in[*n] != 1)
          return c.error("axis " + llvm::Twine(a) + " is out of range or not of size 1");
        drop[*n] = true;
      }
    } else {
      for (int64_t d = 0; d < rank; ++d)
        drop[d] = in[d] == 1;
    }
    Shape out;
    for (int64_t d = 0; d < rank; ++d)
      if (!drop[d])
        out.push_back(in[d]);
    return setReshaped(c, out);
  };
}

llvm::Error transpose(NodeCtx &c) {
  Shape in = c.shape(0);
  int64_t rank = int64_t(in.size());
  Shape perm(rank);
  if (auto p = c.attrInts("perm"))
    perm = *p;
  else
    for (int64_t d = 0; d < rank; ++d)
      perm[d] = rank - 1 - d;
  Shape sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool permutation = int64_t(sorted.size()) == rank;
  for (int64_t d = 0; d < rank && permutation; ++d)
    permutation = sorted[d] == d;
  if (!permutation)
    return c.error("perm is not a permutation of the input's dimensions");
  Shape out(rank);
  for (int64_t d = 0; d < rank; ++d)
    out[d] = in[perm[d]];
  if (c.isConstant(0)) {
    c.setOutput(0, remap(c.known(0), out, [&](int64_t i) {
                  Shape o = coords(i, out), src(rank);
                  for (int64_t d = 0; d < rank; ++d)
                    src[perm[d]] = o[d];
                  return linear(src, in);
                }));
    return llvm::Error::success();
  }
  c.setOutput(0, lcc::TransposeOp::create(c.b, c.loc,
                                          RankedTensorType::get(out, c.type(0).getElementType()),
                                          c.tensor(0), c.b.getDenseI64ArrayAttr(perm))
                     .getResult());
  return llvm::Error::success();
}

llvm::Error concat(NodeCtx &c) {
  Shape first = c.shape(0);
  int64_t rank = int64_t(first.size());
  auto axis = normalizeAxis(c.attrInt("axis", 0), rank);
  if (!axis)
    return c.error("axis is out of range");
  Shape out = first;
  out[*axis] = 0;
  for (unsigned i = 0; i < c.numInputs(); ++i) {
    Shape s = c.shape(i);
    if (int64_t(s.size()) != rank)
      return c.error("inputs have different ranks");
    for (int64_t d = 0; d < rank; ++d)
      if (d != *axis && s[d] != first[d])
        return c.error("inputs differ in dimension " + llvm::Twine(d));
    out[*axis] += s[*axis];
  }
  if (c.allConstant()) {
    if (llvm::Error e = c.checkShape(out, true))
      return e;
    HostTensor result(c.known(0).elementType(), out);
    size_t size = elementSize(result.elementType());
    int64_t offset = 0;
    for (unsigned i = 0; i < c.numInputs(); ++i) {
      const HostTensor &t = c.known(i);
      if (t.elementType() != result.elementType())
        return c.error("inputs have different element types");
      for (int64_t j = 0; j < t.numElements(); ++j) {
        Shape co = coords(j, t.shape());
        co[*axis] += offset;
        std::memcpy(static_cast<char *>(result.rawData()) + linear(co, out) * size,
                    static_cast<const char *>(t.rawData()) + j * size, size);
      }
      offset += t.shape()[*axis];
    }
    c.setOutput(0, std::move(result));
    return llvm::Error::success();
  }
  SmallVector<Value> parts;
  for (unsigned i = 0; i < c.numInputs(); ++i)
    if (c.type(i).getNumElements() > 0)
      parts.push_back(c.tensor(i));
  c.setOutput(0, lcc::ConcatOp::create(c.b, c.loc,
                                       RankedTensorType::get(out, c.type(0).getElementType()),
                                       parts, c.b.getI64IntegerAttr(*axis))
                     .getResult());
  return llvm::Error::success();
}

/// A slice with positive steps as a constant or lcc.slice.
llvm::Error setSlice(NodeCtx &c, unsigned output, const Shape &start, const Shape &limit,
                     const Shape &step) {
  Shape in = c.shape(0), out;
  for (size_t d = 0; d < in.size(); ++d)
    out.push_back(limit[d] > start[d] ? (limit[d] - start[d] - 1) / step[d] + 1 : 0);
  if (c.isConstant(0)) {
    c.setOutput(output, remap(c.known(0), out, [&](int64_t i) {
                  Shape o = coords(i, out);
                  for (size_t d = 0; d < o.size(); ++d)
                    o[d] = start[d] + o[d] * step[d];
                  return linear(o, in);
                }));
    return llvm::Error::success();
  }
  if (product(out) == 0) {
    // An empty slice has no values to wait for: a constant, which Concat
    // drops (Phi-3's `q[..., rotary_dim:]` with full rotary embeddings).
    c.setOutput(output, HostTensor(hostElementType(c.type(0).getElementType()), out));
    return llvm::Error::success();
  }
  bool unit = llvm::all_of(step, [](int64_t s) { return s == 1; });
  c.setOutput(output,
              lcc::SliceOp::create(c.b, c.loc,
                                   RankedTensorType::get(out, c.type(0).getElementType()),
                                   c.tensor(0), c.b.getDenseI64ArrayAttr(start),
                                   c.b.getDenseI64ArrayAttr(limit),
                                   unit ? DenseI64ArrayAttr() : c.b.getDenseI64ArrayAttr(step))
                  .getResult());
  return llvm::Error::success();
}

OpHandler slice(bool inputs) {
  return [inputs](NodeCtx &c) -> llvm::Error {
    Shape in = c.shape(0);
    int64_t rank = int64_t(in.size());
    Shape starts, ends, axes, steps;
    if (inputs) {
      for (unsigned i = 1; i <= 4; ++i) {
        if (!c.has(i))
          continue;
        static const char *names[] = {"", "starts", "ends", "axes", "steps"};
        auto t = c.constant(i, names[i]);
        if (!t)
          return t.takeError();
        (i == 1 ? starts : i == 2 ? ends : i == 3 ? axes : steps) = toInts(**t);
      }
    } else {
      starts = c.attrInts("starts").value_or(Shape());
      ends = c.attrInts("ends").value_or(Shape());
      axes = c.attrInts("axes").value_or(Shape());
    }
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i)
        axes.push_back(int64_t(i));
    if (steps.empty())
      steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() ||
        steps.size() != starts.size())
      return c.error("starts, ends, axes and steps differ in length");
    Shape start(rank, 0), limit(in), step(rank, 1);
    for (size_t i = 0; i < axes.size(); ++i) {
      auto a = normalizeAxis(axes[i], rank);
      if (!a)
        return c.error("axis " + llvm::Twine(axes[i]) + " is out of range");
      int64_t dim = in[*a], s = starts[i], e = ends[i];
      if (steps[i] <= 0)
        return c.unsupported("slices with step " + llvm::Twine(steps[i]) +
                             " are not supported (positive steps only)");
      // ONNX clamps: negative indices count from the end, then into [0, dim].
      if (s < 0)
        s += dim;
      if (e < 0)
        e += dim;
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      start[*a] = s;
      limit[*a] = std::max(s, e);
      step[*a] = steps[i];
    }
    return setSlice(c, 0, start, limit, step);
  };
}

/// Split: sizes from the attribute (< 13), input 1 (>= 13), or equal parts.
OpHandler split(bool sizesInput) {
  return [sizesInput](NodeCtx &c) -> llvm::Error {
    Shape in = c.shape(0);
    auto axis = normalizeAxis(c.attrInt("axis", 0), int64_t(in.size()));
    if (!axis)
      return c.error("axis is out of range");
    Shape sizes;
    if (sizesInput && c.has(1)) {
      auto t = c.constant(1, "split");
      if (!t)
        return t.takeError();
      sizes = toInts(**t);
    } else if (!sizesInput) {
      sizes = c.attrInts("split").value_or(Shape());
    }
    int64_t n = c.numOutputs(), dim = in[*axis];
    if (n == 0)
      return c.error("the node has no outputs");
    if (sizes.empty()) {
      // Equal parts; the last is smaller when the size does not divide (opset 18).
      int64_t part = (dim + n - 1) / n;
      for (int64_t i = 0; i < n; ++i)
        sizes.push_back(std::min(part, dim - std::min(dim, i * part)));
    }
    for (int64_t size : sizes)
      if (size < 0)
        return c.error("split sizes must not be negative");
    if (int64_t(sizes.size()) != n ||
        std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != dim)
      return c.error("split sizes do not add up to the dimension (" + llvm::Twine(dim) + ")");
    int64_t offset = 0;
    for (int64_t i = 0; i < n; ++i) {
      Shape start(in.size(), 0), limit(in), step(in.size(), 1);
      start[*axis] = offset;
      limit[*axis] = offset + sizes[i];
      offset += sizes[i];
      if (llvm::Error e = setSlice(c, unsigned(i), start, limit, step))
        return e;
    }
    return llvm::Error::success();
  };
}

llvm::Error expand(NodeCtx &c) {
  auto target = c.constant(1, "shape");
  if (!target)
    return target.takeError();
  Shape to = toInts(**target);
  if (llvm::Error e = c.checkShape(to, false))
    return e;
  auto out = broadcastShape(c.shape(0), to);
  if (!out)
    return c.error("the input does not broadcast to the shape");
  if (c.isConstant(0)) {
    if (llvm::Error e = c.checkShape(*out, true))
      return e;
    const HostTensor &t = c.known(0);
    c.setOutput(0, remap(t, *out, [&](int64_t i) { return broadcastIndex(t, *out, i); }));
    return llvm::Error::success();
  }
  if (llvm::ArrayRef<int64_t>(*out) == c.type(0).getShape()) {
    c.setOutput(0, c.tensor(0));
    return llvm::Error::success();
  }
  c.setOutput(0, lcc::BroadcastToOp::create(
                     c.b, c.loc, RankedTensorType::get(*out, c.type(0).getElementType()),
                     c.tensor(0))
                     .getResult());
  return llvm::Error::success();
}

llvm::Error gather(NodeCtx &c) {
  Shape in = c.shape(0), idx = c.shape(1);
  auto axis = normalizeAxis(c.attrInt("axis", 0), int64_t(in.size()));
  if (!axis)
    return c.error("axis is out of range");
  Shape out(in.begin(), in.begin() + *axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), in.begin() + *axis + 1, in.end());
  std::optional<HostTensor> indices;
  if (c.isConstant(1)) {
    // Negative indices count from the end (ONNX); lcc.gather clamps.
    indices = HostTensor(ElementType::I64, idx);
    Shape v = toInts(c.known(1));
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] < -in[*axis] || v[i] >= in[*axis])
        return c.error("index " + llvm::Twine(v[i]) + " is out of range for size " +
                       llvm::Twine(in[*axis]));
      indices->data<int64_t>()[i] = v[i] < 0 ? v[i] + in[*axis] : v[i];
    }
  }
  if (indices && c.isConstant(0)) {
    if (llvm::Error e = c.checkShape(out, true))
      return e;
    int64_t inner = product(llvm::ArrayRef<int64_t>(in).drop_front(*axis + 1));
    int64_t count = indices->numElements();
    c.setOutput(0, remap(c.known(0), out, [&](int64_t i) {
                  int64_t o = i / (count * inner), j = i / inner % count, r = i % inner;
                  return (o * in[*axis] + indices->data<int64_t>()[j]) * inner + r;
                }));
    return llvm::Error::success();
  }
  Value ids = indices ? c.materialize(*indices) : c.tensor(1);
  if (!llvm::isa<IntegerType>(llvm::cast<RankedTensorType>(ids.getType()).getElementType()))
    return c.error("indices must be integers");
  c.setOutput(0, lcc::GatherOp::create(c.b, c.loc,
                                       RankedTensorType::get(out, c.type(0).getElementType()),
                                       c.tensor(0), ids, c.b.getI64IntegerAttr(*axis))
                     .getResult());
  return llvm::Error::success();
}

llvm::Error shape(NodeCtx &c) {
  Shape s = c.shape(0);
  int64_t rank = int64_t(s.size());
  int64_t start = c.attrInt("start", 0), end = c.attrInt("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  Shape dims(s.begin() + start, s.begin() + std::max(start, end));
  c.setOutput(0, HostTensor::fromVector<int64_t>({int64_t(dims.size())}, dims));
  return llvm::Error::success();
}

llvm::Error size(NodeCtx &c) {
  c.setOutput(0, HostTensor::scalar<int64_t>(c.type(0).getNumElements()));
  return llvm::Error::success();
}

llvm::Error constant(NodeCtx &c) {
  if (auto *a = c.attr("value")) {
    auto t = tensorFromProto(a->t(), c.model.dir, c.node.name());
    if (!t)
      return c.unsupported(llvm::toString(t.takeError()));
    c.setOutput(0, std::move(*t));
  } else if (auto *a = c.attr("value_float")) {
    c.setOutput(0, HostTensor::scalar<float>(a->f()));
  } else if (auto *a = c.attr("value_floats")) {
    std::vector<float> v(a->floats().begin(), a->floats().end());
    c.setOutput(0, HostTensor::fromVector<float>({int64_t(v.size())}, v));
  } else if (auto *a = c.attr("value_int")) {
    c.setOutput(0, HostTensor::scalar<int64_t>(a->i()));
  } else if (auto *a = c.attr("value_ints")) {
    std::vector<int64_t> v(a->ints().begin(), a->ints().end());
    c.setOutput(0, HostTensor::fromVector<int64_t>({int64_t(v.size())}, v));
  } else {
    return c.unsupported("only tensor, float(s) and int(s) constants are supported");
  }
  return llvm::Error::success();
}

llvm::Error constantOfShape(NodeCtx &c) {
  auto s = c.constant(0, "shape");
  if (!s)
    return s.takeError();
  HostTensor fill = HostTensor::scalar<float>(0.0f);
  if (auto *a = c.attr("value")) {
    auto t = tensorFromProto(a->t(), c.model.dir, c.node.name());
    if (!t)
      return c.unsupported(llvm::toString(t.takeError()));
    fill = std::move(*t);
  }
  Shape shape = toInts(**s);
  if (llvm::Error e = c.checkShape(shape, true))
    return e;
  if (fill.numElements() != 1)
    return c.error("value must hold one element");
  c.setOutput(0, remap(fill, shape, [](int64_t) { return 0; }));
  return llvm::Error::success();
}

llvm::Error range(NodeCtx &c) {
  if (!c.allConstant())
    return c.unsupported("Range needs compile-time start, limit and delta");
  const HostTensor &start = c.known(0), &limit = c.known(1), &delta = c.known(2);
  if (start.numElements() != 1 || limit.numElements() != 1 || delta.numElements() != 1 ||
      start.elementType() != delta.elementType())
    return c.error("start, limit and delta must be scalars of one type");
  double s = start.getDouble(0), l = limit.getDouble(0), d = delta.getDouble(0);
  if (d == 0 || !std::isfinite((l - s) / d))
    return c.error("delta is 0 or the range is not finite");
  double count = std::max(0.0, std::ceil((l - s) / d));
  if (start.elementType() == ElementType::I64 && limit.elementType() == ElementType::I64) {
    // Exactly, beyond 2^53: ceil((limit - start) / delta) in 128 bits.
    __int128 a = start.data<int64_t>()[0], b = limit.data<int64_t>()[0],
             step = delta.data<int64_t>()[0], span = b - a;
    __int128 n = span / step + ((span % step != 0) && ((span > 0) == (step > 0)) ? 1 : 0);
    count = n > 0 ? double(n) : 0.0;
  }
  if (count > double(NodeCtx::kMaxFoldElements))
    return c.unsupported("a range of " + llvm::Twine(int64_t(count)) +
                         " elements is too large to fold");
  int64_t n = int64_t(count);
  HostTensor out(start.elementType(), {n});
  for (int64_t i = 0; i < n; ++i) {
    if (out.elementType() == ElementType::I64)
      out.data<int64_t>()[i] = int64_t(uint64_t(start.data<int64_t>()[0]) +
                                       uint64_t(i) * uint64_t(delta.data<int64_t>()[0]));
    else
      out.setDouble(i, s + double(i) * d);
  }
  c.setOutput(0, std::move(out));
  return llvm::Error::success();
}

/// Trilu: keep the lower (upper = 0) or upper triangle of the last two dims.
llvm::Error trilu(NodeCtx &c) {
  int64_t k = 0;
  if (c.has(1)) {
    auto t = c.constant(1, "k");
    if (!t)
      return t.takeError();
    Shape ks = toInts(**t);
    if (ks.size() != 1)
      return c.error("k must be a scalar");
    k = ks[0];
  }
  bool upper = c.attrInt("upper", 1) != 0;
  Shape s = c.shape(0);
  if (s.size() < 2)
    return c.error("input must have rank >= 2");
  int64_t rows = s[s.size() - 2], cols = s.back();
  if (llvm::Error e = c.checkShape({rows, cols}, true))
    return e;
  auto keep = [&](int64_t i) {
    int64_t col = i % cols, row = i / cols % rows;
    return upper ? col - row >= k : col - row <= k;
  };
  if (c.isConstant(0)) {
    c.setOutput(0, c.known(0));
    HostTensor &out = *c.outputs[0].constant;
    for (int64_t i = 0; i < out.numElements(); ++i)
      if (!keep(i))
        out.setDouble(i, 0.0);
    return llvm::Error::success();
  }
  Value mask = c.materialize(HostTensor::generate(ElementType::I1, {rows, cols},
                                                  [&](int64_t i) { return keep(i) ? 1 : 0; }));
  // lcc.where selects floats: integer tensors go through f64, exact for
  // |x| < 2^53 (every int32, and int64 masks and indices in practice).
  Type et = c.type(0).getElementType();
  bool isInt = !llvm::isa<FloatType>(et);
  auto ft = RankedTensorType::get(s, isInt ? c.b.getF64Type() : et);
  Value x = c.tensor(0);
  if (isInt)
    x = lcc::ConvertOp::create(c.b, c.loc, ft, x);
  Value r = lcc::WhereOp::create(c.b, c.loc, ft, mask, x, c.scalar(ft.getElementType(), 0.0));
  if (isInt)
    r = lcc::ConvertOp::create(c.b, c.loc, c.type(0), r);
  c.setOutput(0, r);
  return llvm::Error::success();
}

} // namespace

void addShapeOps(std::vector<OpEntry> &t) {
  t.push_back({"Constant", 1, constant, {}, 0});
  t.push_back({"ConstantOfShape", 9, constantOfShape, {0}});
  t.push_back({"Shape", 1, shape});
  t.push_back({"Size", 1, size});
  t.push_back({"Range", 11, range, {0, 1, 2}, 3});
  t.push_back({"Reshape", 5, reshape, {1}, 2});
  t.push_back({"Flatten", 1, flatten});
  t.push_back({"Transpose", 1, transpose});
  t.push_back({"Unsqueeze", 1, unsqueeze(false)});
  t.push_back({"Unsqueeze", 13, unsqueeze(true), {1}});
  t.push_back({"Squeeze", 1, squeeze(false)});
  t.push_back({"Squeeze", 13, squeeze(true), {1}});
  t.push_back({"Concat", 4, concat, {}, -1});
  t.push_back({"Slice", 1, slice(false)});
  t.push_back({"Slice", 10, slice(true), {1, 2, 3, 4}, 3});
  t.push_back({"Split", 2, split(false)});
  t.push_back({"Split", 13, split(true), {1}});
  t.push_back({"Expand", 8, expand, {1}, 2});
  t.push_back({"Gather", 1, gather, {1}, 2});
  t.push_back({"Trilu", 14, trilu, {1}});
}

} // namespace lcc::onnx_import
