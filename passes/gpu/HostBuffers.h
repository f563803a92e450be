//===- HostBuffers.h - where the CUDA host code's buffers lie ---*- C++ -*-===//
//
// What lcc-gpu-kernels knows about the device pointers its launches pass:
// which allocation a buffer is a view of and at which byte, so that it can
// prove a kernel argument aligned (vector loads) and two launches
// independent (horizontal fusion). The runtime gives each argument of a
// public host function (the step's parameters, state, batch and arena) a
// device allocation of its own, 256-byte aligned. A layer function's
// argument (lcc-outline-layers: private, called directly by the step) is
// whatever its calls pass: what holds at every call holds for it.
//
//===----------------------------------------------------------------------===//
#ifndef LCC_PASSES_GPU_HOSTBUFFERS_H
#define LCC_PASSES_GPU_HOSTBUFFERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"

#include <map>
#include <optional>
#include <vector>

namespace lcc {

/// Where a host memref's first element lies: `offset` bytes, plus the
/// values of `shifts`, after the start of `root`, an entry argument of a
/// host function, through views and ops that keep the pointer (subviews,
/// casts, reshapes). `shifts` are the function's index arguments a view's
/// byte shift is (a layer function's arena offsets, which each call passes
/// as constants), in argument order. A null `root`: not known (a loop's
/// iter_args may be any buffer; a shift computed at run time).
struct HostBuffer {
  mlir::Value root;
  int64_t offset = 0;
  llvm::SmallVector<mlir::Value, 1> shifts;
};

/// The `bytes` a memref of static shape and strides covers from `at`;
/// a null `at.root` when they cannot be known.
struct Extent {
  HostBuffer at;
  int64_t bytes = 0;
  /// The same bytes of the same buffer (known, and equal in every call).
  bool sameAs(const Extent &other) const;
};

/// Ops that keep a buffer's aligned pointer (the offset is in the type).
bool keepsPointer(mlir::Operation *op);

/// Bytes per element of a memref (at least 1).
int64_t elementBytes(mlir::MemRefType type);

/// A module's host buffers, answered across the calls of its layer
/// functions (found once, at construction; queries are memoized).
class HostBuffers {
public:
  explicit HostBuffers(mlir::ModuleOp module);

  static HostBuffer locate(mlir::Value memref);
  static Extent extent(mlir::Value memref);

  /// Bytes the address of `memref`'s first element is a multiple of where a
  /// host function uses it (at most 256); 1: nothing known.
  int64_t alignment(mlir::Value memref);

  /// Whether two extents of the same host function may share a byte: with
  /// the same root and shifts, when their ranges intersect; two arguments
  /// of a public function never (distinct allocations); in a layer function
  /// otherwise, when they may where one of its calls puts them. Not
  /// located: they may.
  bool mayOverlap(const Extent &a, const Extent &b);

private:
  /// What a call passes for one argument of a layer function: where a
  /// buffer lies, or an index's constant value or caller argument.
  struct Passed {
    HostBuffer at;
    std::optional<int64_t> constant;
    mlir::Value argument;
  };
  /// What each call of a layer function passes; null when some call cannot
  /// be seen (a use that is not a direct call, a recursive one).
  const std::vector<llvm::SmallVector<Passed>> *callsOf(mlir::func::FuncOp fn);
  /// Where each call of a layer function puts the start of `h`'s root and
  /// shifts (`h.offset` not added); null when the calls are not known. A
  /// null root: not known at that call. `plain`: a public function's
  /// argument, no shifts (the common case, compared without recursion).
  struct Placed {
    HostBuffer at;
    bool plain = false;
  };
  const std::vector<Placed> *placed(const HostBuffer &h);
  int64_t alignment(const HostBuffer &h, int depth);
  bool mayOverlap(const Extent &a, const Extent &b, int depth);

  /// A layer function's direct calls; nullopt when it has another use.
  llvm::DenseMap<mlir::Operation *, std::optional<llvm::SmallVector<mlir::func::CallOp>>> calls_;
  llvm::DenseMap<mlir::Operation *, std::optional<std::vector<llvm::SmallVector<Passed>>>> passed_;
  std::map<llvm::SmallVector<const void *, 2>, std::optional<std::vector<Placed>>> placed_;
};

} // namespace lcc

#endif
