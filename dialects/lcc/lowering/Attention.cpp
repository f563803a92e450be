//===- Attention.cpp - fused attention becomes runtime calls --------------===//
//
// lcc.attention and lcc.attention_grad that lcc-decompose kept whole
// (keep-attention) are lcc ops on tensors until one-shot bufferization,
// which turns each into one call of the runtime's fused kernel
// (runtime/cpu/Attention.h):
//
//   lcc_attention_fwd(dtype, B, H, Hkv, Tq, Tk, D, causal, scale, q, k, v, o)
//   lcc_attention_bwd(dtype, B, H, Hkv, Tq, Tk, D, causal, scale,
//                     q, k, v, o, dO, dq, dk, dv)
//
// Operands are read where they are when contiguous (else from a contiguous
// copy); results are new buffers (lcc-plan-memory places them like any
// other). `scale` is passed as the bits of its f64 value.
//
//===----------------------------------------------------------------------===//
#include "dialects/lcc/lowering/Lowering.h"
#include "dialects/lcc/lowering/RuntimeCalls.h"

#include "dialects/lcc/LccDialect.h"
#include "dialects/lcc/LccOps.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "llvm/ADT/bit.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::bufferization;

namespace lcc {
namespace {

/// runtime/cpu/Attention.h's element type codes.
FailureOr<int64_t> attentionDtype(Operation *op, Type t) {
  if (t.isF32())
    return int64_t(0);
  if (t.isF64())
    return int64_t(1);
  if (t.isBF16())
    return int64_t(2);
  if (t.isF16())
    return int64_t(3);
  return op->emitOpError() << "has no fused kernel for elements of type " << t
                           << " (f32, f64, bf16, f16)";
}

/// Reads every operand, writes none, each result a new buffer: the call of
/// lcc_attention_fwd (lcc.attention) or lcc_attention_bwd (attention_grad).
template <typename Op>
struct AttentionModel : BufferizableOpInterface::ExternalModel<AttentionModel<Op>, Op> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &, const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &, const AnalysisState &) const {
    return false;
  }
  bool bufferizesToAllocation(Operation *, Value) const { return true; }
  AliasingValueList getAliasingValues(Operation *, OpOperand &, const AnalysisState &) const {
    return {};
  }

  /// The call: the head (dtype, shape, causal, scale), the operands' addresses
  /// (contiguous), then new buffers for the results, which replace the op.
  LogicalResult bufferize(Operation *o, RewriterBase &rewriter, const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto op = llvm::cast<Op>(o);
    StringRef callee =
        std::is_same_v<Op, AttentionOp> ? "lcc_attention_fwd" : "lcc_attention_bwd";
    rewriter.setInsertionPoint(op);
    Location loc = op.getLoc();
    auto q = op.getQuery().getType(), k = op.getKey().getType();
    auto dtype = attentionDtype(op, q.getElementType());
    if (failed(dtype))
      return failure();
    auto i64 = [&](int64_t v) { return lowering::i64Constant(rewriter, loc, v); };
    SmallVector<Value> args = {i64(*dtype),
                               i64(q.getDimSize(0)),
                               i64(q.getDimSize(1)),
                               i64(k.getDimSize(1)),
                               i64(q.getDimSize(2)),
                               i64(k.getDimSize(2)),
                               i64(q.getDimSize(3)),
                               i64(op.getCausal()),
                               i64(llvm::bit_cast<int64_t>(op.getScaleOrDefault()))};
    for (Value operand : op->getOperands()) {
      auto buf = getBuffer(rewriter, operand, options, state);
      if (failed(buf))
        return failure();
      args.push_back(
          lowering::bufferAddress(rewriter, loc, lowering::contiguousBuffer(rewriter, loc, *buf)));
    }
    SmallVector<Value> results;
    for (Value r : op->getResults()) {
      auto t = llvm::cast<RankedTensorType>(r.getType());
      results.push_back(memref::AllocOp::create(
          rewriter, loc, MemRefType::get(t.getShape(), t.getElementType())));
      args.push_back(lowering::bufferAddress(rewriter, loc, results.back()));
    }
    auto f = lowering::declareRuntime(op, callee, args.size(), 0);
    if (failed(f))
      return failure();
    func::CallOp::create(rewriter, loc, *f, args);
    replaceOpWithBufferizedValues(rewriter, op, results);
    return success();
  }
};

} // namespace

void registerAttentionBufferization(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, LccDialect *) {
    AttentionOp::attachInterface<AttentionModel<AttentionOp>>(*ctx);
    AttentionGradOp::attachInterface<AttentionModel<AttentionGradOp>>(*ctx);
  });
}

} // namespace lcc
