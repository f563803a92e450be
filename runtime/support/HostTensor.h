//===- HostTensor.h - a dense tensor in host memory -------------*- C++ -*-===//
//
// The value type exchanged between executors (the CPU JIT now, `lcc-run`
// later) and their callers. Deliberately free of MLIR/LLVM so the runtime can
// be shipped without the compiler. Storage is dense, row-major, and owned.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_RUNTIME_HOSTTENSOR_H
#define LCC_RUNTIME_HOSTTENSOR_H

#include <cassert>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace lcc {

/// Element types a host tensor can hold. I1 is stored as one byte (0 or 1),
/// which is also how the lowered code loads and stores i1.
enum class ElementType : uint8_t { F32, F64, I32, I64, I1 };

inline size_t elementSize(ElementType type) {
  switch (type) {
  case ElementType::F32:
  case ElementType::I32:
    return 4;
  case ElementType::F64:
  case ElementType::I64:
    return 8;
  case ElementType::I1:
    return 1;
  }
  return 0;
}

/// The MLIR spelling, so error messages read like the IR they refer to.
inline const char *elementTypeName(ElementType type) {
  switch (type) {
  case ElementType::F32:
    return "f32";
  case ElementType::F64:
    return "f64";
  case ElementType::I32:
    return "i32";
  case ElementType::I64:
    return "i64";
  case ElementType::I1:
    return "i1";
  }
  return "?";
}

inline bool isFloatType(ElementType type) {
  return type == ElementType::F32 || type == ElementType::F64;
}

/// Maps a C++ element type to its ElementType (bool is I1).
template <typename T> struct ElementTypeOf;
template <> struct ElementTypeOf<float> { static constexpr ElementType value = ElementType::F32; };
template <> struct ElementTypeOf<double> { static constexpr ElementType value = ElementType::F64; };
template <> struct ElementTypeOf<int32_t> { static constexpr ElementType value = ElementType::I32; };
template <> struct ElementTypeOf<int64_t> { static constexpr ElementType value = ElementType::I64; };
template <> struct ElementTypeOf<bool> { static constexpr ElementType value = ElementType::I1; };
static_assert(sizeof(bool) == 1, "I1 tensors rely on one-byte bool");

/// "[2, 3]": a shape in messages.
inline std::string shapeList(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Bytes of a dense tensor of `type` and `shape`.
inline size_t byteSize(ElementType type, const std::vector<int64_t> &shape) {
  size_t n = elementSize(type);
  for (int64_t d : shape)
    n *= static_cast<size_t>(d);
  return n;
}

class HostTensor {
public:
  /// A rank-0 f32 zero, so containers of tensors can be default-constructed.
  HostTensor() : HostTensor(ElementType::F32, {}) {}

  /// A zero-filled tensor of the given type and shape.
  HostTensor(ElementType type, std::vector<int64_t> shape)
      : type_(type), shape_(std::move(shape)) {
    bytes_.assign(lcc::byteSize(type_, shape_), 0);
  }

  static HostTensor zeros(ElementType type, std::vector<int64_t> shape) {
    return HostTensor(type, std::move(shape));
  }

  /// A tensor from row-major values; `values.size()` must match the shape.
  template <typename T>
  static HostTensor fromVector(std::vector<int64_t> shape, const std::vector<T> &values) {
    HostTensor t(ElementTypeOf<T>::value, std::move(shape));
    assert(static_cast<int64_t>(values.size()) == t.numElements() && "value count != shape");
    for (size_t i = 0; i < values.size(); ++i)
      t.data<T>()[i] = values[i];
    return t;
  }

  template <typename T> static HostTensor scalar(T value) {
    return fromVector<T>({}, std::vector<T>{value});
  }

  /// Every element computed by `f(linear index)`, converted to `type`.
  static HostTensor generate(ElementType type, std::vector<int64_t> shape,
                             const std::function<double(int64_t)> &f) {
    HostTensor t(type, std::move(shape));
    for (int64_t i = 0, e = t.numElements(); i < e; ++i)
      t.setDouble(i, f(i));
    return t;
  }

  ElementType elementType() const { return type_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape_)
      n *= d;
    return n;
  }
  size_t byteSize() const { return bytes_.size(); }

  void *rawData() { return bytes_.data(); }
  const void *rawData() const { return bytes_.data(); }

  /// Typed access; the element type must match exactly.
  template <typename T> T *data() {
    assert(ElementTypeOf<T>::value == type_ && "element type mismatch");
    return reinterpret_cast<T *>(bytes_.data());
  }
  template <typename T> const T *data() const {
    assert(ElementTypeOf<T>::value == type_ && "element type mismatch");
    return reinterpret_cast<const T *>(bytes_.data());
  }

  /// Element `i` (row-major) converted to double, whatever the element type.
  double getDouble(int64_t i) const {
    const uint8_t *p = bytes_.data() + static_cast<size_t>(i) * elementSize(type_);
    switch (type_) {
    case ElementType::F32: return load<float>(p);
    case ElementType::F64: return load<double>(p);
    case ElementType::I32: return load<int32_t>(p);
    case ElementType::I64: return static_cast<double>(load<int64_t>(p));
    case ElementType::I1: return *p != 0 ? 1.0 : 0.0;
    }
    return 0.0;
  }

  /// Element `i` as int64 (exact for the integer types).
  int64_t getInt(int64_t i) const {
    const uint8_t *p = bytes_.data() + static_cast<size_t>(i) * elementSize(type_);
    switch (type_) {
    case ElementType::I32: return load<int32_t>(p);
    case ElementType::I64: return load<int64_t>(p);
    case ElementType::I1: return *p != 0;
    default: return static_cast<int64_t>(getDouble(i));
    }
  }

  /// Stores `v` into element `i`, converting as a C++ cast would (I1: v != 0).
  void setDouble(int64_t i, double v) {
    uint8_t *p = bytes_.data() + static_cast<size_t>(i) * elementSize(type_);
    switch (type_) {
    case ElementType::F32: store<float>(p, static_cast<float>(v)); break;
    case ElementType::F64: store<double>(p, v); break;
    case ElementType::I32: store<int32_t>(p, static_cast<int32_t>(v)); break;
    case ElementType::I64: store<int64_t>(p, static_cast<int64_t>(v)); break;
    case ElementType::I1: *p = v != 0.0 ? 1 : 0; break;
    }
  }

  /// Sets every element to `v` (converted as setDouble does).
  void fill(double v) {
    for (int64_t i = 0, e = numElements(); i < e; ++i)
      setDouble(i, v);
  }

  std::vector<double> toDoubles() const {
    std::vector<double> out(static_cast<size_t>(numElements()));
    for (int64_t i = 0, e = numElements(); i < e; ++i)
      out[static_cast<size_t>(i)] = getDouble(i);
    return out;
  }

  template <typename T> std::vector<T> toVector() const {
    const T *p = data<T>();
    return std::vector<T>(p, p + numElements());
  }

  /// "tensor<2x3xf32>", the spelling of the matching MLIR type.
  std::string typeString() const {
    std::string s = "tensor<";
    for (int64_t d : shape_)
      s += std::to_string(d) + "x";
    return s + elementTypeName(type_) + ">";
  }

  bool operator==(const HostTensor &other) const {
    return type_ == other.type_ && shape_ == other.shape_ && bytes_ == other.bytes_;
  }
  bool operator!=(const HostTensor &other) const { return !(*this == other); }

private:
  // memcpy keeps the byte buffer free of alignment and aliasing assumptions.
  template <typename T> static T load(const uint8_t *p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  }
  template <typename T> static void store(uint8_t *p, T v) { std::memcpy(p, &v, sizeof(T)); }

  ElementType type_;
  std::vector<int64_t> shape_;
  std::vector<uint8_t> bytes_;
};

} // namespace lcc

#endif // LCC_RUNTIME_HOSTTENSOR_H
